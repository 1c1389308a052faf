// fattree's planner: the controller of Fat-B+Tree section II steps 2-3.
// Each plan() reforms the tree, rebuilds the fat root and the cached
// layers from the current access weights (fattree_plan.h), and diffs the
// records against what the switches will hold. The paper's updates are
// lazy: inserts and deletes never touch cached nodes (a split node keeps
// its address and the B-link move-right reaches its new sibling, the
// paper's "temporary root"); a stale cache costs speed, and the next plan
// replaces it.
#pragma once

#include <array>
#include <map>

#include "fattree/fattree_plan.h"
#include "fattree/fattree_types.h"
#include "forein/offload/backend.h"

namespace forein::offload::fattree {

class FattreePlanner final : public Planner {
 public:
  // Throws InvalidArgument for settings beyond the hardware.
  explicit FattreePlanner(const BackendConfig& config);

  PlanDiff plan(const PlanInput& input) override;
  ChangeBatch full_target() const override;
  void reset() override;

  const PlanSettings& settings() const { return settings_; }

 private:
  const BackendConfig config_;
  PlanSettings settings_;
  std::map<Word, RangeRecord> ranges_;                            // the target, by lo
  std::array<std::map<Address, NodeRecord>, kNodeSets> sets_;  // the target, by address
};

// fattree's settings in config (kFattreeBackend.settings), the paper's
// figures where unset. Throws InvalidArgument for a bad one.
PlanSettings settings_of(const BackendConfig& config);

}  // namespace forein::offload::fattree

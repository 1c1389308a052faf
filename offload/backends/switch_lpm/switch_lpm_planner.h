// switch_lpm's planner: FOREIN's layered entry set (layers.h: bottom line,
// greedy-selected main layer, hot leaves) from the node table and the
// index's key words, diffed against the previous plan (entry_diff.h) and
// encoded as LPM batches (lpm_batch.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "forein/offload/backend.h"
#include "switch_lpm/layers.h"
#include "switch_lpm/lpm_entry.h"

namespace forein::offload {

class SwitchLpmPlanner final : public Planner {
 public:
  // Throws InvalidArgument for a bad setting (kSwitchLpmSettings).
  explicit SwitchLpmPlanner(const BackendConfig& config);

  PlanDiff plan(const PlanInput& input) override;
  ChangeBatch full_target() const override;
  void reset() override { target_.clear(); }

  // The entry set the device holds once every planned batch is applied, in
  // diff order (bottom line first, then by prefix).
  const std::vector<LpmEntry>& target() const { return target_; }

 private:
  const std::uint64_t budget_;  // 0: half the capacity
  const std::uint16_t bottom_line_level_;
  const std::size_t hot_leaves_;
  std::vector<LpmEntry> target_;
};

}  // namespace forein::offload

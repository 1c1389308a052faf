// fpga's planner: the control plane that places interior nodes in
// Honeycomb's accelerator cache (section 5). The root goes to on-chip SRAM
// (not charged against DRAM); other interior nodes (level >= 1) go to
// on-board DRAM, heaviest first (the sum of the sampled leaf weights
// beneath; ties: higher level, then lower node id), as many as fit the
// budget in cache bytes (one 8 KB slot each), the four ways of their set
// (cache_set_of(node id, cache_sets(capacity))) and the image room; a node
// is placed only under a placed parent, since a walk reaches it only
// through its ancestors. Leaves are never placed. Each plan is diffed
// against the previous target by node id (an invalidation removes a node
// no longer wanted).
//
// Units: PlanDiff::new_records and target_records are in the device's
// unit, cache bytes (8,192 per DRAM-cached node), so the manager's
// capacity checks compare like with like.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "fpga/fpga_types.h"
#include "forein/offload/backend.h"

namespace forein::offload::fpga {

struct CachePlanSettings {
  std::uint64_t capacity = kBoardDramBytes;  // the device's DRAM cache bytes (sets follow from it)
  std::uint64_t budget = kBoardDramBytes;    // cache bytes the plan may use
  std::uint64_t image_budget = 0;            // image bytes the plan may use (0: half the image room)
};

struct CachePlan {
  std::vector<CacheRecord> records;  // the root first (if any), then DRAM nodes by id
  std::size_t dram_nodes = 0;
  std::size_t cached_levels = 0;     // distinct levels among the DRAM nodes
  std::size_t skipped_ways = 0;      // nodes that fit the budget but not their set
};

CachePlan plan_cache(std::span<const OffloadNode> nodes, const CachePlanSettings& settings);

class FpgaPlanner final : public Planner {
 public:
  explicit FpgaPlanner(const BackendConfig& config) : config_(config) {}

  PlanDiff plan(const PlanInput& input) override;
  ChangeBatch full_target() const override;
  void reset() override { target_.clear(); }

 private:
  const BackendConfig config_;
  std::map<PageId, CacheRecord> target_;  // by node id
};

}  // namespace forein::offload::fpga

// dpa's planner: the host side of DPA-Store's learned index (sections 3.1.1,
// 3.2, 3.2.4), built over the host tree's node boundaries and placed in DPA
// memory.
//
// The first plan bulk-loads the index as 3.2.4 does, bottom-up: the keys are the
// lo words of the host's live nodes of one level (non-empty intervals,
// ascending; equal words: the later node), the payload each node's id and
// its parent's; greedy PLA segments (pla.h, eps leaf, at most 128 keys)
// become index leaves; the leaves' first keys are segmented again (eps
// inner, at most 128 pivots a segment) and up to seven consecutive segments
// make an inner node; and so on until one root. Models are fixed-point
// (fixed_point.h). The host level is 0 (leaves) if the index fits the
// budget in DPA bytes and half the image room; otherwise the index is
// built over level 1 (hints at level 1), and so on.
//
// Later plans keep the index up as the paper's patchers do (3.2.1): each
// node of the previous index keeps its range of keys; a range whose keys
// are unchanged keeps its node (model included), one that changed is
// retrained into one node if one model (leaf) or seven segments (inner)
// still fit, and split into nodes of the retrain bound (a quarter of 128)
// otherwise; empty ranges drop their node. So a split in the host tree
// changes a leaf and its path, not every leaf after it as a new bulk load
// would. While the kept index exceeds twice a bulk load's DPA bytes, or
// the host level changes, the plan is a bulk load again.
//
// Placement: the plan is diffed against the previous target by node
// content (bytes, child addresses included), bottom-up, so an unchanged
// node keeps its DPA address and only the changed path is copied (the
// paper's RCU path copy); new nodes take the first free DPA addresses,
// clear of every node of the previous target (which the device still holds
// until the removals are applied). The install batch is the COPY stitches
// and one CONNECT of the root; the remove batch FREEs the nodes no longer
// in the target.
//
// Units: PlanDiff::new_records and target_records are in DPA bytes.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "dpa/dpa_layout.h"
#include "forein/offload/backend.h"

namespace forein::offload::dpa {

struct IndexPlanSettings {
  std::uint64_t budget = kDpaMemoryBytes / 2;  // DPA bytes the index may use
  std::uint64_t image_budget = 0;              // image bytes (0: half the image room)
  std::uint32_t eps_leaf = kDefaultEpsilonLeaf;
  std::uint32_t eps_inner = kDefaultEpsilonInner;
};

// The index over one host level, nodes bottom-up (index leaves first, the
// root last); children are positions in `nodes` until placed.
struct IndexPlan {
  std::vector<IndexNode> nodes;
  std::uint16_t host_level = 0;
  std::size_t boundaries = 0;
  std::size_t leaves = 0;
  std::size_t depth = 0;  // index levels (0: empty)
  std::uint64_t dpa_bytes = 0;
  std::uint64_t image_bytes = 0;
  std::vector<std::vector<std::size_t>> levels;  // positions in `nodes` per index level, ascending
  bool incremental = false;                      // kept up from a previous index
};

// The index over the node table (empty if no level fits): bulk-loaded, or
// kept up from `prev` (may be null) while that stays within twice the bulk
// load's DPA bytes.
IndexPlan plan_index(std::span<const OffloadNode> nodes, const IndexPlanSettings& settings,
                     const IndexPlan* prev = nullptr);

// The index over given boundaries (ascending, distinct) naming `ids` with
// `parents` at host level `level`: bulk-loaded (prev null) or kept up from
// prev, an index over the same host level.
IndexPlan build_index(const std::vector<Word>& keys, const std::vector<PageId>& ids,
                      const std::vector<PageId>& parents, std::uint16_t level, const IndexPlanSettings& settings,
                      const IndexPlan* prev = nullptr);

class DpaPlanner final : public Planner {
 public:
  // eps: the models' error bounds (the paper's defaults; tests use others
  // to make deep indexes of small trees).
  explicit DpaPlanner(const BackendConfig& config, std::uint32_t eps_leaf = kDefaultEpsilonLeaf,
                      std::uint32_t eps_inner = kDefaultEpsilonInner)
      : config_(config), eps_leaf_(eps_leaf), eps_inner_(eps_inner) {}

  PlanDiff plan(const PlanInput& input) override;
  ChangeBatch full_target() const override;
  void reset() override {
    target_.clear();
    root_ = kNoAddress;
    prev_ = IndexPlan{};
  }

  // The target: nodes by DPA address, and the root's address.
  const std::map<std::uint64_t, std::vector<std::byte>>& target() const { return target_; }
  std::uint64_t root() const { return root_; }

 private:
  const BackendConfig config_;
  const std::uint32_t eps_leaf_, eps_inner_;
  std::map<std::uint64_t, std::vector<std::byte>> target_;
  std::uint64_t root_ = kNoAddress;
  IndexPlan prev_;  // the last plan, children as positions
};

}  // namespace forein::offload::dpa

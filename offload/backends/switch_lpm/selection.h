// Resource-aware node selection (FOREIN, section IV-B, Algorithm 1).
//
// A query for a key in leaf L that the LPM table sends to node A (an
// ancestor-or-self of L) touches every node from A down to L. With S the
// set of nodes whose prefixes are installed (the root always in S, free,
// never installed: it is the final fallback), the model's cost is
//   AMA = sum over leaves L of w_L * D_L,
//   D_L = depth(L) - depth(A_L) + 1, A_L = the deepest node of S on L's path
// (depth(root) = 1, so D_L is the full depth when only the root covers L).
// It is a weighted sum, not an average, unless the weights sum to 1.
//
// Greedy (select_nodes), as this code reads the paper:
//  * Each step adds the node with the largest AMA reduction, as the paper
//    ranks (SelectionRank::kReduction, the default); kReductionPerEntry
//    ranks by reduction per LPM entry instead, the usual knapsack greedy.
//  * A node whose cost does not fit the remaining budget is skipped and the
//    search continues with the next best (the paper stops at the first
//    node that does not fit; skipping keeps filling the table with cheaper
//    nodes and never does worse). A skipped node is reconsidered when a
//    removal refunds entries.
//  * After adding n*, its nearest selected ancestor A (not the root) leaves
//    S only when A no longer reduces AMA for any leaf, i.e. every leaf with
//    positive weight under A is now covered by a deeper selected node. The
//    paper removes A unconditionally "to prevent redundant offloading on the
//    same path"; doing so when A still serves other leaves would raise AMA,
//    so the removal is read as reclaiming A's entries once they are
//    redundant. A's cost is refunded.
//  * The search ends when no node with a positive reduction fits.
// Reductions only shrink as S grows (and a removal changes none, since the
// removed node served no weight), so a max-heap of stale reductions is
// re-evaluated lazily: a popped node whose fresh reduction is below its
// stored one is pushed back. Each evaluation walks one root path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "forein/page_store.h"

namespace forein::offload {

struct TreeNodeDesc {
  PageId id = kNoPage;
  std::int32_t parent = -1;  // index of the parent in the node table; -1 for the root
  std::uint16_t level = 0;   // 0 = leaf (informational; leaves are the childless nodes)
  std::uint32_t cost = 0;    // c_i: LPM entries needed to install the node
  double weight = 0;         // sampled accesses; only leaves' weights enter AMA
};

// A validated node table plus what the algorithms derive from it.
class SelectionTree {
 public:
  // Throws InvalidArgument unless there is exactly one root, every parent
  // index is in range, every node is reachable from the root, and every
  // weight is finite and >= 0.
  explicit SelectionTree(std::vector<TreeNodeDesc> nodes);

  std::size_t size() const { return nodes_.size(); }
  const TreeNodeDesc& node(std::size_t i) const { return nodes_[i]; }
  const std::vector<TreeNodeDesc>& nodes() const { return nodes_; }
  std::size_t root() const { return root_; }
  std::uint32_t depth(std::size_t i) const { return depth_[i]; }  // root = 1
  bool is_leaf(std::size_t i) const { return child_count_[i] == 0; }
  // Every node after its parent (breadth first from the root).
  const std::vector<std::size_t>& top_down_order() const { return order_; }

 private:
  std::vector<TreeNodeDesc> nodes_;
  std::size_t root_ = 0;
  std::vector<std::uint32_t> depth_;
  std::vector<std::uint32_t> child_count_;
  std::vector<std::size_t> order_;
};

enum class SelectionRank : std::uint8_t {
  kReduction,          // Algorithm 1: largest AMA reduction first
  kReductionPerEntry,  // largest reduction / cost first (cost 0 ranks first)
};

struct SelectionOptions {
  std::uint64_t budget = 73000;  // M, in LPM entries
  SelectionRank rank = SelectionRank::kReduction;
  // In S from the start with their cost charged, and never removed (the
  // bottom-line layer, hot leaves). Throws InvalidArgument if they alone
  // exceed the budget.
  std::vector<std::size_t> pinned;
  // Never selected (e.g. nodes whose hollow-free cover is empty: installing
  // them would cost nothing and redirect nothing).
  std::vector<std::size_t> excluded;
};

struct Selection {
  std::vector<std::size_t> installed;  // S without the root, ascending node indices
  std::uint64_t cost = 0;              // sum of their costs (<= budget)
  double ama = 0;                      // compute_ama(tree, installed)
};

Selection select_nodes(const SelectionTree& tree, const SelectionOptions& options);

// AMA of S = {root} + selected (indices; duplicates and the root allowed).
double compute_ama(const SelectionTree& tree, std::span<const std::size_t> selected);

}  // namespace forein::offload

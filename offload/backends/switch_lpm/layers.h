// FOREIN's layered policy (section V-C): which prefixes go into the LPM
// table, built from the manager's node table.
//
//   root        no entries (unless the bottom line is the root's level, in
//               a tree too shallow for anything else); the final fallback
//   bottom line every node of one level (default 1, the lowest inner
//               level), word-space gaps merged into the left neighbour, so
//               every word matches some entry
//   main        greedy-selected nodes below that level, hollow prefixes
//               omitted
//   hot leaves  the most accessed leaves, pinned before the greedy runs
//
// Layers coexist in one longest-prefix-match table. A node's interval lies
// inside its ancestors' intervals, and each prefix of a minimal cover is the
// largest aligned block inside its interval that contains it, so for any
// word the prefix from a deeper node is at least as long as the one from its
// ancestor: the more specific main or hot-leaf entry wins, and the bottom
// line answers only words no deeper entry matches (alien keys, hollow
// zones). Where two layers produce the very same prefix, only the deeper
// node's entry is kept: that prefix lies wholly inside the deeper node.
//
// Gaps go to the left neighbour because a host that lands left of the key
// recovers by moving right along sibling links, while landing right of it
// forces a fallback.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "forein/node_interval.h"
#include "forein/offload/plan.h"
#include "switch_lpm/lpm_entry.h"
#include "switch_lpm/selection.h"

namespace forein::offload {

struct LayerOptions {
  std::uint64_t budget = 73000;  // LPM entries for all layers together
  // Clamped to the tree's top level (a one-level tree uses its leaves). If
  // the layer does not fit the budget, the next level up is tried.
  std::uint16_t bottom_line_level = 1;
  std::size_t hot_leaves = 0;  // how many of the heaviest leaves to pin
};

struct LayeredEntries {
  std::vector<LpmEntry> entries;  // distinct prefixes, ascending (prefix_less)
  std::uint16_t bottom_line_level = 0;
  bool has_bottom_line = false;
  std::size_t bottom_line_entries = 0;
  std::size_t hot_leaf_entries = 0;
  std::size_t main_entries = 0;
  // S as indices into the table: bottom line + hot leaves + main, with the
  // modelled AMA. cost counts entries before the per-prefix dedup, so
  // entries.size() <= selection.cost <= budget.
  Selection selection;
};

// Incremental hollow-prefix elimination: the size of each node's
// hollow-free cover (its cost), kept between plans over the same key words.
// A node whose interval did not change keeps its cost; the others, and
// every node after clear(), are covered and searched again. The owner
// clears it whenever the words change (a cover's hollowness depends on
// them). A plan over a large tree driven by samples alone (1e8 keys:
// 550,000 nodes) then costs no cover and no word search per node.
class CoverCostCache {
 public:
  void clear() { costs_.clear(); }
  // The cost of `interval`'s hollow-free cover over `sorted_present_words`.
  std::uint32_t cost(const NodeInterval& interval, std::span<const Word> sorted_present_words);
  // The cover itself, kept too (asked for the selected nodes, a set that
  // moves little between plans); valid until the next call.
  const std::vector<Prefix>& cover(const NodeInterval& interval, std::span<const Word> sorted_present_words);
  // Once a plan, after the costs were asked: forgets the nodes that were
  // not asked for since the last prune (gone from the table) once they
  // outnumber the ones that were, and the covers the last plan did not ask
  // for (so the covers kept are about one selection's).
  void prune();
  std::size_t size() const { return costs_.size(); }
  // Covers computed (a node not kept, or whose interval changed).
  std::uint64_t misses() const { return misses_; }

 private:
  struct Cost {
    Word lo = 0;
    Word hi = 0;
    bool hi_inf = false;
    bool known = false;       // cost is the cover's of [lo, hi)
    bool has_cover = false;   // and cover is that cover
    bool seen = false;        // asked for since the last prune
    std::uint32_t cost = 0;
    std::uint64_t cover_plan = 0;  // the plan that last asked for the cover
    std::vector<Prefix> cover;
  };
  // The entry of interval's node, made current for interval.
  Cost& entry(const NodeInterval& interval);
  std::unordered_map<PageId, Cost> costs_;
  std::size_t seen_ = 0;
  std::uint64_t plan_ = 0;  // prune() calls: one a plan
  std::uint64_t misses_ = 0;
};

// Throws InvalidArgument for a malformed table (see SelectionTree).
// Indices in the result's selection are indices into `table`.
// `sorted_present_words`: the words of the
// keys in the tree, ascending (used to drop hollow prefixes). `costs`: the
// covers' sizes from earlier plans over the same words (null: none kept).
LayeredEntries build_layered_entries(std::span<const OffloadNode> table,
                                     std::span<const Word> sorted_present_words,
                                     const LayerOptions& options = {}, CoverCostCache* costs = nullptr);

// The bottom-line cover of one level: each non-empty node's interval
// stretched to the next node's lo (the first from 0, the last to 2^64 - 1),
// covered without dropping hollow prefixes. Overlapping intervals (a stale
// table) are cut at the right neighbour's lo. Ascending.
std::vector<LpmEntry> bottom_line_entries(std::span<const OffloadNode> table, std::uint16_t level);

}  // namespace forein::offload

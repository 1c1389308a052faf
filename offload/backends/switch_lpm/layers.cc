#include "switch_lpm/layers.h"

#include <algorithm>
#include <limits>
#include <unordered_map>

namespace forein::offload {

const char* to_string(Layer layer) {
  switch (layer) {
    case Layer::kBottomLine: return "bottom-line";
    case Layer::kMain: return "main";
    case Layer::kHotLeaf: return "hot-leaf";
  }
  return "?";
}

namespace {

constexpr Word kMaxWord = std::numeric_limits<Word>::max();

void append_entries(std::vector<LpmEntry>& out, const std::vector<Prefix>& prefixes,
                    const NodeInterval& interval, Layer layer) {
  for (const Prefix& p : prefixes) {
    out.push_back(LpmEntry{p, interval.node, interval.level, layer, interval.version});
  }
}

std::vector<Prefix> hollow_free_cover(const NodeInterval& interval, std::span<const Word> words) {
  return drop_hollow(prefix_cover(interval), words);
}

}  // namespace

CoverCostCache::Cost& CoverCostCache::entry(const NodeInterval& interval) {
  Cost& c = costs_[interval.node];
  if (!c.seen) {
    c.seen = true;
    ++seen_;
  }
  if (!(c.known && c.lo == interval.lo && c.hi == interval.hi && c.hi_inf == interval.hi_inf)) {
    c.known = false;
    c.has_cover = false;
    c.cover.clear();
    c.lo = interval.lo;
    c.hi = interval.hi;
    c.hi_inf = interval.hi_inf;
  }
  return c;
}

std::uint32_t CoverCostCache::cost(const NodeInterval& interval, std::span<const Word> words) {
  Cost& c = entry(interval);
  if (!c.known) {
    ++misses_;
    c.known = true;
    c.cost = static_cast<std::uint32_t>(hollow_free_cover(interval, words).size());
  }
  return c.cost;
}

const std::vector<Prefix>& CoverCostCache::cover(const NodeInterval& interval, std::span<const Word> words) {
  Cost& c = entry(interval);
  c.cover_plan = plan_;
  if (!c.has_cover) {
    if (!c.known) ++misses_;
    c.cover = hollow_free_cover(interval, words);
    c.cost = static_cast<std::uint32_t>(c.cover.size());
    c.known = c.has_cover = true;
  }
  return c.cover;
}

void CoverCostCache::prune() {
  if (costs_.size() > 2 * seen_ + 1024) {
    std::erase_if(costs_, [](const auto& entry) { return !entry.second.seen; });
  }
  for (auto& [node, c] : costs_) {
    c.seen = false;
    if (c.has_cover && c.cover_plan < plan_) {
      c.has_cover = false;
      std::vector<Prefix>().swap(c.cover);
    }
  }
  seen_ = 0;
  ++plan_;
}

std::vector<LpmEntry> bottom_line_entries(std::span<const OffloadNode> table, std::uint16_t level) {
  std::vector<std::size_t> members;
  for (std::size_t i = 0; i < table.size(); ++i) {
    if (table[i].interval.level == level && !table[i].interval.empty()) members.push_back(i);
  }
  std::sort(members.begin(), members.end(), [&](std::size_t a, std::size_t b) {
    const NodeInterval& x = table[a].interval;
    const NodeInterval& y = table[b].interval;
    return x.lo != y.lo ? x.lo < y.lo : x.node < y.node;
  });
  std::vector<LpmEntry> entries;
  for (std::size_t k = 0; k < members.size(); ++k) {
    const NodeInterval& interval = table[members[k]].interval;
    const Word lo = k == 0 ? 0 : interval.lo;
    Word last = kMaxWord;
    if (k + 1 < members.size()) {
      const Word next_lo = table[members[k + 1]].interval.lo;
      if (next_lo <= lo) continue;  // same lo as its right neighbour: owns nothing
      last = next_lo - 1;
    }
    append_entries(entries, prefix_cover(lo, last), interval, Layer::kBottomLine);
  }
  return entries;
}

LayeredEntries build_layered_entries(std::span<const OffloadNode> table,
                                     std::span<const Word> sorted_present_words,
                                     const LayerOptions& options, CoverCostCache* costs) {
  std::vector<TreeNodeDesc> descs(table.size());
  std::uint16_t top_level = 0;
  for (std::size_t i = 0; i < table.size(); ++i) {
    const NodeInterval& interval = table[i].interval;
    descs[i] = TreeNodeDesc{interval.node, table[i].parent, interval.level, 0, table[i].weight};
    top_level = std::max(top_level, interval.level);
  }

  LayeredEntries result;

  // Bottom line: the requested level, or the lowest one above it that fits.
  std::vector<LpmEntry> bottom;
  for (unsigned level = std::min(options.bottom_line_level, top_level); level <= top_level; ++level) {
    bottom = bottom_line_entries(table, static_cast<std::uint16_t>(level));
    if (bottom.size() <= options.budget) {
      result.has_bottom_line = !bottom.empty();
      result.bottom_line_level = static_cast<std::uint16_t>(level);
      break;
    }
    bottom.clear();
  }

  // Costs: bottom-line nodes pay for their stretched cover, the rest for
  // their hollow-free cover (its size, kept in `costs` between plans over
  // the same words; the covers themselves are made for the selected nodes
  // only). Nodes with no present word would install nothing.
  std::vector<char> in_bottom(table.size(), 0);
  SelectionOptions selection_options;
  selection_options.budget = options.budget;
  std::unordered_map<PageId, std::uint32_t> bottom_count;
  for (const LpmEntry& entry : bottom) ++bottom_count[entry.node];
  std::uint64_t root_bottom_cost = 0;  // the root is in S for free; charge it here
  for (std::size_t i = 0; i < table.size() && result.has_bottom_line; ++i) {
    if (table[i].interval.level != result.bottom_line_level) continue;
    const auto found = bottom_count.find(table[i].interval.node);
    if (found == bottom_count.end()) continue;
    in_bottom[i] = 1;
    descs[i].cost = found->second;
    if (table[i].parent < 0) {
      root_bottom_cost = found->second;
    } else {
      selection_options.pinned.push_back(i);
    }
  }
  selection_options.budget -= root_bottom_cost;
  for (std::size_t i = 0; i < table.size(); ++i) {
    if (in_bottom[i]) continue;
    descs[i].cost = costs != nullptr
                        ? costs->cost(table[i].interval, sorted_present_words)
                        : static_cast<std::uint32_t>(
                              hollow_free_cover(table[i].interval, sorted_present_words).size());
    if (descs[i].cost == 0) selection_options.excluded.push_back(i);
  }
  if (costs != nullptr) costs->prune();
  SelectionTree tree(std::move(descs));

  // Hot leaves: heaviest first, each if it still fits.
  std::uint64_t left = options.budget - bottom.size();
  std::vector<std::size_t> leaves;
  for (std::size_t i = 0; i < tree.size(); ++i) {
    if (tree.is_leaf(i) && !in_bottom[i] && tree.node(i).weight > 0 && tree.node(i).cost != 0) {
      leaves.push_back(i);
    }
  }
  std::sort(leaves.begin(), leaves.end(), [&](std::size_t a, std::size_t b) {
    return tree.node(a).weight != tree.node(b).weight ? tree.node(a).weight > tree.node(b).weight
                                                      : a < b;
  });
  // When every leaf weighs the same (no sampled accesses: each has only
  // the prior weight) none is heavier: pinning any would be arbitrary.
  bool uniform = true;
  for (std::size_t i = 0, first = tree.size(); i < tree.size() && uniform; ++i) {
    if (!tree.is_leaf(i)) continue;
    if (first == tree.size()) first = i;
    uniform = tree.node(i).weight == tree.node(first).weight;
  }
  if (uniform) leaves.clear();
  std::vector<char> hot(table.size(), 0);
  std::size_t hot_count = 0;
  for (std::size_t i : leaves) {
    if (hot_count == options.hot_leaves) break;
    if (tree.node(i).cost > left) continue;
    left -= tree.node(i).cost;
    hot[i] = 1;
    ++hot_count;
    selection_options.pinned.push_back(i);
  }

  result.selection = select_nodes(tree, selection_options);
  result.selection.cost += root_bottom_cost;

  std::vector<LpmEntry> entries = std::move(bottom);
  for (std::size_t i : result.selection.installed) {
    if (in_bottom[i]) continue;
    const Layer layer = hot[i] ? Layer::kHotLeaf : Layer::kMain;
    if (costs != nullptr) {
      append_entries(entries, costs->cover(table[i].interval, sorted_present_words), table[i].interval, layer);
    } else {
      append_entries(entries, hollow_free_cover(table[i].interval, sorted_present_words), table[i].interval, layer);
    }
  }
  // One entry per prefix; on a tie the deeper node's (see layers.h).
  std::stable_sort(entries.begin(), entries.end(), [](const LpmEntry& a, const LpmEntry& b) {
    if (!(a.prefix == b.prefix)) return prefix_less(a.prefix, b.prefix);
    return a.level < b.level;
  });
  entries.erase(std::unique(entries.begin(), entries.end(),
                            [](const LpmEntry& a, const LpmEntry& b) { return a.prefix == b.prefix; }),
                entries.end());
  for (const LpmEntry& entry : entries) {
    switch (entry.layer) {
      case Layer::kBottomLine: ++result.bottom_line_entries; break;
      case Layer::kHotLeaf: ++result.hot_leaf_entries; break;
      case Layer::kMain: ++result.main_entries; break;
    }
  }
  result.entries = std::move(entries);
  return result;
}

}  // namespace forein::offload

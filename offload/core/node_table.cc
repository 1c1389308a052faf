#include "core/node_table.h"

#include <algorithm>
#include <map>
#include <utility>

namespace forein::offload {

void NodeTable::apply(const NodeEvent& event) {
  const NodeInterval& iv = event.interval;
  if (iv.node == kNoPage) return;
  auto [it, inserted] = slots_.try_emplace(iv.node);
  Slot& slot = it->second;
  if (!inserted && iv.version <= slot.interval.version) return;  // stale or already seen
  const bool was_live = !inserted && slot.live;
  slot.interval = iv;
  if (event.kind == NodeEventKind::kDeleted) {
    slot.live = false;
    slot.weight = 0;
    if (was_live) {
      --live_;
      newly_dead_.push_back(iv.node);
    }
    return;
  }
  // A split or range change keeps the node's heat; a (re)created page starts cold.
  if (event.kind == NodeEventKind::kCreated) slot.weight = 0;
  slot.live = true;
  if (!was_live) ++live_;
}

namespace {

bool same_interval(const NodeInterval& a, const NodeInterval& b) {
  return a.index == b.index && a.node == b.node && a.level == b.level && a.lo == b.lo &&
         a.hi == b.hi && a.hi_inf == b.hi_inf && a.version == b.version;
}

}  // namespace

bool NodeTable::replace_all(std::span<const NodeInterval> nodes) {
  std::unordered_map<PageId, Slot> next;
  next.reserve(nodes.size());
  // Unchanged: every given node was live with the same interval, no node
  // is given twice, and no other node was live (counted below).
  bool changed = false;
  bool weighted = false;
  for (const NodeInterval& iv : nodes) {
    if (iv.node == kNoPage) continue;
    Slot& slot = next[iv.node];
    if (slot.live) changed = true;  // given twice
    slot.interval = iv;
    slot.live = true;
    const auto old = slots_.find(iv.node);
    if (old == slots_.end() || !old->second.live || !same_interval(old->second.interval, iv)) {
      changed = true;
    }
    if (old != slots_.end() && old->second.live && old->second.interval.level == iv.level) {
      slot.weight = old->second.weight;
      weighted = weighted || slot.weight != 0;
    }
  }
  for (const auto& [id, slot] : slots_) {
    if (slot.live && !next.contains(id)) {
      newly_dead_.push_back(id);
      changed = true;
    }
  }
  slots_ = std::move(next);
  live_ = slots_.size();
  has_weight_ = weighted;
  return changed;
}

std::vector<PageId> NodeTable::take_newly_dead() {
  std::vector<PageId> dead;
  for (PageId id : newly_dead_) {
    if (!is_live(id)) dead.push_back(id);
  }
  newly_dead_.clear();
  std::sort(dead.begin(), dead.end());
  dead.erase(std::unique(dead.begin(), dead.end()), dead.end());
  return dead;
}

bool NodeTable::is_live(PageId id) const {
  const auto it = slots_.find(id);
  return it != slots_.end() && it->second.live;
}

void NodeTable::decay(double factor, double negligible) {
  if (!has_weight_) return;  // every weight is 0: nothing to do
  bool weighted = false;
  for (auto& [id, slot] : slots_) {
    slot.weight *= factor;
    if (slot.weight < negligible) slot.weight = 0;
    weighted = weighted || slot.weight != 0;
  }
  has_weight_ = weighted;
}

void NodeTable::add_accesses(std::span<const Word> words) {
  if (words.empty()) return;
  std::vector<std::pair<Word, Slot*>> leaves;  // non-empty live leaves by lo
  for (auto& [id, slot] : slots_) {
    if (slot.live && slot.interval.level == 0 && !slot.interval.empty()) {
      leaves.emplace_back(slot.interval.lo, &slot);
    }
  }
  if (leaves.empty()) return;
  std::sort(leaves.begin(), leaves.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (Word w : words) {
    auto it = std::upper_bound(leaves.begin(), leaves.end(), w,
                               [](Word x, const auto& leaf) { return x < leaf.first; });
    if (it != leaves.begin()) --it;  // the leaf with the largest lo <= w
    it->second->weight += 1;
  }
  has_weight_ = true;
}

namespace {

// The node of `candidates` (non-empty intervals of one level, by lo) that
// holds `w`, or else the nearest one to its left, or else the first.
std::size_t owner_of(Word w, const std::vector<std::size_t>& candidates,
                     const std::vector<OffloadNode>& table) {
  auto it = std::upper_bound(candidates.begin(), candidates.end(), w, [&](Word x, std::size_t i) {
    return x < table[i].interval.lo;
  });
  return it == candidates.begin() ? candidates.front() : *(it - 1);
}

}  // namespace

std::vector<OffloadNode> NodeTable::build(double prior_weight) const {
  std::vector<OffloadNode> table;
  table.reserve(live_ + 1);
  std::map<std::uint16_t, std::vector<std::size_t>> by_level;
  // By page id, so that equal inputs give equal tables (and selections).
  std::vector<const Slot*> live;
  for (const auto& [id, slot] : slots_) {
    if (slot.live) live.push_back(&slot);
  }
  std::sort(live.begin(), live.end(),
            [](const Slot* a, const Slot* b) { return a->interval.node < b->interval.node; });
  for (const Slot* s : live) {
    const Slot& slot = *s;
    OffloadNode node;
    node.interval = slot.interval;
    node.weight = slot.weight + (slot.interval.level == 0 ? prior_weight : 0.0);
    by_level[slot.interval.level].push_back(table.size());
    table.push_back(node);
  }
  if (table.empty()) return table;

  // Parents: each level hangs under the next level present above it.
  for (auto level = by_level.begin(); std::next(level) != by_level.end(); ++level) {
    const std::vector<std::size_t>& up = std::next(level)->second;
    std::vector<std::size_t> candidates;
    for (std::size_t i : up) {
      if (!table[i].interval.empty()) candidates.push_back(i);
    }
    if (candidates.empty()) candidates.push_back(up.front());
    std::sort(candidates.begin(), candidates.end(), [&](std::size_t a, std::size_t b) {
      return table[a].interval.lo < table[b].interval.lo;
    });
    for (std::size_t child : level->second) {
      table[child].parent = static_cast<std::int32_t>(owner_of(table[child].interval.lo, candidates, table));
    }
  }

  const auto& [top_level, top] = *by_level.rbegin();
  if (top.size() > 1) {
    OffloadNode root;
    root.interval.node = kNoPage;
    root.interval.level = static_cast<std::uint16_t>(top_level + 1);
    root.interval.lo = 0;
    root.interval.hi_inf = true;
    const auto root_index = static_cast<std::int32_t>(table.size());
    for (std::size_t i : top) table[i].parent = root_index;
    table.push_back(root);
  }
  return table;
}

}  // namespace forein::offload

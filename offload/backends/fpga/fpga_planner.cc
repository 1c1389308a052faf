#include "fpga/fpga_planner.h"

#include <algorithm>
#include <unordered_map>

#include "fpga/fpga_batch.h"
#include "fpga/fpga_image.h"

namespace forein::offload::fpga {

namespace {

constexpr std::size_t kNone = ~std::size_t{0};

}  // namespace

CachePlan plan_cache(std::span<const OffloadNode> nodes, const CachePlanSettings& settings) {
  CachePlan plan;
  const std::size_t n = nodes.size();
  // Children (non-empty intervals under a valid parent), ascending by lo.
  std::vector<std::vector<std::size_t>> children(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::int32_t p = nodes[i].parent;
    if (p >= 0 && static_cast<std::size_t>(p) < n && static_cast<std::size_t>(p) != i &&
        !nodes[i].interval.empty() && nodes[i].interval.node != kNoPage) {
      children[static_cast<std::size_t>(p)].push_back(i);
    }
  }
  for (auto& c : children) {
    std::stable_sort(c.begin(), c.end(), [&](std::size_t a, std::size_t b) {
      return nodes[a].interval.lo < nodes[b].interval.lo;
    });
    // Equal lo words (a stale table): the later one owns them, as a walk's
    // "last child with lo <= word" would find it.
    std::vector<std::size_t> unique;
    for (std::size_t i : c) {
      if (!unique.empty() && nodes[unique.back()].interval.lo == nodes[i].interval.lo) unique.pop_back();
      unique.push_back(i);
    }
    c = std::move(unique);
  }
  // Subtree weights: the leaf weights beneath, leaves first.
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return nodes[a].interval.level < nodes[b].interval.level;
  });
  std::vector<double> weight(n, 0.0);
  for (std::size_t i : order) {
    if (nodes[i].interval.level == 0) weight[i] += std::max(nodes[i].weight, 0.0);
    const std::int32_t p = nodes[i].parent;
    if (p >= 0 && static_cast<std::size_t>(p) < n && nodes[static_cast<std::size_t>(p)].interval.level >
                                                         nodes[i].interval.level) {
      weight[static_cast<std::size_t>(p)] += weight[i];
    }
  }
  // The root: the highest top-level node (the manager's table has one).
  std::size_t root = kNone;
  for (std::size_t i = 0; i < n; ++i) {
    if (nodes[i].parent >= 0) continue;
    if (root == kNone || nodes[i].interval.level > nodes[root].interval.level) root = i;
  }
  auto cacheable = [&](std::size_t i) {
    return nodes[i].interval.level >= 1 && nodes[i].interval.level <= kMaxLevel && !nodes[i].interval.empty() &&
           !children[i].empty() && children[i].size() <= kMaxChildren;
  };
  if (root == kNone || !cacheable(root)) return plan;

  auto record_of = [&](std::size_t i, bool is_root) {
    CacheRecord r;
    r.node = nodes[i].interval.node;
    r.level = nodes[i].interval.level;
    r.root = is_root;
    r.lo = nodes[i].interval.lo;
    r.hi = nodes[i].interval.hi;
    r.hi_inf = nodes[i].interval.hi_inf;
    if (r.hi_inf) r.hi = 0;
    for (std::size_t c : children[i]) r.children.push_back(CacheChild{nodes[c].interval.lo, nodes[c].interval.node});
    return r;
  };

  const std::uint64_t image_budget =
      settings.image_budget != 0 ? settings.image_budget : kMaxImageBytes / 2;
  std::uint64_t image_bytes = kImageHeaderBytes + record_data_bytes(children[root].size());
  if (image_bytes > image_budget) return plan;
  plan.records.push_back(record_of(root, true));

  // Candidates: interior nodes below the root, heaviest first.
  std::vector<std::size_t> candidates;
  for (std::size_t i = 0; i < n; ++i) {
    if (i != root && nodes[i].interval.node != kNoPage && cacheable(i)) candidates.push_back(i);
  }
  std::sort(candidates.begin(), candidates.end(), [&](std::size_t a, std::size_t b) {
    if (weight[a] != weight[b]) return weight[a] > weight[b];
    if (nodes[a].interval.level != nodes[b].interval.level) {
      return nodes[a].interval.level > nodes[b].interval.level;
    }
    return nodes[a].interval.node < nodes[b].interval.node;
  });
  const std::uint64_t sets = cache_sets(settings.capacity);
  const std::uint64_t slots = std::min(cache_slots(settings.capacity), settings.budget / kNodeBytes);
  std::vector<bool> placed(n, false);
  placed[root] = true;
  std::unordered_map<std::uint64_t, std::uint32_t> ways;
  std::vector<std::size_t> dram;
  for (std::size_t i : candidates) {
    if (dram.size() >= slots) break;
    const std::int32_t p = nodes[i].parent;
    if (p < 0 || static_cast<std::size_t>(p) >= n || !placed[static_cast<std::size_t>(p)]) continue;
    const std::uint64_t record_bytes = kImageIndexBytes + record_data_bytes(children[i].size());
    if (image_bytes + record_bytes > image_budget) continue;
    std::uint32_t& used = ways[cache_set_of(nodes[i].interval.node, sets)];
    if (used >= kCacheWays) {
      ++plan.skipped_ways;
      continue;
    }
    ++used;
    image_bytes += record_bytes;
    placed[i] = true;
    dram.push_back(i);
  }
  std::sort(dram.begin(), dram.end(),
            [&](std::size_t a, std::size_t b) { return nodes[a].interval.node < nodes[b].interval.node; });
  std::vector<std::uint16_t> levels;
  for (std::size_t i : dram) {
    plan.records.push_back(record_of(i, false));
    levels.push_back(nodes[i].interval.level);
  }
  std::sort(levels.begin(), levels.end());
  plan.cached_levels = static_cast<std::size_t>(std::unique(levels.begin(), levels.end()) - levels.begin());
  plan.dram_nodes = dram.size();
  return plan;
}

PlanDiff FpgaPlanner::plan(const PlanInput& input) {
  CachePlanSettings settings;
  settings.capacity = input.capacity != 0 ? input.capacity : kBoardDramBytes;
  settings.budget = std::min(config_.budget != 0 ? config_.budget : settings.capacity, settings.capacity);
  const CachePlan plan = plan_cache(input.nodes, settings);

  PlanDiff diff;
  diff.remove.kind = BatchKind::kRemove;
  std::vector<CacheRecord> add, drop;
  std::map<PageId, CacheRecord> target;
  const std::uint64_t sets = cache_sets(settings.capacity);
  std::unordered_map<std::uint64_t, std::uint32_t> old_ways, fresh_ways;
  for (const auto& [id, r] : target_) {
    if (!r.root) ++old_ways[cache_set_of(id, sets)];
  }
  std::size_t fresh = 0;
  for (const CacheRecord& r : plan.records) {
    target[r.node] = r;
    const auto it = target_.find(r.node);
    if (it == target_.end() || !(it->second == r)) add.push_back(r);
    // A DRAM slot the device does not hold yet.
    if (!r.root && (it == target_.end() || it->second.root)) {
      ++fresh;
      ++fresh_ways[cache_set_of(r.node, sets)];
    }
  }
  for (const auto& [id, r] : target_) {
    if (target.count(id) == 0) drop.push_back(r);
  }
  // Old and new together would overflow a set: clear room first (an
  // invalidation before the new nodes are placed).
  for (const auto& [set, n] : fresh_ways) {
    const auto it = old_ways.find(set);
    if ((it == old_ways.end() ? 0 : it->second) + n > kCacheWays) diff.remove_first = true;
  }
  diff.install = encode_batch(BatchKind::kInstall, add);
  diff.remove = encode_batch(BatchKind::kRemove, drop);
  diff.new_records = fresh * kNodeBytes;
  diff.target_records = plan.dram_nodes * kNodeBytes;
  diff.metrics.push_back({"cached_nodes", static_cast<double>(plan.records.size())});
  diff.metrics.push_back({"dram_nodes", static_cast<double>(plan.dram_nodes)});
  diff.metrics.push_back({"cached_levels", static_cast<double>(plan.cached_levels)});
  diff.metrics.push_back({"skipped_full_sets", static_cast<double>(plan.skipped_ways)});
  target_ = std::move(target);
  return diff;
}

ChangeBatch FpgaPlanner::full_target() const {
  std::vector<CacheRecord> records;
  records.reserve(target_.size());
  for (const auto& [id, r] : target_) {
    if (r.root) records.insert(records.begin(), r);
    else records.push_back(r);
  }
  return encode_batch(BatchKind::kInstall, records);
}

}  // namespace forein::offload::fpga

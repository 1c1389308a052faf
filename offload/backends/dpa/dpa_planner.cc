#include "dpa/dpa_planner.h"

#include <algorithm>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include "dpa/dpa_batch.h"
#include "dpa/dpa_image.h"
#include "dpa/pla.h"

namespace forein::offload::dpa {

namespace {

std::uint64_t node_bytes(const IndexNode& n) {
  return n.leaf ? leaf_node_bytes(n.keys.size()) : inner_node_bytes(n.segments.size(), n.keys.size());
}

// The host nodes of one level: non-empty, ascending by lo, equal lo words
// owned by the later node (as a walk's "last boundary <= word" finds it).
struct LevelNodes {
  std::vector<Word> keys;
  std::vector<PageId> ids, parents;
};

LevelNodes level_nodes(std::span<const OffloadNode> nodes, std::uint16_t level) {
  std::vector<std::size_t> at;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const NodeInterval& n = nodes[i].interval;
    if (n.level == level && n.node != kNoPage && !n.empty()) at.push_back(i);
  }
  std::stable_sort(at.begin(), at.end(),
                   [&](std::size_t a, std::size_t b) { return nodes[a].interval.lo < nodes[b].interval.lo; });
  LevelNodes out;
  for (const std::size_t i : at) {
    PageId parent = kNoPage;
    const std::int32_t p = nodes[i].parent;
    if (p >= 0 && static_cast<std::size_t>(p) < nodes.size() && static_cast<std::size_t>(p) != i &&
        nodes[static_cast<std::size_t>(p)].interval.level == level + 1) {
      parent = nodes[static_cast<std::size_t>(p)].interval.node;
    }
    if (!out.keys.empty() && out.keys.back() == nodes[i].interval.lo) {
      out.ids.back() = nodes[i].interval.node;
      out.parents.back() = parent;
      continue;
    }
    out.keys.push_back(nodes[i].interval.lo);
    out.ids.push_back(nodes[i].interval.node);
    out.parents.push_back(parent);
  }
  return out;
}

// First-fit allocation of DPA addresses in the gaps of [0, capacity).
class Allocator {
 public:
  Allocator(const std::map<std::uint64_t, std::vector<std::byte>>& held, std::uint64_t capacity) {
    std::uint64_t at = 0;
    for (const auto& [address, bytes] : held) {
      if (address > at) add_gap(at, std::min(address, capacity));
      at = std::max(at, address + bytes.size());
    }
    add_gap(at, capacity);
  }
  // kNoAddress if no gap holds `bytes`.
  std::uint64_t allocate(std::uint64_t bytes) {
    for (auto it = gaps_.begin(); it != gaps_.end(); ++it) {
      if (it->second - it->first < bytes) continue;
      const std::uint64_t address = it->first;
      const std::uint64_t end = it->second;
      gaps_.erase(it);
      if (address + bytes < end) gaps_[address + bytes] = end;
      return address;
    }
    return kNoAddress;
  }

 private:
  void add_gap(std::uint64_t from, std::uint64_t to) {
    if (from < to) gaps_[from] = to;
  }
  std::map<std::uint64_t, std::uint64_t> gaps_;  // start -> end
};

}  // namespace

namespace {

// Inner nodes over children `below[a, b)` whose first keys are
// `firsts[a, b)`: PLA segments of at most `max_pivots`, seven a node.
void add_inner(IndexPlan& plan, const std::vector<std::size_t>& below, const std::vector<Word>& firsts,
               std::size_t a, std::size_t b, std::size_t max_pivots, std::uint16_t index_level,
               std::uint16_t host_level, std::uint8_t eps, std::vector<std::size_t>& up) {
  const std::span<const Word> keys(firsts.data() + a, b - a);
  const std::vector<PlaSegment> segs = pla_segments(keys, eps, max_pivots);
  for (std::size_t g = 0; g < segs.size(); g += kInnerSegments) {
    IndexNode n;
    n.leaf = false;
    n.index_level = index_level;
    n.host_level = host_level;
    n.eps = eps;
    for (std::size_t s = g; s < std::min(g + kInnerSegments, segs.size()); ++s) {
      IndexSegment seg;
      seg.model = segs[s].model;
      seg.start = static_cast<std::uint32_t>(n.keys.size());
      seg.pivots = static_cast<std::uint32_t>(segs[s].count);
      n.segments.push_back(seg);
      for (std::size_t k = a + segs[s].begin; k < a + segs[s].begin + segs[s].count; ++k) {
        n.keys.push_back(firsts[k]);
        n.children.push_back(below[k]);  // a position until placed
      }
    }
    up.push_back(plan.nodes.size());
    plan.nodes.push_back(std::move(n));
  }
}

// The new keys [at, end) that fall in the range of the previous level's
// node g (from its first key to the next node's; the first node also takes
// the keys below it).
std::size_t range_end(const IndexPlan& prev, const std::vector<std::size_t>& level, std::size_t g,
                      const std::vector<Word>& keys, std::size_t at) {
  if (g + 1 >= level.size()) return keys.size();
  const Word next = prev.nodes[level[g + 1]].keys.front();
  const auto it = std::lower_bound(keys.begin() + static_cast<std::ptrdiff_t>(at), keys.end(), next);
  return static_cast<std::size_t>(it - keys.begin());
}

bool same_keys(const std::vector<Word>& keys, std::size_t a, std::size_t b, const std::vector<Word>& old) {
  return b - a == old.size() && std::equal(old.begin(), old.end(), keys.begin() + static_cast<std::ptrdiff_t>(a));
}

}  // namespace

IndexPlan build_index(const std::vector<Word>& keys, const std::vector<PageId>& ids,
                      const std::vector<PageId>& parents, std::uint16_t level, const IndexPlanSettings& settings,
                      const IndexPlan* prev) {
  IndexPlan plan;
  plan.host_level = level;
  plan.boundaries = keys.size();
  if (keys.empty()) return plan;
  if (prev != nullptr && (prev->host_level != level || prev->levels.empty())) prev = nullptr;
  plan.incremental = prev != nullptr;
  const auto eps_leaf = static_cast<std::uint8_t>(std::min<std::uint32_t>(settings.eps_leaf, 255));
  const auto eps_inner = static_cast<std::uint8_t>(std::min<std::uint32_t>(settings.eps_inner, 255));
  const auto retrain_leaf = std::max<std::size_t>(1, static_cast<std::size_t>(kDefaultRetrainBound * kLeafCapacity));
  const auto retrain_inner =
      std::max<std::size_t>(1, static_cast<std::size_t>(kDefaultRetrainBound * kSegmentPivots));
  auto slice = [](const auto& v, std::size_t a, std::size_t b) {
    return std::vector<typename std::decay_t<decltype(v)>::value_type>(v.begin() + static_cast<std::ptrdiff_t>(a),
                                                                       v.begin() + static_cast<std::ptrdiff_t>(b));
  };
  auto leaf_of = [&](std::size_t a, std::size_t b, const FixedModel& model) {
    IndexNode n;
    n.leaf = true;
    n.host_level = level;
    n.eps = eps_leaf;
    n.model = model;
    n.keys = slice(keys, a, b);
    n.nodes = slice(ids, a, b);
    n.parents = slice(parents, a, b);
    plan.nodes.push_back(std::move(n));
  };
  auto add_leaves = [&](std::size_t a, std::size_t b, std::size_t max_count) {
    const std::span<const Word> part(keys.data() + a, b - a);
    for (const PlaSegment& s : pla_segments(part, eps_leaf, max_count)) leaf_of(a + s.begin, a + s.begin + s.count, s.model);
  };
  // Index leaves. Bulk load: the greedy PLA's segments of at most 128
  // boundaries. Against a previous index over the same level: each old
  // leaf's range keeps its leaf if its boundaries are the same (the model
  // too; the payload is refreshed), is retrained as one leaf if one model
  // fits, and is split into segments of at most the retrain bound (a
  // quarter of 128) otherwise (3.2.1).
  if (prev == nullptr) {
    add_leaves(0, keys.size(), kLeafCapacity);
  } else {
    const std::vector<std::size_t>& old = prev->levels[0];
    std::size_t at = 0;
    for (std::size_t g = 0; g < old.size() && at < keys.size(); ++g) {
      const std::size_t end = std::max(at, range_end(*prev, old, g, keys, at));
      if (end == at) continue;
      const IndexNode& o = prev->nodes[old[g]];
      FixedModel m;
      if (same_keys(keys, at, end, o.keys)) {
        leaf_of(at, end, o.model);
      } else if (end - at <= kLeafCapacity && fit_one(std::span<const Word>(keys.data() + at, end - at), eps_leaf, &m)) {
        leaf_of(at, end, m);
      } else {
        add_leaves(at, end, retrain_leaf);
      }
      at = end;
    }
    if (at < keys.size()) add_leaves(at, keys.size(), retrain_leaf);
  }
  plan.leaves = plan.nodes.size();
  std::vector<std::size_t> below(plan.leaves);
  for (std::size_t i = 0; i < below.size(); ++i) below[i] = i;
  plan.levels.push_back(below);
  std::uint16_t index_level = 0;
  while (below.size() > 1 && index_level + 1 < kMaxIndexDepth) {
    ++index_level;
    std::vector<Word> firsts;
    for (const std::size_t b : below) firsts.push_back(plan.nodes[b].keys.front());
    std::vector<std::size_t> up;
    if (prev == nullptr || prev->levels.size() <= index_level) {
      add_inner(plan, below, firsts, 0, below.size(), kSegmentPivots, index_level, level, eps_inner, up);
    } else {
      // As for leaves: an old node's range keeps its segments if its
      // pivots are the same, is retrained into one node if seven segments
      // hold them, and split (segments of the retrain bound) otherwise.
      const std::vector<std::size_t>& old = prev->levels[index_level];
      std::size_t at = 0;
      for (std::size_t g = 0; g < old.size() && at < firsts.size(); ++g) {
        const std::size_t end = std::max(at, range_end(*prev, old, g, firsts, at));
        if (end == at) continue;
        const IndexNode& o = prev->nodes[old[g]];
        if (same_keys(firsts, at, end, o.keys)) {
          IndexNode n = o;
          n.children = slice(below, at, end);
          up.push_back(plan.nodes.size());
          plan.nodes.push_back(std::move(n));
        } else {
          const std::span<const Word> part(firsts.data() + at, end - at);
          const bool one = pla_segments(part, eps_inner, kSegmentPivots).size() <= kInnerSegments;
          add_inner(plan, below, firsts, at, end, one ? kSegmentPivots : retrain_inner, index_level, level,
                    eps_inner, up);
        }
        at = end;
      }
      if (at < firsts.size()) add_inner(plan, below, firsts, at, firsts.size(), retrain_inner, index_level, level, eps_inner, up);
    }
    plan.levels.push_back(up);
    below = std::move(up);
  }
  plan.depth = std::size_t{index_level} + 1;
  for (const IndexNode& n : plan.nodes) plan.dpa_bytes += node_bytes(n);
  plan.image_bytes = kImageHeaderBytes + plan.nodes.size() * kImageIndexBytes + plan.dpa_bytes;
  return plan;
}

IndexPlan plan_index(std::span<const OffloadNode> nodes, const IndexPlanSettings& settings, const IndexPlan* prev) {
  const std::uint64_t image_budget = settings.image_budget != 0 ? settings.image_budget : kMaxImageBytes / 2;
  for (std::uint16_t level = 0; level <= kMaxHostLevel; ++level) {
    const LevelNodes l = level_nodes(nodes, level);
    if (l.keys.empty()) break;
    IndexPlan plan = build_index(l.keys, l.ids, l.parents, level, settings, nullptr);
    if (prev != nullptr && prev->host_level == level) {
      // Kept up incrementally while it stays within twice the bulk load's size.
      IndexPlan kept = build_index(l.keys, l.ids, l.parents, level, settings, prev);
      if (kept.dpa_bytes <= 2 * plan.dpa_bytes) plan = std::move(kept);
    }
    if (plan.dpa_bytes <= settings.budget && plan.image_bytes <= image_budget) return plan;
  }
  return IndexPlan{};
}

PlanDiff DpaPlanner::plan(const PlanInput& input) {
  const std::uint64_t capacity = input.capacity != 0 ? input.capacity : kDpaMemoryBytes;
  IndexPlanSettings settings;
  settings.budget = std::min(config_.budget != 0 ? config_.budget : capacity / 2, capacity);
  settings.eps_leaf = eps_leaf_;
  settings.eps_inner = eps_inner_;
  IndexPlan plan = plan_index(input.nodes, settings, prev_.nodes.empty() ? nullptr : &prev_);
  IndexPlan kept = plan;  // positions, before placement turns them into addresses

  // Place bottom-up: an unchanged node (same bytes, children's addresses
  // included) keeps its address; a new one takes a free one.
  std::unordered_map<std::string, std::uint64_t> by_content;
  for (const auto& [address, bytes] : target_) {
    by_content.emplace(std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()), address);
  }
  Allocator alloc(target_, capacity);
  std::map<std::uint64_t, std::vector<std::byte>> target;
  std::vector<std::uint64_t> address(plan.nodes.size(), kNoAddress);
  std::vector<Stitch> copies;
  std::uint64_t copied_bytes = 0, total = 0;
  bool placed = true;
  for (std::size_t i = 0; i < plan.nodes.size(); ++i) {
    IndexNode& n = plan.nodes[i];
    for (std::uint64_t& c : n.children) c = address[static_cast<std::size_t>(c)];
    std::vector<std::byte> bytes = encode_node(n);
    const std::string content(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    const auto it = by_content.find(content);
    if (it != by_content.end()) {
      address[i] = it->second;
      by_content.erase(it);
    } else {
      address[i] = alloc.allocate(bytes.size());
      if (address[i] == kNoAddress) {
        placed = false;
        break;
      }
      copies.push_back(Stitch{StitchKind::kCopy, address[i], bytes, 0});
      copied_bytes += bytes.size();
    }
    total += bytes.size();
    target.emplace(address[i], std::move(bytes));
  }
  if (!placed) {  // no room beside the old target (fragmented): hold nothing new
    target.clear();
    copies.clear();
    copied_bytes = total = 0;
    plan = IndexPlan{};
  }
  const std::uint64_t root = plan.nodes.empty() ? kNoAddress : address.back();

  PlanDiff diff;
  std::vector<Stitch> install = std::move(copies);
  if (root != kNoAddress && (!install.empty() || root != root_)) {
    if (install.empty() || std::none_of(install.begin(), install.end(),
                                        [&](const Stitch& s) { return s.address == root; })) {
      // The root kept its bytes but was not the root: re-copy it so the
      // CONNECT names a node of this batch.
      install.push_back(Stitch{StitchKind::kCopy, root, target[root], 0});
    }
    install.push_back(Stitch{StitchKind::kConnect, root, {}, 0});
  }
  std::vector<Stitch> drop;
  for (const auto& [a, bytes] : target_) {
    if (target.count(a) == 0) drop.push_back(Stitch{StitchKind::kFree, a, {}, static_cast<std::uint32_t>(bytes.size())});
  }
  diff.install = encode_batch(BatchKind::kInstall, install);
  diff.remove = encode_batch(BatchKind::kRemove, drop);
  diff.new_records = copied_bytes;
  diff.target_records = total;
  std::size_t inner = 0;
  for (const IndexNode& n : plan.nodes) inner += n.leaf ? 0 : 1;
  diff.metrics.push_back({"index_nodes", static_cast<double>(plan.nodes.size())});
  diff.metrics.push_back({"inner_nodes", static_cast<double>(inner)});
  diff.metrics.push_back({"index_leaves", static_cast<double>(plan.leaves)});
  diff.metrics.push_back({"depth", static_cast<double>(plan.depth)});
  diff.metrics.push_back({"host_level", static_cast<double>(plan.host_level)});
  diff.metrics.push_back({"boundaries", static_cast<double>(plan.boundaries)});
  diff.metrics.push_back({"dpa_bytes", static_cast<double>(total)});
  diff.metrics.push_back({"copied_nodes", static_cast<double>(install.empty() ? 0 : install.size() - 1)});
  diff.metrics.push_back({"copied_bytes", static_cast<double>(copied_bytes)});
  target_ = std::move(target);
  root_ = root;
  prev_ = placed ? std::move(kept) : IndexPlan{};
  return diff;
}

ChangeBatch DpaPlanner::full_target() const {
  std::vector<Stitch> stitches;
  if (root_ == kNoAddress || target_.empty()) return encode_batch(BatchKind::kInstall, stitches);
  stitches.reserve(target_.size() + 1);
  for (const auto& [address, bytes] : target_) stitches.push_back(Stitch{StitchKind::kCopy, address, bytes, 0});
  stitches.push_back(Stitch{StitchKind::kConnect, root_, {}, 0});
  return encode_batch(BatchKind::kInstall, stitches);
}

}  // namespace forein::offload::dpa

#include "fattree/fattree_plan.h"

#include <algorithm>
#include <queue>
#include <string>
#include <utility>

#include "forein/error.h"

namespace forein::offload::fattree {

namespace {

constexpr std::int32_t kNone = -1;

// An edge of the reformed tree: a real tree node or a virtual switch node,
// with the words it covers.
struct Item {
  Word lo = 0;
  Word hi = 0;                  // inclusive
  double weight = 0;
  Address address = 0;
  std::int32_t reformed = kNone;  // the switch node this item is, if it has children
  PageId hint_node = kNoPage;     // the tree node a packet at this item has reached
  std::uint16_t hint_level = 0;
};

struct ReformedNode {
  Address address = 0;
  PageId owner = kNoPage;
  std::uint16_t owner_level = 0;
  std::vector<Item> children;  // ascending, at most kBranches
};

class Reformer {
 public:
  explicit Reformer(std::span<const OffloadNode> nodes) : nodes_(nodes) {
    children_.resize(nodes.size());
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const std::int32_t p = nodes[i].parent;
      if (p >= 0 && static_cast<std::size_t>(p) < nodes.size() && !nodes[i].interval.empty()) {
        children_[static_cast<std::size_t>(p)].push_back(i);
      }
    }
    for (auto& c : children_) {
      std::sort(c.begin(), c.end(), [&](std::size_t a, std::size_t b) {
        return nodes_[a].interval.lo < nodes_[b].interval.lo;
      });
    }
    // Subtree weights, leaves first (a child's level is below its parent's).
    std::vector<std::size_t> order(nodes.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return nodes_[a].interval.level < nodes_[b].interval.level;
    });
    weight_.assign(nodes.size(), 0);
    for (std::size_t i : order) {
      weight_[i] += nodes_[i].weight;
      const std::int32_t p = nodes_[i].parent;
      if (p >= 0 && static_cast<std::size_t>(p) < nodes.size()) {
        weight_[static_cast<std::size_t>(p)] += weight_[i];
      }
    }
  }

  // The reformed items of the top level: the roots (a synthetic root's
  // children in its place), ascending.
  std::vector<Item> roots() {
    std::vector<Item> out;
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
      if (nodes_[i].parent >= 0 || nodes_[i].interval.empty()) continue;
      if (nodes_[i].interval.node == kNoPage) {
        for (std::size_t c : children_[i]) out.push_back(item_of(c));
      } else {
        out.push_back(item_of(i));
      }
    }
    std::sort(out.begin(), out.end(), [](const Item& a, const Item& b) { return a.lo < b.lo; });
    return out;
  }

  std::vector<ReformedNode>& reformed() { return reformed_; }

 private:
  static Word hi_of(const NodeInterval& iv) { return iv.hi_inf ? ~Word{0} : iv.hi - 1; }

  // Node i as an item; an inner node is reformed into switch nodes first.
  Item item_of(std::size_t i) {
    const NodeInterval& iv = nodes_[i].interval;
    Item it;
    it.lo = iv.lo;
    it.hi = hi_of(iv);
    it.weight = weight_[i];
    it.address = real_address(iv.node);
    it.hint_node = iv.node;
    it.hint_level = iv.level;
    if (iv.level > 0 && !children_[i].empty() && iv.node != kNoPage) it.reformed = reform(i);
    return it;
  }

  // Builds node i's 16-ary subtree bottom up; returns its top.
  std::int32_t reform(std::size_t i) {
    const NodeInterval& iv = nodes_[i].interval;
    std::vector<Item> items;
    for (std::size_t c : children_[i]) items.push_back(item_of(c));
    std::uint32_t seq = 0;
    while (items.size() > kBranches) {
      // ceil(n / 16) groups of near-equal size.
      const std::size_t groups = (items.size() + kBranches - 1) / kBranches;
      const std::size_t base = items.size() / groups, extra = items.size() % groups;
      std::vector<Item> up;
      std::size_t at = 0;
      for (std::size_t g = 0; g < groups; ++g) {
        const std::size_t take = base + (g < extra ? 1 : 0);
        std::vector<Item> kids(items.begin() + static_cast<std::ptrdiff_t>(at),
                               items.begin() + static_cast<std::ptrdiff_t>(at + take));
        at += take;
        up.push_back(make_node(virtual_address(iv.node, ++seq), iv, std::move(kids)));
      }
      items = std::move(up);
    }
    Item top = make_node(real_address(iv.node), iv, std::move(items));
    return top.reformed;
  }

  Item make_node(Address address, const NodeInterval& owner, std::vector<Item> kids) {
    Item it;
    it.lo = kids.front().lo;
    it.hi = kids.back().hi;
    for (const Item& k : kids) it.weight += k.weight;
    it.address = address;
    it.hint_node = owner.node;
    it.hint_level = owner.level;
    it.reformed = static_cast<std::int32_t>(reformed_.size());
    reformed_.push_back(ReformedNode{address, owner.node, owner.level, std::move(kids)});
    return it;
  }

  std::span<const OffloadNode> nodes_;
  std::vector<std::vector<std::size_t>> children_;
  std::vector<double> weight_;
  std::vector<ReformedNode> reformed_;
};

NodeRecord record_of(const ReformedNode& n, std::size_t set) {
  NodeRecord r;
  r.set = static_cast<std::uint8_t>(set);
  r.children = static_cast<std::uint8_t>(n.children.size());
  r.owner = n.owner;
  r.owner_level = n.owner_level;
  r.address = n.address;
  r.pivot.fill(kUnusedPivot);
  for (std::size_t i = 0; i < n.children.size(); ++i) {
    // Child i covers (pivot[i], pivot[i+1]]: its first word minus one. The
    // sentinel of a node starting at word 0 stays 0, so word 0 matches no
    // child there and the packet keeps the node it reached.
    const Word lo = n.children[i].lo;
    r.pivot[i] = lo == 0 ? 0 : lo - 1;
    r.child[i] = n.children[i].address;
  }
  return r;
}

// The heaviest first; ties by address, so equal inputs give equal plans.
bool heavier(const Item& a, const Item& b) {
  return a.weight != b.weight ? a.weight > b.weight : a.address < b.address;
}

}  // namespace

void check_settings(const PlanSettings& s) {
  if (s.fat_root_ranges < 1 || s.fat_root_ranges > kFatRootRangeLimit) {
    throw InvalidArgument("fattree: the fat root holds 1 to " + std::to_string(kFatRootRangeLimit) +
                          " ranges, not " + std::to_string(s.fat_root_ranges));
  }
  if (s.layer_nodes > kNodeSetLimit) {
    throw InvalidArgument("fattree: a node set holds at most " + std::to_string(kNodeSetLimit) +
                          " nodes, not " + std::to_string(s.layer_nodes));
  }
  if (s.layers > kNodeSets) {
    throw InvalidArgument("fattree: a k=4 FatTree path has " + std::to_string(kNodeSets) +
                          " node sets, not " + std::to_string(s.layers) + " cached layers");
  }
}

SwitchPlan plan_switches(std::span<const OffloadNode> nodes, const PlanSettings& settings) {
  check_settings(settings);
  SwitchPlan plan;
  Reformer reformer(nodes);
  const std::vector<Item> roots = reformer.roots();
  std::vector<ReformedNode>& reformed = reformer.reformed();
  plan.reformed_nodes = reformed.size();
  if (roots.empty()) return plan;

  // The fat root, greedily: absorb the heaviest reformed node while its
  // children still fit.
  std::vector<bool> absorbed(reformed.size(), false);
  auto by_weight = [](const Item& a, const Item& b) { return heavier(b, a); };
  std::priority_queue<Item, std::vector<Item>, decltype(by_weight)> heap(by_weight);
  for (const Item& r : roots) {
    if (r.reformed != kNone) heap.push(r);
  }
  const std::uint64_t range_limit = std::min<std::uint64_t>(settings.fat_root_ranges, settings.budget);
  std::size_t ranges = roots.size();
  while (!heap.empty()) {
    const Item top = heap.top();
    const ReformedNode& n = reformed[static_cast<std::size_t>(top.reformed)];
    if (ranges + n.children.size() - 1 > range_limit) break;
    heap.pop();
    absorbed[static_cast<std::size_t>(top.reformed)] = true;
    ++plan.absorbed_nodes;
    ranges += n.children.size() - 1;
    for (const Item& c : n.children) {
      if (c.reformed != kNone) heap.push(c);
    }
  }

  // Its ranges: the items just below the absorbed nodes, in key order.
  std::vector<Item> frontier;
  auto emit = [&](auto&& self, const Item& it) -> void {
    if (it.reformed != kNone && absorbed[static_cast<std::size_t>(it.reformed)]) {
      for (const Item& c : reformed[static_cast<std::size_t>(it.reformed)].children) self(self, c);
      return;
    }
    plan.ranges.push_back(RangeRecord{it.lo, it.hi, it.address, it.hint_node, it.hint_level, 0});
    if (it.reformed != kNone) frontier.push_back(it);
  };
  for (const Item& r : roots) emit(emit, r);
  // Several roots are several servers' trees under a super-root: each
  // range names the server of the root it lies under.
  if (roots.size() > 1) {
    for (RangeRecord& r : plan.ranges) {
      std::uint16_t server = 0;
      for (std::size_t s = 0; s < roots.size(); ++s) {
        if (roots[s].lo <= r.lo) server = static_cast<std::uint16_t>(s);
      }
      r.server = server;
    }
  }

  // Layer by layer: the K heaviest of the previous layer's children.
  std::uint64_t room = settings.budget > plan.ranges.size() ? settings.budget - plan.ranges.size() : 0;
  for (std::uint32_t layer = 0; layer < settings.layers && !frontier.empty(); ++layer) {
    const std::size_t keep = static_cast<std::size_t>(
        std::min<std::uint64_t>({settings.layer_nodes, frontier.size(), room}));
    room -= keep;
    std::partial_sort(frontier.begin(), frontier.begin() + static_cast<std::ptrdiff_t>(keep),
                      frontier.end(), heavier);
    frontier.resize(keep);
    std::vector<Item> next;
    std::vector<NodeRecord>& set = plan.sets[layer];
    for (const Item& it : frontier) {
      const ReformedNode& n = reformed[static_cast<std::size_t>(it.reformed)];
      set.push_back(record_of(n, layer));
      for (const Item& c : n.children) {
        if (c.reformed != kNone) next.push_back(c);
      }
    }
    std::sort(set.begin(), set.end(),
              [](const NodeRecord& a, const NodeRecord& b) { return a.address < b.address; });
    frontier = std::move(next);
  }
  return plan;
}

}  // namespace forein::offload::fattree

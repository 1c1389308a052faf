// fattree (Fat-B+Tree) planner, device and image on synthetic trees: the
// reformed 16-ary switch nodes resolve every word to its leaf when all
// fits; under the paper's limits every hint still covers its word; the fat
// root is built greedily by weight; each cached layer holds the heaviest
// children of the layer above; the device keeps the paper's limits all or
// nothing; replanning diffs to nothing when nothing changed.
#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <vector>

#include <catch2/catch.hpp>

#include "fattree/fattree_batch.h"
#include "fattree/fattree_device.h"
#include "fattree/fattree_image.h"
#include "fattree/fattree_plan.h"
#include "fattree/fattree_planner.h"
#include "offload/synthetic_tree.h"
#include "support/seed.h"
#include "support/zipf.h"

using namespace forein;
using namespace forein::offload;
using namespace forein::offload::fattree;
using forein::offload::testing::SyntheticTree;
using forein::offload::testing::build_synthetic_tree;
using forein::offload::testing::random_words;
using forein::testing::test_seed;

namespace {

// Every record of a plan installed on a fresh device.
std::unique_ptr<FattreeDevice> device_of(const SwitchPlan& plan) {
  auto device = std::make_unique<FattreeDevice>();
  std::vector<NodeRecord> nodes;
  for (const auto& s : plan.sets) nodes.insert(nodes.end(), s.begin(), s.end());
  REQUIRE(device->apply(encode_batch(BatchKind::kInstall, plan.ranges, nodes)) == BackendStatus::kOk);
  return device;
}

const NodeInterval* node_by_id(const SyntheticTree& t, PageId id) {
  for (const OffloadNode& n : t.table) {
    if (n.interval.node == id) return &n.interval;
  }
  return nullptr;
}

// Zipf weights over the leaves, in a random order of ranks.
void weigh_leaves(SyntheticTree& t, std::mt19937_64& rng) {
  std::vector<std::size_t> leaves;
  for (std::size_t i = 0; i < t.table.size(); ++i) {
    if (t.table[i].interval.level == 0) leaves.push_back(i);
  }
  std::shuffle(leaves.begin(), leaves.end(), rng);
  for (std::size_t r = 0; r < leaves.size(); ++r) {
    t.table[leaves[r]].weight = 1000.0 / std::pow(static_cast<double>(r + 1), 0.99);
  }
}

}  // namespace

TEST_CASE("fattree: with room for everything, every word resolves to its leaf", "[fattree]") {
  std::mt19937_64 rng(test_seed("fattree exact"));
  // Fan-out 100: each inner node reforms into a 16-ary subtree of switch nodes.
  SyntheticTree t = build_synthetic_tree(random_words(rng, 100000), 16, 100);
  const SwitchPlan plan = plan_switches(t.table, PlanSettings{});
  CHECK(plan.reformed_nodes > plan.absorbed_nodes);
  CHECK(!plan.sets[0].empty());
  CHECK(plan.ranges.size() <= kDefaultFatRootRanges);
  const auto device = device_of(plan);
  const auto image = device->load_image();
  for (std::size_t k = 0; k < t.words.size(); ++k) {
    const Walk w = fattree_walk(image->bytes, t.words[k]);
    REQUIRE(w.matched);
    INFO("word " << t.words[k]);
    CHECK(w.hints.primary.node == t.table[t.leaf_of_key[k]].interval.node);
    CHECK(w.hints.primary.level == 0);
    const NodeInterval* fat = node_by_id(t, w.hints.secondary.node);
    REQUIRE(fat != nullptr);
    CHECK(fat->contains(t.words[k]));
    CHECK(fat->level == w.hints.secondary.level);
  }
}

TEST_CASE("fattree: the walk switch by switch, state handed on as a header, is the whole walk", "[fattree]") {
  std::mt19937_64 rng(test_seed("fattree chain"));
  SyntheticTree t = build_synthetic_tree(random_words(rng, 30000), 16, 4 + rng() % 100);
  weigh_leaves(t, rng);
  PlanSettings s;
  s.fat_root_ranges = 50;
  s.layer_nodes = 40;
  const auto device = device_of(plan_switches(t.table, s));
  const auto image = device->load_image();
  std::size_t deeper = 0;
  for (int i = 0; i < 20000; ++i) {
    // Words of the tree and random ones (outside every range too).
    const Word w = i % 2 == 0 ? t.words[rng() % t.words.size()] : rng();
    const Walk whole = fattree_walk(image->bytes, w);
    // Each switch sees only what the packet carries: the temporary header
    // (matched, server, address) and the hint trailer.
    Walk carried;
    for (std::size_t sw = 0; sw < kSwitchNames.size(); ++sw) {
      Walk next;
      next.matched = carried.matched;
      next.server = carried.server;
      next.address = carried.address;
      next.hints = carried.hints;
      fattree_walk_switch(image->bytes, w, sw, &next);
      if (sw > 0 && next.hints.primary.node != carried.hints.primary.node) ++deeper;
      carried = next;
    }
    INFO("word " << w);
    REQUIRE(carried.matched == whole.matched);
    CHECK(carried.server == whole.server);
    CHECK(carried.address == whole.address);
    CHECK(carried.hints.primary.node == whole.hints.primary.node);
    CHECK(carried.hints.primary.level == whole.hints.primary.level);
    CHECK(carried.hints.secondary.node == whole.hints.secondary.node);
    CHECK(carried.hints.secondary.level == whole.hints.secondary.level);
  }
  // The aggregation and edge switches resolved deeper nodes for some words.
  CHECK(deeper > 0);
}

TEST_CASE("fattree: under small limits every hint covers its word", "[fattree]") {
  std::mt19937_64 rng(test_seed("fattree limits"));
  for (int round = 0; round < 6; ++round) {
    SyntheticTree t = build_synthetic_tree(random_words(rng, 5000 + rng() % 20000), 8 + rng() % 60,
                                           4 + rng() % 200);
    weigh_leaves(t, rng);
    PlanSettings s;
    s.fat_root_ranges = static_cast<std::uint32_t>(1 + rng() % 100);
    s.layer_nodes = static_cast<std::uint32_t>(rng() % 50);
    s.layers = static_cast<std::uint32_t>(rng() % (kNodeSets + 1));
    INFO("round " << round << ": K " << s.fat_root_ranges << ", layer " << s.layer_nodes << " x "
                  << s.layers);
    const SwitchPlan plan = plan_switches(t.table, s);
    CHECK(plan.ranges.size() <= std::max<std::size_t>(s.fat_root_ranges, 1));
    for (std::size_t l = 0; l < kNodeSets; ++l) {
      CHECK(plan.sets[l].size() <= (l < s.layers ? s.layer_nodes : 0));
    }
    const auto device = device_of(plan);
    const auto image = device->load_image();
    for (int probe = 0; probe < 3000; ++probe) {
      const Word w = probe % 2 == 0 ? t.words[rng() % t.words.size()] : rng();
      const StartHints h = fattree_image_hint(image->bytes, w);
      REQUIRE(h.primary.present());
      const NodeInterval* p = node_by_id(t, h.primary.node);
      REQUIRE(p != nullptr);
      CHECK(p->contains(w));
      CHECK(p->level == h.primary.level);
    }
  }
}

TEST_CASE("fattree: the fat root absorbs the heaviest nodes first", "[fattree]") {
  // 16 leaves under 4 inner nodes of 4 under one root; the third inner
  // node's leaves carry most of the weight.
  std::vector<Word> words;
  for (Word i = 1; i <= 16; ++i) words.push_back(i << 40);
  SyntheticTree t = build_synthetic_tree(words, 1, 4);
  for (OffloadNode& n : t.table) {
    if (n.interval.level == 0) n.weight = (n.interval.lo >= (Word{9} << 40) && n.interval.lo < (Word{13} << 40)) ? 50 : 1;
  }
  PlanSettings s;
  s.fat_root_ranges = 7;  // the root's 4 ranges, then one inner node's 4 in place of 1
  s.layers = 0;
  const SwitchPlan plan = plan_switches(t.table, s);
  CHECK(plan.absorbed_nodes == 2);
  REQUIRE(plan.ranges.size() == 7);
  std::size_t leaf_ranges = 0;
  for (const RangeRecord& r : plan.ranges) {
    if (r.hint_level == 0) {
      ++leaf_ranges;
      CHECK(r.lo >= (Word{9} << 40));
      CHECK(r.hi < (Word{13} << 40));
    }
  }
  CHECK(leaf_ranges == 4);
  // Ranges partition word space.
  CHECK(plan.ranges.front().lo == 0);
  CHECK(plan.ranges.back().hi == ~Word{0});
  for (std::size_t i = 1; i < plan.ranges.size(); ++i) CHECK(plan.ranges[i].lo == plan.ranges[i - 1].hi + 1);
}

TEST_CASE("fattree: each cached layer holds the heaviest children of the layer above", "[fattree]") {
  std::mt19937_64 rng(test_seed("fattree layers"));
  SyntheticTree t = build_synthetic_tree(random_words(rng, 60000), 16, 16);
  weigh_leaves(t, rng);
  PlanSettings s;
  s.fat_root_ranges = 50;
  s.layer_nodes = 40;
  s.layers = 4;
  const SwitchPlan plan = plan_switches(t.table, s);
  // Subtree weights and levels of the real nodes (fan-out 16: no virtual ones).
  std::map<Address, double> weight;
  std::map<Address, std::uint16_t> level;
  std::vector<double> w(t.table.size(), 0);
  for (std::size_t i = 0; i < t.table.size(); ++i) {  // children come before parents
    w[i] += t.table[i].weight;
    if (t.table[i].parent >= 0) w[static_cast<std::size_t>(t.table[i].parent)] += w[i];
    weight[t.table[i].interval.node] = w[i];
    level[t.table[i].interval.node] = t.table[i].interval.level;
  }
  std::set<Address> candidates;
  for (const RangeRecord& r : plan.ranges) {
    if (r.hint_level > 0) candidates.insert(r.target);
  }
  for (std::size_t l = 0; l < s.layers; ++l) {
    INFO("layer " << l + 1 << ", " << candidates.size() << " candidates");
    REQUIRE(plan.sets[l].size() == std::min<std::size_t>(s.layer_nodes, candidates.size()));
    std::set<Address> chosen, next;
    double lightest_chosen = 1e300;
    for (const NodeRecord& n : plan.sets[l]) {
      CHECK(candidates.count(n.address) == 1);  // reachable: its parent is cached
      chosen.insert(n.address);
      lightest_chosen = std::min(lightest_chosen, weight[n.address]);
      for (std::size_t c = 0; c < n.children; ++c) {
        if (level[n.child[c]] > 0) next.insert(n.child[c]);
      }
    }
    for (Address c : candidates) {
      if (chosen.count(c) == 0) CHECK(weight[c] <= lightest_chosen);
    }
    candidates = next;
  }
}

TEST_CASE("fattree: the device keeps the paper's limits, all or nothing", "[fattree]") {
  FattreeDevice device;
  std::vector<NodeRecord> nodes;
  for (PageId p = 1; p <= kNodeSetLimit + 1; ++p) {
    NodeRecord n;
    n.set = 2;
    n.children = 1;
    n.owner = p;
    n.owner_level = 1;
    n.address = real_address(p);
    n.pivot.fill(kUnusedPivot);
    n.pivot[0] = 0;
    n.child[0] = real_address(p + 100000);
    nodes.push_back(n);
  }
  CHECK(device.apply(encode_batch(BatchKind::kInstall, {}, nodes)) == BackendStatus::kCapacityExceeded);
  CHECK(device.usage().used == 0);
  nodes.pop_back();
  CHECK(device.apply(encode_batch(BatchKind::kInstall, {}, nodes)) == BackendStatus::kOk);
  CHECK(device.usage().used == kNodeSetLimit);

  std::vector<RangeRecord> ranges;
  for (Word i = 0; i <= kFatRootRangeLimit; ++i) {
    ranges.push_back(RangeRecord{i * 1000, i * 1000 + 999, real_address(7), 7, 0, 0});
  }
  CHECK(device.apply(encode_batch(BatchKind::kInstall, ranges, {})) == BackendStatus::kCapacityExceeded);
  ranges.pop_back();
  CHECK(device.apply(encode_batch(BatchKind::kInstall, ranges, {})) == BackendStatus::kOk);
  CHECK(device.usage().used == kNodeSetLimit + kFatRootRangeLimit);

  // A malformed record (pivots out of order) refuses the whole batch.
  NodeRecord bad = nodes.front();
  bad.set = 0;
  bad.children = 2;
  bad.pivot[1] = 0;
  bad.child[1] = real_address(9);
  CHECK(device.apply(encode_batch(BatchKind::kInstall, {}, {bad})) == BackendStatus::kInvalidEntry);
  CHECK(device.usage().used == kNodeSetLimit + kFatRootRangeLimit);

  // Usage by part, read off the image.
  const auto rows = fattree_image_usage(device.load_image()->bytes, kCapacity);
  std::map<std::string, std::uint64_t> used;
  for (const UsageRow& r : rows) used[r.device + "/" + r.resource] = r.used;
  CHECK(used["all switches/in-switch nodes (fat-root ranges + regular nodes)"] ==
        kNodeSetLimit + kFatRootRangeLimit);
  CHECK(used["core switch/fat root"] == kFatRootRangeLimit);
  CHECK(used["aggregation switch/node set 3"] == kNodeSetLimit);
  CHECK(used["aggregation switch/pipeline"] == kStagesPerPart);
  CHECK(used["core switch/pipeline"] == kStagesPerPart);
  CHECK(used["edge switch/pipeline"] == 0);
  CHECK(fattree_image_records(device.load_image()->bytes).size() == kNodeSetLimit + kFatRootRangeLimit);
  CHECK(device.load_image()->bytes.size() <= fattree_image_max_bytes(kCapacity));
}

TEST_CASE("fattree: replanning diffs to nothing, and diffs rebuild the same image", "[fattree]") {
  std::mt19937_64 rng(test_seed("fattree diff"));
  SyntheticTree t = build_synthetic_tree(random_words(rng, 30000), 32, 120);
  weigh_leaves(t, rng);
  BackendConfig config;
  config.set("layer_nodes", 30);
  FattreePlanner planner(config);
  FattreeDevice device;
  auto apply = [&](PlanDiff& d) {
    REQUIRE(device.apply(d.install) == BackendStatus::kOk);
    REQUIRE(device.apply(d.remove) == BackendStatus::kOk);
  };
  PlanDiff first = planner.plan(PlanInput{t.table, nullptr, kCapacity});
  CHECK(first.install.records == first.target_records);
  apply(first);
  PlanDiff again = planner.plan(PlanInput{t.table, nullptr, kCapacity});
  CHECK(again.install.records == 0);
  CHECK(again.remove.records == 0);
  // The workload drifts: other leaves become hot.
  weigh_leaves(t, rng);
  PlanDiff drift = planner.plan(PlanInput{t.table, nullptr, kCapacity});
  CHECK(drift.install.records > 0);
  apply(drift);
  FattreeDevice fresh;
  REQUIRE(fresh.apply(planner.full_target()) == BackendStatus::kOk);
  CHECK(fresh.load_image()->bytes == device.load_image()->bytes);
}

TEST_CASE("fattree: several roots are several servers under a super-root", "[fattree]") {
  std::mt19937_64 rng(test_seed("fattree servers"));
  std::vector<OffloadNode> all;
  const std::vector<Word> words = random_words(rng, 8000);
  // Four servers, each a tree over a quarter of word space.
  for (int server = 0; server < 4; ++server) {
    std::vector<Word> part;
    const Word lo = Word{static_cast<Word>(server)} << 62, hi = lo + ((Word{1} << 62) - 1);
    for (Word w : words) {
      if (w > lo && w <= hi) part.push_back(w);
    }
    SyntheticTree t = build_synthetic_tree(part, 32, 40);
    const std::int32_t base = static_cast<std::int32_t>(all.size());
    for (OffloadNode n : t.table) {
      n.interval.node += static_cast<PageId>(server * 100000);
      if (n.interval.lo < lo) n.interval.lo = lo;
      if (n.interval.hi_inf && server < 3) {
        n.interval.hi_inf = false;
        n.interval.hi = hi + 1;
      }
      if (n.parent >= 0) n.parent += base;
      all.push_back(n);
    }
  }
  const SwitchPlan plan = plan_switches(all, PlanSettings{});
  const auto device = device_of(plan);
  for (int probe = 0; probe < 2000; ++probe) {
    const Word w = words[rng() % words.size()];
    const Walk walk = fattree_walk(device->load_image()->bytes, w);
    REQUIRE(walk.matched);
    CHECK(walk.server == (w >> 62));
    CHECK(walk.hints.primary.level == 0);
    CHECK(walk.hints.primary.node / 100000 == (w >> 62));
  }
}

// The layered policy on a synthetic B+tree: full coverage from the bottom
// line, hints that always contain the word, and a modelled AMA that equals
// what longest-prefix match actually yields for every present key.
#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <vector>

#include <catch2/catch.hpp>

#include "offload/synthetic_tree.h"
#include "switch_lpm/layers.h"
#include "support/seed.h"
#include "support/zipf.h"
#include "switch_lpm/lpm_table.h"

using forein::Word;
using forein::offload::Layer;
using forein::offload::LayeredEntries;
using forein::offload::LayerOptions;
using forein::offload::LpmEntry;
using forein::offload::LpmStatus;
using forein::offload::LpmTable;
using forein::offload::OffloadNode;
using forein::offload::build_layered_entries;
using forein::offload::testing::SyntheticTree;
using forein::offload::testing::build_synthetic_tree;

namespace {

struct Workload {
  SyntheticTree tree;
  std::vector<double> key_accesses;  // per word
};

// Integer-like keys just above 2^63 (sign-flipped int64), with random gaps,
// and Zipf accesses scattered over them.
Workload make_workload(std::mt19937_64& rng, std::size_t keys, std::size_t leaf_size, std::size_t fanout) {
  std::vector<Word> words;
  Word w = (Word{1} << 63) + rng() % 1000;
  for (std::size_t i = 0; i < keys; ++i) {
    words.push_back(w);
    w += 1 + rng() % 50;
  }
  Workload load{build_synthetic_tree(words, leaf_size, fanout), std::vector<double>(keys, 0)};
  forein::testing::ZipfGenerator zipf(keys, 0.99);
  for (int a = 0; a < 200000; ++a) {
    const std::size_t key = (zipf(rng) * 2654435761u) % keys;  // hot keys spread out
    load.key_accesses[key] += 1;
    load.tree.table[load.tree.leaf_of_key[key]].weight += 1;
  }
  return load;
}

std::size_t index_of_node(const std::vector<OffloadNode>& table, forein::PageId id) {
  for (std::size_t i = 0; i < table.size(); ++i) {
    if (table[i].interval.node == id) return i;
  }
  FAIL("no node " << id);
  return 0;
}

std::uint32_t depth_of(const std::vector<OffloadNode>& table, std::size_t i) {
  std::uint32_t depth = 1;
  for (; table[i].parent >= 0; i = static_cast<std::size_t>(table[i].parent)) ++depth;
  return depth;
}

bool is_ancestor_or_self(const std::vector<OffloadNode>& table, std::size_t a, std::size_t i) {
  for (;; i = static_cast<std::size_t>(table[i].parent)) {
    if (i == a) return true;
    if (table[i].parent < 0) return false;
  }
}

void check_layered(const Workload& load, const LayerOptions& options, const LayeredEntries& result,
                   std::mt19937_64& rng) {
  const std::vector<OffloadNode>& table = load.tree.table;
  const std::vector<LpmEntry>& entries = result.entries;
  REQUIRE(entries.size() <= options.budget);
  REQUIRE(result.selection.cost <= options.budget);
  REQUIRE(entries.size() <= result.selection.cost);
  REQUIRE(entries.size() ==
          result.bottom_line_entries + result.main_entries + result.hot_leaf_entries);
  for (std::size_t i = 1; i < entries.size(); ++i) {
    REQUIRE(forein::offload::prefix_less(entries[i - 1].prefix, entries[i].prefix));
  }

  LpmTable lpm(options.budget);
  REQUIRE(lpm.install(entries) == LpmStatus::kOk);
  const auto snapshot = lpm.snapshot();

  // Any word at all gets a hint whose node holds it (the synthetic tree has
  // no gaps); present keys get exactly the nearest selected ancestor.
  auto hinted_index = [&](Word w) {
    const auto action = snapshot->lookup(w);
    REQUIRE(action.has_value());
    const std::size_t i = index_of_node(table, action->node);
    REQUIRE(table[i].interval.contains(w));
    REQUIRE(action->level == table[i].interval.level);
    return i;
  };
  std::vector<Word> probes{0, ~Word{0}};
  for (const OffloadNode& n : table) {
    probes.push_back(n.interval.lo);
    if (n.interval.lo > 0) probes.push_back(n.interval.lo - 1);
  }
  for (int r = 0; r < 2000; ++r) probes.push_back(rng());
  for (int r = 0; r < 2000; ++r) probes.push_back(load.tree.words[rng() % load.tree.words.size()] + rng() % 50);
  for (Word w : probes) hinted_index(w);

  double ama = 0;
  for (std::size_t k = 0; k < load.tree.words.size(); ++k) {
    const std::size_t leaf = load.tree.leaf_of_key[k];
    const std::size_t hinted = hinted_index(load.tree.words[k]);
    REQUIRE(is_ancestor_or_self(table, hinted, leaf));
    ama += load.key_accesses[k] * (depth_of(table, leaf) - depth_of(table, hinted) + 1);
  }
  CHECK(ama == Approx(result.selection.ama));
}

}  // namespace

TEST_CASE("layered entries: coverage, hint containment and AMA consistency", "[layers]") {
  std::mt19937_64 rng(forein::testing::test_seed("layered entries"));
  const Workload load = make_workload(rng, 20000, 32, 16);  // 4 levels
  for (std::uint64_t budget : {73000u, 4000u, 1200u}) {
    LayerOptions options;
    options.budget = budget;
    options.hot_leaves = 8;
    const LayeredEntries result = build_layered_entries(load.tree.table, load.tree.words, options);
    INFO("budget " << budget << ": " << result.bottom_line_entries << " bottom-line at level "
                   << result.bottom_line_level << ", " << result.main_entries << " main, "
                   << result.hot_leaf_entries << " hot-leaf entries, AMA " << result.selection.ama);
    CHECK(result.has_bottom_line);
    CHECK(result.bottom_line_level == 1);
    check_layered(load, options, result, rng);
  }
}

TEST_CASE("layered entries: the heaviest leaves are installed as hot leaves", "[layers]") {
  std::mt19937_64 rng(forein::testing::test_seed("hot leaves"));
  const Workload load = make_workload(rng, 5000, 16, 8);
  LayerOptions options;
  options.hot_leaves = 5;
  const LayeredEntries result = build_layered_entries(load.tree.table, load.tree.words, options);
  std::set<forein::PageId> hot;
  for (const LpmEntry& e : result.entries) {
    if (e.layer == Layer::kHotLeaf) hot.insert(e.node);
  }
  std::vector<std::pair<double, forein::PageId>> leaves;
  for (const OffloadNode& n : load.tree.table) {
    if (n.interval.level == 0) leaves.emplace_back(-n.weight, n.interval.node);
  }
  std::sort(leaves.begin(), leaves.end());
  std::set<forein::PageId> heaviest;
  for (std::size_t i = 0; i < 5; ++i) heaviest.insert(leaves[i].second);
  CHECK(hot == heaviest);
  check_layered(load, options, result, rng);
}

TEST_CASE("layered entries: a tight budget raises the bottom line", "[layers]") {
  std::mt19937_64 rng(forein::testing::test_seed("tight budget"));
  const Workload load = make_workload(rng, 20000, 32, 16);
  const auto level1 = forein::offload::bottom_line_entries(load.tree.table, 1);
  LayerOptions options;
  options.budget = level1.size() - 1;
  const LayeredEntries result = build_layered_entries(load.tree.table, load.tree.words, options);
  CHECK(result.bottom_line_level == 2);
  check_layered(load, options, result, rng);
}

TEST_CASE("layered entries: a one-level tree uses its leaf as the bottom line", "[layers]") {
  std::mt19937_64 rng(forein::testing::test_seed("one level"));
  const Workload load = make_workload(rng, 10, 32, 16);
  REQUIRE(load.tree.table.size() == 1);
  const LayeredEntries result = build_layered_entries(load.tree.table, load.tree.words, {});
  REQUIRE(result.entries.size() == 1);
  CHECK(result.entries[0].prefix == forein::offload::Prefix{0, 0});
  CHECK(result.entries[0].layer == Layer::kBottomLine);
  CHECK(result.bottom_line_level == 0);
  CHECK(result.selection.cost == 1);
}

TEST_CASE("bottom line merges gaps into the left neighbour", "[layers]") {
  // Level-1 nodes [10, 20) and [40, 50) with holes around them.
  std::vector<OffloadNode> table(2);
  table[0].interval = {0, 7, 1, 10, 20, false, 1};
  table[1].interval = {0, 8, 1, 40, 50, false, 1};
  const auto entries = forein::offload::bottom_line_entries(table, 1);
  LpmTable lpm;
  REQUIRE(lpm.install(entries) == LpmStatus::kOk);
  for (Word w : {Word{0}, Word{9}, Word{10}, Word{39}}) CHECK(lpm.lookup(w)->node == 7);
  for (Word w : {Word{40}, Word{50}, ~Word{0}}) CHECK(lpm.lookup(w)->node == 8);
}

TEST_CASE("layered entries: costs kept between plans give the plan made without them",
          "[layers][incremental]") {
  const auto seed = forein::testing::test_seed("incremental covers");
  std::mt19937_64 rng(seed);
  Workload load = make_workload(rng, 8000, 16, 8);
  forein::offload::CoverCostCache costs;
  LayerOptions options;
  options.budget = 3000;
  options.hot_leaves = 4;
  auto same = [&](const char* what) {
    INFO(what << " (seed " << seed << ")");
    const LayeredEntries kept = build_layered_entries(load.tree.table, load.tree.words, options, &costs);
    const LayeredEntries fresh = build_layered_entries(load.tree.table, load.tree.words, options);
    REQUIRE(kept.entries.size() == fresh.entries.size());
    for (std::size_t i = 0; i < kept.entries.size(); ++i) {
      REQUIRE(kept.entries[i].prefix == fresh.entries[i].prefix);
      REQUIRE(kept.entries[i].node == fresh.entries[i].node);
      REQUIRE(kept.entries[i].layer == fresh.entries[i].layer);
    }
    CHECK(kept.selection.ama == fresh.selection.ama);
  };
  same("first plan");
  const std::uint64_t first = costs.misses();
  CHECK(first > 0);
  // Samples alone: new weights, the same intervals and words; no cover again.
  for (int round = 0; round < 5; ++round) {
    for (OffloadNode& n : load.tree.table) {
      if (n.interval.level == 0) n.weight = static_cast<double>(rng() % 100);
    }
    same("weights moved");
  }
  CHECK(costs.misses() == first);
  // Some intervals change (a leaf's hi moves down by one; both plans see
  // the same table): those nodes alone are covered again.
  std::size_t changed = 0;
  for (OffloadNode& n : load.tree.table) {
    if (n.interval.level != 0 || n.interval.hi_inf || rng() % 10 != 0) continue;
    n.interval.hi -= 1;
    ++changed;
  }
  REQUIRE(changed > 0);
  same("intervals changed");
  CHECK(costs.misses() == first + changed);
  // New words: the owner clears the costs, and everything is covered again.
  costs.clear();
  same("after clear");
  CHECK(costs.misses() > first + changed);
}

// Algorithm 1 (greedy, resource-aware selection) against exhaustive search,
// hand-traced cases for the skip and removal rules, and a 10,000-node run.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "forein/error.h"
#include "switch_lpm/selection.h"
#include "support/seed.h"
#include "support/zipf.h"

using forein::offload::Selection;
using forein::offload::SelectionOptions;
using forein::offload::SelectionTree;
using forein::offload::TreeNodeDesc;
using forein::offload::compute_ama;
using forein::offload::select_nodes;

namespace {

TreeNodeDesc node(std::int32_t parent, std::uint32_t cost, double weight = 0) {
  TreeNodeDesc d;
  d.parent = parent;
  d.cost = cost;
  d.weight = weight;
  return d;
}

// A random tree of `size` nodes: each new node hangs under a random node
// of bounded depth, so shapes range from chains to bushes.
std::vector<TreeNodeDesc> random_tree(std::mt19937_64& rng, std::size_t size, std::uint32_t max_cost) {
  std::vector<TreeNodeDesc> nodes{node(-1, 0)};
  std::vector<std::uint32_t> depth{1};
  while (nodes.size() < size) {
    const std::size_t parent = rng() % nodes.size();
    if (depth[parent] >= 5) continue;
    nodes.push_back(node(static_cast<std::int32_t>(parent), static_cast<std::uint32_t>(rng() % (max_cost + 1))));
    depth.push_back(depth[parent] + 1);
  }
  for (TreeNodeDesc& d : nodes) d.weight = rng() % 4 == 0 ? 0.0 : static_cast<double>(rng() % 100);
  for (std::size_t i = 0; i < nodes.size(); ++i) nodes[i].id = static_cast<forein::PageId>(i + 1);
  return nodes;
}

// min AMA over every subset of non-root nodes within the budget.
double optimal_ama(const SelectionTree& tree, std::uint64_t budget) {
  std::vector<std::size_t> candidates;
  for (std::size_t i = 0; i < tree.size(); ++i) {
    if (i != tree.root()) candidates.push_back(i);
  }
  double best = compute_ama(tree, {});
  std::vector<std::size_t> chosen;
  for (std::uint32_t mask = 1; mask < (1u << candidates.size()); ++mask) {
    chosen.clear();
    std::uint64_t cost = 0;
    for (std::size_t b = 0; b < candidates.size(); ++b) {
      if (mask & (1u << b)) {
        chosen.push_back(candidates[b]);
        cost += tree.node(candidates[b]).cost;
      }
    }
    if (cost <= budget) best = std::min(best, compute_ama(tree, chosen));
  }
  return best;
}

std::uint64_t cost_of(const SelectionTree& tree, const std::vector<std::size_t>& installed) {
  std::uint64_t cost = 0;
  for (std::size_t i : installed) cost += tree.node(i).cost;
  return cost;
}

}  // namespace

TEST_CASE("AMA: full depth with only the root, one access per leaf when leaves are selected",
          "[selection]") {
  // root(0) -> a(1) -> {l2, l3}; root -> l4
  const SelectionTree tree({node(-1, 0), node(0, 1), node(1, 1, 3), node(1, 1, 5), node(0, 1, 7)});
  CHECK(compute_ama(tree, {}) == 3 * 3 + 5 * 3 + 7 * 2);
  const std::vector<std::size_t> a{1};
  CHECK(compute_ama(tree, a) == 3 * 2 + 5 * 2 + 7 * 2);
  const std::vector<std::size_t> leaves{2, 3, 4};
  CHECK(compute_ama(tree, leaves) == 3 + 5 + 7);
}

TEST_CASE("greedy: a node that does not fit is skipped, not the end", "[selection]") {
  // root -> {big: weight 10 cost 5, small: weight 1 cost 1}, budget 3.
  const SelectionTree tree({node(-1, 0), node(0, 5, 10), node(0, 1, 1)});
  SelectionOptions options;
  options.budget = 3;
  const Selection s = select_nodes(tree, options);
  CHECK(s.installed == std::vector<std::size_t>{2});
  CHECK(s.cost == 1);
  CHECK(s.ama == 10 * 2 + 1 * 1);
}

TEST_CASE("greedy: an ancestor leaves S once deeper nodes serve all its weight", "[selection]") {
  // root(0) -> p(1) -> a(2) -> {l3, l4}, leaves weight 10, every node cost 1.
  // Gains: a = 2 * 20 = 40 beats l3 = l4 = 3 * 10. Then l3 (1 * 10; a keeps
  // serving l4), then l4, after which a serves nothing and is dropped.
  const SelectionTree tree({node(-1, 0), node(0, 1), node(1, 1), node(2, 1, 10), node(2, 1, 10)});
  SelectionOptions options;
  options.budget = 3;
  const Selection s = select_nodes(tree, options);
  CHECK(s.installed == std::vector<std::size_t>{3, 4});
  CHECK(s.cost == 2);
  CHECK(s.ama == 20);

  // With l4 too dear, a must stay: it still serves l4.
  const SelectionTree dear({node(-1, 0), node(0, 1), node(1, 1), node(2, 1, 10), node(2, 5, 10)});
  const Selection t = select_nodes(dear, options);
  CHECK(t.installed == std::vector<std::size_t>{2, 3});
  CHECK(t.ama == 10 + 20);
}

TEST_CASE("greedy: pinned nodes stay and are charged; excluded nodes are never picked",
          "[selection]") {
  const SelectionTree tree({node(-1, 0), node(0, 2), node(1, 1, 10), node(1, 1, 10)});
  SelectionOptions options;
  options.budget = 4;
  options.pinned = {1};
  options.excluded = {3};
  const Selection s = select_nodes(tree, options);
  // l3 is excluded, so only l2 joins the pinned node.
  CHECK(s.installed == std::vector<std::size_t>{1, 2});
  CHECK(s.cost == 3);
  options.budget = 1;
  CHECK_THROWS_AS(select_nodes(tree, options), forein::InvalidArgument);
}

TEST_CASE("selection tree rejects malformed input", "[selection]") {
  CHECK_THROWS_AS(SelectionTree({}), forein::InvalidArgument);
  CHECK_THROWS_AS(SelectionTree({node(-1, 0), node(-1, 0)}), forein::InvalidArgument);
  CHECK_THROWS_AS(SelectionTree({node(-1, 0), node(5, 0)}), forein::InvalidArgument);
  CHECK_THROWS_AS(SelectionTree({node(-1, 0), node(2, 0), node(1, 0)}), forein::InvalidArgument);
  CHECK_THROWS_AS(SelectionTree({node(-1, 0), node(0, 0, -1)}), forein::InvalidArgument);
}

TEST_CASE("greedy vs exhaustive search on small random trees", "[selection]") {
  using forein::offload::SelectionRank;
  std::mt19937_64 rng(forein::testing::test_seed("greedy vs exhaustive"));
  const SelectionRank ranks[] = {SelectionRank::kReduction, SelectionRank::kReductionPerEntry};
  double worst_ratio[2] = {1, 1};
  double ratio_sum[2] = {0, 0};
  int trees = 0;
  for (int round = 0; round < 3000; ++round) {
    const std::size_t size = 2 + rng() % 12;  // up to 12 candidates besides the root
    const SelectionTree tree(random_tree(rng, size, 6));
    std::uint64_t total = 0;
    for (const TreeNodeDesc& d : tree.nodes()) total += d.cost;
    const std::uint64_t budget = rng() % (total + 2);
    const double optimum = optimal_ama(tree, budget);
    if (optimum > 0) ++trees;
    for (int r = 0; r < 2; ++r) {
      SelectionOptions options;
      options.budget = budget;
      options.rank = ranks[r];
      const Selection greedy = select_nodes(tree, options);
      INFO("round " << round << " rank " << r);
      REQUIRE(greedy.cost <= options.budget);
      REQUIRE(greedy.cost == cost_of(tree, greedy.installed));
      REQUIRE(std::is_sorted(greedy.installed.begin(), greedy.installed.end()));
      REQUIRE(greedy.ama == Approx(compute_ama(tree, greedy.installed)));
      REQUIRE(greedy.ama >= optimum - 1e-9);
      REQUIRE(greedy.ama <= compute_ama(tree, {}) + 1e-9);
      if (optimum > 0) {
        worst_ratio[r] = std::max(worst_ratio[r], greedy.ama / optimum);
        ratio_sum[r] += greedy.ama / optimum;
      }
    }
  }
  for (int r = 0; r < 2; ++r) {
    std::cout << "greedy vs exhaustive, " << (r == 0 ? "by reduction (paper)" : "by reduction per entry")
              << ": worst greedy/optimal AMA ratio " << worst_ratio[r] << ", mean "
              << ratio_sum[r] / trees << " over " << trees << " trees\n";
  }
}

TEST_CASE("greedy on a 10,000-node tree", "[selection]") {
  std::mt19937_64 rng(forein::testing::test_seed("greedy 10k"));
  // B+tree shape: 1 root, 8 level-2 nodes, ~300 inner nodes, ~9,700 leaves.
  std::vector<TreeNodeDesc> nodes{node(-1, 0)};
  std::vector<std::size_t> frontier{0};
  for (std::size_t fanout : {8u, 38u, 32u}) {
    std::vector<std::size_t> next;
    for (std::size_t parent : frontier) {
      for (std::size_t c = 0; c < fanout && nodes.size() < 10000; ++c) {
        nodes.push_back(node(static_cast<std::int32_t>(parent), static_cast<std::uint32_t>(1 + rng() % 20)));
        next.push_back(nodes.size() - 1);
      }
    }
    frontier = next;
  }
  forein::testing::ZipfGenerator zipf(frontier.size(), 0.99);
  for (int access = 0; access < 1000000; ++access) nodes[frontier[zipf(rng)]].weight += 1;
  const SelectionTree tree(std::move(nodes));
  SelectionOptions options;
  options.budget = 25000;
  const auto start = std::chrono::steady_clock::now();
  const Selection s = select_nodes(tree, options);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::cout << "greedy on " << tree.size() << " nodes: " << s.installed.size() << " installed, "
            << s.cost << " entries, AMA " << s.ama / 1e6 << " per access (root-only "
            << compute_ama(tree, {}) / 1e6 << "), " << ms << " ms\n";
  CHECK(tree.size() == 10000);
  CHECK(s.cost <= options.budget);
  CHECK(s.cost == cost_of(tree, s.installed));
  CHECK(s.ama == Approx(compute_ama(tree, s.installed)));
  CHECK(s.ama < compute_ama(tree, {}));
  CHECK(ms < 5000);
}

// The engine demo: builds a tree, then runs the same Zipf lookups from the
// root, from exact (oracle) hints, and from garbage hints, and shows the
// counters: hints cut the nodes visited, and bad hints only cost a fallback.
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "forein/tree.h"

namespace {

using forein::StartHints;
using forein::Tree;

struct RunResult {
  double seconds;
  forein::TreeStats stats;
  std::uint64_t found;
};

RunResult run(Tree& tree, const std::vector<std::string>& probes,
              const std::vector<StartHints>* hints) {
  tree.reset_stats();
  std::uint64_t found = 0;
  std::string value;
  const auto t0 = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < probes.size(); ++i) {
    found += tree.get(probes[i], &value, hints ? &(*hints)[i] : nullptr);
  }
  const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0;
  return {dt.count(), tree.stats(), found};
}

void report(const char* name, const RunResult& r, std::size_t n) {
  std::printf("  %-14s %8.0f ns/lookup  nodes/lookup %.2f  hint hits %llu  fallbacks %llu  "
              "move-rights %llu  found %llu\n",
              name, r.seconds * 1e9 / static_cast<double>(n),
              static_cast<double>(r.stats.nodes_visited) / static_cast<double>(n),
              static_cast<unsigned long long>(r.stats.hint_hits),
              static_cast<unsigned long long>(r.stats.fallbacks),
              static_cast<unsigned long long>(r.stats.move_rights),
              static_cast<unsigned long long>(r.found));
}

}  // namespace

int main() {
  constexpr std::size_t kKeys = 1'000'000, kProbes = 500'000;
  std::mt19937_64 rng(42);
  std::vector<std::pair<std::string, std::string>> rows;
  rows.reserve(kKeys);
  for (std::size_t i = 0; i < kKeys; ++i) {
    rows.emplace_back(forein::encode_int64(static_cast<std::int64_t>(i) * 7 - 3'000'000),
                      "value-" + std::to_string(i));
  }
  auto tree = Tree::create(std::make_unique<forein::MemoryPageStore>());
  tree->bulk_load(rows);
  std::printf("forein engine demo: %zu keys, height %u, %u pages of %u bytes\n", kKeys,
              tree->height(), tree->store().page_count(), tree->store().page_size());

  // Skewed probes: a few hot keys, spread over the key space.
  std::vector<std::string> probes;
  std::geometric_distribution<std::size_t> skew(1e-5);
  for (std::size_t i = 0; i < kProbes; ++i) {
    probes.push_back(rows[(skew(rng) * 7919) % kKeys].first);
  }
  std::vector<StartHints> oracle, garbage;
  for (const auto& k : probes) {
    oracle.push_back({tree->leaf_for(k), {}});
    garbage.push_back({{static_cast<forein::PageId>(rng() % 100000 + 1), 0, rng()}, {}});
  }

  std::printf("lookups of %zu skewed keys:\n", kProbes);
  const RunResult root = run(*tree, probes, nullptr);
  const RunResult hinted = run(*tree, probes, &oracle);
  const RunResult bad = run(*tree, probes, &garbage);
  report("root start", root, kProbes);
  report("oracle hint", hinted, kProbes);
  report("garbage hint", bad, kProbes);
  std::printf("speedup of oracle hints over root start: %.2fx; garbage hints changed %s\n",
              root.seconds / hinted.seconds,
              bad.found == root.found ? "no result" : "RESULTS (bug)");
  tree->check();
  std::printf("tree check: ok\n");
  return bad.found == root.found && hinted.found == root.found ? 0 : 1;
}

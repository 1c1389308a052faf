// The demo: builds a tree, installs offload entries in a modelled device
// (--backend NAME, default switch_lpm: FOREIN's switch, 73,000 LPM entries)
// through the offload manager, then runs the same skewed lookups from the root, from the
// switch's hints (computed ahead, as the switch would), from exact (oracle)
// hints and from garbage hints. Hints cut the nodes visited; bad hints only
// cost a fallback, never a wrong answer.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <random>
#include <string>
#include <vector>

#include "forein/offload/manager.h"
#include "forein/offload/registry.h"
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

int usage(const char* argv0) {
  std::fprintf(stderr, "usage: %s [--backend NAME]\n  backends: %s\n", argv0,
               forein::offload::lookup_backend_names().c_str());
  return 2;
}

int main(int argc, char** argv) {
  std::string backend_name = forein::offload::default_backend().name;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--backend") == 0 && i + 1 < argc) {
      backend_name = argv[++i];
    } else if (std::strncmp(argv[i], "--backend=", 10) == 0) {
      backend_name = argv[i] + 10;
    } else {
      return usage(argv[0]);
    }
  }
  // A backend the demo's tree can look keys up with (start hints, or none).
  const forein::offload::BackendInfo* info = nullptr;
  try {
    info = &forein::offload::backend_for_lookups(backend_name);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "forein_demo: %s\n", e.what());
    return 2;
  }
  constexpr std::size_t kKeys = 1'000'000, kProbes = 500'000;
  std::mt19937_64 rng(42);
  std::vector<std::pair<std::string, std::string>> rows;
  rows.reserve(kKeys);
  for (std::size_t i = 0; i < kKeys; ++i) {
    rows.emplace_back(forein::encode_int64(static_cast<std::int64_t>(i) * 7 - 3'000'000),
                      "value-" + std::to_string(i));
  }
  forein::offload::Backend backend(*info);
  forein::offload::OffloadManager manager(backend);
  forein::TreeOptions options;
  options.observer = &manager;
  auto tree = Tree::create(std::make_unique<forein::MemoryPageStore>(), options);
  tree->bulk_load(rows);
  manager.attach(*tree);
  std::printf("forein engine demo: %zu keys, height %u, %u pages of %u bytes\n", kKeys,
              tree->height(), tree->store().page_count(), tree->store().page_size());

  // Skewed probes: a few hot keys, spread over the key space.
  std::vector<std::string> probes;
  std::geometric_distribution<std::size_t> skew(1e-5);
  for (std::size_t i = 0; i < kProbes; ++i) {
    probes.push_back(rows[(skew(rng) * 7919) % kKeys].first);
  }
  // The switch learns the workload from sampled accesses, then installs.
  for (std::size_t i = 0; i < probes.size(); i += 16) manager.record_access(forein::word_of(probes[i]));
  manager.refresh();
  manager.flush();
  const forein::offload::BackendUsage usage = backend.usage();
  std::printf("%s: %llu of %llu %s installed (%.0f%%)\n", info->name,
              static_cast<unsigned long long>(usage.used),
              static_cast<unsigned long long>(usage.capacity), usage.unit.c_str(),
              100.0 * usage.fraction());

  std::vector<StartHints> oracle, garbage, switched;
  for (const auto& k : probes) {
    switched.push_back(manager.hint(k));
    oracle.push_back({tree->leaf_for(k), {}});
    garbage.push_back({{static_cast<forein::PageId>(rng() % 100000 + 1), 0, rng()}, {}});
  }

  std::printf("lookups of %zu skewed keys:\n", kProbes);
  // Modes take turns, twice; each keeps its faster pass (a demo, not a
  // benchmark: see docs/engine-benchmark.md for medians).
  using Mode = std::pair<RunResult*, const std::vector<StartHints>*>;
  RunResult root{1e9, {}, 0}, lpm = root, hinted = root, bad = root;
  const Mode modes[] = {{&root, nullptr}, {&lpm, &switched}, {&hinted, &oracle}, {&bad, &garbage}};
  for (int pass = 0; pass < 2; ++pass) {
    for (const auto& [result, hints] : modes) {
      const RunResult r = run(*tree, probes, hints);
      if (r.seconds < result->seconds) *result = r;
    }
  }
  report("root start", root, kProbes);
  report("device hint", lpm, kProbes);
  report("oracle hint", hinted, kProbes);
  report("garbage hint", bad, kProbes);
  std::printf("speedup over root start: device hints %.2fx, oracle hints %.2fx; "
              "garbage hints changed %s\n",
              root.seconds / lpm.seconds, root.seconds / hinted.seconds,
              bad.found == root.found ? "no result" : "RESULTS (bug)");
  tree->check();
  std::printf("tree check: ok\n");
  manager.detach();
  const bool same = bad.found == root.found && hinted.found == root.found &&
                    lpm.found == root.found;
  return same ? 0 : 1;
}

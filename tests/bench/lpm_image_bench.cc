// The switch_lpm byte image against the live backend: ns per start-hint
// lookup through the two tables' lookups (the old the two LPM tables::hint_for_word) (two LpmSnapshot lookups in
// an RCU read section) and through lpm_image_hint on the same entries, in
// the same run. Single-threaded, timed in thread CPU time; the median of `reps` runs of `lookups`
// lookups each. Two figures per path: "indep" (independent lookups, as a
// host's hot loop issues them; out-of-order overlap allowed) and "chain"
// (each lookup's word depends on the previous answer: pure latency).
//
// Entry sets (about `entries` entries each, upper + bottom tables):
//   random-key tree   FOREIN's layered entries (bottom line + main + hot
//                     leaves, build_layered_entries) over a B+tree of
//                     uniformly random 64-bit keys
//   clustered tree    the same over small integers (words just above 2^63)
//   long prefixes     covers of random intervals everywhere plus random
//                     /40../64 prefixes, one in three in the bottom table
//
//   lpm_image_bench [entries (73000)] [lookups (4000000)] [reps (7)] [tree keys (2000000)]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "switch_lpm/layers.h"
#include "switch_lpm/prefix_cover.h"
#include "offload/synthetic_tree.h"
#include "switch_lpm/lpm_image.h"
#include "switch_lpm/lpm_table.h"
#include "offload/two_lpm_tables.h"
#include "switch_lpm/switch_lpm_device.h"

using forein::StartHints;
using forein::Word;
using namespace forein::offload;

namespace {



using Clock = std::chrono::steady_clock;
volatile std::uint64_t g_zero = 0;  // a runtime 0 the compiler cannot fold

// This thread's CPU time: the machine is shared, and time spent descheduled
// is not lookup time (wall-clock figures on a busy 2-core box ran 2-3x high).
double thread_cpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

struct EntrySet {
  std::string name;
  std::vector<LpmEntry> entries;
  std::vector<Word> keys;  // the tree's keys (empty for the prefix mix)
};

// Layered entries over a synthetic B+tree of `keys` keys (leaves of 64
// keys, fanout 64, every leaf accessed alike), with a budget of `target`.
EntrySet tree_set(const char* name, std::mt19937_64& rng, std::size_t keys, std::size_t target, bool clustered) {
  std::vector<Word> words(keys);
  Word next = (Word{1} << 63) + 1000;
  for (Word& w : words) {
    if (clustered) {
      w = next;
      next += 1 + rng() % 100;
    } else {
      w = rng();
    }
  }
  std::sort(words.begin(), words.end());
  words.erase(std::unique(words.begin(), words.end()), words.end());
  auto tree = forein::offload::testing::build_synthetic_tree(words, 64, 64);
  for (OffloadNode& n : tree.table) n.weight = n.interval.level == 0 ? 1.0 + static_cast<double>(rng() % 8) : 0.0;
  LayerOptions options;
  options.budget = target;
  options.hot_leaves = 500;
  LayeredEntries layered = build_layered_entries(tree.table, words, options);
  std::printf("%s: %zu keys, %zu entries (bottom line %zu at level %u, main %zu, hot leaves %zu)\n", name,
              words.size(), layered.entries.size(), layered.bottom_line_entries, layered.bottom_line_level,
              layered.main_entries, layered.hot_leaf_entries);
  return EntrySet{name, std::move(layered.entries), std::move(words)};
}

EntrySet long_prefix_set(std::mt19937_64& rng, std::size_t target) {
  std::map<std::pair<bool, std::pair<Word, int>>, LpmEntry> distinct;
  std::uint32_t node = 1;
  auto add = [&](Prefix p) {
    LpmEntry e;
    e.prefix = p;
    e.node = node++;
    e.level = static_cast<std::uint16_t>(rng() % 3);
    e.layer = rng() % 3 == 0 ? Layer::kBottomLine : Layer::kMain;
    e.version = rng();
    distinct[{e.layer == Layer::kBottomLine, {p.value, p.len}}] = e;
  };
  while (distinct.size() < target) {
    if (rng() % 2 == 0) {
      const Word lo = rng();
      const Word hi = lo + (rng() >> (20 + rng() % 40));
      if (hi < lo) continue;
      for (const Prefix& p : prefix_cover(lo, hi)) {
        if (distinct.size() < target) add(p);
      }
    } else {
      const auto len = static_cast<std::uint8_t>(40 + rng() % 25);
      add(Prefix{rng() & prefix_mask(len), len});
    }
  }
  EntrySet set{"long prefixes", {}, {}};
  for (auto& [key, e] : distinct) set.entries.push_back(e);
  std::printf("long prefixes: %zu entries\n", set.entries.size());
  return set;
}

template <class Lookup>
double ns_per_lookup(Lookup&& lookup, const std::vector<Word>& words, std::size_t lookups, bool chain,
                     std::uint64_t& sink) {
  const std::size_t mask = words.size() - 1;  // a power of two
  const std::uint64_t zero = g_zero;
  std::uint64_t sum = 0, last = 0;
  const double start = thread_cpu_ns();
  for (std::size_t i = 0; i < lookups; ++i) {
    const Word w = chain ? words[(i + (last & zero)) & mask] : words[i & mask];
    const StartHints h = lookup(w);
    last = h.primary.node + h.secondary.node;
    sum += last;
  }
  const double ns = thread_cpu_ns() - start;
  sink += sum;
  return ns / static_cast<double>(lookups);
}

// Median and minimum over the reps, independent and chained.
struct Timing {
  double indep_median, indep_min, chain_median, chain_min;
};

template <class Lookup>
Timing time_lookups(Lookup&& lookup, const std::vector<Word>& words, std::size_t lookups, int reps,
                    std::uint64_t& sink) {
  std::vector<double> indep, chain;
  for (int r = 0; r < reps; ++r) {
    indep.push_back(ns_per_lookup(lookup, words, lookups, false, sink));
    chain.push_back(ns_per_lookup(lookup, words, lookups, true, sink));
  }
  std::sort(indep.begin(), indep.end());
  std::sort(chain.begin(), chain.end());
  return {indep[indep.size() / 2], indep.front(), chain[chain.size() / 2], chain.front()};
}

void run(const EntrySet& set, std::size_t lookups, int reps, std::mt19937_64& rng, std::uint64_t& sink) {
  constexpr std::size_t kProbes = 1 << 20;
  std::vector<std::pair<const char*, std::vector<Word>>> probe_sets;
  std::vector<Word> uniform(kProbes);
  for (Word& w : uniform) w = rng();
  probe_sets.emplace_back("uniform words", std::move(uniform));
  if (!set.keys.empty()) {
    std::vector<Word> present(kProbes), near(kProbes);
    for (Word& w : present) w = set.keys[rng() % set.keys.size()];
    const Word lo = set.keys.front(), hi = set.keys.back();
    for (Word& w : near) w = lo + rng() % (hi - lo + 1);
    probe_sets.emplace_back("present keys", std::move(present));
    probe_sets.emplace_back("words near the keys", std::move(near));
  }

  forein::offload::testing::TwoTables backend(set.entries.size() + 1);
  if (backend.install(set.entries) != BackendStatus::kOk) {
    std::fprintf(stderr, "backend install failed\n");
    std::exit(1);
  }
  std::vector<LpmEntry> upper, bottom;
  for (const LpmEntry& e : set.entries) (e.layer == Layer::kBottomLine ? bottom : upper).push_back(e);
  const auto build_start = Clock::now();
  const std::vector<std::byte> image = build_lpm_image(upper, bottom, 1);
  const double build_ms = std::chrono::duration<double, std::milli>(Clock::now() - build_start).count();
  const auto info = *lpm_image_info(image);
  std::printf("  image: %zu upper + %zu bottom entries, %zu segments, dir 2^%u cells (shift %u), %.1f KiB = %.1f B/entry, build %.1f ms\n",
              info.upper_entries, info.bottom_entries, info.segments, info.dir_bits, info.dir_shift,
              static_cast<double>(image.size()) / 1024,
              static_cast<double>(image.size()) / static_cast<double>(set.entries.size()), build_ms);
  std::printf("  backend host bytes (two snapshots): %.1f KiB\n",
              static_cast<double>(backend.host_bytes()) / 1024);

  // Checked equal on the probes before timing.
  for (const auto& [probe_name, words] : probe_sets) {
    for (std::size_t i = 0; i < words.size(); i += 7) {
      const StartHints a = backend.hint_for_word(words[i]), b = lpm_image_hint(image, words[i]);
      if (a.primary.node != b.primary.node || a.secondary.node != b.secondary.node ||
          a.primary.version != b.primary.version) {
        std::fprintf(stderr, "MISMATCH at word %llu\n", static_cast<unsigned long long>(words[i]));
        std::exit(1);
      }
    }
  }

  // Directory sizes around the automatic one, for the layout choice.
  std::vector<std::pair<unsigned, std::vector<std::byte>>> variants;
  for (int d = -2; d <= 2; ++d) {
    const int bits = static_cast<int>(info.dir_bits) + d;
    if (bits < 1 || bits > static_cast<int>(kLpmImageMaxDirBits)) continue;
    variants.emplace_back(static_cast<unsigned>(bits),
                          build_lpm_image(upper, bottom, 1, LpmImageOptions{static_cast<unsigned>(bits)}));
  }

  std::printf("  ns/lookup, median (min) of %d reps:\n", reps);
  std::printf("  %-20s %31s %31s\n", "", "backend.hint_for_word", "lpm_image_hint");
  std::printf("  %-20s %15s %15s %15s %15s\n", "", "indep", "chain", "indep", "chain");
  for (const auto& [probe_name, words] : probe_sets) {
    const Timing o = time_lookups([&](Word w) { return backend.hint_for_word(w); }, words, lookups, reps, sink);
    const std::span<const std::byte> view(image);
    const Timing n = time_lookups([view](Word w) { return lpm_image_hint(view, w); }, words, lookups, reps, sink);
    std::printf("  %-20s %7.1f (%5.1f) %7.1f (%5.1f) %7.1f (%5.1f) %7.1f (%5.1f)\n", probe_name, o.indep_median,
                o.indep_min, o.chain_median, o.chain_min, n.indep_median, n.indep_min, n.chain_median, n.chain_min);
  }
  std::printf("  lpm_image_hint by directory size, uniform words: indep / chain median ns:\n");
  for (const auto& [bits, img] : variants) {
    const std::span<const std::byte> view(img);
    const Timing t = time_lookups([view](Word w) { return lpm_image_hint(view, w); }, probe_sets[0].second, lookups,
                                  reps, sink);
    std::printf("    2^%-2u cells%s (image %5.0f KiB): %5.1f / %5.1f\n", bits, bits == info.dir_bits ? " (auto)" : "       ",
                static_cast<double>(img.size()) / 1024, t.indep_median, t.chain_median);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t target = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : kSwitchLpmCapacity;
  const std::size_t lookups = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 4000000;
  const int reps = argc > 3 ? std::atoi(argv[3]) : 7;
  std::mt19937_64 rng(42);
  std::uint64_t sink = 0;
  const std::size_t keys = argc > 4 ? std::strtoull(argv[4], nullptr, 10) : 2000000;
  const std::vector<EntrySet> sets{tree_set("random-key tree", rng, keys, target, false),
                                   tree_set("clustered tree", rng, keys, target, true), long_prefix_set(rng, target)};
  for (const EntrySet& set : sets) {
    std::printf("%s\n", set.name.c_str());
    run(set, lookups, reps, rng, sink);
  }
  std::printf("(checksum %llu)\n", static_cast<unsigned long long>(sink));
  return 0;
}

// switch_lpm lookup speed: ns per lookup on a published snapshot and
// through LpmTable::lookup (one snapshot load per call), for a B+tree-like
// entry set (leaf covers over clustered integer keys) and for random
// prefixes spread over word space. Single-threaded; best of five runs.
//
//   lpm_lookup_bench [entries (73000)] [lookups (20000000)]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "switch_lpm/prefix_cover.h"
#include "switch_lpm/lpm_table.h"

using forein::Word;
using namespace forein::offload;

namespace {

using Clock = std::chrono::steady_clock;
using Entries = std::vector<std::pair<Prefix, LpmAction>>;

// Leaves of 64 integer-like keys just above 2^63, hollow prefixes dropped,
// until `target` entries; returns the keys too.
Entries btree_entries(std::mt19937_64& rng, std::size_t target, std::vector<Word>& keys) {
  Entries entries;
  Word next = (Word{1} << 63) + 1000;
  std::uint32_t node = 1;
  while (entries.size() < target) {
    std::vector<Word> leaf_keys;
    for (int k = 0; k < 64; ++k) {
      leaf_keys.push_back(next);
      next += 1 + rng() % 100;
    }
    const auto cover = drop_hollow(prefix_cover(leaf_keys.front(), next - 1), leaf_keys);
    for (const Prefix& p : cover) {
      if (entries.size() == target) break;
      entries.push_back({p, LpmAction{node, 0, 0}});
    }
    keys.insert(keys.end(), leaf_keys.begin(), leaf_keys.end());
    ++node;
  }
  return entries;
}

// Covers of random intervals anywhere in word space, each prefix its own
// action so that no two segments merge.
Entries uniform_entries(std::mt19937_64& rng, std::size_t target) {
  Entries entries;
  std::uint32_t node = 1;
  while (entries.size() < target) {
    const Word lo = rng();
    const Word hi = lo + (rng() >> (20 + rng() % 40));
    if (hi < lo) continue;
    for (const Prefix& p : prefix_cover(lo, hi)) {
      if (entries.size() == target) break;
      entries.push_back({p, LpmAction{node++, 1, 0}});  // one action each: no merging
    }
  }
  return entries;
}

double ns_per_lookup_snapshot(const LpmSnapshot& snapshot, const std::vector<Word>& words,
                              std::size_t lookups, std::uint64_t& sink) {
  const std::size_t mask = words.size() - 1;  // a power of two
  const auto start = Clock::now();
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < lookups; ++i) {
    const auto hit = snapshot.lookup(words[i & mask]);
    sum += hit ? hit->node : 0;
  }
  sink += sum;
  return std::chrono::duration<double, std::nano>(Clock::now() - start).count() / static_cast<double>(lookups);
}

double ns_per_lookup_table(const LpmTable& table, const std::vector<Word>& words, std::size_t lookups,
                           std::uint64_t& sink) {
  const std::size_t mask = words.size() - 1;  // a power of two
  const auto start = Clock::now();
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < lookups; ++i) {
    const auto hit = table.lookup(words[i & mask]);
    sum += hit ? hit->node : 0;
  }
  sink += sum;
  return std::chrono::duration<double, std::nano>(Clock::now() - start).count() / static_cast<double>(lookups);
}

void run(const char* name, const Entries& entries, const std::vector<std::pair<const char*, std::vector<Word>>>& probe_sets,
         std::size_t capacity, std::size_t lookups, std::uint64_t& sink) {
  LpmTable table(capacity);
  const auto start = Clock::now();
  if (table.install(entries) != LpmStatus::kOk) {
    std::fprintf(stderr, "install failed\n");
    std::exit(1);
  }
  const double publish_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  const LpmUsage usage = table.usage();
  std::printf("%s: %zu entries (%.0f%% of %zu), %zu segments, %.1f KiB, publish %.1f ms\n", name,
              usage.entries, 100 * usage.fraction(), usage.capacity, usage.segments,
              static_cast<double>(usage.bytes) / 1024, publish_ms);
  const auto snapshot = table.snapshot();
  for (const auto& [probe_name, words] : probe_sets) {
    // Best of five: the machine may be shared.
    double snap_ns = 1e9;
    double table_ns = 1e9;
    for (int rep = 0; rep < 5; ++rep) {
      snap_ns = std::min(snap_ns, ns_per_lookup_snapshot(*snapshot, words, lookups / 5, sink));
      table_ns = std::min(table_ns, ns_per_lookup_table(table, words, lookups / 5, sink));
    }
    std::printf("  %-22s snapshot %6.1f ns/lookup   table.lookup %6.1f ns/lookup\n", probe_name,
                snap_ns, table_ns);
  }
  // An incremental update: one entry re-pointed, a whole new version published.
  const auto update_start = Clock::now();
  constexpr int kUpdates = 20;
  for (int u = 0; u < kUpdates; ++u) {
    auto changed = entries[static_cast<std::size_t>(u) * 997 % entries.size()];
    changed.second.version_tag = static_cast<std::uint16_t>(u + 1);
    table.install(std::span<const std::pair<Prefix, LpmAction>>(&changed, 1));
  }
  std::printf("  one-entry batch publish: %.2f ms\n",
              std::chrono::duration<double, std::milli>(Clock::now() - update_start).count() / kUpdates);
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t target = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : kSwitchLpmCapacity;
  const std::size_t lookups = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 20000000;
  std::mt19937_64 rng(42);
  std::uint64_t sink = 0;
  constexpr std::size_t kProbes = 1 << 20;

  std::vector<Word> keys;
  const Entries btree = btree_entries(rng, target, keys);
  std::vector<Word> present(kProbes), near(kProbes), anywhere(kProbes);
  for (Word& w : present) w = keys[rng() % keys.size()];
  for (Word& w : near) w = keys.front() + rng() % (keys.back() - keys.front() + 1);
  for (Word& w : anywhere) w = rng();
  run("b+tree leaf covers", btree, {{"present keys", present}, {"words near the keys", near}, {"uniform words", anywhere}},
      std::max(target, kSwitchLpmCapacity), lookups, sink);

  const Entries uniform = uniform_entries(rng, target);
  std::vector<Word> starts(kProbes);
  for (Word& w : starts) w = uniform[rng() % uniform.size()].first.value;
  run("random prefixes", uniform, {{"prefix first words", starts}, {"uniform words", anywhere}},
      std::max(target, kSwitchLpmCapacity), lookups, sink);
  std::printf("(checksum %llu)\n", static_cast<unsigned long long>(sink));
  return 0;
}

// Readers look up while a writer publishes versions: no reader blocks on
// the writer, and no reader ever sees a mix of two versions.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <iostream>
#include <random>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "support/seed.h"
#include "switch_lpm/lpm_table.h"

using forein::Word;
using forein::offload::LpmAction;
using forein::offload::LpmStatus;
using forein::offload::LpmTable;
using forein::offload::Prefix;
using forein::offload::prefix_mask;

namespace {

// Every entry of publish step s points at node s + 1: a snapshot whose hits
// disagree on the node would be a torn table.
std::vector<std::pair<Prefix, LpmAction>> step_entries(const std::vector<Prefix>& prefixes,
                                                       std::uint32_t step) {
  std::vector<std::pair<Prefix, LpmAction>> entries;
  for (const Prefix& p : prefixes) entries.push_back({p, LpmAction{step + 1, 0, static_cast<std::uint16_t>(step)}});
  return entries;
}

std::vector<Prefix> random_prefixes(std::mt19937_64& rng, std::size_t n) {
  std::vector<Prefix> prefixes;
  for (std::size_t i = 0; i < n; ++i) {
    const auto len = static_cast<std::uint8_t>(8 + rng() % 57);
    prefixes.push_back(Prefix{rng() & prefix_mask(len), len});
  }
  return prefixes;
}

}  // namespace

TEST_CASE("lpm table: readers during publishes see whole versions", "[lpm][concurrent]") {
  std::mt19937_64 rng(forein::testing::test_seed("lpm concurrent publish"));
  const std::vector<Prefix> stable = random_prefixes(rng, 300);  // installed in every version
  std::vector<Word> probes;
  for (const Prefix& p : stable) probes.push_back(p.value);
  for (int i = 0; i < 300; ++i) probes.push_back(rng());

  LpmTable table(4000);
  REQUIRE(table.install(step_entries(stable, 0)) == LpmStatus::kOk);

  constexpr std::uint32_t kSteps = 300;
  std::atomic<bool> done{false};
  std::atomic<std::uint64_t> reader_failures{0};
  std::atomic<std::uint64_t> snapshots_seen{0};

  auto reader = [&] {
    std::uint32_t last_node = 0;
    std::uint64_t last_version = 0;
    while (!done.load(std::memory_order_acquire)) {
      const auto snapshot = table.snapshot();
      if (snapshot->version() < last_version) ++reader_failures;
      last_version = snapshot->version();
      std::uint32_t node = 0;
      for (std::size_t i = 0; i < probes.size(); ++i) {
        const auto hit = snapshot->lookup(probes[i]);
        if (i < stable.size() && !hit) ++reader_failures;  // stable prefixes never vanish
        if (!hit) continue;
        if (node == 0) node = hit->node;
        if (hit->node != node || hit->version_tag + 1u != node) ++reader_failures;
      }
      if (node < last_node) ++reader_failures;  // versions only move forward
      last_node = node;
      // The convenience path loads a fresh snapshot per call.
      const auto direct = table.lookup(probes[0]);
      if (!direct || direct->node < node) ++reader_failures;
      ++snapshots_seen;
    }
  };

  // Lookups through read sections only (no snapshot copies): each answer
  // comes from a whole version, and versions only move forward.
  std::atomic<std::uint64_t> direct_lookups{0};
  auto direct_reader = [&] {
    std::uint32_t last_node = 0;
    std::size_t i = 0;
    while (!done.load(std::memory_order_acquire)) {
      const auto hit = table.lookup(stable[i++ % stable.size()].value);
      if (!hit || hit->node < last_node || hit->version_tag + 1u != hit->node) ++reader_failures;
      if (hit) last_node = hit->node;
      ++direct_lookups;
    }
  };

  // A snapshot held across every publish stays readable (ASan would catch
  // a freed one) and keeps answering with its own version.
  const auto held = table.snapshot();

  std::vector<std::thread> readers;
  readers.emplace_back(reader);
  readers.emplace_back(direct_reader);

  std::vector<Prefix> extra;
  for (std::uint32_t step = 1; step <= kSteps; ++step) {
    // New entries first (stable ones re-pointed, fresh extras added), then
    // the old extras removed: two publishes, each internally consistent.
    std::vector<Prefix> fresh = random_prefixes(rng, 20);
    std::vector<Prefix> all = stable;
    all.insert(all.end(), fresh.begin(), fresh.end());
    for (const Prefix& p : extra) {
      if (std::find(all.begin(), all.end(), p) == all.end()) all.push_back(p);  // keep consistent
    }
    REQUIRE(table.install(step_entries(all, step)) == LpmStatus::kOk);
    std::vector<Prefix> old;
    for (const Prefix& p : extra) {
      if (std::find(fresh.begin(), fresh.end(), p) == fresh.end() &&
          std::find(stable.begin(), stable.end(), p) == stable.end()) {
        old.push_back(p);
      }
    }
    table.remove(old);
    extra = fresh;
  }
  done.store(true, std::memory_order_release);
  for (std::thread& t : readers) t.join();

  std::cout << "concurrent publish: " << snapshots_seen.load() << " snapshots checked, "
            << direct_lookups.load() << " direct lookups during " << 2 * kSteps << " publishes\n";
  CHECK(reader_failures.load() == 0);
  CHECK(snapshots_seen.load() > 0);
  CHECK(direct_lookups.load() > 0);
  CHECK(held->version() == 1);
  CHECK(held->lookup(stable.front().value)->node == 1);
  CHECK(table.usage().entries <= stable.size() + 20);
  CHECK(table.lookup(stable.front().value)->node == kSteps + 1);
}

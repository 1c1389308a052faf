// Conformance 4: install-before-remove coherence under install delay, with
// concurrent writers, for every backend of conformance_backends() (the model
// is tests/offload/test_manager_coherence.cc, which covers switch_lpm alone).
//
// Writers put and erase on a real tree (each owns the keys key % 4 ==
// writer, so it knows their exact answer; values are long enough that the
// tree splits while they grow and merges while they shrink); a reader looks
// up keys of the never-written stripe and keys outside the tree with the
// backend's raw image hints (no invalid-node filter); meanwhile the manager
// refreshes and the control plane applies batches after a delay with
// jitter (a manual clock advanced by random steps, or the manager's own
// thread on the steady clock). Zero wrong results. Afterwards, once
// everything is installed: no hint names a dead node, every key's start
// leaf is its leaf, and the device holds what the manager planned.
// Label `concurrent`: make check-tsan runs it under ThreadSanitizer.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "conformance_fixture.h"
#include "support/seed.h"

namespace {

using namespace std::chrono_literals;
using forein::Hint;
using forein::PageId;
using forein::StartHints;
using forein::Tree;
using forein::word_of;
using namespace forein::offload;
using namespace forein::offload::conformance;

constexpr std::int64_t kKeys = 16000;
constexpr int kWriters = 3;
constexpr int kStaticStripe = 3;
constexpr int kWriterOps = 60000;
constexpr int kReaderOps = 100000;

bool initially_present(std::int64_t i) { return (i / 4) % 2 == 0; }
std::string initial_value(std::int64_t i) { return "i" + std::to_string(i) + std::string(60, 'v'); }

struct Outcome {
  std::atomic<std::uint64_t> wrong{0};
  std::atomic<std::uint64_t> checked{0};
};

void load(Tree& tree) {
  std::vector<std::pair<std::string, std::string>> items;
  for (std::int64_t i = 0; i < kKeys; ++i) {
    if (initially_present(i)) items.emplace_back(int_key(i), initial_value(i));
  }
  tree.bulk_load(items);
}

// Owns keys i % 4 == stripe: grows them, then empties most of them.
void writer(Tree& tree, OffloadManager& manager, int stripe, std::uint64_t seed, Outcome& out) {
  std::mt19937_64 rng(seed);
  std::vector<char> present(kKeys / 4);
  std::vector<std::string> value(kKeys / 4);
  for (std::int64_t j = 0; j < kKeys / 4; ++j) {
    const std::int64_t i = j * 4 + stripe;
    present[j] = initially_present(i);
    value[j] = initial_value(i);
  }
  std::uint64_t wrong = 0, checked = 0;
  for (int op = 0; op < kWriterOps; ++op) {
    const auto j = static_cast<std::int64_t>(rng() % (kKeys / 4));
    const std::string key = int_key(j * 4 + stripe);
    manager.sample_access(word_of(key));
    const StartHints h = manager.hint(key);
    const unsigned dice = static_cast<unsigned>(rng() % 10);
    const bool growing = op < kWriterOps / 2;
    if (dice < (growing ? 7u : 0u)) {
      value[j] = "w" + std::to_string(op) + std::string(rng() % 120, 'w');
      wrong += tree.put(key, value[j], &h) != !present[j];
      present[j] = 1;
    } else if (dice < (growing ? 8u : 9u)) {
      wrong += tree.erase(key, &h) != static_cast<bool>(present[j]);
      present[j] = 0;
    } else {
      std::string got;
      const bool found = tree.get(key, &got, &h);
      wrong += found != static_cast<bool>(present[j]) || (found && got != value[j]);
    }
    ++checked;
    if (op % 8 == 0) {  // a key of the static stripe
      const std::int64_t i = static_cast<std::int64_t>(rng() % (kKeys / 4)) * 4 + kStaticStripe;
      const std::string skey = int_key(i);
      const StartHints sh = manager.hint(skey);
      std::string got;
      const bool found = tree.get(skey, &got, &sh);
      wrong += found != initially_present(i) || (found && got != initial_value(i));
      ++checked;
    }
  }
  out.wrong += wrong;
  out.checked += checked;
}

// Static keys and alien keys with the device's raw image hints.
void reader(Tree& tree, const Backend& backend, std::uint64_t seed, Outcome& out) {
  std::mt19937_64 rng(seed);
  std::uint64_t wrong = 0;
  for (int op = 0; op < kReaderOps; ++op) {
    const bool alien = op % 4 == 0;
    const std::int64_t i = alien ? kKeys + static_cast<std::int64_t>(rng() % 1000000)
                                 : static_cast<std::int64_t>(rng() % (kKeys / 4)) * 4 + kStaticStripe;
    const std::string key = int_key(i);
    const StartHints h = backend.hint(key);
    std::string got;
    const bool found = tree.get(key, &got, &h);
    const bool want = !alien && initially_present(i);
    wrong += found != want || (found && got != initial_value(i));
  }
  out.wrong += wrong;
  out.checked += kReaderOps;
}

void check_final(ConformanceTree& t) {
  t.settle();
  REQUIRE_NOTHROW(t.tree->check());
  const ManagerStats s = t.manager.stats();
  CHECK(s.pending_batches == 0);
  CHECK(s.invalid_nodes == 0);
  const BackendUsage u = t.backend.usage();
  CHECK(u.used <= u.capacity);
  if (u.capacity > 0) CHECK(u.used == s.target_entries);
  const std::set<PageId> live = t.live_node_ids();
  std::vector<std::string> present;
  t.tree->scan(forein::ScanSpec{}, [&](std::string_view k, std::string_view) {
    present.emplace_back(k);
    return true;
  });
  t.tree->reset_stats();
  std::size_t dead = 0, wrong_leaf = 0;
  for (const std::string& key : present) {
    const StartHints raw = t.backend.hint(key);
    for (const Hint& h : {raw.primary, raw.secondary}) dead += h.present() && live.count(h.node) == 0;
    const StartHints h = t.manager.hint(key);
    wrong_leaf += t.tree->start_leaf(key, &h).node != t.tree->leaf_for(key).node;
  }
  CHECK(dead == 0);
  CHECK(wrong_leaf == 0);
  if ((t.backend.info().capabilities & kStartHints) != 0 && !present.empty()) {
    CHECK(t.tree->stats().hint_hits > 0);
  }
}

void report(const char* backend, const char* mode, ConformanceTree& t, std::size_t rounds) {
  const ManagerStats s = t.manager.stats();
  const forein::TreeStats ts = t.tree->stats();
  std::cout << "  " << backend << " (" << mode << "): " << rounds << " control rounds, " << s.refreshes
            << " refreshes, " << s.entries_installed << " installed, " << s.entries_removed << " removed; hinted "
            << ts.hinted << " hits " << ts.hint_hits << " secondary " << ts.secondary_hits << " fallbacks "
            << ts.fallbacks << ", height " << t.tree->height() << "\n";
}

}  // namespace

TEST_CASE("conformance: coherence with delayed installs under a manual clock",
          "[conformance][coherence][concurrent]") {
  const std::uint64_t seed = forein::testing::test_seed("conformance coherence manual clock");
  std::uint64_t index = 0;
  for (const BackendInfo* info : conformance_backends()) {
    DYNAMIC_SECTION(info->name) {
      std::mt19937_64 rng(seed + index);
      ManagerOptions options;
      options.sample_rate = 4;
      options.install_delay = 1ms;
      options.install_delay_jitter = 4ms;
      options.delay_seed = rng();
      ConformanceTree t(*info, BackendConfig{}, options);
      load(*t.tree);
      t.settle();
      t.tree->reset_stats();

      Outcome out;
      std::atomic<int> writers_done{0};
      std::vector<std::thread> threads;
      for (int w = 0; w < kWriters; ++w) {
        const std::uint64_t s = rng();
        threads.emplace_back([&, w, s] {
          writer(*t.tree, t.manager, w, s, out);
          writers_done.fetch_add(1);
        });
      }
      const std::uint64_t reader_seed = rng();
      threads.emplace_back([&] { reader(*t.tree, t.backend, reader_seed, out); });

      // Recompute, let a random time pass, apply what is due: batches of
      // several recomputes are pending at once.
      std::size_t rounds = 0, max_pending = 0;
      while (writers_done.load() < kWriters) {
        t.manager.refresh();
        max_pending = std::max(max_pending, t.manager.stats().pending_batches);
        t.clock.advance(std::chrono::microseconds(rng() % 3000));
        t.manager.pump();
        ++rounds;
      }
      for (auto& th : threads) th.join();
      report(info->name, "manual clock", t, rounds);
      INFO("most pending batches seen: " << max_pending);
      CHECK(out.wrong.load() == 0);
      CHECK(out.checked.load() == std::uint64_t{kWriters} * (kWriterOps + kWriterOps / 8) + kReaderOps);
      check_final(t);
    }
    ++index;
  }
}

TEST_CASE("conformance: coherence with the manager's own thread installing meanwhile",
          "[conformance][coherence][concurrent]") {
  const std::uint64_t seed = forein::testing::test_seed("conformance coherence background");
  std::uint64_t index = 0;
  for (const BackendInfo* info : conformance_backends()) {
    DYNAMIC_SECTION(info->name) {
      std::mt19937_64 rng(seed + index);
      SteadyManagerClock steady;
      ManagerOptions options;
      options.clock = &steady;
      options.install_delay = 500us;
      options.install_delay_jitter = 1ms;
      options.delay_seed = rng();
      options.refresh_period = 2ms;
      options.pump_period = 200us;
      options.sample_rate = 16;
      ConformanceTree t(*info, BackendConfig{}, options);
      load(*t.tree);
      t.settle();
      t.tree->reset_stats();

      Outcome out;
      std::vector<std::thread> threads;
      for (int w = 0; w < kWriters; ++w) {
        const std::uint64_t s = rng();
        threads.emplace_back([&, w, s] { writer(*t.tree, t.manager, w, s, out); });
      }
      const std::uint64_t reader_seed = rng();
      threads.emplace_back([&] { reader(*t.tree, t.backend, reader_seed, out); });
      for (auto& th : threads) th.join();
      t.manager.stop_background();  // the final checks drive the manager by hand
      report(info->name, "background thread", t, 0);
      CHECK(out.wrong.load() == 0);
      CHECK(t.manager.stats().refreshes >= 1);
      check_final(t);
    }
    ++index;
  }
}

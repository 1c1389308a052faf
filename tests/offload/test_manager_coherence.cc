// Coherence under concurrency (FOREIN section V-D): writers put and erase
// on a real tree while the manager recomputes and the control plane installs
// with random delays; every lookup takes its hints from the backend. Each
// writer owns a stripe of keys (key % 4 == writer), so it knows the exact
// answer for its own keys; stripe 3 never changes, so readers know theirs.
// Zero wrong results are allowed; the tree's counters must show hint hits.
//
// Bounded: fixed operation counts, no sleeps; the control loop runs until
// the writers are done.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "manager_fixture.h"
#include "support/seed.h"

namespace {

using namespace std::chrono_literals;
using forein::StartHints;
using forein::Tree;
using forein::word_of;
using namespace forein::offload;
using forein::offload::testing::int_key;
using forein::offload::testing::live_nodes;
using forein::offload::testing::ManagedTree;

constexpr std::int64_t kKeys = 24000;
constexpr int kWriters = 3;
constexpr int kStaticStripe = 3;
constexpr int kWriterOps = 60000;
constexpr int kReaderOps = 100000;

bool initially_present(std::int64_t i) { return (i / 4) % 2 == 0; }
std::string initial_value(std::int64_t i) { return "i" + std::to_string(i); }

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

// Owns keys i % 4 == stripe: grows them, then empties most of them (splits, then merges).
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
      value[j] = "w" + std::to_string(op);
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

// Static keys and alien keys, with the backend's raw hints (no invalid-node filter).
void reader(Tree& tree, const SwitchLpmDevice& backend, std::uint64_t seed, Outcome& out) {
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

// After the run: the final state installed, every key's hint right.
void check_final(ManagedTree<>& t) {
  t.manager.refresh();
  t.manager.flush();
  t.tree->check();
  const ManagerStats s = t.manager.stats();
  CHECK(s.pending_batches == 0);
  CHECK(s.invalid_nodes == 0);
  CHECK(t.backend.usage().used == s.target_entries);
  CHECK(t.backend.usage().used <= t.backend.usage().capacity);
  const auto live = live_nodes(*t.tree);
  std::size_t on_dead = 0;
  for (const LpmEntry& e : t.backend.entries()) {
    const auto it = live.find(e.node);
    on_dead += it == live.end() || it->second != e.level;
  }
  CHECK(on_dead == 0);
  std::size_t wrong_leaf = 0, keys = 0;
  std::vector<std::string> present;
  t.tree->scan(forein::ScanSpec{}, [&](std::string_view k, std::string_view) {
    present.emplace_back(k);
    return true;
  });
  t.tree->reset_stats();
  for (const std::string& key : present) {
    const StartHints h = t.manager.hint(key);
    wrong_leaf += t.tree->start_leaf(key, &h).node != t.tree->leaf_for(key).node;
    ++keys;
  }
  CHECK(wrong_leaf == 0);
  CHECK(t.tree->stats().hint_hits == keys);
}

void report(const char* name, Tree& tree, const ManagerStats& s, std::size_t rounds,
            const forein::TreeStats& ts) {
  std::cout << name << ": " << rounds << " control rounds, " << s.refreshes << " refreshes, "
            << s.entries_installed << " entries installed, " << s.entries_removed << " removed, "
            << "hinted " << ts.hinted << " hint hits " << ts.hint_hits << " secondary "
            << ts.secondary_hits << " fallbacks " << ts.fallbacks << " move-rights "
            << ts.move_rights << ", height " << tree.height() << "\n";
}

}  // namespace

TEST_CASE("coherence: writers, readers and delayed installs under a manual clock",
          "[manager][concurrent]") {
  const std::uint64_t seed = forein::testing::test_seed("manager coherence manual clock");
  std::mt19937_64 rng(seed);
  ManagerOptions options;
  options.sample_rate = 4;
  options.install_delay = 1ms;
  options.install_delay_jitter = 4ms;
  options.delay_seed = rng();
  ManagedTree<> t(options);
  load(*t.tree);
  t.manager.refresh();
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

  // The control plane: recompute, let a random amount of time pass, apply
  // what is due; batches of several recomputes overlap.
  std::size_t rounds = 0;
  std::size_t max_pending = 0;
  while (writers_done.load() < kWriters) {
    t.manager.refresh();
    max_pending = std::max(max_pending, t.manager.stats().pending_batches);
    t.clock.advance(std::chrono::microseconds(rng() % 3000));
    t.manager.pump();
    ++rounds;
  }
  for (auto& th : threads) th.join();
  const forein::TreeStats ts = t.tree->stats();
  report("manual clock", *t.tree, t.manager.stats(), rounds, ts);

  CHECK(out.wrong.load() == 0);
  CHECK(out.checked.load() > 0);
  CHECK(ts.hint_hits > 0);
  CHECK(ts.hint_hits > ts.hinted / 2);
  INFO("most pending batches seen: " << max_pending);
  check_final(t);
}

TEST_CASE("coherence: the manager's own thread refreshes and installs meanwhile",
          "[manager][concurrent]") {
  const std::uint64_t seed = forein::testing::test_seed("manager coherence background");
  std::mt19937_64 rng(seed);
  SteadyManagerClock steady;
  ManagerOptions options;
  options.clock = &steady;
  options.install_delay = 500us;
  options.install_delay_jitter = 1ms;
  options.delay_seed = rng();
  options.refresh_period = 2ms;
  options.pump_period = 200us;
  options.sample_rate = 16;
  ManagedTree<> t(options);
  load(*t.tree);
  t.manager.refresh();
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
  const forein::TreeStats ts = t.tree->stats();
  const ManagerStats ms = t.manager.stats();
  report("background thread", *t.tree, ms, 0, ts);

  CHECK(out.wrong.load() == 0);
  CHECK(out.checked.load() > 0);
  CHECK(ts.hint_hits > 0);
  CHECK(ms.refreshes >= 1);
  check_final(t);
}

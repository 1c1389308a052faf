// Offload manager and switch_lpm backend, single-threaded: hints after a
// bulk load lead to the right leaves, the install delay holds entries back,
// installs come before removals, merged-away nodes are tracked as invalid
// until their entries are removed, hollow prefixes fall back to the bottom
// line, sampled accesses pin hot leaves, and garbage hints change nothing.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "forein/error.h"
#include "manager_fixture.h"
#include "support/seed.h"

namespace {

using namespace std::chrono_literals;
using forein::Hint;
using forein::PageId;
using forein::StartHints;
using forein::Tree;
using forein::Word;
using forein::word_of;
using namespace forein::offload;
using forein::offload::testing::garbage_backend_info;
using forein::offload::testing::garbage_seed;
using forein::offload::testing::int_key;
using forein::offload::testing::live_nodes;
using forein::offload::testing::ManagedTree;
using forein::offload::testing::RecordingDevice;

std::vector<std::int64_t> random_keys(std::mt19937_64& rng, std::size_t n) {
  std::set<std::int64_t> keys;
  while (keys.size() < n) keys.insert(static_cast<std::int64_t>(rng()));
  return {keys.begin(), keys.end()};
}

void bulk_load(Tree& tree, const std::vector<std::int64_t>& sorted) {
  std::vector<std::pair<std::string, std::string>> items;
  for (std::int64_t k : sorted) items.emplace_back(int_key(k), "v" + std::to_string(k));
  tree.bulk_load(items);
}

struct HintCheck {
  std::size_t wrong_leaf = 0;
  std::size_t leaf_hints = 0;  // primary hint at level 0
  forein::TreeStats stats;
};

// For every key: the start leaf from the manager's hint is the root-descent leaf.
template <typename Keys>
HintCheck check_hints(Tree& tree, const OffloadManager& manager, const Keys& keys) {
  HintCheck c;
  tree.reset_stats();
  for (std::int64_t k : keys) {
    const std::string key = int_key(k);
    const StartHints h = manager.hint(key);
    if (h.primary.present() && h.primary.level == 0) ++c.leaf_hints;
    if (tree.start_leaf(key, &h).node != tree.leaf_for(key).node) ++c.wrong_leaf;
  }
  c.stats = tree.stats();
  return c;
}

// No installed entry points to a page that is not a live node of the entry's level.
template <typename DeviceT>
std::size_t entries_on_dead_nodes(Tree& tree, const DeviceT& backend) {
  const auto live = live_nodes(tree);
  std::size_t bad = 0;
  for (const LpmEntry& e : backend.entries()) {
    const auto it = live.find(e.node);
    if (it == live.end() || it->second != e.level) ++bad;
  }
  return bad;
}

}  // namespace

TEST_CASE("switch_lpm backend: capacity, all-or-nothing, primary and secondary hints",
          "[manager][switch_lpm]") {
  SwitchLpmOptions options;
  options.capacity = 10;
  SwitchLpmDevice backend(options);
  auto entry = [](Word value, std::uint8_t len, PageId node, std::uint16_t level, Layer layer) {
    return LpmEntry{Prefix{value, len}, node, level, layer, 7};
  };
  const Word half = Word{1} << 63;
  // Bottom line: two halves of word space on level-1 nodes 5 and 6.
  std::vector<LpmEntry> bottom = {entry(0, 1, 5, 1, Layer::kBottomLine),
                                  entry(half, 1, 6, 1, Layer::kBottomLine)};
  REQUIRE(backend.install(bottom) == BackendStatus::kOk);
  // A leaf entry inside the upper half.
  std::vector<LpmEntry> leaf = {entry(half | (Word{1} << 60), 4, 9, 0, Layer::kMain)};
  REQUIRE(backend.install(leaf) == BackendStatus::kOk);

  StartHints h = backend.hint_for_word(half | (Word{1} << 60) | 123);
  CHECK(h.primary.node == 9);
  CHECK(h.primary.level == 0);
  CHECK(h.secondary.node == 6);
  CHECK(h.secondary.level == 1);
  h = backend.hint_for_word(42);
  CHECK(h.primary.node == 5);
  CHECK_FALSE(h.secondary.present());

  // 3 used; 8 new entries do not fit, and nothing changes.
  std::vector<LpmEntry> many;
  for (Word i = 0; i < 8; ++i) many.push_back(entry(i << 32, 32, 11, 0, Layer::kMain));
  CHECK(backend.install(many) == BackendStatus::kCapacityExceeded);
  CHECK(backend.usage().used == 3);
  // 7 fit exactly, and replacing an installed key costs nothing.
  many.pop_back();
  many.push_back(entry(half | (Word{1} << 60), 4, 12, 0, Layer::kHotLeaf));  // replaces node 9
  CHECK(backend.install(many) == BackendStatus::kOk);
  CHECK(backend.usage().used == 10);
  CHECK(backend.usage().fraction() == Approx(1.0));
  CHECK(backend.usage().hardware_bytes == 10 * SwitchLpmDevice::kBytesPerEntry);
  CHECK(backend.hint_for_word(half | (Word{1} << 60)).primary.node == 12);

  // An invalid entry rejects the whole batch.
  std::vector<LpmEntry> bad = {entry(0, 1, 5, 1, Layer::kBottomLine), entry(1, 1, 5, 0, Layer::kMain)};
  CHECK(backend.install(bad) == BackendStatus::kInvalidEntry);
  bad = {entry(0, 2, forein::kNoPage, 0, Layer::kMain)};
  CHECK(backend.install(bad) == BackendStatus::kInvalidEntry);
  CHECK(backend.usage().used == 10);

  // Removal matches prefix and layer class, not the target.
  std::vector<LpmEntry> gone = {entry(half, 1, 99, 3, Layer::kBottomLine),
                                entry(half, 1, 99, 3, Layer::kMain)};  // not installed as main
  CHECK(backend.remove(gone) == 1);
  CHECK(backend.usage().used == 9);
  h = backend.hint_for_word(half | 5);
  CHECK_FALSE(h.primary.present());
  CHECK(backend.model().hint_latency_ns > 0);
}

TEST_CASE("manager: after a bulk load every key's hint leads to its leaf",
          "[manager]") {
  std::mt19937_64 rng(forein::testing::test_seed("manager bulk load hints"));
  const bool sparse = GENERATE(false, true);
  INFO((sparse ? "random 64-bit keys" : "dense keys"));
  std::vector<std::int64_t> keys;
  if (sparse) {
    keys = random_keys(rng, 30000);
  } else {
    for (std::int64_t i = 0; i < 30000; ++i) keys.push_back(i * 3 - 40000);
  }
  ManagedTree<> t;
  bulk_load(*t.tree, keys);
  t.manager.refresh();  // no delay: applied at once

  const ManagerStats s = t.manager.stats();
  const BackendUsage usage = t.backend.usage();
  INFO("entries " << usage.used << " (bottom line " << s.metric("bottom_line_entries") << ", main "
                  << s.metric("main_entries") << ", hot " << s.metric("hot_leaf_entries") << "), live nodes "
                  << s.live_nodes << ", height " << t.tree->height());
  CHECK(s.pending_batches == 0);
  CHECK(usage.used == s.target_entries);
  CHECK(usage.used <= usage.capacity);
  CHECK(usage.used <= usage.capacity / 2);  // the default budget
  CHECK(s.metric("bottom_line_entries") > 0);
  CHECK(s.metric("bottom_line_level") == 1);

  const HintCheck c = check_hints(*t.tree, t.manager, keys);
  CHECK(c.wrong_leaf == 0);
  CHECK(c.stats.hint_hits == keys.size());
  CHECK(c.stats.fallbacks == 0);
  // A word is owned by the node holding its shortest key, so a key with
  // trailing zero bytes right at a separator starts one node left.
  CHECK(c.stats.move_rights <= keys.size() / 100);
  // Everything fits the budget, so every leaf is installed.
  CHECK(c.leaf_hints == keys.size());
  // Alien keys: still the right leaf (bottom line or a move-right away).
  std::size_t alien_wrong = 0;
  for (int i = 0; i < 2000; ++i) {
    const std::string key = int_key(static_cast<std::int64_t>(rng()));
    const StartHints h = t.manager.hint(key);
    if (t.tree->start_leaf(key, &h).node != t.tree->leaf_for(key).node) ++alien_wrong;
  }
  CHECK(alien_wrong == 0);
}

TEST_CASE("manager: a small budget keeps installed entries within it", "[manager]") {
  BackendConfig config;
  config.budget = 300;
  ManagedTree<> t(ManagerOptions{}, config);
  std::vector<std::int64_t> keys;
  for (std::int64_t i = 0; i < 40000; ++i) keys.push_back(i * 7919);
  bulk_load(*t.tree, keys);
  t.manager.refresh();
  CHECK(t.backend.usage().used <= 300);
  CHECK(t.backend.usage().used > 0);
  const HintCheck c = check_hints(*t.tree, t.manager, keys);
  CHECK(c.wrong_leaf == 0);
  CHECK(c.stats.hint_hits == keys.size());
}

TEST_CASE("manager: entries wait for the install delay", "[manager]") {
  ManagerOptions options;
  options.install_delay = 10ms;
  ManagedTree<> t(options);
  std::vector<std::int64_t> keys;
  for (std::int64_t i = 0; i < 5000; ++i) keys.push_back(i);
  bulk_load(*t.tree, keys);
  t.manager.refresh();
  CHECK(t.backend.usage().used == 0);
  CHECK(t.manager.stats().pending_batches == 1);
  // Lookups meanwhile: no hint, root descents, right answers.
  const HintCheck before = check_hints(*t.tree, t.manager, keys);
  CHECK(before.wrong_leaf == 0);
  CHECK(before.stats.hinted == 0);

  t.clock.advance(9ms);
  CHECK(t.manager.pump() == 0);
  CHECK(t.backend.usage().used == 0);
  t.clock.advance(1ms);
  CHECK(t.manager.pump() == 1);
  CHECK(t.backend.usage().used == t.manager.stats().target_entries);
  const HintCheck after = check_hints(*t.tree, t.manager, keys);
  CHECK(after.wrong_leaf == 0);
  CHECK(after.stats.hint_hits == keys.size());
}

TEST_CASE("manager: each recompute installs before it removes, batches stay in order",
          "[manager]") {
  std::mt19937_64 rng(forein::testing::test_seed("manager ordering"));
  ManagerOptions options;
  options.install_delay = 1ms;
  options.install_delay_jitter = 5ms;  // later batches can be due before earlier ones
  options.delay_seed = rng();
  ManagedTree<RecordingDevice> t(options);
  std::vector<std::int64_t> keys;
  for (std::int64_t i = 0; i < 6000; ++i) keys.push_back(i * 1000);
  bulk_load(*t.tree, keys);
  t.manager.refresh();
  t.manager.flush();

  // Three rounds of changes (splits, then merges), each recomputed while
  // the previous round may still be pending.
  std::vector<std::string> expected;  // per refresh: what it queued
  std::uint64_t install_batches = t.manager.stats().install_batches;
  std::uint64_t remove_batches = t.manager.stats().remove_batches;
  for (int round = 0; round < 3; ++round) {
    if (round < 2) {
      for (int i = 0; i < 3000; ++i) {
        const auto k = static_cast<std::int64_t>(rng() % 6000000);
        t.tree->put(int_key(k), "x");
      }
    } else {
      for (std::int64_t i = 0; i < 6000000; i += 1000) {
        if (i % 5000 != 0) t.tree->erase(int_key(i));
      }
    }
    t.manager.refresh();
    const ManagerStats s = t.manager.stats();
    // A split may only move prefixes to new nodes (replacements, no
    // removals); a merge always removes some.
    REQUIRE(s.install_batches <= install_batches + 1);
    REQUIRE(s.remove_batches <= remove_batches + 1);
    if (s.install_batches == install_batches + 1) expected.push_back("install");
    if (s.remove_batches == remove_batches + 1) expected.push_back("remove");
    install_batches = s.install_batches;
    remove_batches = s.remove_batches;
    t.clock.advance(std::chrono::microseconds(rng() % 4000));
    t.manager.pump();
  }
  t.clock.advance(10ms);
  t.manager.pump();
  CHECK(t.manager.stats().pending_batches == 0);

  const auto calls = t.backend.calls();
  std::vector<std::string> seen;
  for (std::size_t i = 1; i < calls.size(); ++i) seen.push_back(calls[i].install ? "install" : "remove");
  CHECK(seen == expected);
  INFO("calls after the bulk load's install: " << seen.size());
  CHECK(std::count(expected.begin(), expected.end(), "install") >= 2);
  CHECK(expected.back() == "remove");
  CHECK(t.manager.stats().remove_first_batches == 0);
  CHECK(entries_on_dead_nodes(*t.tree, t.backend.inner()) == 0);
}

TEST_CASE("manager: merged nodes are invalid until their removal is confirmed", "[manager]") {
  std::mt19937_64 rng(forein::testing::test_seed("manager merges"));
  ManagerOptions options;
  options.install_delay = 5ms;
  ManagedTree<> t(options);
  std::vector<std::int64_t> keys;
  for (std::int64_t i = 0; i < 20000; ++i) keys.push_back(i * 16);
  bulk_load(*t.tree, keys);
  t.manager.refresh();
  t.manager.flush();
  const auto installed_before = t.backend.entries();

  // Splits (new keys in between), then heavy deletes (merges).
  for (int i = 0; i < 8000; ++i) t.tree->put(int_key(static_cast<std::int64_t>(rng() % 320000)), "n");
  std::map<std::int64_t, bool> present;
  t.tree->scan(forein::ScanSpec{}, [&](std::string_view k, std::string_view) {
    present[forein::decode_int64(k)] = true;
    return true;
  });
  for (auto& [k, p] : present) {
    if (rng() % 10 != 0) {
      t.tree->erase(int_key(k));
      p = false;
    }
  }
  std::vector<std::int64_t> remaining;
  for (const auto& [k, p] : present) {
    if (p) remaining.push_back(k);
  }
  t.tree->check();

  // Before the recompute: stale entries, yet every lookup lands right.
  {
    const HintCheck c = check_hints(*t.tree, t.manager, remaining);
    CHECK(c.wrong_leaf == 0);
    CHECK(entries_on_dead_nodes(*t.tree, t.backend) > 0);  // stale entries of merged nodes
  }
  t.manager.refresh();
  const ManagerStats pending = t.manager.stats();
  REQUIRE(pending.pending_batches == 2);
  REQUIRE(pending.invalid_nodes > 0);
  // While pending, the dead nodes' entries are still installed but filtered out.
  const auto live = live_nodes(*t.tree);
  std::size_t filtered = 0, invalid_primary = 0;
  for (std::int64_t k : remaining) {
    const std::string key = int_key(k);
    const StartHints raw = t.backend.hint(key);
    const StartHints h = t.manager.hint(key);
    if (raw.primary.present() && t.manager.is_invalid(raw.primary.node)) ++filtered;
    if (h.primary.present() && t.manager.is_invalid(h.primary.node)) ++invalid_primary;
  }
  CHECK(invalid_primary == 0);
  INFO("lookups redirected away from invalid nodes: " << filtered);
  CHECK(check_hints(*t.tree, t.manager, remaining).wrong_leaf == 0);

  t.clock.advance(5ms);
  CHECK(t.manager.pump() == 2);
  const ManagerStats done = t.manager.stats();
  CHECK(done.pending_batches == 0);
  CHECK(done.invalid_nodes == 0);
  CHECK(entries_on_dead_nodes(*t.tree, t.backend) == 0);
  CHECK(t.backend.usage().used == done.target_entries);
  CHECK(t.backend.usage().used <= t.backend.usage().capacity);
  const HintCheck c = check_hints(*t.tree, t.manager, remaining);
  CHECK(c.wrong_leaf == 0);
  CHECK(c.stats.hint_hits == remaining.size());
  CHECK(c.stats.move_rights <= remaining.size() / 100);
}

TEST_CASE("manager: a new key under a hollow prefix goes to the bottom line until installed",
          "[manager]") {
  std::mt19937_64 rng(forein::testing::test_seed("manager hollow"));
  ManagedTree<> t;
  const std::vector<std::int64_t> keys = random_keys(rng, 20000);
  bulk_load(*t.tree, keys);
  t.manager.refresh();

  // New keys whose words no installed leaf prefix covers (hollow zones):
  // the LPM answers them with the bottom line.
  const std::set<std::int64_t> existing(keys.begin(), keys.end());
  std::vector<std::int64_t> fresh;
  while (fresh.size() < 50) {
    const auto k = static_cast<std::int64_t>(rng());
    const StartHints h = t.manager.hint(int_key(k));
    if (!existing.contains(k) && h.primary.present() && h.primary.level > 0) fresh.push_back(k);
  }
  for (std::int64_t k : fresh) t.tree->put(int_key(k), "fresh");
  std::size_t via_bottom_line = 0;
  for (std::int64_t k : fresh) {
    const StartHints h = t.manager.hint(int_key(k));
    if (h.primary.present() && h.primary.level > 0) ++via_bottom_line;
  }
  CHECK(via_bottom_line == fresh.size());
  CHECK(check_hints(*t.tree, t.manager, fresh).wrong_leaf == 0);

  t.manager.refresh();  // installs the now non-hollow prefixes
  const HintCheck c = check_hints(*t.tree, t.manager, fresh);
  CHECK(c.wrong_leaf == 0);
  CHECK(c.leaf_hints == fresh.size());
}

TEST_CASE("manager: a split's stale entry reaches the new node through the sibling link",
          "[manager]") {
  ManagedTree<> t;
  std::vector<std::int64_t> keys;
  for (std::int64_t i = 0; i < 10000; ++i) keys.push_back(i * 100);
  bulk_load(*t.tree, keys);
  t.manager.refresh();
  // Fill the gaps of the first leaves: they split, no refresh.
  std::vector<std::int64_t> all = keys;
  for (std::int64_t i = 0; i < 50000; i += 2) {
    if (i % 100 != 0) {
      t.tree->put(int_key(i), "s");
      all.push_back(i);
    }
  }
  std::sort(all.begin(), all.end());
  const HintCheck c = check_hints(*t.tree, t.manager, all);
  CHECK(c.wrong_leaf == 0);
  CHECK(c.stats.move_rights > 0);
  t.manager.refresh();
  const HintCheck after = check_hints(*t.tree, t.manager, all);
  CHECK(after.wrong_leaf == 0);
  CHECK(after.stats.move_rights <= all.size() / 100);
  CHECK(after.stats.move_rights < c.stats.move_rights / 100);
}

TEST_CASE("manager: sampled accesses pin the hot leaves", "[manager]") {
  ManagerOptions options;
  options.sample_rate = 16;
  options.prior_weight = 0;  // only samples count
  BackendConfig config;
  config.set("hot_leaves", 2);
  ManagedTree<> t(options, config);
  std::vector<std::int64_t> keys;
  for (std::int64_t i = 0; i < 20000; ++i) keys.push_back(i);
  bulk_load(*t.tree, keys);
  // 16 * 200 lookups of key 12345: 200 samples, on this thread's counter.
  for (int i = 0; i < 16 * 200; ++i) t.manager.sample_access(word_of(int_key(12345)));
  t.manager.refresh();
  const ManagerStats s = t.manager.stats();
  CHECK(s.sampled_accesses == 200);
  CHECK(s.metric("hot_leaf_entries") > 0);
  const PageId hot = t.tree->leaf_for(int_key(12345)).node;
  bool pinned = false;
  for (const LpmEntry& e : t.target_entries()) {
    if (e.node == hot && e.layer == Layer::kHotLeaf) pinned = true;
  }
  CHECK(pinned);
  CHECK(t.manager.hint(int_key(12345)).primary.node == hot);
}

TEST_CASE("manager: events of another index are ignored", "[manager]") {
  ManagerOptions options;
  options.index_id = 7;
  ManagedTree<> t(options);
  forein::NodeEvent foreign{forein::NodeEventKind::kCreated, {}};
  foreign.interval.index = 8;
  foreign.interval.node = 999;
  t.manager.on_node_event(foreign);
  t.tree->put(int_key(1), "a");
  t.manager.refresh();
  CHECK(t.manager.stats().foreign_events == 1);
  CHECK(t.manager.stats().live_nodes == 1);
}

TEST_CASE("manager: a backend with garbage hints never changes a result", "[manager][garbage]") {
  const std::uint64_t seed = forein::testing::test_seed("manager garbage backend");
  std::mt19937_64 rng(seed);
  auto store = std::make_unique<forein::MemoryPageStore>(4096);
  garbage_seed = seed ^ 0x5a5a;
  Backend garbage(garbage_backend_info());
  ManagerOptions options;
  OffloadManager manager(garbage, options);
  forein::TreeOptions tree_options;
  tree_options.observer = &manager;
  auto tree = Tree::create(std::move(store), tree_options);
  manager.attach(*tree);

  std::map<std::string, std::string> oracle;
  std::size_t mismatches = 0;
  const std::int64_t key_space = 20000;
  for (int op = 0; op < 60000; ++op) {
    if (op % 5000 == 0) manager.refresh();  // the manager runs too; its pushes go nowhere
    const std::string key = int_key(static_cast<std::int64_t>(rng() % key_space));
    const StartHints h = manager.hint(key);
    const unsigned what = static_cast<unsigned>(rng() % 10);
    const bool growing = op < 30000;
    if (what < (growing ? 5u : 2u)) {
      const std::string value = "v" + std::to_string(op);
      const bool fresh = tree->put(key, value, &h);
      if (fresh != (oracle.count(key) == 0)) ++mismatches;
      oracle[key] = value;
    } else if (what < 7) {
      const bool had = tree->erase(key, &h);
      if (had != (oracle.erase(key) == 1)) ++mismatches;
    } else if (what < 9) {
      std::string value;
      const bool found = tree->get(key, &value, &h);
      const auto it = oracle.find(key);
      if (found != (it != oracle.end()) || (found && value != it->second)) ++mismatches;
    } else {
      forein::ScanSpec spec;
      spec.lower = forein::KeyBound{key, true};
      std::vector<std::string> got;
      tree->scan(spec, [&](std::string_view k, std::string_view) {
        got.emplace_back(k);
        return got.size() < 5;
      }, &h);
      std::vector<std::string> want;
      for (auto it = oracle.lower_bound(key); it != oracle.end() && want.size() < 5; ++it) {
        want.push_back(it->first);
      }
      if (got != want) ++mismatches;
    }
  }
  manager.detach();
  CHECK(mismatches == 0);
  CHECK(tree->size() == oracle.size());
  const forein::TreeStats s = tree->stats();
  CHECK(s.hinted > 0);
  CHECK(s.fallbacks > 0);
  tree->check();
}

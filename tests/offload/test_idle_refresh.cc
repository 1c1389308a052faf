// Idle costs nothing (issue 42, item 5): a refresh with nothing changed
// asks no planner and reads no key; a new key, an erase, a sampled access,
// a node event and a changed node table each make the next refresh plan; a
// value replaced in place does not; a plan driven by samples alone reads
// no key words; and a manager that skips unchanged refreshes leaves every
// registered backend's device byte for byte where a manager that plans at
// every refresh leaves it (randomized, FOREIN_SEED). The engine tree's
// source reads again only the words of leaves that changed (its case beside
// concurrent writers: test_incremental_words_concurrency.cc).
#include <catch2/catch.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "forein/offload/backend.h"
#include "forein/offload/manager.h"
#include "forein/offload/registry.h"
#include "forein/offload/tree_source.h"
#include "forein/page_store.h"
#include "forein/tree.h"
#include "manager_fixture.h"
#include "support/seed.h"
#include "switch_lpm/switch_lpm_backend.h"
#include "switch_lpm/switch_lpm_planner.h"

namespace {

using forein::NodeEvent;
using forein::NodeEventKind;
using forein::NodeInterval;
using forein::NodeObserver;
using forein::Tree;
using forein::Word;
using forein::word_of;
using namespace forein::offload;
using forein::offload::testing::int_key;

// switch_lpm's planner, counting its plan() calls.
class CountingPlanner final : public Planner {
 public:
  explicit CountingPlanner(std::unique_ptr<Planner> inner) : inner_(std::move(inner)) {}
  PlanDiff plan(const PlanInput& input) override {
    ++plans;
    if (input.keys_unchanged) ++plans_with_unchanged_keys;
    return inner_->plan(input);
  }
  ChangeBatch full_target() const override { return inner_->full_target(); }
  void reset() override { inner_->reset(); }
  const SwitchLpmPlanner& inner() const { return static_cast<const SwitchLpmPlanner&>(*inner_); }

  std::uint64_t plans = 0;
  std::uint64_t plans_with_unchanged_keys = 0;

 private:
  std::unique_ptr<Planner> inner_;
};

const BackendInfo& counting_switch_lpm() {
  static const BackendInfo info = [] {
    BackendInfo i = kSwitchLpmBackend;
    i.make_planner = [](const BackendConfig& c) -> std::unique_ptr<Planner> {
      return std::make_unique<CountingPlanner>(kSwitchLpmBackend.make_planner(c));
    };
    return i;
  }();
  return info;
}

// The engine tree as a source, counting the word scans it is asked for.
class CountingSource final : public IndexSource {
 public:
  explicit CountingSource(Tree& tree) : inner_(tree) {}
  void for_each_node(const std::function<void(const NodeInterval&)>& fn) const override {
    inner_.for_each_node(fn);
  }
  void for_each_word(const std::function<bool(Word)>& fn) const override {
    ++word_scans;
    inner_.for_each_word(fn);
  }
  std::uint64_t key_generation() const override { return inner_.key_generation(); }

  mutable std::uint64_t word_scans = 0;

 private:
  TreeIndexSource inner_;
};

// A tree of the even keys 0, 2, ..., 2 * (n - 1) whose events feed a
// manager over the counting switch_lpm backend.
struct CountedTree {
  explicit CountedTree(std::int64_t n = 20000, ManagerOptions options = {})
      : backend(counting_switch_lpm()), manager(backend, options) {
    forein::TreeOptions to;
    to.observer = &manager;
    tree = Tree::create(std::make_unique<forein::MemoryPageStore>(4096), to);
    std::vector<std::pair<std::string, std::string>> rows;
    for (std::int64_t i = 0; i < n; ++i) rows.emplace_back(int_key(2 * i), "v");
    tree->bulk_load(rows);
    source = std::make_unique<CountingSource>(*tree);
    manager.attach(*source);
  }
  ~CountedTree() { manager.detach(); }

  CountingPlanner& planner() { return static_cast<CountingPlanner&>(backend.planner()); }
  std::uint64_t plans() { return planner().plans; }
  std::uint64_t scans() const { return source->word_scans; }
  // Refreshes until one is skipped (decay may need some after samples);
  // returns how many planned first. Fails past `limit`.
  int refresh_until_skipped(int limit = 64) {
    for (int i = 0; i < limit; ++i) {
      const std::uint64_t before = plans();
      manager.refresh();
      if (plans() == before) return i;
    }
    FAIL("refreshes kept planning");
    return limit;
  }

  Backend backend;
  OffloadManager manager;
  std::unique_ptr<Tree> tree;
  std::unique_ptr<CountingSource> source;
};

}  // namespace

TEST_CASE("idle refresh: nothing changed, no plan and no word scan", "[manager][idle]") {
  CountedTree t;
  t.manager.refresh();  // the first plan after attach
  REQUIRE(t.plans() == 1);
  REQUIRE(t.scans() == 1);
  const std::size_t target = t.manager.stats().target_entries;
  REQUIRE(target > 0);
  const auto image = t.backend.device().load_image();
  for (int i = 0; i < 50; ++i) t.manager.refresh();
  CHECK(t.plans() == 1);
  CHECK(t.scans() == 1);
  const ManagerStats s = t.manager.stats();
  CHECK(s.refreshes == 51);
  CHECK(s.plans == 1);
  CHECK(s.skipped_refreshes == 50);
  CHECK(s.target_entries == target);
  CHECK(s.metric("main_entries") > 0);  // the last plan's figures stay
  CHECK(t.backend.device().load_image()->version == image->version);
}

TEST_CASE("idle refresh: a new key or an erase makes the next refresh plan and read the words",
          "[manager][idle]") {
  CountedTree t;
  t.manager.refresh();
  REQUIRE(t.refresh_until_skipped() == 0);
  const std::uint64_t plans = t.plans(), scans = t.scans();

  SECTION("a new key, no split") {
    const std::uint64_t generation = t.tree->key_generation();
    REQUIRE(t.tree->put(int_key(1001), "odd"));
    CHECK(t.tree->key_generation() != generation);
    t.manager.refresh();
    CHECK(t.plans() == plans + 1);
    CHECK(t.scans() == scans + 1);
    CHECK(t.planner().plans_with_unchanged_keys == 0);
  }
  SECTION("an erase") {
    REQUIRE(t.tree->erase(int_key(1000)));
    t.manager.refresh();
    CHECK(t.plans() == plans + 1);
    CHECK(t.scans() == scans + 1);
  }
  SECTION("insert() of a new key") {
    REQUIRE(t.tree->insert(int_key(-5), "neg"));
    t.manager.refresh();
    CHECK(t.plans() == plans + 1);
    CHECK(t.scans() == scans + 1);
  }
  SECTION("a value replaced in place, a failed insert and a missed erase change no key") {
    const std::uint64_t generation = t.tree->key_generation();
    // A value of the same length: replaced in place in the fixed-shape leaf
    // (a longer one would rewrite a full leaf in the 24-byte layout, which
    // splits it: a structure change, planned as one).
    REQUIRE_FALSE(t.tree->put(int_key(1000), "w"));
    REQUIRE_FALSE(t.tree->insert(int_key(1002), "present"));
    REQUIRE_FALSE(t.tree->erase(int_key(1003)));
    CHECK(t.tree->key_generation() == generation);
    t.manager.refresh();
    CHECK(t.plans() == plans);
    CHECK(t.scans() == scans);
  }
  // Then quiet again.
  CHECK(t.refresh_until_skipped() == 0);
}

TEST_CASE("idle refresh: a sample plans without reading words, until its weight fades",
          "[manager][idle]") {
  CountedTree t;
  t.manager.refresh();
  REQUIRE(t.refresh_until_skipped() == 0);
  const std::uint64_t plans = t.plans(), scans = t.scans();
  t.manager.record_access(word_of(int_key(4242)));
  t.manager.refresh();
  CHECK(t.plans() == plans + 1);
  CHECK(t.manager.stats().sampled_accesses == 1);
  // One access weighs 1 and halves at each refresh: decay still changes
  // the table for 20 refreshes (2^-20 is negligible_weight), so they plan;
  // then the weight is 0 and refreshes stop planning.
  // The weight after refresh n is 2^-(n-1); refresh 22 takes 2^-21 to 0.
  const int decaying = t.refresh_until_skipped();
  CHECK(decaying == 21);
  CHECK(t.plans() == plans + 22);
  // None of these plans read the key words: the key set never changed.
  CHECK(t.scans() == scans);
  CHECK(t.planner().plans_with_unchanged_keys == 22);
  CHECK(t.planner().inner().word_reads() == scans);
}

TEST_CASE("idle refresh: without a negligible weight, refreshes plan until the weight underflows",
          "[manager][idle]") {
  ManagerOptions options;
  options.negligible_weight = 0;
  CountedTree t(2000, options);
  t.manager.refresh();
  REQUIRE(t.refresh_until_skipped() == 0);
  t.manager.record_access(word_of(int_key(42)));
  t.manager.refresh();
  // 1 * 0.5^n reaches 0 only past the smallest subnormal: 2^-1075 rounds
  // to 0 (to even), at the 1075th decay.
  CHECK(t.refresh_until_skipped(2000) == 1075);
}

TEST_CASE("idle refresh: node events and node tables", "[manager][idle]") {
  CountedTree t;
  t.manager.refresh();
  REQUIRE(t.refresh_until_skipped() == 0);
  const std::uint64_t plans = t.plans(), scans = t.scans();
  std::vector<NodeInterval> nodes;
  t.tree->for_each_node([&](const NodeInterval& iv) { nodes.push_back(iv); });
  REQUIRE(nodes.size() > 2);

  SECTION("a node event plans; the words are not read again") {
    NodeInterval leaf = nodes.back();
    REQUIRE(leaf.level == 0);
    ++leaf.version;
    t.manager.on_node_event(NodeEvent{NodeEventKind::kRangeChanged, leaf});
    t.manager.refresh();
    CHECK(t.plans() == plans + 1);
    CHECK(t.scans() == scans);
    CHECK(t.refresh_until_skipped() == 0);
  }
  SECTION("an event of another index does not") {
    NodeInterval foreign = nodes.back();
    foreign.index = 99;
    foreign.version += 10;
    t.manager.on_node_event(NodeEvent{NodeEventKind::kCreated, foreign});
    t.manager.refresh();
    CHECK(t.plans() == plans);
    CHECK(t.manager.stats().foreign_events == 1);
  }
  SECTION("sync_nodes with the same table does not; a changed one does") {
    t.manager.sync_nodes(nodes);
    t.manager.refresh();
    CHECK(t.plans() == plans);
    nodes.pop_back();
    t.manager.sync_nodes(nodes);
    t.manager.refresh();
    CHECK(t.plans() == plans + 1);
    CHECK(t.scans() == scans);
  }
  SECTION("a split (new keys) plans and reads the words") {
    const std::uint64_t events = t.manager.stats().events;
    std::int64_t k = 1;
    while (t.manager.stats().events == events) {
      REQUIRE(t.tree->put(int_key(k), "odd"));
      k += 2;
      t.manager.refresh();
    }
    CHECK(t.plans() > plans);
    CHECK(t.scans() > scans);
    CHECK(t.refresh_until_skipped() == 0);
  }
}

TEST_CASE("idle refresh: a source that cannot tell its key generation plans every time",
          "[manager][idle]") {
  struct Opaque final : IndexSource {
    explicit Opaque(Tree& tree) : inner(tree) {}
    void for_each_node(const std::function<void(const NodeInterval&)>& fn) const override {
      inner.for_each_node(fn);
    }
    void for_each_word(const std::function<bool(Word)>& fn) const override {
      ++scans;
      inner.for_each_word(fn);
    }
    TreeIndexSource inner;
    mutable int scans = 0;
  };
  Backend backend(counting_switch_lpm());
  OffloadManager manager(backend);
  forein::TreeOptions to;
  to.observer = &manager;
  auto tree = Tree::create(std::make_unique<forein::MemoryPageStore>(4096), to);
  for (int i = 0; i < 500; ++i) tree->put(int_key(i), "v");
  Opaque source(*tree);
  manager.attach(source);
  for (int i = 0; i < 5; ++i) manager.refresh();
  manager.detach();
  CHECK(static_cast<CountingPlanner&>(backend.planner()).plans == 5);
  CHECK(source.scans == 5);
  CHECK(manager.stats().skipped_refreshes == 0);
}

namespace {

// Hands every event to two managers.
class FanOut final : public NodeObserver {
 public:
  FanOut(NodeObserver& a, NodeObserver& b) : a_(a), b_(b) {}
  void on_node_event(const NodeEvent& e) override {
    a_.on_node_event(e);
    b_.on_node_event(e);
  }

 private:
  NodeObserver& a_;
  NodeObserver& b_;
};

}  // namespace

TEST_CASE("idle refresh: skipping leaves every backend's device where planning every time does",
          "[manager][idle][random]") {
  const std::uint64_t seed = forein::testing::test_seed("idle refresh equivalence");
  for (const BackendInfo* info : registered_backends()) {
    if (!serves_lookups(*info)) continue;
    // The default capacity holds the whole small tree, so weights choose
    // nothing; a tight one makes the selection depend on the weights, and
    // so on how far they have decayed.
    const bool tight = GENERATE(false, true);
    INFO("backend " << info->name << (tight ? ", tight capacity" : "") << ", seed " << seed);
    std::mt19937_64 rng(seed);
    BackendConfig config;
    if (tight) {
      config.capacity = 48 * info->units_per_record;
      if (std::string(info->name) == "switch_lpm") config.set("hot_leaves", 4);
    }
    Backend skipping_backend(*info, config), eager_backend(*info, config);
    ManagerOptions skipping;
    ManagerOptions eager;
    eager.skip_unchanged = false;
    OffloadManager a(skipping_backend, skipping), b(eager_backend, eager);
    FanOut fan(a, b);
    forein::TreeOptions to;
    to.observer = &fan;
    auto tree = Tree::create(std::make_unique<forein::MemoryPageStore>(4096), to);
    const std::int64_t space = 30000;
    std::vector<std::pair<std::string, std::string>> rows;
    for (std::int64_t i = 0; i < space; i += 1 + static_cast<std::int64_t>(rng() % 3)) {
      rows.emplace_back(int_key(i), "v");
    }
    tree->bulk_load(rows);
    TreeIndexSource source(*tree);
    a.attach(source);
    b.attach(source);

    std::size_t compared = 0;
    for (int step = 0; step < 400; ++step) {
      switch (rng() % 8) {
        case 0:  // a burst of writes (some split, some merge)
        case 1: {
          const int n = 1 + static_cast<int>(rng() % 200);
          const bool erase = rng() % 2 == 0;
          for (int i = 0; i < n; ++i) {
            const std::string key = int_key(static_cast<std::int64_t>(rng() % space));
            if (erase) {
              tree->erase(key);
            } else {
              tree->put(key, "w");
            }
          }
          break;
        }
        case 2: {  // sampled accesses, to both
          const int n = 1 + static_cast<int>(rng() % 50);
          const std::int64_t hot = static_cast<std::int64_t>(rng() % space);
          for (int i = 0; i < n; ++i) {
            const Word w = word_of(int_key(hot + static_cast<std::int64_t>(rng() % 64)));
            a.record_access(w);
            b.record_access(w);
          }
          break;
        }
        case 3:  // values replaced in place: no key change
          for (int i = 0; i < 20; ++i) tree->put(int_key(static_cast<std::int64_t>(rng() % space)), "r");
          break;
        default:  // idle: a run of refreshes with nothing new
          break;
      }
      const int refreshes = 1 + static_cast<int>(rng() % 30);
      for (int r = 0; r < refreshes; ++r) {
        a.refresh();
        b.refresh();
        const auto ia = skipping_backend.device().load_image();
        const auto ib = eager_backend.device().load_image();
        REQUIRE(ia->bytes == ib->bytes);
        REQUIRE(ia->version == ib->version);
        const ManagerStats sa = a.stats(), sb = b.stats();
        REQUIRE(sa.target_entries == sb.target_entries);
        REQUIRE(sa.entries_installed == sb.entries_installed);
        REQUIRE(sa.entries_removed == sb.entries_removed);
        ++compared;
      }
    }
    a.detach();
    b.detach();
    const ManagerStats sa = a.stats(), sb = b.stats();
    INFO("refreshes " << sa.refreshes << ", skipped " << sa.skipped_refreshes);
    CHECK(compared == sa.refreshes);
    CHECK(sa.skipped_refreshes > sa.refreshes / 4);  // idle runs were skipped
    CHECK(sa.plans + sa.skipped_refreshes == sa.refreshes);
    CHECK(sb.skipped_refreshes == 0);
    CHECK(sb.plans == sb.refreshes);
  }
}

namespace {

// The tree's distinct key words by a plain ordered scan.
std::vector<Word> scanned_words(Tree& tree) {
  std::vector<Word> words;
  tree.scan(forein::ScanSpec{}, [&](std::string_view key, std::string_view) {
    const Word w = word_of(key);
    if (words.empty() || words.back() != w) words.push_back(w);
    return true;
  });
  return words;
}

std::vector<Word> source_words(const KeySource& source) {
  std::vector<Word> words;
  source.for_each_word([&](Word w) {
    words.push_back(w);
    return true;
  });
  return words;
}

}  // namespace

TEST_CASE("idle refresh: the tree's words are read again only from the leaves that changed",
          "[manager][idle][random]") {
  const std::uint64_t seed = forein::testing::test_seed("incremental words");
  std::mt19937_64 rng(seed);
  auto tree = Tree::create(std::make_unique<forein::MemoryPageStore>(4096));
  std::vector<std::pair<std::string, std::string>> rows;
  for (std::int64_t i = 0; i < 40000; i += 2) rows.emplace_back(int_key(i), "v");
  tree->bulk_load(rows);
  TreeIndexSource source(*tree);
  REQUIRE(source_words(source) == scanned_words(*tree));
  const std::uint64_t leaves = source.leaves_read();
  REQUIRE(leaves > 50);
  REQUIRE(source.leaves_kept() == 0);
  // Unchanged: every leaf from memory.
  REQUIRE(source_words(source) == scanned_words(*tree));
  CHECK(source.leaves_read() == leaves);
  CHECK(source.leaves_kept() == leaves);
  for (int round = 0; round < 40; ++round) {
    // A few writes, or many (splits, merges, long keys sharing words).
    const int n = rng() % 4 == 0 ? 2000 : 1 + static_cast<int>(rng() % 5);
    for (int i = 0; i < n; ++i) {
      std::string key = int_key(static_cast<std::int64_t>(rng() % 45000));
      if (rng() % 4 == 0) key += std::string(1 + rng() % 30, 'k');
      if (rng() % 2 == 0) {
        tree->erase(key);
      } else {
        tree->put(key, "w");
      }
    }
    const std::uint64_t read_before = source.leaves_read();
    INFO("round " << round << ", writes " << n << ", seed " << seed);
    REQUIRE(source_words(source) == scanned_words(*tree));
    // A handful of writes touch a handful of leaves (each: its leaf, and on
    // a split or merge the neighbours).
    if (n <= 5) CHECK(source.leaves_read() - read_before <= 4 * static_cast<std::uint64_t>(n));
  }
}

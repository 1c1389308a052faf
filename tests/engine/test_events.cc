// Node-interval events (docs/design.md, contract 3): replaying the events a tree
// emits reproduces exactly the live nodes for_each_node() reports, events
// carry the index id, versions only grow, and each level's word intervals
// partition word space.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "forein/error.h"
#include "forein/key.h"
#include "forein/node_interval.h"
#include "forein/page_store.h"
#include "forein/tree.h"
#include "support/seed.h"

namespace {

using forein::NodeEvent;
using forein::NodeEventKind;
using forein::NodeInterval;
using forein::PageId;
using forein::Tree;

constexpr std::uint64_t kIndexId = 0xF0E1D2C3B4A59687ull;

class RecordingObserver final : public forein::NodeObserver {
 public:
  void on_node_event(const NodeEvent& event) override {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(event);
  }
  std::vector<NodeEvent> take() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<NodeEvent> out;
    out.swap(events_);
    return out;
  }

 private:
  std::mutex mu_;
  std::vector<NodeEvent> events_;
};

std::string show(const NodeInterval& n) {
  std::ostringstream os;
  os << "{node " << n.node << " level " << n.level << " lo " << std::hex << n.lo << " hi "
     << (n.hi_inf ? std::string("inf") : (std::ostringstream() << std::hex << n.hi).str())
     << std::dec << " version " << n.version << " index " << n.index << "}";
  return os.str();
}

bool same(const NodeInterval& a, const NodeInterval& b) {
  return a.index == b.index && a.node == b.node && a.level == b.level && a.lo == b.lo &&
         a.hi_inf == b.hi_inf && (a.hi_inf || a.hi == b.hi) && a.version == b.version;
}

// The live-node set rebuilt from events, with protocol checks on the way.
class Replica {
 public:
  // Starts from what the tree reports now.
  explicit Replica(Tree& tree) {
    tree.for_each_node([&](const NodeInterval& n) { nodes_[n.node] = n; });
  }

  void apply(const std::vector<NodeEvent>& events) {
    for (const auto& e : events) {
      ++counts_[e.kind];
      const NodeInterval& n = e.interval;
      if (n.index != kIndexId) fail("event without the index id", n);
      if (n.node == forein::kNoPage) fail("event for page 0", n);
      auto it = nodes_.find(n.node);
      switch (e.kind) {
        case NodeEventKind::kCreated:
          if (it != nodes_.end()) fail("created a node that is live", n);
          nodes_[n.node] = n;
          break;
        case NodeEventKind::kSplit:
          if (it == nodes_.end()) {
            fail("split of a node that is not live", n);
            break;
          }
          if (n.version <= it->second.version) fail("split without a version bump", n);
          if (n.level != it->second.level) fail("split changed the level", n);
          if (n.lo != it->second.lo) fail("split moved lo", n);
          if (n.hi_inf) fail("split left hi infinite", n);
          if (!it->second.hi_inf && n.hi > it->second.hi) fail("split grew hi", n);
          it->second = n;
          break;
        case NodeEventKind::kRangeChanged:
          if (it == nodes_.end()) {
            fail("range change of a node that is not live", n);
            break;
          }
          if (n.version <= it->second.version) fail("range change without a version bump", n);
          if (n.level != it->second.level) fail("range change changed the level", n);
          if (n.lo > it->second.lo) fail("range change moved lo up", n);
          it->second = n;
          break;
        case NodeEventKind::kDeleted:
          if (it == nodes_.end()) {
            fail("deletion of a node that is not live", n);
            break;
          }
          if (n.version <= it->second.version) fail("deletion without a version bump", n);
          if (n.level != it->second.level) fail("deletion with another level", n);
          nodes_.erase(it);
          break;
      }
    }
  }

  // Compares with for_each_node().
  void require_matches(Tree& tree) {
    std::map<PageId, NodeInterval> actual;
    std::size_t duplicates = 0;
    tree.for_each_node([&](const NodeInterval& n) {
      if (!actual.emplace(n.node, n).second) ++duplicates;
    });
    CHECK(duplicates == 0);
    std::vector<std::string> diffs;
    for (const auto& [id, n] : actual) {
      auto it = nodes_.find(id);
      if (it == nodes_.end())
        diffs.push_back("live but never announced: " + show(n));
      else if (!same(it->second, n))
        diffs.push_back("differs: events " + show(it->second) + " tree " + show(n));
    }
    for (const auto& [id, n] : nodes_)
      if (actual.count(id) == 0) diffs.push_back("announced but not live: " + show(n));
    for (std::size_t i = 0; i < diffs.size() && i < 20; ++i) UNSCOPED_INFO(diffs[i]);
    CHECK(diffs.empty());
    for (std::size_t i = 0; i < errors_.size() && i < 20; ++i) UNSCOPED_INFO(errors_[i]);
    CHECK(errors_.empty());
    CHECK(nodes_.size() == actual.size());
  }

  std::size_t count(NodeEventKind k) const {
    auto it = counts_.find(k);
    return it == counts_.end() ? 0 : it->second;
  }

 private:
  void fail(const std::string& what, const NodeInterval& n) {
    errors_.push_back(what + ": " + show(n));
  }

  std::map<PageId, NodeInterval> nodes_;
  std::map<NodeEventKind, std::size_t> counts_;
  std::vector<std::string> errors_;
};

// The word intervals of each level's live nodes partition word space.
void require_partition(Tree& tree) {
  std::map<std::uint16_t, std::vector<NodeInterval>> levels;
  tree.for_each_node([&](const NodeInterval& n) {
    CHECK(n.index == kIndexId);
    levels[n.level].push_back(n);
  });
  REQUIRE(levels.size() == tree.height());
  for (auto& [level, nodes] : levels) {
    INFO("level " << level << ", " << nodes.size() << " nodes");
    std::vector<NodeInterval> nonempty;
    for (const auto& n : nodes)
      if (!n.empty()) nonempty.push_back(n);
    REQUIRE_FALSE(nonempty.empty());
    std::sort(nonempty.begin(), nonempty.end(),
              [](const NodeInterval& a, const NodeInterval& b) { return a.lo < b.lo; });
    CHECK(nonempty.front().lo == 0);
    CHECK(nonempty.back().hi_inf);
    std::size_t gaps = 0;
    for (std::size_t i = 0; i + 1 < nonempty.size(); ++i) {
      if (nonempty[i].hi_inf || nonempty[i].hi != nonempty[i + 1].lo) {
        if (gaps++ < 10)
          UNSCOPED_INFO("gap or overlap: " << show(nonempty[i]) << " then "
                                           << show(nonempty[i + 1]));
      }
    }
    CHECK(gaps == 0);
    // Empty intervals sit at a boundary of the partition (their lo is some
    // non-empty node's lo or the last hi).
    for (const auto& n : nodes) {
      if (!n.empty()) continue;
      bool at_boundary = false;
      for (const auto& m : nonempty)
        if (m.lo == n.lo || (!m.hi_inf && m.hi == n.lo)) at_boundary = true;
      CHECK(at_boundary);
    }
  }
  CHECK(levels[tree.height() - 1].size() == 1);  // one root
}

struct Fixture {
  RecordingObserver observer;
  std::unique_ptr<Tree> tree;
  std::unique_ptr<Replica> replica;

  explicit Fixture(std::uint32_t page_size) {
    forein::TreeOptions options;
    options.index_id = kIndexId;
    options.observer = &observer;
    tree = Tree::create(std::make_unique<forein::MemoryPageStore>(page_size), options);
    for (const auto& e : observer.take()) CHECK(e.interval.index == kIndexId);
    replica = std::make_unique<Replica>(*tree);
  }
  void sync_and_check() {
    replica->apply(observer.take());
    replica->require_matches(*tree);
    require_partition(*tree);
  }
};

}  // namespace

TEST_CASE("events: ascending inserts and splits", "[tree][events]") {
  Fixture f(4096);
  // Ascending splits leave full nodes (about 170 of these entries a leaf,
  // 250 children an inner node): enough keys for three levels.
  for (std::int64_t i = 0; i < 120000; ++i) {
    f.tree->put(forein::encode_int64(i), "value");
    if (i % 7919 == 0) f.sync_and_check();
  }
  f.sync_and_check();
  REQUIRE(f.tree->height() >= 3);
  CHECK(f.replica->count(NodeEventKind::kSplit) > 0);
  CHECK(f.replica->count(NodeEventKind::kCreated) > 0);
  f.tree->check();
}

TEST_CASE("events: ascending inserts up to the end of word space", "[tree][events]") {
  // Appends split the rightmost leaf at its last key, except where that
  // separator's word interval would run past the end of word space (word
  // 2^64-1 and longer than a word, as between 0xff x 9 and 0xff x 10):
  // there every split must still divide word space. Every fill of the
  // leaf is tried, so one of the 0xff keys lands on a full leaf.
  for (int n = 0; n < 200; ++n) {
    INFO(n << " keys before the 0xff keys");
    Fixture f(4096);
    for (std::uint32_t i = 0; i < static_cast<std::uint32_t>(n); ++i) {
      // Eight bytes, last one non-zero: each key owns its word.
      std::string k = "\xff\xff\xff\xff";
      for (int b = 3; b >= 0; --b) k += static_cast<char>(((i + 1) * 257) >> (8 * b));
      f.tree->put(k, "v");
    }
    for (std::size_t len = 9; len <= 11; ++len) f.tree->put(std::string(len, '\xff'), "ff");
    f.sync_and_check();
    f.tree->check();
  }
}

TEST_CASE("events: random inserts of int and byte-string keys", "[tree][events]") {
  const auto seed = forein::testing::test_seed("events random inserts");
  std::mt19937_64 rng(seed);
  Fixture f(4096);
  for (int i = 0; i < 30000; ++i) {
    std::string k;
    switch (i % 3) {
      case 0:
        k = forein::encode_int64(static_cast<std::int64_t>(rng()));
        break;
      case 1:
        // Many keys per word: leaves with empty word intervals appear.
        k = "samewrd!" + std::to_string(rng() % 100000);
        break;
      default:
        k = std::string(rng() % 12, static_cast<char>(rng() % 256));
        break;
    }
    f.tree->put(k, std::string(rng() % 64, 'v'));
  }
  f.sync_and_check();
  f.tree->check();
}

TEST_CASE("events: heavy deletes emit deletions and keep the replica exact", "[tree][events]") {
  const auto seed = forein::testing::test_seed("events heavy deletes");
  std::mt19937_64 rng(seed);
  Fixture f(4096);
  std::vector<std::int64_t> keys(40000);
  for (std::size_t i = 0; i < keys.size(); ++i) keys[i] = static_cast<std::int64_t>(i);
  std::shuffle(keys.begin(), keys.end(), rng);
  for (auto k : keys) f.tree->put(forein::encode_int64(k), std::string(24, 'x'));
  f.sync_and_check();

  // Random deletes, then whole ranges, checking along the way.
  std::shuffle(keys.begin(), keys.end(), rng);
  for (std::size_t i = 0; i < keys.size() * 9 / 10; ++i) {
    REQUIRE(f.tree->erase(forein::encode_int64(keys[i])));
    if (i % 9001 == 0) f.sync_and_check();
  }
  f.sync_and_check();
  for (std::int64_t k = 0; k < 30000; ++k) f.tree->erase(forein::encode_int64(k));
  f.sync_and_check();
  CHECK(f.replica->count(NodeEventKind::kDeleted) > 0);
  f.tree->check();

  // Regrow after the shrink: page ids freed by merges may be reused.
  for (std::int64_t k = 0; k < 20000; ++k) f.tree->put(forein::encode_int64(k * 5), "again");
  f.sync_and_check();
  // And empty the tree completely.
  {
    std::vector<std::string> all;
    f.tree->scan(forein::ScanSpec{}, [&](std::string_view k, std::string_view) {
      all.emplace_back(k);
      return true;
    });
    for (const auto& k : all) REQUIRE(f.tree->erase(k));
  }
  f.sync_and_check();
  CHECK(f.tree->size() == 0);
  f.tree->check();
}

TEST_CASE("events: interleaved inserts and deletes", "[tree][events]") {
  const auto seed = forein::testing::test_seed("events interleaved");
  std::mt19937_64 rng(seed);
  Fixture f(4096);
  for (int round = 0; round < 6; ++round) {
    for (int i = 0; i < 15000; ++i) {
      const std::string k = forein::encode_int64(static_cast<std::int64_t>(rng() % 50000));
      if (rng() % 100 < static_cast<unsigned>(round % 2 == 0 ? 30 : 80))
        f.tree->erase(k);
      else
        f.tree->put(k, std::string(rng() % 40, 'y'));
    }
    f.sync_and_check();
  }
  f.tree->check();
}

TEST_CASE("events: bulk_load announces every node", "[tree][events]") {
  Fixture f(8192);
  std::vector<std::pair<std::string, std::string>> entries;
  for (std::int64_t i = 0; i < 100000; ++i)
    entries.emplace_back(forein::encode_int64(i * 2), "bulk");
  f.tree->bulk_load(entries);
  f.sync_and_check();
  CHECK(f.replica->count(NodeEventKind::kCreated) > 0);
  // Updates after the load keep the replica exact.
  for (std::int64_t i = 0; i < 20000; ++i) f.tree->put(forein::encode_int64(i * 2 + 1), "new");
  for (std::int64_t i = 50000; i < 90000; ++i) f.tree->erase(forein::encode_int64(i * 2));
  f.sync_and_check();
  f.tree->check();
}

TEST_CASE("events: versions strictly increase per node", "[tree][events]") {
  const auto seed = forein::testing::test_seed("events versions");
  std::mt19937_64 rng(seed);
  RecordingObserver observer;
  forein::TreeOptions options;
  options.index_id = kIndexId;
  options.observer = &observer;
  auto tree = Tree::create(std::make_unique<forein::MemoryPageStore>(4096), options);
  std::vector<NodeEvent> all;
  for (int round = 0; round < 4; ++round) {
    for (int i = 0; i < 20000; ++i) {
      const std::string k = forein::encode_int64(static_cast<std::int64_t>(rng() % 30000));
      if (round % 2 == 1 && rng() % 4 != 0)
        tree->erase(k);
      else
        tree->put(k, "v");
    }
    auto evs = observer.take();
    all.insert(all.end(), evs.begin(), evs.end());
  }
  // Within one node's life (from creation or the start to deletion),
  // versions strictly increase; a version never repeats for a node id
  // while it is live.
  std::map<PageId, std::uint64_t> last;
  std::size_t violations = 0;
  for (const auto& e : all) {
    CHECK(e.interval.index == kIndexId);
    const PageId id = e.interval.node;
    auto it = last.find(id);
    if (e.kind == NodeEventKind::kCreated) {
      last[id] = e.interval.version;
    } else if (e.kind == NodeEventKind::kDeleted) {
      if (it != last.end() && e.interval.version <= it->second) ++violations;
      last.erase(id);
    } else {
      if (it != last.end() && e.interval.version <= it->second) {
        if (violations < 10) UNSCOPED_INFO("version not increasing: " << show(e.interval));
        ++violations;
      }
      last[id] = e.interval.version;
    }
  }
  CHECK(violations == 0);
  CHECK(all.size() > 0);
}

TEST_CASE("events: to_string names every kind", "[tree][events]") {
  for (auto k : {NodeEventKind::kCreated, NodeEventKind::kSplit, NodeEventKind::kDeleted,
                 NodeEventKind::kRangeChanged}) {
    const char* s = forein::to_string(k);
    REQUIRE(s != nullptr);
    CHECK(std::string(s).size() > 0);
  }
  CHECK(std::string(forein::to_string(NodeEventKind::kCreated)) !=
        std::string(forein::to_string(NodeEventKind::kDeleted)));
}

// DPA-Store's store, single client thread (patchers and stitchers run):
// a seeded model test against std::map with splits up to the root,
// UPDATE-only patches, RANGE continuation, edges, bad input, DPA memory
// exhaustion, and the section 4.2.6 access count of a GET.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <random>
#include <vector>

#include "dpa/datasets.h"
#include "forein/dpa/store.h"
#include "forein/error.h"
#include "support/seed.h"

using forein::InvalidArgument;
using namespace forein::offload::dpa;

namespace {

using Model = std::map<std::uint64_t, std::uint64_t>;

std::vector<KV> as_pairs(const Model& m) {
  std::vector<KV> out;
  for (const auto& [k, v] : m) out.push_back({k, v});
  return out;
}

std::vector<KV> range_all(Store& s, std::uint64_t from) {
  std::vector<KV> out;
  for (;;) {
    const RangeResult r = s.range(from);
    REQUIRE(r.pairs.size() <= kMaxRangePairs);
    out.insert(out.end(), r.pairs.begin(), r.pairs.end());
    if (!r.more) return out;
    REQUIRE(!r.pairs.empty());
    REQUIRE(r.next_key == r.pairs.back().key + 1);
    from = r.next_key;
  }
}

StoreOptions small_options() {
  StoreOptions o;
  o.leaf_capacity = 16;
  o.insert_buffer = 4;
  o.epsilon_leaf = 2;
  o.epsilon_inner = 2;
  o.traversers = 4;
  o.patchers = 2;
  o.stitchers = 2;
  o.admit_probability = 0.5;
  return o;
}

}  // namespace

TEST_CASE("dpa store: random writes and reads match std::map; splits reach the root") {
  const std::uint64_t seed = forein::testing::test_seed("dpa store model");
  std::mt19937_64 rng(seed);
  StoreOptions o = small_options();
  o.seed = seed;
  Store store(o);
  Model model;
  std::vector<KV> initial;
  for (std::uint64_t k = 1000; k < 1000 + 3000 * 7; k += 7) initial.push_back({k, k * 3});
  store.bulk_load(initial);
  for (const KV& p : initial) model[p.key] = p.value;
  REQUIRE(store.check().empty());
  const std::uint64_t depth0 = store.stats().depth;

  const auto random_key = [&] { return rng() % 60000; };
  for (int step = 1; step <= 30000; ++step) {
    const std::uint64_t k = random_key();
    switch (rng() % 10) {
      case 0:
      case 1:
      case 2:
      case 3: {
        const std::uint64_t v = rng();
        store.insert(k, v);
        model[k] = v;
        break;
      }
      case 4: {
        const std::uint64_t v = rng();
        store.update(k, v);
        model[k] = v;
        break;
      }
      case 5:
        store.remove(k);
        model.erase(k);
        break;
      case 6: {
        const RangeResult r = store.range(k, 1 + rng() % 80);
        auto it = model.lower_bound(k);
        for (const KV& p : r.pairs) {
          REQUIRE(it != model.end());
          REQUIRE(p.key == it->first);
          REQUIRE(p.value == it->second);
          ++it;
        }
        if (!r.more) REQUIRE(it == model.end());
        break;
      }
      default: {
        const auto got = store.get(k);
        const auto it = model.find(k);
        if (it == model.end()) {
          REQUIRE(!got);
        } else {
          REQUIRE(got);
          REQUIRE(*got == it->second);
        }
      }
    }
    if (step % 5000 == 0) {
      store.flush();
      INFO("step " << step);
      REQUIRE(store.check() == "");
      REQUIRE(store.dump() == as_pairs(model));
    }
  }
  const StoreStats s = store.stats();
  CHECK(s.leaf_splits > 0);
  CHECK(s.inner_splits > 0);
  CHECK(s.root_splits > 0);
  CHECK(s.depth > depth0);
  CHECK(s.connect_stitches > 0);
  CHECK(s.retired_nodes > 0);
  CHECK(s.reclaimed_nodes > 0);
  CHECK(s.stitched_bytes > 0);
  CHECK(s.failed_patches == 0);
  CHECK(range_all(store, 0) == as_pairs(model));
}

TEST_CASE("dpa store: UPDATE-only patches rewrite host values and RESET the buffer") {
  StoreOptions o = small_options();
  o.hot_cache = false;
  Store store(o);
  std::vector<KV> initial;
  for (std::uint64_t k = 0; k < 200; ++k) initial.push_back({k * 10, k});
  store.bulk_load(initial);
  const StoreStats before = store.stats();
  // Four updates to existing keys of one leaf fill its buffer.
  for (int round = 1; round <= 3; ++round) {
    for (std::uint64_t k = 0; k < 4; ++k) store.update(k * 10, 1000 * round + k);
  }
  store.flush();
  const StoreStats after = store.stats();
  CHECK(after.update_only_patches - before.update_only_patches == 3);
  CHECK(after.reset_stitches - before.reset_stitches == 3);
  CHECK(after.leaves == before.leaves);
  CHECK(after.copy_stitches == before.copy_stitches);
  for (std::uint64_t k = 0; k < 4; ++k) CHECK(store.get(k * 10) == 3000 + k);
  // An UPDATE of an absent key inserts it: not UPDATE-only.
  for (std::uint64_t k = 0; k < 4; ++k) store.update(k * 10 + 1, 7);
  store.flush();
  CHECK(store.stats().update_only_patches == after.update_only_patches);
  CHECK(store.get(11) == 7u);
  CHECK(store.check() == "");
}

TEST_CASE("dpa store: RANGE continues across leaves, at most 64 pairs a response") {
  StoreOptions o;
  o.leaf_capacity = 32;
  Store store(o);
  Model model;
  std::vector<KV> initial;
  for (std::uint64_t k = 1; k <= 1000; ++k) {
    initial.push_back({k * 1000, k});
    model[k * 1000] = k;
  }
  store.bulk_load(initial);
  REQUIRE(store.stats().leaves > 10);
  const RangeResult r = store.range(0, 500);
  CHECK(r.pairs.size() == kMaxRangePairs);
  CHECK(r.more);
  CHECK(r.next_key == r.pairs.back().key + 1);
  CHECK_THROWS_AS(store.range(0, 0), InvalidArgument);
  // Buffered writes merge into the ranges (not flushed).
  for (std::uint64_t k = 5; k < 900; k += 37) {
    store.insert(k * 1000 + 1, 42);
    model[k * 1000 + 1] = 42;
    store.remove(k * 1000 + 5000);
    model.erase(k * 1000 + 5000);
  }
  CHECK(range_all(store, 0) == as_pairs(model));
  Model tail_model(model.lower_bound(500500), model.end());
  CHECK(range_all(store, 500500) == as_pairs(tail_model));
  OpCost cost;
  const RangeResult small = store.range(123000, 3, &cost);
  CHECK(small.pairs.size() == 3);
  CHECK(small.pairs.front().key == 123000);
  CHECK(cost.leaves >= 1);
  CHECK(cost.dmas >= 2);
}

TEST_CASE("dpa store: keys below the smallest and above the largest, the empty store") {
  Store empty;
  CHECK(!empty.get(0));
  CHECK(!empty.get(UINT64_MAX));
  const RangeResult r = empty.range(0);
  CHECK(r.pairs.empty());
  CHECK(!r.more);
  CHECK(empty.dump().empty());
  CHECK(empty.check() == "");
  empty.bulk_load({});
  CHECK(empty.stats().keys == 0);
  empty.insert(UINT64_MAX, 9);
  empty.insert(0, 8);
  CHECK(empty.get(UINT64_MAX) == 9u);
  CHECK(empty.get(0) == 8u);
  const RangeResult top = empty.range(UINT64_MAX);
  REQUIRE(top.pairs.size() == 1);
  CHECK(!top.more);

  Store store;
  std::vector<KV> initial;
  for (std::uint64_t k = 100; k < 100 + 5000 * 3; k += 3) initial.push_back({k, k + 1});
  store.bulk_load(initial);
  for (std::uint64_t k : {std::uint64_t{0}, std::uint64_t{99}, std::uint64_t{101}, initial.back().key + 1,
                          std::uint64_t{UINT64_MAX}}) {
    CHECK(!store.get(k));
  }
  CHECK(store.get(100) == 101u);
  CHECK(store.get(initial.back().key) == initial.back().value);
  CHECK(store.range(0, 1).pairs.front().key == 100);
  CHECK(store.range(initial.back().key + 1).pairs.empty());
  CHECK(store.check() == "");
}

TEST_CASE("dpa store: bad options and bulk loads are rejected") {
  const auto rejects = [](auto change) {
    StoreOptions o;
    change(o);
    CHECK_THROWS_AS(Store(o), InvalidArgument);
  };
  rejects([](StoreOptions& o) { o.leaf_capacity = 0; });
  rejects([](StoreOptions& o) { o.leaf_capacity = 129; });
  rejects([](StoreOptions& o) { o.epsilon_inner = 0; });
  rejects([](StoreOptions& o) { o.epsilon_leaf = 65; });
  rejects([](StoreOptions& o) { o.insert_buffer = 0; });
  rejects([](StoreOptions& o) { o.insert_buffer = 257; });
  rejects([](StoreOptions& o) { o.traversers = 0; });
  rejects([](StoreOptions& o) { o.patchers = 0; });
  rejects([](StoreOptions& o) { o.stitchers = 0; });
  rejects([](StoreOptions& o) { o.retrain_bound = 0; });
  rejects([](StoreOptions& o) { o.admit_probability = 1.5; });
  rejects([](StoreOptions& o) { o.dpa_memory_bytes = 100; });

  Store store;
  const std::vector<KV> unsorted = {{5, 1}, {3, 1}};
  const std::vector<KV> duplicate = {{3, 1}, {3, 2}};
  CHECK_THROWS_AS(store.bulk_load(unsorted), InvalidArgument);
  CHECK_THROWS_AS(store.bulk_load(duplicate), InvalidArgument);
  const std::vector<KV> good = {{1, 1}, {2, 2}};
  store.bulk_load(good);
  CHECK_THROWS_AS(store.bulk_load(good), InvalidArgument);  // not empty
  Store written;
  written.insert(7, 7);
  CHECK_THROWS_AS(written.bulk_load(good), InvalidArgument);
  CHECK(written.get(7) == 7u);
}

TEST_CASE("dpa store: DPA memory exhaustion fails cleanly") {
  StoreOptions o = small_options();
  o.dpa_memory_bytes = 2048;
  Store store(o);
  std::vector<KV> big;
  for (std::uint64_t k = 0; k < 10000; ++k) big.push_back({k * 5, k});
  CHECK_THROWS_AS(store.bulk_load(big), InvalidArgument);
  CHECK(store.check() == "");
  Model model;
  bool refused = false;
  for (std::uint64_t k = 0; k < 2000 && !refused; ++k) {
    try {
      store.insert(k * 11, k);
      model[k * 11] = k;
    } catch (const InvalidArgument&) {
      refused = true;
    }
  }
  CHECK(refused);
  CHECK(store.stats().failed_patches > 0);
  CHECK(store.stats().dpa_bytes <= 2048);
  store.flush();
  CHECK(store.check() == "");
  for (const auto& [k, v] : model) REQUIRE(store.get(k) == v);
  CHECK(store.dump() == as_pairs(model));
}

TEST_CASE("dpa store: a GET's accesses on a depth-3 tree are section 4.2.6's") {
  StoreOptions o;
  o.hot_cache = false;
  o.root_lines_in_l3 = false;
  const std::vector<std::uint64_t> keys = forein::testing::make_dataset(forein::testing::Dataset::kSparse, 1000000, 7);
  std::vector<KV> pairs(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) pairs[i] = {keys[i], i};
  Store store(o);
  store.bulk_load(pairs);
  const StoreStats s = store.stats();
  REQUIRE(s.depth == 3);
  REQUIRE(store.check() == "");
  OpCost total;
  std::mt19937_64 rng(forein::testing::test_seed("dpa store 4.2.6"));
  const int lookups = 2000;
  for (int i = 0; i < lookups; ++i) {
    const std::size_t at = rng() % keys.size();
    OpCost c;
    REQUIRE(store.get(keys[at], &c) == at);
    CHECK(c.inner_nodes == 2);
    CHECK(c.leaves == 1);
    CHECK(c.dmas == 2);  // the key window (lines collapse) and the value
    CHECK(c.l3_lines == 0);
    CHECK(c.buffer_entries == 0);
    // 2 inner nodes of 3-5 lines + the leaf's metadata line.
    CHECK(c.dpa_lines >= 2 * 3 + 1);
    CHECK(c.dpa_lines <= 2 * 5 + 1);
    CHECK(c.dma_bytes <= 4 * 64);  // 17 keys span at most 3 lines, + the value's
    total += c;
  }
  WARN("1M sparse keys, depth " << s.depth << ", " << s.leaves << " leaves, " << s.inner_nodes
                                << " inner nodes, DPA bytes " << s.dpa_bytes << " ("
                                << static_cast<double>(s.dpa_bytes) / static_cast<double>(s.keys)
                                << " B/key); mean GET: dpa_lines "
                                << static_cast<double>(total.dpa_lines) / lookups << ", dmas "
                                << static_cast<double>(total.dmas) / lookups << ", dma_bytes "
                                << static_cast<double>(total.dma_bytes) / lookups);
  // The default: the root's first two lines from the L3 instead.
  Store l3_store(StoreOptions{.hot_cache = false});
  l3_store.bulk_load(pairs);
  OpCost l3_total;
  for (int i = 0; i < lookups; ++i) {
    const std::size_t at = rng() % keys.size();
    OpCost c;
    REQUIRE(l3_store.get(keys[at], &c) == at);
    CHECK(c.l3_lines == 2);
    CHECK(c.dpa_lines >= 3 + 1 + 1);
    CHECK(c.dpa_lines <= 3 + 5 + 1);
    l3_total += c;
  }
  WARN("with the root's first two lines in L3: mean GET dpa_lines "
       << static_cast<double>(l3_total.dpa_lines) / lookups << ", l3_lines "
       << static_cast<double>(l3_total.l3_lines) / lookups << ", dmas "
       << static_cast<double>(l3_total.dmas) / lookups);
}

TEST_CASE("dpa store: a hot-entry cache hit costs one DPA line") {
  StoreOptions o;
  o.admit_probability = 1.0;
  Store store(o);
  std::vector<KV> pairs;
  for (std::uint64_t k = 0; k < 5000; ++k) pairs.push_back({k * 977, k});
  store.bulk_load(pairs);
  OpCost first, second;
  REQUIRE(store.get(977 * 42, &first) == 42u);
  REQUIRE(store.get(977 * 42, &second) == 42u);
  CHECK(first.hot_hits == 0);
  CHECK(second.hot_hits == 1);
  CHECK(second.dpa_lines == 1);
  CHECK(second.dmas == 0);
  CHECK(second.inner_nodes == 0);
  // An UPDATE invalidates it.
  store.update(977 * 42, 7);
  OpCost third;
  CHECK(store.get(977 * 42, &third) == 7u);
  CHECK(third.hot_hits == 0);
  CHECK(store.stats().hot_hits >= 1);
}

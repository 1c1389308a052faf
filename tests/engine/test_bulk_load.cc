// bulk_load: sizes from one key to 200k, both key kinds, fill factors,
// later random updates, and rejected input.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "forein/error.h"
#include "forein/key.h"
#include "forein/page_store.h"
#include "forein/tree.h"
#include "support/model.h"
#include "support/seed.h"

namespace {

using forein::Direction;
using forein::ScanSpec;
using forein::Tree;
using forein::testing::Entries;
using Map = std::map<std::string, std::string>;

std::unique_ptr<Tree> make_tree(std::uint32_t page_size = forein::kDefaultPageSize,
                                forein::TreeOptions options = {}) {
  return Tree::create(std::make_unique<forein::MemoryPageStore>(page_size), options);
}

Entries scan_all(Tree& tree, Direction dir) {
  ScanSpec spec;
  spec.direction = dir;
  return forein::testing::scan_entries(tree, spec);
}

// Tree content equals `want` (sorted): size, every get, scans both ways.
void require_content(Tree& tree, const Entries& want) {
  REQUIRE(tree.size() == want.size());
  std::size_t bad = 0;
  std::string v;
  for (const auto& [k, val] : want)
    if (!tree.get(k, &v) || v != val) ++bad;
  REQUIRE(bad == 0);
  REQUIRE(scan_all(tree, Direction::kForward) == want);
  Entries rev(want.rbegin(), want.rend());
  REQUIRE(scan_all(tree, Direction::kBackward) == rev);
}

Entries int_entries(std::size_t n) {
  Entries e;
  e.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    // Negative and positive keys, ascending, with gaps.
    const auto x = static_cast<std::int64_t>(i) * 3 - static_cast<std::int64_t>(n);
    e.emplace_back(forein::encode_int64(x), "value-" + std::to_string(x));
  }
  return e;
}

std::size_t leaf_count(Tree& tree) {
  std::size_t n = 0;
  tree.for_each_node([&](const forein::NodeInterval& iv) { n += iv.level == 0; });
  return n;
}

// Random puts and erases after the load, checked against a map.
void churn(Tree& tree, const Entries& loaded, std::mt19937_64& rng, int ops,
           const std::vector<std::string>& fresh_keys) {
  Map oracle(loaded.begin(), loaded.end());
  for (int i = 0; i < ops; ++i) {
    const bool use_loaded = !loaded.empty() && rng() % 2 == 0;
    const std::string& k = use_loaded ? loaded[rng() % loaded.size()].first
                                      : fresh_keys[rng() % fresh_keys.size()];
    if (rng() % 3 == 0) {
      const bool present = oracle.erase(k) == 1;
      REQUIRE(tree.erase(k) == present);
    } else {
      const std::string v = "churn-" + std::to_string(i);
      const bool is_new = oracle.count(k) == 0;
      REQUIRE(tree.put(k, v) == is_new);
      oracle[k] = v;
    }
  }
  require_content(tree, Entries(oracle.begin(), oracle.end()));
  tree.check();
}

}  // namespace

TEST_CASE("bulk_load int keys of many sizes", "[tree][bulk]") {
  const auto seed = forein::testing::test_seed("bulk_load int keys");
  std::mt19937_64 rng(seed);
  for (std::size_t n : {1u, 2u, 3u, 17u, 100u, 1000u, 10000u, 200000u}) {
    INFO("n = " << n);
    auto tree = make_tree();
    const Entries entries = int_entries(n);
    tree->bulk_load(entries);
    require_content(*tree, entries);
    tree->check();
    if (n == 1) CHECK(tree->height() == 1);
    if (n == 200000) {
      CHECK(tree->height() >= 2);
      CHECK(tree->height() <= 4);
    }
    // Keys just outside the loaded ones are absent.
    CHECK_FALSE(tree->get(forein::encode_int64(-static_cast<std::int64_t>(n) - 1), nullptr));
    CHECK_FALSE(tree->get(forein::encode_int64(-static_cast<std::int64_t>(n) + 1), nullptr));
    CHECK_FALSE(tree->get(forein::encode_int64(static_cast<std::int64_t>(n) * 2 + 5), nullptr));

    std::vector<std::string> fresh;
    for (int i = 0; i < 2000; ++i)
      fresh.push_back(forein::encode_int64(static_cast<std::int64_t>(rng() % (4 * n + 10)) -
                                           static_cast<std::int64_t>(2 * n)));
    churn(*tree, entries, rng, n >= 10000 ? 20000 : 3000, fresh);
  }
}

TEST_CASE("bulk_load byte-string keys", "[tree][bulk]") {
  const auto seed = forein::testing::test_seed("bulk_load byte-string keys");
  std::mt19937_64 rng(seed);
  const std::uint32_t page_size = GENERATE(4096u, 8192u);
  INFO("page size " << page_size);
  auto tree = make_tree(page_size);
  std::set<std::string> keys = {"", std::string(1, '\0'), "abc", std::string("abc\0", 4),
                                std::string(tree->max_key_size(), '\xff')};
  while (keys.size() < 30000) {
    std::string k = rng() % 2 ? "same-word/" : "";
    const auto len = rng() % 30;
    for (std::uint64_t i = 0; i < len; ++i) k.push_back(static_cast<char>("\0az\xff"[rng() % 4]));
    keys.insert(k);
  }
  Entries entries;
  for (const auto& k : keys) entries.emplace_back(k, std::string(k.size() % 50, 'v') + k);
  tree->bulk_load(entries);
  require_content(*tree, entries);
  tree->check();
  std::vector<std::string> fresh;
  for (int i = 0; i < 1000; ++i) fresh.push_back("fresh/" + std::to_string(rng() % 5000));
  churn(*tree, entries, rng, 20000, fresh);
}

TEST_CASE("bulk_load with large values and max-size entries", "[tree][bulk]") {
  auto tree = make_tree(4096);
  Entries entries;
  for (int i = 0; i < 2000; ++i) {
    std::string k = "k" + std::to_string(100000 + i);
    k.resize(i % 3 == 0 ? tree->max_key_size() : k.size(), '.');
    entries.emplace_back(k, std::string(i % 5 == 0 ? tree->max_value_size() : i % 200, 'x'));
  }
  std::sort(entries.begin(), entries.end());
  tree->bulk_load(entries);
  require_content(*tree, entries);
  tree->check();
}

TEST_CASE("bulk_load height is logarithmic", "[tree][bulk]") {
  auto tree = make_tree(8192);
  tree->bulk_load(int_entries(200000));
  CHECK(tree->height() <= 4);
  std::map<std::uint16_t, std::size_t> per_level;
  tree->for_each_node([&](const forein::NodeInterval& iv) { ++per_level[iv.level]; });
  CHECK(per_level.size() == tree->height());
  CHECK(per_level.rbegin()->second == 1);  // one root
  // A leaf of 8 KiB holds well over a hundred int entries at 90% fill.
  CHECK(per_level[0] < 200000 / 100);
}

TEST_CASE("bulk_load fill factor", "[tree][bulk]") {
  const Entries entries = int_entries(20000);
  forein::TreeOptions full;
  full.bulk_fill_percent = 100;
  forein::TreeOptions sparse;
  sparse.bulk_fill_percent = 10;
  auto a = make_tree(8192, full);
  auto b = make_tree(8192, sparse);
  a->bulk_load(entries);
  b->bulk_load(entries);
  require_content(*a, entries);
  require_content(*b, entries);
  a->check();
  b->check();
  const auto la = leaf_count(*a);
  const auto lb = leaf_count(*b);
  INFO("leaves at 100%: " << la << ", at 10%: " << lb);
  CHECK(lb > 5 * la);
  CHECK(b->height() >= a->height());
  // A full tree takes inserts between every pair of keys.
  Map oracle(entries.begin(), entries.end());
  for (std::size_t i = 0; i < entries.size(); i += 7) {
    const auto x = forein::decode_int64(entries[i].first) + 1;
    const std::string k = forein::encode_int64(x);
    REQUIRE(a->put(k, "between"));
    oracle[k] = "between";
  }
  require_content(*a, Entries(oracle.begin(), oracle.end()));
  a->check();
}

TEST_CASE("bulk_load fill percent outside 10..100 is rejected", "[tree][bulk]") {
  for (int pct : {0, 9, 101, 255}) {
    INFO("fill " << pct);
    forein::TreeOptions options;
    options.bulk_fill_percent = static_cast<std::uint8_t>(pct);
    CHECK_THROWS_AS(make_tree(8192, options), forein::InvalidArgument);
  }
}

TEST_CASE("bulk_load rejects bad input and changes nothing", "[tree][bulk]") {
  auto tree = make_tree(4096);
  auto require_still_empty_and_usable = [&] {
    CHECK(tree->size() == 0);
    CHECK(scan_all(*tree, Direction::kForward).empty());
    tree->check();
  };

  SECTION("unsorted") {
    Entries e = int_entries(1000);
    std::swap(e[500], e[501]);
    CHECK_THROWS_AS(tree->bulk_load(e), forein::InvalidArgument);
    require_still_empty_and_usable();
    Entries tail_unsorted = int_entries(1000);
    tail_unsorted.emplace_back(forein::encode_int64(-5000), "late");
    CHECK_THROWS_AS(tree->bulk_load(tail_unsorted), forein::InvalidArgument);
    require_still_empty_and_usable();
    Entries two = {{"b", "1"}, {"a", "2"}};
    CHECK_THROWS_AS(tree->bulk_load(two), forein::InvalidArgument);
    require_still_empty_and_usable();
    // Shorter key first on a common prefix: "ab" < "ab\0" < "abc".
    Entries prefix = {{"ab", "1"}, {"abc", "2"}, {std::string("ab\0", 3), "3"}};
    CHECK_THROWS_AS(tree->bulk_load(prefix), forein::InvalidArgument);
    require_still_empty_and_usable();
  }
  SECTION("duplicates") {
    Entries e = int_entries(1000);
    e[700].first = e[699].first;
    CHECK_THROWS_AS(tree->bulk_load(e), forein::InvalidArgument);
    require_still_empty_and_usable();
    Entries last_dup = int_entries(50);
    last_dup.push_back(last_dup.back());
    CHECK_THROWS_AS(tree->bulk_load(last_dup), forein::InvalidArgument);
    require_still_empty_and_usable();
  }
  SECTION("oversized key or value") {
    Entries e = int_entries(100);
    e.emplace_back(std::string(tree->max_key_size() + 1, '\xff'), "v");
    CHECK_THROWS_AS(tree->bulk_load(e), forein::InvalidArgument);
    require_still_empty_and_usable();
    Entries f = int_entries(100);
    f[50].second.assign(tree->max_value_size() + 1, 'v');
    CHECK_THROWS_AS(tree->bulk_load(f), forein::InvalidArgument);
    require_still_empty_and_usable();
  }
  SECTION("non-empty tree") {
    REQUIRE(tree->put(forein::encode_int64(1), "one"));
    CHECK_THROWS_AS(tree->bulk_load(int_entries(10)), forein::InvalidArgument);
    CHECK(tree->size() == 1);
    std::string v;
    REQUIRE(tree->get(forein::encode_int64(1), &v));
    CHECK(v == "one");
    CHECK(scan_all(*tree, Direction::kForward).size() == 1);
    tree->check();
    return;
  }
  SECTION("loaded tree") {
    tree->bulk_load(int_entries(10));
    CHECK_THROWS_AS(tree->bulk_load(int_entries(10)), forein::InvalidArgument);
    require_content(*tree, int_entries(10));
    tree->check();
    return;
  }
  // After rejected input, a good load succeeds.
  const Entries good = int_entries(5000);
  tree->bulk_load(good);
  require_content(*tree, good);
  tree->check();
}

// Ordered scans against a std::map oracle: every combination of bound kinds
// in both directions, the Cursor and callback APIs, early stop, many leaves,
// merged leaves, and mutations between cursor steps.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
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
using forein::KeyBound;
using forein::ScanSpec;
using forein::Tree;
using Map = std::map<std::string, std::string>;
using forein::testing::Entries;
using forein::testing::scan_entries;

std::unique_ptr<Tree> make_tree(std::uint32_t page_size) {
  return Tree::create(std::make_unique<forein::MemoryPageStore>(page_size));
}

std::string value_for(const std::string& key) {
  return "val<" + key + ">" + std::string(key.size() % 7, '#');
}

bool in_range(const std::string& k, const ScanSpec& spec) {
  if (spec.lower) {
    const int c = forein::compare_keys(k, spec.lower->key);
    if (c < 0 || (c == 0 && !spec.lower->inclusive)) return false;
  }
  if (spec.upper) {
    const int c = forein::compare_keys(k, spec.upper->key);
    if (c > 0 || (c == 0 && !spec.upper->inclusive)) return false;
  }
  return true;
}

Entries expected(const Map& oracle, const ScanSpec& spec) {
  Entries out;
  for (const auto& kv : oracle)
    if (in_range(kv.first, spec)) out.push_back(kv);
  if (spec.direction == Direction::kBackward) std::reverse(out.begin(), out.end());
  return out;
}

Entries via_cursor(Tree& tree, const ScanSpec& spec) {
  Entries out;
  auto cursor = tree.scan(spec);
  while (cursor.next()) out.emplace_back(std::string(cursor.key()), std::string(cursor.value()));
  // A finished cursor stays finished.
  CHECK_FALSE(cursor.next());
  return out;
}

// The run's rows, decoded with LeafRun's accessors (the run is a copy).
Entries rows_of(forein::LeafRun run) {
  Entries out;
  const std::size_t n = run.size();
  for (std::size_t i = 0; i < n; ++i) {
    if (i > 0) REQUIRE(run.advance());
    CHECK(run.size() == n - i);
    std::uint64_t buf;
    const std::string_view key = run.key(&buf);
    // The word and length agree with the key's bytes.
    CHECK(run.key_size() == key.size());
    CHECK(run.key_word() == forein::word_of(key));
    out.emplace_back(std::string(key), std::string(run.value()));
  }
  CHECK_FALSE(run.advance());  // stays on the last row
  return out;
}

// In-place runs (Cursor::next_run), on `cursor` restarted by rescan.
Entries via_runs(Tree& tree, const ScanSpec& spec, forein::Cursor& cursor) {
  Entries out;
  tree.rescan(cursor, spec);
  for (auto run = cursor.next_run(); !run.empty(); run = cursor.next_run()) {
    const Entries rows = rows_of(run);
    out.insert(out.end(), rows.begin(), rows.end());
    // The cursor stands on the run's last row.
    CHECK(cursor.key() == rows.back().first);
    CHECK(cursor.value() == rows.back().second);
  }
  CHECK(cursor.next_run().empty());
  return out;
}

std::string describe(const ScanSpec& spec) {
  auto bound = [](const std::optional<KeyBound>& b) -> std::string {
    if (!b) return "none";
    std::string hex;
    static const char digits[] = "0123456789abcdef";
    for (unsigned char c : b->key) {
      hex.push_back(digits[c >> 4]);
      hex.push_back(digits[c & 15]);
    }
    return (b->inclusive ? "incl " : "excl ") + hex;
  };
  return "lower=" + bound(spec.lower) + " upper=" + bound(spec.upper) +
         (spec.direction == Direction::kForward ? " forward" : " backward");
}

// Runs `spec` both ways and compares with the oracle.
void check_scan(Tree& tree, const Map& oracle, const ScanSpec& spec) {
  INFO(describe(spec));
  const Entries want = expected(oracle, spec);
  const Entries by_cb = scan_entries(tree, spec);
  REQUIRE(by_cb.size() == want.size());
  REQUIRE(by_cb == want);
  const Entries by_cursor = via_cursor(tree, spec);
  REQUIRE(by_cursor == want);
  ScanSpec in_place = spec;
  in_place.in_place = true;
  REQUIRE(via_cursor(tree, in_place) == want);
  // One cursor reused for every scan, as the SQLite module reuses its own.
  static forein::Cursor reused;
  REQUIRE(via_runs(tree, in_place, reused) == want);
}

// Bound candidates: absent, and each of `keys` inclusive and exclusive.
std::vector<std::optional<KeyBound>> bound_choices(const std::vector<std::string>& keys) {
  std::vector<std::optional<KeyBound>> out = {std::nullopt};
  for (const auto& k : keys) {
    out.push_back(KeyBound{k, true});
    out.push_back(KeyBound{k, false});
  }
  return out;
}

// A tree of even int64 keys in [0, 2n).
std::pair<std::unique_ptr<Tree>, Map> even_tree(std::uint32_t page_size, std::int64_t n) {
  auto tree = make_tree(page_size);
  Map oracle;
  for (std::int64_t i = 0; i < n; ++i) {
    const std::string k = forein::encode_int64(2 * i);
    oracle[k] = value_for(k);
    tree->put(k, oracle[k]);
  }
  return {std::move(tree), std::move(oracle)};
}

}  // namespace

TEST_CASE("scan: every bound combination on int keys", "[tree][scan]") {
  const std::int64_t n = 3000;  // keys 0, 2, ..., 5998 over many 4 KiB leaves
  auto [tree, oracle] = even_tree(4096, n);
  REQUIRE(tree->height() >= 2);
  const std::vector<std::int64_t> points = {
      std::numeric_limits<std::int64_t>::min(),
      -5,      // below the range
      0,       // first key
      1,       // absent, inside
      2,       // second key
      1001,    // absent, middle
      1002,    // present, middle
      3000,    // present, middle
      5997,    // absent, just below last
      5998,    // last key
      5999,    // absent, above
      100000,  // far above
      std::numeric_limits<std::int64_t>::max(),
  };
  std::vector<std::string> keys;
  for (auto p : points) keys.push_back(forein::encode_int64(p));
  const auto choices = bound_choices(keys);
  std::size_t scans = 0;
  for (const auto& lo : choices) {
    for (const auto& hi : choices) {
      for (auto dir : {Direction::kForward, Direction::kBackward}) {
        ScanSpec spec;
        spec.lower = lo;
        spec.upper = hi;
        spec.direction = dir;
        check_scan(*tree, oracle, spec);
        ++scans;
      }
    }
  }
  CHECK(scans == choices.size() * choices.size() * 2);
}

TEST_CASE("scan: empty ranges", "[tree][scan]") {
  auto [tree, oracle] = even_tree(4096, 2000);
  auto k = [](std::int64_t i) { return forein::encode_int64(i); };
  const std::vector<std::pair<KeyBound, KeyBound>> empty_ranges = {
      {{k(100), true}, {k(50), true}},     // lower > upper
      {{k(101), true}, {k(99), true}},     // lower > upper, absent keys
      {{k(100), false}, {k(100), true}},   // single point, excluded below
      {{k(100), true}, {k(100), false}},   // single point, excluded above
      {{k(100), false}, {k(100), false}},  // both excluded
      {{k(101), true}, {k(101), true}},    // absent single point
      {{k(100), false}, {k(102), false}},  // nothing strictly between
      {{k(-10), true}, {k(-1), true}},     // below every key
      {{k(4000), true}, {k(9000), true}},  // above every key
      {{k(3998), false}, {k(9000), true}}, // past the last key
      {{k(9000), true}, {k(0), true}},     // inverted across the whole range
  };
  for (const auto& [lo, hi] : empty_ranges) {
    for (auto dir : {Direction::kForward, Direction::kBackward}) {
      ScanSpec spec;
      spec.lower = lo;
      spec.upper = hi;
      spec.direction = dir;
      INFO(describe(spec));
      CHECK(scan_entries(*tree, spec).empty());
      CHECK(via_cursor(*tree, spec).empty());
    }
  }
  // Single points that are present.
  for (auto dir : {Direction::kForward, Direction::kBackward}) {
    ScanSpec spec;
    spec.lower = KeyBound{k(100), true};
    spec.upper = KeyBound{k(100), true};
    spec.direction = dir;
    const auto got = via_cursor(*tree, spec);
    REQUIRE(got.size() == 1);
    CHECK(got[0].first == k(100));
    CHECK(got[0].second == oracle[k(100)]);
  }
}

TEST_CASE("scan: random bounds on byte-string keys", "[tree][scan]") {
  const auto seed = forein::testing::test_seed("scan byte-string keys");
  std::mt19937_64 rng(seed);
  auto tree = make_tree(4096);
  Map oracle;
  const char alphabet[] = {'\0', 'a', 'b', '\xff'};
  std::uniform_int_distribution<int> pick(0, 3);
  auto random_key = [&](int max_len) {
    std::string k;
    if (rng() % 2) k = "shared-prefix/";  // many keys share one word
    const int n = static_cast<int>(rng() % static_cast<std::uint64_t>(max_len + 1));
    for (int i = 0; i < n; ++i) k.push_back(alphabet[pick(rng)]);
    return k;
  };
  for (int i = 0; i < 8000; ++i) {
    const std::string k = random_key(12);
    oracle[k] = value_for(k);
    tree->put(k, oracle[k]);
  }
  oracle[""] = "the empty key";
  tree->put("", "the empty key");
  REQUIRE(tree->size() == oracle.size());

  std::vector<std::string> candidates = {"", std::string(1, '\0'), "shared-prefix/",
                                         "shared-prefix", std::string(20, '\xff')};
  for (int i = 0; i < 30; ++i) candidates.push_back(random_key(6));
  for (int i = 0; i < 10; ++i) {  // keys that are present
    auto it = oracle.begin();
    std::advance(it, static_cast<long>(rng() % oracle.size()));
    candidates.push_back(it->first);
  }
  for (int round = 0; round < 400; ++round) {
    ScanSpec spec;
    if (rng() % 5 != 0) spec.lower = KeyBound{candidates[rng() % candidates.size()], rng() % 2 == 0};
    if (rng() % 5 != 0) spec.upper = KeyBound{candidates[rng() % candidates.size()], rng() % 2 == 0};
    spec.direction = rng() % 2 ? Direction::kForward : Direction::kBackward;
    check_scan(*tree, oracle, spec);
  }
  // The empty key as an inclusive lower bound includes it; exclusive skips it.
  ScanSpec spec;
  spec.lower = KeyBound{"", true};
  auto all = via_cursor(*tree, spec);
  REQUIRE_FALSE(all.empty());
  CHECK(all.front().first.empty());
  spec.lower = KeyBound{"", false};
  all = via_cursor(*tree, spec);
  REQUIRE_FALSE(all.empty());
  CHECK_FALSE(all.front().first.empty());
  CHECK(all.size() == oracle.size() - 1);
  spec.direction = Direction::kBackward;
  spec.lower = KeyBound{"", true};
  all = via_cursor(*tree, spec);
  REQUIRE(all.size() == oracle.size());
  CHECK(all.back().first.empty());
}

TEST_CASE("scan: callback early stop", "[tree][scan]") {
  auto [tree, oracle] = even_tree(4096, 5000);
  for (auto dir : {Direction::kForward, Direction::kBackward}) {
    for (std::size_t stop_after : {1u, 2u, 10u, 333u, 4999u}) {
      ScanSpec spec;
      spec.direction = dir;
      if (stop_after == 10) {
        spec.lower = KeyBound{forein::encode_int64(501), true};
        spec.upper = KeyBound{forein::encode_int64(9000), false};
      }
      INFO(describe(spec) << " stop after " << stop_after);
      const Entries want = expected(oracle, spec);
      REQUIRE(want.size() > stop_after);
      Entries got;
      std::size_t calls = 0;
      tree->scan(spec, [&](std::string_view k, std::string_view v) {
        ++calls;
        got.emplace_back(std::string(k), std::string(v));
        return got.size() < stop_after;
      });
      CHECK(calls == stop_after);  // not called again after returning false
      REQUIRE(got.size() == stop_after);
      CHECK(std::equal(got.begin(), got.end(), want.begin()));
    }
  }
}

TEST_CASE("scan: cursor API", "[tree][scan][cursor]") {
  auto [tree, oracle] = even_tree(4096, 4000);
  const Entries all(oracle.begin(), oracle.end());

  SECTION("several cursors at once, interleaved") {
    ScanSpec fwd;
    ScanSpec bwd;
    bwd.direction = Direction::kBackward;
    auto a = tree->scan(fwd);
    auto b = tree->scan(bwd);
    for (std::size_t i = 0; i < all.size(); ++i) {
      REQUIRE(a.next());
      REQUIRE(b.next());
      REQUIRE(a.key() == all[i].first);
      REQUIRE(a.value() == all[i].second);
      REQUIRE(b.key() == all[all.size() - 1 - i].first);
      REQUIRE(b.value() == all[all.size() - 1 - i].second);
    }
    CHECK_FALSE(a.next());
    CHECK_FALSE(b.next());
  }

  SECTION("a moved cursor continues where it was") {
    ScanSpec spec;
    spec.lower = KeyBound{forein::encode_int64(1000), true};
    auto c = tree->scan(spec);
    for (int i = 0; i < 10; ++i) REQUIRE(c.next());
    CHECK(forein::decode_int64(c.key()) == 1018);
    forein::Cursor moved(std::move(c));
    REQUIRE(moved.next());
    CHECK(forein::decode_int64(moved.key()) == 1020);
    forein::Cursor assigned = tree->scan(ScanSpec{});
    assigned = std::move(moved);
    REQUIRE(assigned.next());
    CHECK(forein::decode_int64(assigned.key()) == 1022);
    CHECK(assigned.value() == oracle[forein::encode_int64(1022)]);
  }

  SECTION("an abandoned cursor does not block writers") {
    {
      auto c = tree->scan(ScanSpec{});
      REQUIRE(c.next());
      // The cursor holds no latch between calls: writers proceed.
      for (std::int64_t i = 0; i < 2000; ++i) tree->put(forein::encode_int64(2 * i + 1), "odd");
      REQUIRE(c.next());
      // Key 1 appeared during the scan: it may or may not be returned.
      const auto k = forein::decode_int64(c.key());
      CHECK((k == 1 || k == 2));
    }
    tree->check();
    CHECK(tree->size() == 6000);
  }
}

TEST_CASE("scan: mutations between cursor steps", "[tree][scan][cursor]") {
  // The cursor is not a snapshot, but keys present throughout must appear,
  // every key returned must have been present at some point, and keys come
  // in strict order without repeats.
  // An in-place cursor (ScanSpec::in_place) re-finds its place after a
  // write, so every key it returns is present when next() returns it.
  const auto seed = forein::testing::test_seed("scan with mutations between steps");
  std::mt19937_64 rng(seed);
  for (const bool in_place : {false, true})
  for (auto dir : {Direction::kForward, Direction::kBackward}) {
    INFO((dir == Direction::kForward ? "forward" : "backward") << (in_place ? ", in place" : ""));
    auto tree = make_tree(4096);
    std::set<std::int64_t> present;
    for (std::int64_t i = 0; i < 6000; ++i) {
      tree->put(forein::encode_int64(i * 4), value_for(forein::encode_int64(i * 4)));
      present.insert(i * 4);
    }
    std::set<std::int64_t> ever = present;  // present at some point
    std::set<std::int64_t> touched;         // erased or inserted during the scan
    ScanSpec spec;
    spec.direction = dir;
    spec.in_place = in_place;
    auto cursor = tree->scan(spec);
    std::vector<std::int64_t> got;
    bool values_ok = true;
    std::size_t absent_when_returned = 0;
    while (cursor.next()) {
      const auto k = forein::decode_int64(cursor.key());
      if (cursor.value() != value_for(std::string(cursor.key()))) values_ok = false;
      if (present.count(k) == 0) ++absent_when_returned;
      got.push_back(k);
      // Churn: erase a run of keys (empties leaves), insert some new keys.
      for (int j = 0; j < 2; ++j) {
        const std::int64_t victim = static_cast<std::int64_t>(rng() % 24000);
        const std::string vk = forein::encode_int64(victim);
        if (j == 0) {
          if (got.size() % 4 != 0) continue;
          for (std::int64_t r = victim; r < victim + 16; ++r) {
            if (present.erase(r)) {
              touched.insert(r);
              REQUIRE(tree->erase(forein::encode_int64(r)));
            }
          }
        } else if (present.insert(victim).second) {
          touched.insert(victim);
          ever.insert(victim);
          REQUIRE(tree->put(vk, value_for(vk)));
        }
      }
    }
    CHECK(values_ok);
    if (in_place) CHECK(absent_when_returned == 0);
    for (std::size_t i = 1; i < got.size(); ++i) {
      if (dir == Direction::kForward)
        REQUIRE(got[i - 1] < got[i]);
      else
        REQUIRE(got[i - 1] > got[i]);
    }
    for (auto k : got) REQUIRE(ever.count(k) == 1);
    const std::set<std::int64_t> got_set(got.begin(), got.end());
    std::size_t missing = 0;
    for (std::int64_t i = 0; i < 6000; ++i)
      if (touched.count(i * 4) == 0 && got_set.count(i * 4) == 0) ++missing;
    CHECK(missing == 0);
    CHECK(tree->size() == present.size());
    tree->check();
  }
}

TEST_CASE("scan: runs cut short by changes resume after the last row used",
          "[tree][scan][cursor]") {
  // A host that steps through next_run()'s slots row by row (SQLite's
  // xNext) and sees the tree change part-way drops the rest of the run and
  // calls resume_after() with the last key it used. Every key present
  // throughout must appear once, in order, and every key returned must be
  // present with its value when its run is handed out.
  const auto seed = forein::testing::test_seed("runs with mutations");
  std::mt19937_64 rng(seed);
  for (auto dir : {Direction::kForward, Direction::kBackward}) {
    INFO((dir == Direction::kForward ? "forward" : "backward"));
    auto tree = make_tree(4096);
    std::set<std::int64_t> present;
    for (std::int64_t i = 0; i < 6000; ++i) {
      tree->put(forein::encode_int64(i * 4), value_for(forein::encode_int64(i * 4)));
      present.insert(i * 4);
    }
    std::set<std::int64_t> touched;
    ScanSpec spec;
    spec.direction = dir;
    spec.in_place = true;
    forein::Cursor cursor;
    CHECK(cursor.next_run().empty());  // no scan yet
    tree->rescan(cursor, spec);
    std::vector<std::int64_t> got;
    std::size_t bad = 0, runs = 0, cut = 0;
    for (auto run = cursor.next_run(); !run.empty(); run = cursor.next_run()) {
      ++runs;
      const Entries rows = rows_of(run);
      // Use a random prefix of the run, or all of it.
      const std::size_t use = rng() % 3 == 0 ? 1 + rng() % rows.size() : rows.size();
      for (std::size_t r = 0; r < use; ++r) {
        const auto k = forein::decode_int64(rows[r].first);
        if (present.count(k) == 0 || rows[r].second != value_for(rows[r].first)) ++bad;
        got.push_back(k);
      }
      if (use == rows.size() && rng() % 2 == 0) continue;
      // Changes: the rest of the run is stale.
      ++cut;
      for (int j = 0; j < 8; ++j) {
        const std::int64_t victim = static_cast<std::int64_t>(rng() % 24000);
        const std::string vk = forein::encode_int64(victim);
        if (j % 2 == 0) {
          if (present.erase(victim)) REQUIRE(tree->erase(vk));
        } else if (present.insert(victim).second) {
          REQUIRE(tree->put(vk, value_for(vk)));
        }
        touched.insert(victim);
      }
      cursor.resume_after(rows[use - 1].first);
    }
    CHECK(bad == 0);
    CHECK(runs > 100);
    CHECK(cut > 10);
    for (std::size_t i = 1; i < got.size(); ++i) {
      if (dir == Direction::kForward)
        REQUIRE(got[i - 1] < got[i]);
      else
        REQUIRE(got[i - 1] > got[i]);
    }
    const std::set<std::int64_t> got_set(got.begin(), got.end());
    std::size_t missing = 0;
    for (std::int64_t i = 0; i < 6000; ++i)
      if (touched.count(i * 4) == 0 && got_set.count(i * 4) == 0) ++missing;
    CHECK(missing == 0);
    tree->check();
  }
}

TEST_CASE("scan: runs read long keys, inline and heap values", "[tree][scan][cursor]") {
  // Keys of 1 to 40 bytes (long ones in the heap), values of 0 to 40 bytes
  // (up to 8 inline in the slot), both directions, against the oracle.
  const auto seed = forein::testing::test_seed("runs of mixed rows");
  std::mt19937_64 rng(seed);
  auto tree = make_tree(4096);
  Map oracle;
  for (int i = 0; i < 4000; ++i) {
    std::string k(1 + rng() % 40, '\0');
    for (char& c : k) c = static_cast<char>(rng() % 4);  // shared words, zero bytes
    std::string v(rng() % 41, '\0');
    for (char& c : v) c = static_cast<char>('a' + rng() % 26);
    oracle[k] = v;
    tree->put(k, v);
  }
  forein::Cursor cursor;
  for (auto dir : {Direction::kForward, Direction::kBackward}) {
    ScanSpec spec;
    spec.direction = dir;
    spec.in_place = true;
    REQUIRE(via_runs(*tree, spec, cursor) == expected(oracle, spec));
  }
}

TEST_CASE("scan: runs read fixed-shape leaves", "[tree][scan][cursor]") {
  // 8-byte keys with 4-byte values (16-byte slots, one shape per leaf),
  // then a few rows of other shapes that rewrite some leaves: runs read
  // both layouts, both directions, against the oracle.
  const auto seed = forein::testing::test_seed("runs of fixed-shape rows");
  std::mt19937_64 rng(seed);
  auto tree = make_tree(4096);
  Map oracle;
  for (std::int64_t i = 0; i < 6000; ++i) {
    const std::string k = forein::encode_int64(i * 2);
    oracle[k] = std::string(4, static_cast<char>('a' + i % 26));
    tree->put(k, oracle[k]);
  }
  forein::Cursor cursor;
  for (int round = 0; round < 2; ++round) {
    for (auto dir : {Direction::kForward, Direction::kBackward}) {
      ScanSpec spec;
      spec.direction = dir;
      spec.in_place = true;
      REQUIRE(via_runs(*tree, spec, cursor) == expected(oracle, spec));
      spec.lower = KeyBound{forein::encode_int64(1001), true};
      spec.upper = KeyBound{forein::encode_int64(9000), false};
      REQUIRE(via_runs(*tree, spec, cursor) == expected(oracle, spec));
    }
    for (int i = 0; i < 40; ++i) {
      const std::string k = forein::encode_int64(static_cast<std::int64_t>(rng() % 12000) | 1);
      oracle[k] = std::string(rng() % 20, 'z');
      tree->put(k, oracle[k]);
    }
  }
  tree->check();
}

TEST_CASE("scan: expected_rows sizes the first run and ends nothing", "[tree][scan][cursor]") {
  auto tree = make_tree(8192);
  for (std::int64_t i = 0; i < 5000; ++i) tree->put(forein::encode_int64(i), "v");
  for (const std::size_t expected : {std::size_t{1}, std::size_t{5}, std::size_t{100}, std::size_t{100000}}) {
    INFO("expected_rows " << expected);
    ScanSpec spec;
    spec.lower = KeyBound{forein::encode_int64(10), true};
    spec.in_place = true;
    spec.expected_rows = expected;
    forein::Cursor cursor;
    tree->rescan(cursor, spec);
    const auto first = cursor.next_run();
    REQUIRE(!first.empty());
    CHECK(first.size() <= expected);
    std::uint64_t buf;
    CHECK(forein::decode_int64(first.key(&buf)) == 10);
    std::size_t total = first.size();
    for (auto run = cursor.next_run(); !run.empty(); run = cursor.next_run()) total += run.size();
    CHECK(total == 4990);
  }
}

TEST_CASE("scan: copied batches stop short of their leaf and go on where they stopped",
          "[tree][scan][cursor]") {
  // A copying cursor copies at most expected_rows (or 8, 16, ... 128) rows a
  // batch; every key must still come back once, in order, from any start,
  // in both directions, for every expected_rows.
  auto tree = make_tree(8192);
  std::vector<std::int64_t> keys;
  for (std::int64_t i = 0; i < 20000; i += 3) {
    tree->put(forein::encode_int64(i), value_for(forein::encode_int64(i)));
    keys.push_back(i);
  }
  for (const Direction dir : {Direction::kForward, Direction::kBackward}) {
    for (const std::size_t expected : {std::size_t{0}, std::size_t{1}, std::size_t{3}, std::size_t{100}}) {
      for (const std::int64_t start : {std::int64_t{0}, std::int64_t{7001}, std::int64_t{19998}}) {
        INFO((dir == Direction::kForward ? "forward" : "backward") << ", expected_rows " << expected << ", from "
                                                                   << start);
        ScanSpec spec;
        spec.direction = dir;
        spec.expected_rows = expected;
        if (dir == Direction::kForward) {
          spec.lower = KeyBound{forein::encode_int64(start), true};
        } else {
          spec.upper = KeyBound{forein::encode_int64(start), true};
        }
        std::vector<std::int64_t> want;
        for (const std::int64_t k : keys)
          if (dir == Direction::kForward ? k >= start : k <= start) want.push_back(k);
        if (dir == Direction::kBackward) std::reverse(want.begin(), want.end());
        std::vector<std::int64_t> got;
        bool values_ok = true;
        for (auto cursor = tree->scan(spec); cursor.next();) {
          got.push_back(forein::decode_int64(cursor.key()));
          values_ok = values_ok && cursor.value() == value_for(std::string(cursor.key()));
        }
        CHECK(values_ok);
        CHECK(got == want);
      }
    }
  }
  // A key inserted right after the last one handed out, in the leaf a
  // batch stopped in, is found when the next batch starts there again.
  ScanSpec spec;
  spec.expected_rows = 2;
  spec.lower = KeyBound{forein::encode_int64(3000), true};
  auto cursor = tree->scan(spec);
  REQUIRE(cursor.next());
  REQUIRE(cursor.next());
  CHECK(forein::decode_int64(cursor.key()) == 3003);
  tree->put(forein::encode_int64(3004), value_for(forein::encode_int64(3004)));
  REQUIRE(cursor.next());
  CHECK(forein::decode_int64(cursor.key()) == 3004);
  REQUIRE(cursor.next());
  CHECK(forein::decode_int64(cursor.key()) == 3006);
}

TEST_CASE("scan: runs need an in-place cursor", "[tree][scan][cursor]") {
  auto tree = make_tree(4096);
  tree->put(forein::encode_int64(1), "one");
  forein::Cursor copying = tree->scan(ScanSpec{});
  CHECK_THROWS_AS(copying.next_run(), forein::InvalidArgument);
  forein::Cursor none;  // no scan started
  CHECK_FALSE(none.next());
  CHECK(none.next_run().empty());
}

TEST_CASE("scan: across many small leaves", "[tree][scan]") {
  const auto seed = forein::testing::test_seed("scan many leaves");
  std::mt19937_64 rng(seed);
  auto tree = make_tree(4096);
  Map oracle;
  for (int i = 0; i < 60000; ++i) {
    const std::string k = forein::encode_int64(static_cast<std::int64_t>(rng() % 1000000) - 500000);
    oracle[k] = value_for(k);
    tree->put(k, oracle[k]);
  }
  REQUIRE(tree->height() >= 3);
  for (auto dir : {Direction::kForward, Direction::kBackward}) {
    ScanSpec spec;
    spec.direction = dir;
    check_scan(*tree, oracle, spec);
  }
  for (int round = 0; round < 60; ++round) {
    ScanSpec spec;
    auto a = static_cast<std::int64_t>(rng() % 1100000) - 550000;
    auto b = a + static_cast<std::int64_t>(rng() % 200000);
    spec.lower = KeyBound{forein::encode_int64(a), rng() % 2 == 0};
    spec.upper = KeyBound{forein::encode_int64(b), rng() % 2 == 0};
    spec.direction = rng() % 2 ? Direction::kForward : Direction::kBackward;
    check_scan(*tree, oracle, spec);
  }
}

TEST_CASE("scan: after many deletions (merged leaves)", "[tree][scan]") {
  const auto seed = forein::testing::test_seed("scan after deletions");
  std::mt19937_64 rng(seed);
  auto tree = make_tree(4096);
  Map oracle;
  std::vector<std::int64_t> ints(40000);
  for (std::size_t i = 0; i < ints.size(); ++i) ints[i] = static_cast<std::int64_t>(i);
  std::shuffle(ints.begin(), ints.end(), rng);
  for (auto i : ints) {
    const std::string k = forein::encode_int64(i);
    oracle[k] = value_for(k);
    tree->put(k, oracle[k]);
  }
  const auto height_full = tree->height();
  // Erase 95% at random, plus whole runs so entire leaves empty out.
  std::shuffle(ints.begin(), ints.end(), rng);
  for (std::size_t i = 0; i < ints.size() * 95 / 100; ++i) {
    const std::string k = forein::encode_int64(ints[i]);
    REQUIRE(tree->erase(k));
    oracle.erase(k);
  }
  for (std::int64_t i = 10000; i < 30000; ++i) {
    const std::string k = forein::encode_int64(i);
    if (oracle.erase(k)) REQUIRE(tree->erase(k));
  }
  REQUIRE(tree->size() == oracle.size());
  CHECK(tree->height() <= height_full);
  tree->check();
  for (auto dir : {Direction::kForward, Direction::kBackward}) {
    ScanSpec spec;
    spec.direction = dir;
    check_scan(*tree, oracle, spec);
  }
  for (int round = 0; round < 100; ++round) {
    ScanSpec spec;
    const auto a = static_cast<std::int64_t>(rng() % 42000) - 1000;
    const auto b = a + static_cast<std::int64_t>(rng() % 25000);
    if (round % 4 != 0) spec.lower = KeyBound{forein::encode_int64(a), rng() % 2 == 0};
    if (round % 4 != 1) spec.upper = KeyBound{forein::encode_int64(b), rng() % 2 == 0};
    spec.direction = rng() % 2 ? Direction::kForward : Direction::kBackward;
    check_scan(*tree, oracle, spec);
  }
  // Erase everything: scans are empty.
  for (const auto& kv : oracle) REQUIRE(tree->erase(kv.first));
  oracle.clear();
  tree->check();
  for (auto dir : {Direction::kForward, Direction::kBackward}) {
    ScanSpec spec;
    spec.direction = dir;
    CHECK(via_cursor(*tree, spec).empty());
    CHECK(scan_entries(*tree, spec).empty());
  }
}

TEST_CASE("scan: a hint for the starting key does not change results", "[tree][scan]") {
  auto [tree, oracle] = even_tree(4096, 5000);
  for (std::int64_t start : {0, 1, 777, 5000, 9998, 20000}) {
    for (auto dir : {Direction::kForward, Direction::kBackward}) {
      ScanSpec spec;
      spec.direction = dir;
      const std::string sk = forein::encode_int64(start);
      if (dir == Direction::kForward)
        spec.lower = KeyBound{sk, true};
      else
        spec.upper = KeyBound{sk, true};
      const Entries want = expected(oracle, spec);
      forein::StartHints good;
      good.primary = tree->leaf_for(sk);
      forein::StartHints wrong;  // a leaf far away from the starting key
      wrong.primary = tree->leaf_for(forein::encode_int64(start < 5000 ? 9000 : 10));
      for (const auto* hints : {&good, &wrong}) {
        INFO(describe(spec));
        Entries got;
        tree->scan(
            spec,
            [&](std::string_view k, std::string_view v) {
              got.emplace_back(std::string(k), std::string(v));
              return true;
            },
            hints);
        CHECK(got == want);
        Entries got_cursor;
        auto c = tree->scan(spec, hints);
        while (c.next()) got_cursor.emplace_back(std::string(c.key()), std::string(c.value()));
        CHECK(got_cursor == want);
      }
    }
  }
}

TEST_CASE("scan: stepping to the next leaf is not counted as a hint", "[scan][stats]") {
  auto tree = make_tree(4096);
  for (int i = 0; i < 5000; ++i) tree->put(forein::encode_int64(i), std::string(40, 'v'));
  REQUIRE(tree->height() >= 2);
  tree->reset_stats();
  for (const Direction d : {Direction::kForward, Direction::kBackward}) {
    ScanSpec spec;
    spec.direction = d;
    auto cursor = tree->scan(spec);
    std::size_t n = 0;
    while (cursor.next()) ++n;
    CHECK(n == 5000);
  }
  const forein::TreeStats s = tree->stats();
  CHECK(s.hinted == 0);
  CHECK(s.hint_hits == 0);
  CHECK(s.fallbacks == 0);
  CHECK(s.nodes_visited > 2 * 5000 * 48 / 4096);  // every leaf, both ways
}

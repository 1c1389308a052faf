// The client's walk (net/remote/walk.h) over a built tree: every key from
// the root in height + 1 READs, from a correct hint (a leaf or an inner
// node holding the key: fewer READs), from a stale hint (a node split
// since: right moves), from garbage hints (random addresses, inside value
// records, out of range): always the right answer. FOREIN_SEED=<n>
// replays the randomized cases.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "forein/error.h"
#include "remote/build.h"
#include "remote/remote_support.h"
#include "remote/walk.h"
#include "remote/writer.h"
#include "support/rng.h"
#include "support/seed.h"

namespace rr = forein::net::remote;
using namespace forein::testing::remote;
using forein::testing::Rng;
using forein::testing::test_seed;

namespace {

// Keys 0, 2, 4, ...: odd keys are absent (and can be inserted).
#ifdef FOREIN_REMOTE_SMALL
constexpr std::uint64_t kKeys = 2000;
#else
constexpr std::uint64_t kKeys = 6000;
#endif

void require_value(const rr::LookupResult& r, std::uint64_t key, std::uint32_t version = 1) {
  INFO("key " << key << " status " << rr::to_string(r.status));
  REQUIRE(r.status == rr::LookupStatus::kFound);
  std::uint64_t k = 0;
  std::uint32_t v = 0;
  REQUIRE(parse_test_value(r.value, &k, &v));
  REQUIRE(k == key);
  REQUIRE(v == version);
  REQUIRE(r.record_version == version);
}

}  // namespace

TEST_CASE("every key from the root in height + 1 READs, for several geometries", "[remote]") {
  for (const rr::Geometry g : {rr::geometry_for_fanout(4), rr::geometry_for_fanout(16),
                               rr::geometry_for_node_bytes(8192), rr::geometry_for_fanout(1024)}) {
    for (const double fill : {1.0, 0.7}) {
      rr::BuildOptions o;
      o.geometry = g;
      o.fill = fill;
      const Tree t = build_tree(key_range(kKeys, 2), o);
      INFO("fanout " << g.fanout << " fill " << fill << " height " << t.stats.height);
      rr::Walker w(region_reader(*t.region));
      REQUIRE(w.open());
      REQUIRE(w.header().height == t.stats.height);
      // Every key (a sample of them for the big nodes, whose checksums cost).
      const std::uint64_t step = g.fanout > 16 ? 7 : 1;
      for (std::uint64_t k = 0; k < 2 * kKeys; k += step) {
        const rr::LookupResult r = w.lookup(k);
        if (k % 2 == 0) {
          require_value(r, k);
          REQUIRE(r.counters.reads == t.stats.height + 1);
        } else {
          REQUIRE(r.status == rr::LookupStatus::kNotFound);
          REQUIRE(r.counters.reads == t.stats.height);
        }
        REQUIRE(r.counters.restarts == 0);
        REQUIRE(r.counters.bytes == t.stats.height * g.node_bytes + (k % 2 == 0 ? 24 + 24 : 0));
      }
      REQUIRE(w.lookup(~std::uint64_t{0}).status == rr::LookupStatus::kNotFound);
    }
  }
}

TEST_CASE("an empty tree and a one-key tree", "[remote]") {
  rr::BuildOptions o;
  Tree t = build_tree({}, o);
  REQUIRE(t.stats.height == 1);
  rr::Walker w(region_reader(*t.region));
  REQUIRE(w.lookup(5).status == rr::LookupStatus::kNotFound);
  t = build_tree({7}, o);
  rr::Walker w1(region_reader(*t.region));
  require_value(w1.lookup(7), 7);
  REQUIRE(w1.lookup(6).status == rr::LookupStatus::kNotFound);
}

TEST_CASE("build refuses unsorted keys, long values and a small region", "[remote]") {
  rr::BuildOptions o;
  rr::Region region(1 << 16);
  REQUIRE_THROWS_AS(build_tree({3, 2}, o), forein::InvalidArgument);
  REQUIRE_THROWS_AS(build_tree({3, 3}, o), forein::InvalidArgument);
  const std::string big(rr::kMaxValueBytes + 1, 'z');
  const rr::Entry e[] = {{1, big}};
  REQUIRE_THROWS_AS(rr::build(region, e, o), forein::InvalidArgument);
  rr::Region tiny(200);
  const rr::Entry small[] = {{1, "a"}, {2, "b"}, {3, "c"}};
  REQUIRE_THROWS_AS(rr::build(tiny, small, o), forein::InvalidArgument);
  o.fill = 0;
  rr::Region r2(1 << 16);
  REQUIRE_THROWS_AS(rr::build(r2, small, o), forein::InvalidArgument);
}

TEST_CASE("a correct hint (the leaf, or an inner node holding the key) saves READs", "[remote]") {
  rr::BuildOptions o;
  const Tree t = build_tree(key_range(kKeys, 2), o);
  REQUIRE(t.stats.height >= 3);
  rr::Walker w(region_reader(*t.region));
  REQUIRE(w.open());
  std::uint64_t from_root = 0, from_leaf = 0, from_inner = 0;
  for (std::uint64_t k = 0; k < 2 * kKeys; k += 3) {
    const std::vector<rr::Address> path = path_of(*t.region, k);
    REQUIRE(path.size() == t.stats.height);
    const rr::LookupResult root = w.lookup(k);
    const rr::LookupResult leaf = w.lookup(k, path.back());
    const rr::LookupResult inner = w.lookup(k, path[path.size() - 2]);  // level 1
    for (const auto* r : {&root, &leaf, &inner}) {
      if (k % 2 == 0) {
        require_value(*r, k);
      } else {
        REQUIRE(r->status == rr::LookupStatus::kNotFound);
      }
    }
    REQUIRE(leaf.hint_taken);
    REQUIRE(inner.hint_taken);
    REQUIRE(leaf.counters.fallbacks == 0);
    REQUIRE(leaf.counters.reads == (k % 2 == 0 ? 2u : 1u));
    REQUIRE(inner.counters.reads == (k % 2 == 0 ? 3u : 2u));
    from_root += root.counters.reads;
    from_leaf += leaf.counters.reads;
    from_inner += inner.counters.reads;
  }
  REQUIRE(from_leaf < from_inner);
  REQUIRE(from_inner < from_root);
}

TEST_CASE("a stale hint (a leaf split since) moves right and answers right", "[remote]") {
  const std::uint64_t seed = test_seed("remote stale hint");
  Rng rng(seed);
  rr::BuildOptions o;  // full leaves: the first insert into each splits it
  Tree t = build_tree(key_range(kKeys, 2), o, 24, 8 << 20);
  std::vector<rr::Address> old_leaf(kKeys);
  for (std::uint64_t i = 0; i < kKeys; ++i) old_leaf[i] = path_of(*t.region, 2 * i).back();
  // Insert odd keys into a third of the leaves: each splits once or twice.
  rr::Writer writer(*t.region);
  std::map<std::uint64_t, std::uint32_t> inserted;
  for (std::uint64_t i = 0; i < kKeys; ++i) {
    if ((i / 16) % 3 == 0 && rng.chance(3, 4)) {
      REQUIRE(writer.put(2 * i + 1, test_value(2 * i + 1, 1)) == rr::PutResult::kInserted);
      inserted[2 * i + 1] = 1;
    }
  }
  REQUIRE(writer.stats().splits > 0);
  rr::Walker w(region_reader(*t.region));
  std::uint64_t moves = 0, fallbacks = 0, reads = 0;
  for (std::uint64_t i = 0; i < kKeys; ++i) {
    const rr::LookupResult r = w.lookup(2 * i, old_leaf[i]);
    require_value(r, 2 * i);
    moves += r.counters.sibling_moves;
    fallbacks += r.counters.fallbacks;
    reads += r.counters.reads;
    // The old leaf of an even key also answers its odd neighbour.
    const rr::LookupResult odd = w.lookup(2 * i + 1, old_leaf[i]);
    if (inserted.count(2 * i + 1) != 0) {
      require_value(odd, 2 * i + 1);
    } else {
      REQUIRE(odd.status == rr::LookupStatus::kNotFound);
    }
  }
  std::cout << "stale leaf hints: " << moves << " right moves, " << fallbacks << " fallbacks, " << reads
            << " READs for " << kKeys << " lookups\n";
  REQUIRE(moves > 0);
  REQUIRE(fallbacks == 0);  // at most a few splits per leaf: within max_sibling_run
  // A hint far left of the key: a long run of right moves gives up on the
  // hint and falls back to the root, still right.
  const rr::Address first_leaf = old_leaf[0];
  const rr::LookupResult far = w.lookup(2 * (kKeys - 1), first_leaf);
  require_value(far, 2 * (kKeys - 1));
  REQUIRE(far.counters.fallbacks == 1);
  REQUIRE(far.counters.sibling_moves == rr::WalkerOptions{}.max_sibling_run);
}

TEST_CASE("garbage hints: random, inside records, unaligned, out of range: right answers", "[remote]") {
  const std::uint64_t seed = test_seed("remote garbage hints");
  Rng rng(seed);
  rr::BuildOptions o;
  o.fill = 0.8;
  const Tree t = build_tree(key_range(kKeys, 2), o, 40);
  const rr::Region& region = *t.region;
  rr::Walker w(region_reader(region));
  REQUIRE(w.open());
  const std::uint32_t bound = 4 * t.stats.height + 8;
  std::uint64_t taken = 0, fallbacks = 0;
  for (std::uint64_t i = 0; i < 3 * kKeys; ++i) {
    const std::uint64_t k = rng.below(2 * kKeys + 10);
    rr::Address hint = 0;
    switch (rng.below(6)) {
      case 0:
        hint = rng.below(region.size() + 4096);  // anywhere, unaligned too
        break;
      case 1:
        hint = rng.below(region.size() / 8) * 8;  // aligned, anywhere
        break;
      case 2: {
        // A record: its start, its value bytes.
        const rr::LookupResult at = w.lookup(rng.below(kKeys) * 2);
        hint = at.record + 8 * rng.below(8);
        break;
      }
      case 3:
        hint = region.size() + 8 * rng.below(1 << 20);
        break;
      case 4:
        hint = ~std::uint64_t{0} - rng.below(64);
        break;
      default:
        hint = path_of(region, rng.below(2 * kKeys)).back();  // some leaf, often the wrong one
        break;
    }
    const rr::LookupResult r = w.lookup(k, hint);
    INFO("key " << k << " hint " << hint);
    if (k % 2 == 0 && k < 2 * kKeys) {
      require_value(r, k);
    } else {
      REQUIRE(r.status == rr::LookupStatus::kNotFound);
    }
    REQUIRE(r.counters.reads <= bound);
    taken += r.hint_taken ? 1 : 0;
    fallbacks += r.counters.fallbacks;
  }
  std::cout << "garbage hints: " << taken << " taken (a real node holding the key), " << fallbacks
            << " fell back to the root\n";
  REQUIRE(fallbacks > 0);
}

TEST_CASE("a ReadFn that fails: the walk retries from the root within its bound", "[remote]") {
  const Tree t = build_tree(key_range(1000), rr::BuildOptions{});
  int calls = 0;
  rr::Walker w(
      [&](rr::Address a, std::size_t len, std::byte* out) {
        // Every third READ times out.
        if (++calls % 3 == 0) return false;
        return t.region->read(a, len, out) == rr::ReadError::kOk;
      },
      rr::WalkerOptions{});
  for (std::uint64_t k = 0; k < 1000; ++k) {
    const rr::LookupResult r = w.lookup(k);
    if (r.status != rr::LookupStatus::kGaveUp) require_value(r, k);
  }
  REQUIRE(w.totals().failed_reads > 0);
  // A ReadFn that always fails: no header, no answer.
  rr::Walker dead([](rr::Address, std::size_t, std::byte*) { return false; });
  REQUIRE_FALSE(dead.open());
  REQUIRE(dead.lookup(1).status == rr::LookupStatus::kGaveUp);
}

// net/remote under one writer and concurrent readers (label concurrent,
// also run under ThreadSanitizer; FOREIN_REMOTE_SMALL there): never a
// wrong value; torn READs are forced and caught by the checksum; a READ
// racing a split (the writer splits the node between two READs of one
// walk, or in the middle of one READ) still gives the right answer.
// FOREIN_SEED=<n> replays the randomized cases.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

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

#ifdef FOREIN_REMOTE_SMALL
constexpr std::uint64_t kKeys = 1000;  // built: keys 0, 2, 4, ...
constexpr int kWriterOps = 3000;
// Under a sanitizer every store the writer makes is several times slower,
// so the hot leaves stay odd (mid-rewrite) far longer than a READ takes:
// more lookups run out of READs (a few percent under TSan on 2 cores).
constexpr std::uint64_t kMaxGaveUpPercent = 10;
#else
constexpr std::uint64_t kKeys = 5000;
constexpr int kWriterOps = 20000;
constexpr std::uint64_t kMaxGaveUpPercent = 1;
#endif
constexpr std::uint64_t kHot = 32;  // keys [0, kHot): a leaf or two the writer keeps busy
constexpr int kReaders = 3;

using Clock = std::chrono::steady_clock;

// What the writer has finished: versions[k] is the version of k's latest
// completed put (0: never written).
struct Published {
  explicit Published(std::uint64_t n) : versions(new std::atomic<std::uint32_t>[n]), size(n) {
    for (std::uint64_t i = 0; i < n; ++i) versions[i].store(0, std::memory_order_relaxed);
  }
  std::unique_ptr<std::atomic<std::uint32_t>[]> versions;
  std::uint64_t size;
};

struct ReaderTally {
  std::uint64_t lookups = 0, found = 0, not_found = 0, gave_up = 0;
  rr::WalkCounters counters;
};

// The writer's loop: updates of hot keys, inserts of odd keys (splits up
// to the root), updates of random keys.
void run_writer(rr::Writer& writer, Published& pub, std::uint64_t seed, int ops, std::atomic<std::uint64_t>* puts) {
  Rng rng(seed);
  std::vector<std::uint32_t> version(pub.size);
  for (std::uint64_t k = 0; k < pub.size; k += 2) version[k] = 1;
  for (int i = 0; i < ops; ++i) {
    std::uint64_t key;
    const std::uint64_t pick = rng.below(10);
    if (pick < 4) {
      key = rng.below(kHot);
    } else if (pick < 8) {
      key = 2 * rng.below(pub.size / 2) + 1;
    } else {
      key = rng.below(pub.size);
    }
    const std::uint32_t v = version[key] + 1;
    const rr::PutResult r = writer.put(key, test_value(key, v, 16 + key % 32));
    if (r == rr::PutResult::kRegionFull) break;
    version[key] = v;
    pub.versions[key].store(v, std::memory_order_release);
    if (puts != nullptr) puts->fetch_add(1, std::memory_order_release);
  }
}

// One reader's checks: a found value names its key and a version between
// the one published before the lookup and one past the one published
// after (a put in flight); not found only for a key never written before.
void check_lookup(const rr::LookupResult& r, std::uint64_t key, std::uint32_t before, std::uint32_t after,
                  ReaderTally& t, std::atomic<bool>& wrong) {
  ++t.lookups;
  t.counters.add(r.counters);
  switch (r.status) {
    case rr::LookupStatus::kFound: {
      ++t.found;
      std::uint64_t k = 0;
      std::uint32_t v = 0;
      if (!parse_test_value(r.value, &k, &v) || k != key || v < before || v > after + 1 || v != r.record_version) {
        wrong.store(true);
      }
      break;
    }
    case rr::LookupStatus::kNotFound:
      ++t.not_found;
      if (before != 0) wrong.store(true);
      break;
    case rr::LookupStatus::kGaveUp:
      ++t.gave_up;
      break;
  }
}

Tree concurrent_tree(const rr::BuildOptions& o) {
  // Room for every put's record and splits.
  return build_tree(key_range(kKeys, 2), o, 24, std::uint64_t{kWriterOps} * 2048 + (4 << 20));
}

}  // namespace

TEST_CASE("one writer, several readers: never a wrong value", "[remote][concurrent]") {
  const std::uint64_t seed = test_seed("remote concurrent readers");
  for (const std::uint32_t fanout : {16u, 4u}) {
    rr::BuildOptions o;
    o.geometry = rr::geometry_for_fanout(fanout);
    Tree t = concurrent_tree(o);
    rr::Region& region = *t.region;
    Published pub(2 * kKeys);
    for (std::uint64_t k = 0; k < pub.size; k += 2) pub.versions[k].store(1, std::memory_order_relaxed);
    rr::Writer writer(region);
    std::atomic<bool> done{false}, wrong{false};
    std::vector<ReaderTally> tally(kReaders);
    std::vector<std::thread> readers;
    for (int i = 0; i < kReaders; ++i) {
      readers.emplace_back([&, i] {
        Rng rng(seed * 31 + static_cast<std::uint64_t>(i));
        rr::Walker w(region_reader(region));
        std::vector<rr::Address> leaf_of(pub.size);  // the leaf that last answered: stale hints
        while (!done.load(std::memory_order_acquire)) {
          const std::uint64_t key = rng.chance(1, 2) ? rng.below(kHot) : rng.below(pub.size);
          const std::uint32_t before = pub.versions[key].load(std::memory_order_acquire);
          const rr::Address hint = rng.chance(1, 3) ? leaf_of[key] : rng.chance(1, 10) ? rng.below(region.size()) : 0;
          const rr::LookupResult r = w.lookup(key, hint);
          const std::uint32_t after = pub.versions[key].load(std::memory_order_acquire);
          check_lookup(r, key, before, after, tally[static_cast<std::size_t>(i)], wrong);
          if (r.leaf != 0) leaf_of[key] = r.leaf;
        }
      });
    }
    run_writer(writer, pub, seed + fanout, kWriterOps, nullptr);
    done.store(true, std::memory_order_release);
    for (auto& r : readers) r.join();
    ReaderTally sum;
    for (const auto& x : tally) {
      sum.lookups += x.lookups;
      sum.found += x.found;
      sum.not_found += x.not_found;
      sum.gave_up += x.gave_up;
      sum.counters.add(x.counters);
    }
    std::cout << "remote concurrent, fanout " << fanout << ": " << writer.stats().inserts << " inserts, "
              << writer.stats().updates << " updates, " << writer.stats().splits << " splits, "
              << writer.stats().root_splits << " root splits; readers: " << sum.lookups << " lookups, "
              << sum.found << " found, " << sum.not_found << " not found, " << sum.gave_up << " gave up; "
              << sum.counters.bad_checksums << " bad checksums, " << sum.counters.odd_versions
              << " odd versions, " << sum.counters.retries << " re-READs, " << sum.counters.sibling_moves
              << " right moves, " << sum.counters.restarts
              << " restarts, " << sum.counters.fallbacks << " hint fallbacks\n";
    REQUIRE_FALSE(wrong.load());
    REQUIRE(sum.found > 0);
    REQUIRE(sum.gave_up * 100 <= sum.lookups * kMaxGaveUpPercent);
    REQUIRE(writer.stats().splits > 0);
    // Afterwards every key answers its last version.
    rr::Walker w(region_reader(region));
    for (std::uint64_t k = 0; k < pub.size; ++k) {
      const std::uint32_t v = pub.versions[k].load();
      const rr::LookupResult r = w.lookup(k);
      if (v == 0) {
        REQUIRE(r.status == rr::LookupStatus::kNotFound);
      } else {
        REQUIRE(r.status == rr::LookupStatus::kFound);
        REQUIRE(r.record_version == v);
      }
    }
  }
}

TEST_CASE("torn READs are forced and caught while the writer rewrites the same leaf", "[remote][concurrent]") {
  const std::uint64_t seed = test_seed("remote torn reads");
  rr::BuildOptions o;
  Tree t = concurrent_tree(o);
  rr::Region& region = *t.region;
  Published pub(2 * kKeys);
  for (std::uint64_t k = 0; k < pub.size; k += 2) pub.versions[k].store(1, std::memory_order_relaxed);
  rr::Writer writer(region);
  std::atomic<std::uint64_t> puts{0};
  std::atomic<bool> want{false}, done{false}, wrong{false};
  ReaderTally tally;
  std::thread reader([&] {
    Rng rng(seed);
    std::uint64_t n = 0;
    // Every third READ is torn on purpose: the first half, then the
    // writer's next put (it only updates the hot keys, all in one leaf),
    // then the second half. That leaf's pointers lie in the second half,
    // its version and checksum in the first.
    rr::Walker w([&](rr::Address a, std::size_t len, std::byte* out) {
      if (++n % 3 != 0 || len < 16) return region.read(a, len, out) == rr::ReadError::kOk;
      const std::size_t half = len / 2;
      if (region.read(a, half, out) != rr::ReadError::kOk) return false;
      const std::uint64_t seen = puts.load(std::memory_order_acquire);
      want.store(true, std::memory_order_release);
      const auto deadline = Clock::now() + std::chrono::seconds(5);
      while (puts.load(std::memory_order_acquire) == seen && Clock::now() < deadline) std::this_thread::yield();
      return region.read(a + half, len - half, out + half) == rr::ReadError::kOk;
    });
    for (int i = 0; i < 300; ++i) {
      const std::uint64_t key = rng.below(kHot);
      const std::uint32_t before = pub.versions[key].load(std::memory_order_acquire);
      const rr::LookupResult r = w.lookup(key);
      check_lookup(r, key, before, pub.versions[key].load(std::memory_order_acquire), tally, wrong);
    }
    done.store(true, std::memory_order_release);
  });
  Rng rng(seed + 1);
  std::vector<std::uint32_t> version(kHot, 1);
  while (!done.load(std::memory_order_acquire)) {
    if (!want.exchange(false, std::memory_order_acq_rel)) {
      std::this_thread::yield();
      continue;
    }
    // Updates only (no splits) of hot keys: the same leaf each time.
    const std::uint64_t key = 2 * rng.below(kHot / 2);
    if (writer.put(key, test_value(key, version[key] + 1, 16 + key % 32)) != rr::PutResult::kUpdated) {
      wrong.store(true);  // (Catch's REQUIRE is for the main thread only)
    }
    pub.versions[key].store(++version[key], std::memory_order_release);
    puts.fetch_add(1, std::memory_order_release);
  }
  reader.join();
  std::cout << "remote torn reads: " << tally.lookups << " lookups, " << tally.found << " found, " << tally.gave_up
            << " gave up; " << tally.counters.bad_checksums << " bad checksums, " << tally.counters.odd_versions
            << " odd versions, " << tally.counters.retries << " re-READs, " << tally.counters.restarts
            << " restarts\n";
  REQUIRE_FALSE(wrong.load());
  REQUIRE(tally.found > 0);
  REQUIRE(tally.gave_up == 0);
  REQUIRE(tally.counters.bad_checksums > 0);
}

TEST_CASE("a READ racing a split: between two READs, and inside one", "[remote][concurrent]") {
  // Fanout 4, full leaves: keys 0, 10, 20, ...; the walk for key 30 (the
  // last of leaf [0, 40)) is paused right before it READs that leaf while
  // a writer thread inserts 5 and 15, splitting it (30 moves right) and
  // its parent.
  rr::BuildOptions o;
  o.geometry = rr::geometry_for_fanout(4);
  const std::uint64_t target = 30;
  for (const bool inside : {false, true}) {
    Tree t = build_tree(key_range(64, 10), o, 24, 1 << 20);
    rr::Region& region = *t.region;
    rr::Writer writer(region);
    const rr::Address leaf = path_of(region, target).back();
    bool raced = false;
    rr::PutResult p5{}, p15{};
    auto split_now = [&] {
      // A real second thread does the writes; this READ waits for it.
      std::thread w([&] {
        p5 = writer.put(5, test_value(5, 1));
        p15 = writer.put(15, test_value(15, 1));
      });
      w.join();
      raced = true;
    };
    rr::Walker walker([&](rr::Address a, std::size_t len, std::byte* out) {
      if (a != leaf || raced) return region.read(a, len, out) == rr::ReadError::kOk;
      if (!inside) {
        split_now();  // the parent was read before the split, the leaf after
        return region.read(a, len, out) == rr::ReadError::kOk;
      }
      // Half of the READ before the split, half after: a torn node.
      const std::size_t half = len / 2;
      if (region.read(a, half, out) != rr::ReadError::kOk) return false;
      split_now();
      return region.read(a + half, len - half, out + half) == rr::ReadError::kOk;
    });
    const rr::LookupResult r = walker.lookup(target);
    INFO("inside " << inside);
    REQUIRE(raced);
    REQUIRE(p5 == rr::PutResult::kInserted);
    REQUIRE(p15 == rr::PutResult::kInserted);
    REQUIRE(writer.stats().splits >= 2);
    REQUIRE(r.status == rr::LookupStatus::kFound);
    REQUIRE(r.value == test_value(target, 1));
    // The old leaf's hi no longer holds 30: one right move.
    REQUIRE(r.counters.sibling_moves == 1);
    REQUIRE(r.counters.restarts == 0);
    // Inside: the torn READ is caught and the leaf READ again.
    REQUIRE(r.counters.bad_checksums == (inside ? 1u : 0u));
    REQUIRE(r.counters.retries == (inside ? 1u : 0u));
    REQUIRE(r.leaf != leaf);
    for (std::uint64_t k : {0ull, 5ull, 10ull, 15ull, 20ull, 30ull}) {
      rr::Walker check(region_reader(region));
      REQUIRE(check.lookup(k).status == rr::LookupStatus::kFound);
    }
  }
}

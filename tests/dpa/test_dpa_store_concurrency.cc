// DPA-Store's store under concurrency: readers (GET, RANGE) beside writers
// (INSERT/UPDATE/DELETE on disjoint key sets with increasing values) while
// patcher and stitcher threads split leaves up to the root and epochs
// reclaim. Readers check what every reader of the paper's store may rely
// on: a key's value never goes backwards, no key that was never written
// appears, RANGE keys come out strictly ascending. Also run under
// ThreadSanitizer (smaller: FOREIN_DPA_STORE_SMALL).
//
// The first test's writers end by inserting fresh keys until the root has
// split, so its split assertions hold on every interleaving (the fan-out
// bounds how long that takes); the second races RANGE against the RESET of
// UPDATE-only patches, the interleaving behind the first test's rare "went
// back" failures.
#include <catch2/catch.hpp>

#include <atomic>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "forein/dpa/store.h"
#include "support/seed.h"

using namespace forein::offload::dpa;

namespace {

#ifdef FOREIN_DPA_STORE_SMALL
constexpr int kWritesPerWriter = 1500;
#else
constexpr int kWritesPerWriter = 12000;
#endif
constexpr int kWriters = 3;
constexpr int kReaders = 3;
constexpr std::uint64_t kKeysPerWriter = 600;
constexpr std::size_t kLeafKeys = 16;  // leaf_capacity
constexpr std::size_t kBufferEntries = 4;  // insert_buffer
// Until the root splits the tree keeps the bulk-loaded depth of 2: one
// root of at most kInnerSegments segments of kSegmentPivots pivots over
// leaves of at most kLeafKeys keys, each with kBufferEntries buffered
// writes. Fresh keys past that many cannot all be in the store without a
// root split, so a writer inserting fresh keys until the root has split
// stops by this bound, whatever the interleaving.
constexpr std::uint64_t kRootFanOut = kInnerSegments * kSegmentPivots;
constexpr std::uint64_t kFreshKeysBound = kRootFanOut * (kLeafKeys + kBufferEntries);

// Writer w owns keys k with k % kWriters == w (spread over the key space);
// values are (sequence << 8) | w, increasing per writer.
std::uint64_t key_of(int writer, std::uint64_t i) {
  return (i * kWriters + static_cast<std::uint64_t>(writer)) * 0x9E3779B97F4A7C15ull % (1ull << 40) * kWriters +
         static_cast<std::uint64_t>(writer);
}

}  // namespace

TEST_CASE("dpa store: concurrent readers and writers with splits, patches, stitches and epochs") {
  const std::uint64_t seed = forein::testing::test_seed("dpa store concurrency");
  StoreOptions o;
  o.leaf_capacity = kLeafKeys;
  o.insert_buffer = kBufferEntries;
  o.epsilon_leaf = 2;
  o.epsilon_inner = 2;
  o.traversers = 8;
  o.patchers = 2;
  o.stitchers = 3;
  o.admit_probability = 0.5;
  o.seed = seed;
  Store store(o);
  // Bulk load a few keys of every writer with value 0 (sequence 0).
  std::map<std::uint64_t, std::uint64_t> initial;
  for (int w = 0; w < kWriters; ++w) {
    for (std::uint64_t i = 0; i < kKeysPerWriter; i += 3) initial[key_of(w, i)] = static_cast<std::uint64_t>(w);
  }
  std::vector<KV> pairs;
  for (const auto& [k, v] : initial) pairs.push_back({k, v});
  store.bulk_load(pairs);
  const std::uint64_t depth0 = store.stats().depth;
  REQUIRE(depth0 == 2);  // a root over leaves: kFreshKeysBound holds
  // The writers' random keys, then the fresh keys each may insert at the end.
  std::set<std::uint64_t> all_keys;
  for (int w = 0; w < kWriters; ++w) {
    for (std::uint64_t i = 0; i < kKeysPerWriter + kFreshKeysBound; ++i) all_keys.insert(key_of(w, i));
  }
  std::atomic<std::uint64_t> fresh_keys{0};

  std::vector<std::map<std::uint64_t, std::uint64_t>> final_state(kWriters);
  std::atomic<int> writers_left{kWriters};
  std::atomic<std::uint64_t> reader_checks{0};
  // Catch2's assertions are not thread safe: threads record violations.
  std::mutex violation_mutex;
  std::vector<std::string> violations;
  const auto violated = [&](const std::string& what) {
    std::lock_guard<std::mutex> lock(violation_mutex);
    violations.push_back(what);
  };
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      std::mt19937_64 rng(seed + static_cast<std::uint64_t>(w));
      auto& mine = final_state[static_cast<std::size_t>(w)];
      for (std::uint64_t i = 0; i < kKeysPerWriter; i += 3) mine[key_of(w, i)] = static_cast<std::uint64_t>(w);
      for (int n = 1; n <= kWritesPerWriter; ++n) {
        const std::uint64_t k = key_of(w, rng() % kKeysPerWriter);
        const std::uint64_t v = (static_cast<std::uint64_t>(n) << 8) | static_cast<std::uint64_t>(w);
        switch (rng() % 8) {
          case 0:
            store.remove(k);
            mine.erase(k);
            break;
          case 1:
          case 2:
            store.update(k, v);
            mine[k] = v;
            break;
          default:
            store.insert(k, v);
            mine[k] = v;
        }
      }
      // Splits to the root, on every interleaving: fresh keys (never
      // deleted) until a patch has split the root; by kFreshKeysBound
      // fresh keys in all it must have. The random writes above usually
      // split it; under ThreadSanitizer's smaller workload about one run in
      // 20 needed fresh keys (at most 287 in 200 runs).
      for (std::uint64_t i = kKeysPerWriter; store.stats().root_splits == 0; ++i) {
        if (fresh_keys.fetch_add(1) >= kFreshKeysBound) break;  // a bug: CHECKed below
        const std::uint64_t k = key_of(w, i);
        const std::uint64_t v = ((kWritesPerWriter + 1 + i - kKeysPerWriter) << 8) | static_cast<std::uint64_t>(w);
        store.insert(k, v);
        mine[k] = v;
      }
      writers_left.fetch_sub(1);
    });
  }
  for (int r = 0; r < kReaders; ++r) {
    threads.emplace_back([&, r] {
      std::mt19937_64 rng(seed * 31 + static_cast<std::uint64_t>(r));
      std::map<std::uint64_t, std::uint64_t> last_seen;  // key -> highest sequence seen
      const auto seen = [&](std::uint64_t k, std::uint64_t v) {
        const int w = static_cast<int>(k % kWriters);
        if ((v & 0xff) != static_cast<std::uint64_t>(w)) {  // written by the key's owner
          violated("key " + std::to_string(k) + " holds value " + std::to_string(v) + " its writer never wrote");
        }
        auto& prev = last_seen[k];
        if (v < prev) {
          violated("key " + std::to_string(k) + " went back from " + std::to_string(prev) + " to " + std::to_string(v));
        }
        prev = v;
      };
      while (writers_left.load() > 0) {
        const int w = static_cast<int>(rng() % kWriters);
        const std::uint64_t k = key_of(w, rng() % kKeysPerWriter);
        if (rng() % 4 != 0) {
          if (const auto v = store.get(k)) seen(k, *v);
        } else {
          const RangeResult res = store.range(k, 1 + rng() % 64);
          for (std::size_t i = 0; i < res.pairs.size(); ++i) {
            if (res.pairs[i].key < k) violated("range from " + std::to_string(k) + " returned a smaller key");
            if (i > 0 && res.pairs[i].key <= res.pairs[i - 1].key) violated("range keys not strictly ascending");
            if (all_keys.count(res.pairs[i].key) == 0) violated("range returned a key nobody wrote");
            seen(res.pairs[i].key, res.pairs[i].value);
          }
        }
        reader_checks.fetch_add(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(violations.empty());
  for (std::size_t i = 0; i < violations.size() && i < 10; ++i) WARN(violations[i]);
  store.flush();
  CHECK(reader_checks.load() > 0);
  CHECK(store.check() == "");
  std::map<std::uint64_t, std::uint64_t> expected;
  for (const auto& m : final_state) expected.insert(m.begin(), m.end());
  std::vector<KV> expected_pairs;
  for (const auto& [k, v] : expected) expected_pairs.push_back({k, v});
  CHECK(store.dump() == expected_pairs);
  for (const auto& [k, v] : expected) REQUIRE(store.get(k) == v);
  const StoreStats s = store.stats();
  INFO("patches " << s.patches << ", leaf splits " << s.leaf_splits << ", root splits " << s.root_splits
                  << ", depth " << s.depth << ", reclaimed " << s.reclaimed_nodes << ", waits " << s.write_waits
                  << ", fresh keys " << fresh_keys.load());
  CHECK(fresh_keys.load() <= kFreshKeysBound);
  CHECK(s.leaf_splits > 0);
  CHECK(s.root_splits > 0);
  CHECK(s.depth > depth0);
  CHECK(s.update_only_patches + s.patches > 0);
  CHECK(s.reclaimed_nodes > 0);
  CHECK(s.failed_patches == 0);
}

// RANGE merges a leaf's insert buffer over its host arrays. An UPDATE-only
// patch writes the buffer's newest values to the host arrays, then its
// RESET stitch clears the buffer while traversers may be reading it. A
// RANGE that read the buffer oldest slot first could read an older entry
// of a key before the RESET and the slot of its newer entry after it, and
// return the older value although the newer one had been written (to the
// buffer, then the host) before the call began; the first test saw it as
// a key going back, in one run of 100 to 200. Here one writer alternates
// UPDATEs of two keys of one leaf, so every patch is UPDATE-only with a
// RESET of a buffer holding both keys several times, while readers RANGE
// over the leaf and check each value against the last update that had
// returned before their call. The race needs a RESET to land between two
// slot reads, so the test makes 10,000 of them: with the oldest-first scan
// it failed 100 runs of 100, in the normal build and under ThreadSanitizer
// (with a quarter of the UPDATEs it missed about one run of 100).
TEST_CASE("dpa store: RANGE racing the RESET of UPDATE-only patches returns no value older than the call") {
  const std::uint64_t seed = forein::testing::test_seed("dpa store range reset");
  StoreOptions o;  // the paper's leaves and 16-entry insert buffers
  o.traversers = 8;
  o.patchers = 2;
  o.stitchers = 2;
  o.seed = seed;
  Store store(o);
  // Two keys in one leaf whose traverser is not the RANGE's (a RANGE and a
  // write in one traverser context run one after the other).
  const std::uint64_t from = 0;
  std::vector<std::uint64_t> keys;
  for (std::uint64_t k = 1; keys.size() < 2; ++k) {
    if (traverser_of(k, o.traversers) != traverser_of(from, o.traversers)) keys.push_back(k);
  }
  store.bulk_load(std::vector<KV>{{keys[0], 0}, {keys[1], 0}});
  constexpr std::uint64_t kUpdates = 160000;  // about 1 s, 2 s under ThreadSanitizer
  const std::uint64_t buffer = o.insert_buffer;
  REQUIRE(kUpdates % (2 * buffer) == 0);  // whole buffers; the last update is to keys[0]
  // returned[j]: the value of keys[j]'s last UPDATE that has returned.
  std::atomic<std::uint64_t> returned[2] = {0, 0};
  std::atomic<bool> writing{true};
  std::atomic<std::uint64_t> ranges{0}, stale{0}, wrong{0};
  std::thread writer([&] {
    for (std::uint64_t v = 1; v <= kUpdates; ++v) {
      store.update(keys[v % 2], v);
      returned[v % 2].store(v);
    }
    writing.store(false);
  });
  std::vector<std::thread> readers;
  for (int r = 0; r < 2; ++r) {
    readers.emplace_back([&] {
      while (writing.load()) {
        const std::uint64_t before[2] = {returned[0].load(), returned[1].load()};
        const RangeResult res = store.range(from, kMaxRangePairs);
        if (res.pairs.size() != 2 || res.pairs[0].key != keys[0] || res.pairs[1].key != keys[1]) {
          wrong.fetch_add(1);
          continue;
        }
        for (std::size_t j = 0; j < 2; ++j) {
          if (res.pairs[j].value < before[j]) stale.fetch_add(1);
        }
        ranges.fetch_add(1);
      }
    });
  }
  writer.join();
  for (auto& t : readers) t.join();
  store.flush();
  const StoreStats s = store.stats();
  INFO("ranges " << ranges.load() << ", patches " << s.patches << ", UPDATE-only " << s.update_only_patches
                 << ", resets " << s.reset_stitches);
  CHECK(stale.load() == 0);
  CHECK(wrong.load() == 0);
  CHECK(ranges.load() > 0);
  // Every patch was UPDATE-only and reset the buffer in place.
  CHECK(s.update_only_patches == kUpdates / buffer);
  CHECK(s.patches == s.update_only_patches);
  CHECK(s.reset_stitches == s.update_only_patches);
  CHECK(store.dump() == std::vector<KV>{{keys[0], kUpdates}, {keys[1], kUpdates - 1}});
}

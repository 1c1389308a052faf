// DPA-Store's store under concurrency: readers (GET, RANGE) beside writers
// (INSERT/UPDATE/DELETE on disjoint key sets with increasing values) while
// patcher and stitcher threads split leaves up to the root and epochs
// reclaim. Readers check what every reader of the paper's store may rely
// on: a key's value never goes backwards, no key that was never written
// appears, RANGE keys come out strictly ascending. Also run under
// ThreadSanitizer (smaller: FOREIN_DPA_STORE_SMALL).
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
  o.leaf_capacity = 16;
  o.insert_buffer = 4;
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
  std::set<std::uint64_t> all_keys;
  for (int w = 0; w < kWriters; ++w) {
    for (std::uint64_t i = 0; i < kKeysPerWriter; ++i) all_keys.insert(key_of(w, i));
  }

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
                  << ", depth " << s.depth << ", reclaimed " << s.reclaimed_nodes << ", waits " << s.write_waits);
  CHECK(s.leaf_splits > 0);
  CHECK(s.root_splits > 0);
  CHECK(s.depth > depth0);
  CHECK(s.update_only_patches + s.patches > 0);
  CHECK(s.reclaimed_nodes > 0);
  CHECK(s.failed_patches == 0);
}

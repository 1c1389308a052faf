// dpa store: the hot-entry cache (hot_cache.h, DPA-Store 3.1.2): hits
// after admission, invalidation, collisions in a bucket, the 96-pair
// capacity, Bloom negatives free of DPA accesses, the false-positive rate,
// random admission's frequency, and the hit ratio under Zipf 0.99 across
// 176 traversers routed by traverser_of.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <iostream>
#include <random>
#include <set>
#include <vector>

#include "dpa/store/hot_cache.h"
#include "forein/dpa/store.h"
#include "support/seed.h"
#include "support/zipf.h"

namespace {

using forein::offload::dpa::HotCache;
using forein::offload::dpa::kBloomBits;
using forein::offload::dpa::kHotBuckets;
using forein::offload::dpa::kHotEntriesPerThread;
using forein::offload::dpa::OpCost;
using forein::offload::dpa::traverser_of;

// Distinct keys from a seed (an odd multiplier is a bijection on 64 bits).
std::uint64_t key_at(std::uint64_t seed, std::uint64_t i) { return (i + seed) * 0x9e3779b97f4a7c15ULL; }

// Keys (from `from` upwards) whose bucket is `bucket`.
std::vector<std::uint64_t> keys_in_bucket(std::size_t bucket, std::size_t n, std::uint64_t from = 1) {
  std::vector<std::uint64_t> out;
  for (std::uint64_t k = from; out.size() < n; ++k) {
    if (HotCache::bucket_of(k) == bucket) out.push_back(k);
  }
  return out;
}

}  // namespace

TEST_CASE("hot cache: hash positions are in range, deterministic and independent", "[dpa][hot_cache]") {
  std::set<std::size_t> buckets_of_traverser0;
  std::vector<std::size_t> per_traverser(176);
  for (std::uint64_t k = 0; k < 1000000; ++k) {
    const std::size_t b = HotCache::bucket_of(k);
    REQUIRE(b < kHotBuckets);
    for (const auto bit : HotCache::bloom_bits_of(k)) REQUIRE(bit < kBloomBits);
    const std::size_t t = traverser_of(k, 176);
    REQUIRE(t < 176);
    ++per_traverser[t];
    if (t == 0) buckets_of_traverser0.insert(b);
  }
  REQUIRE(HotCache::bucket_of(77) == HotCache::bucket_of(77));
  REQUIRE(HotCache::bloom_bits_of(77) == HotCache::bloom_bits_of(77));
  REQUIRE(traverser_of(77, 176) == traverser_of(77, 176));
  REQUIRE(traverser_of(77, 1) == 0);
  REQUIRE(traverser_of(77, 0) == 0);
  // Balanced: 1M keys over 176 traversers is 5682 each, sd ~75.
  for (const std::size_t c : per_traverser) {
    REQUIRE(c > 5000);
    REQUIRE(c < 6400);
  }
  // One traverser's keys use all 24 buckets (the hashes are not correlated).
  REQUIRE(buckets_of_traverser0.size() == kHotBuckets);
}

TEST_CASE("hot cache: an admitted key hits; a Bloom negative costs no DPA line", "[dpa][hot_cache]") {
  HotCache cache(1, 1.0);
  std::uint64_t v = 0;
  OpCost cost;
  REQUIRE_FALSE(cache.get(42, &v, &cost));  // empty: the filter says no
  REQUIRE(cost.dpa_lines == 0);
  REQUIRE(cache.bloom_negatives() == 1);
  cache.offer(42, 4200);
  REQUIRE(cache.entries() == 1);
  REQUIRE(cache.get(42, &v, &cost));
  REQUIRE(v == 4200);
  REQUIRE(cost.dpa_lines == 1);  // the bucket's line
  REQUIRE(cost.hot_hits == 0);   // the store counts its answers
  REQUIRE(cache.hits() == 1);
  REQUIRE(cache.lookups() == 2);
  // A second offer of a cached key refreshes its value.
  cache.offer(42, 4300);
  REQUIRE(cache.get(42, &v, nullptr));
  REQUIRE(v == 4300);
  REQUIRE(cache.entries() == 1);
}

TEST_CASE("hot cache: invalidation", "[dpa][hot_cache]") {
  HotCache cache(2, 1.0);
  for (std::uint64_t k = 1; k <= 20; ++k) cache.offer(k, k * 10);
  const std::size_t before = cache.entries();
  REQUIRE(before >= 15);  // a few may have evicted one another in a bucket
  std::uint64_t v = 0;
  std::uint64_t cached = 0;
  for (std::uint64_t k = 1; k <= 20; ++k) {
    if (cache.get(k, &v, nullptr)) {
      cached = k;
      break;
    }
  }
  REQUIRE(cached != 0);
  OpCost cost;
  cache.invalidate(cached, &cost);
  REQUIRE(cost.dpa_lines == 1);
  REQUIRE(cache.entries() == before - 1);
  REQUIRE_FALSE(cache.get(cached, &v, nullptr));
  // The others are still there (the filter was rebuilt, not cleared).
  for (std::uint64_t k = 1; k <= 20; ++k) {
    if (k == cached) continue;
    if (cache.get(k, &v, nullptr)) REQUIRE(v == k * 10);
  }
  std::size_t hits = 0;
  for (std::uint64_t k = 1; k <= 20; ++k) hits += cache.get(k, &v, nullptr) ? 1 : 0;
  REQUIRE(hits == before - 1);
  // Invalidating a key the filter rules out costs nothing.
  HotCache empty(3, 1.0);
  OpCost none;
  empty.invalidate(5, &none);
  REQUIRE(none.dpa_lines == 0);
  // Invalidate everything: the cache is empty again and the filter too.
  for (std::uint64_t k = 1; k <= 20; ++k) cache.invalidate(k, nullptr);
  REQUIRE(cache.entries() == 0);
  OpCost after;
  for (std::uint64_t k = 1; k <= 20; ++k) REQUIRE_FALSE(cache.get(k, &v, &after));
  REQUIRE(after.dpa_lines == 0);
}

TEST_CASE("hot cache: keys sharing a bucket are told apart; a full bucket evicts one", "[dpa][hot_cache]") {
  HotCache cache(4, 1.0);
  const auto same = keys_in_bucket(5, 5);
  for (std::size_t i = 0; i < 4; ++i) cache.offer(same[i], 100 + i);
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < 4; ++i) {
    REQUIRE(cache.get(same[i], &v, nullptr));
    REQUIRE(v == 100 + i);
  }
  REQUIRE(cache.entries() == 4);
  cache.offer(same[4], 104);  // the bucket is full: a random pair goes
  REQUIRE(cache.entries() == 4);
  REQUIRE(cache.get(same[4], &v, nullptr));
  REQUIRE(v == 104);
  std::size_t left = 0;
  for (std::size_t i = 0; i < 4; ++i) {
    if (cache.get(same[i], &v, nullptr)) {
      ++left;
      REQUIRE(v == 100 + i);
    }
  }
  REQUIRE(left == 3);
  // A key of the same bucket that the filter lets through but that is not
  // cached: the stored keys catch the collision (a false positive, one line).
  HotCache full(5, 1.0);
  for (std::uint64_t k = 0; k < 5000; ++k) full.offer(key_at(9, k), k);
  REQUIRE(full.entries() == kHotEntriesPerThread);
  std::uint64_t found = 0;
  for (const std::uint64_t k : keys_in_bucket(5, 20000, std::uint64_t{1} << 40)) {
    const std::uint64_t fp = full.false_positives();
    OpCost cost;
    if (full.get(k, &v, &cost)) continue;  // not possible: never offered
    if (full.false_positives() == fp + 1) {
      REQUIRE(cost.dpa_lines == 1);
      found = k;
      break;
    }
    REQUIRE(cost.dpa_lines == 0);
  }
  REQUIRE(found != 0);
  REQUIRE(full.hits() == 0);
}

TEST_CASE("hot cache: at most 96 pairs", "[dpa][hot_cache]") {
  HotCache cache(6, 1.0);
  for (std::uint64_t k = 0; k < 20000; ++k) {
    cache.offer(key_at(1, k), k);
    REQUIRE(cache.entries() <= kHotEntriesPerThread);
  }
  REQUIRE(cache.entries() == kHotEntriesPerThread);
}

TEST_CASE("hot cache: Bloom false-positive rate with 96 keys", "[dpa][hot_cache]") {
  const std::uint64_t seed = forein::testing::test_seed("hot cache false positives");
  HotCache cache(seed, 1.0);
  std::mt19937_64 rng(seed);
  std::vector<std::uint64_t> offered;
  for (int i = 0; i < 3000; ++i) {
    offered.push_back(rng());
    cache.offer(offered.back(), 1);
  }
  REQUIRE(cache.entries() == kHotEntriesPerThread);
  // The Bloom bits of what is cached (a get that hits: the key is cached).
  std::set<std::uint16_t> bits;
  std::uint64_t v = 0;
  std::size_t cached = 0;
  for (const std::uint64_t k : offered) {
    if (cache.get(k, &v, nullptr)) {
      ++cached;
      for (const auto b : HotCache::bloom_bits_of(k)) bits.insert(b);
    }
  }
  REQUIRE(cached == kHotEntriesPerThread);
  const double fill = static_cast<double>(bits.size()) / kBloomBits;
  const double expected = fill * fill * fill;
  const std::uint64_t fp0 = cache.false_positives(), neg0 = cache.bloom_negatives();
  OpCost cost;
  constexpr int kProbes = 200000;
  for (int i = 0; i < kProbes; ++i) REQUIRE_FALSE(cache.get(rng() | (std::uint64_t{1} << 63) | 1, &v, &cost));
  const std::uint64_t fps = cache.false_positives() - fp0;
  const double rate = static_cast<double>(fps) / kProbes;
  // Theory for 96 keys, 256 bits, 3 hashes: (1 - e^(-3 x 96 / 256))^3 = 0.308.
  const double theory = std::pow(1.0 - std::exp(-3.0 * 96 / 256), 3.0);
  std::cout << "hot cache: " << bits.size() << " of 256 Bloom bits set, false-positive rate " << rate
            << " (expected from the bits set " << expected << ", textbook " << theory << ")\n";
  REQUIRE(fps + (cache.bloom_negatives() - neg0) == kProbes);
  REQUIRE(cost.dpa_lines == fps);  // a "maybe" costs one line, a "no" none
  REQUIRE(std::abs(rate - expected) < 0.01);  // binomial sd ~0.001
  REQUIRE(rate > 0.15);
  REQUIRE(rate < 0.5);
}

TEST_CASE("hot cache: random admission at admit_probability", "[dpa][hot_cache]") {
  const std::uint64_t seed = forein::testing::test_seed("hot cache admission");
  for (const double p : {0.0, 0.25, 0.75, 1.0}) {
    HotCache cache(seed, p);
    constexpr int kOffers = 100000;
    int admitted = 0;
    std::uint64_t v = 0;
    for (int i = 0; i < kOffers; ++i) {
      const std::uint64_t k = key_at(seed, static_cast<std::uint64_t>(i));
      cache.offer(k, 7);  // a fresh key: cached now only if admitted
      admitted += cache.get(k, &v, nullptr) ? 1 : 0;
    }
    const double freq = static_cast<double>(admitted) / kOffers;
    INFO("p " << p << " admitted " << freq);
    // Binomial sd at most 0.0016: 0.01 is over six sigma.
    REQUIRE(std::abs(freq - p) < 0.01);
    if (p == 0.0) REQUIRE(admitted == 0);
    if (p == 1.0) REQUIRE(admitted == kOffers);
  }
}

TEST_CASE("hot cache: Zipf 0.99 over 176 traversers hits far more than uniform", "[dpa][hot_cache]") {
  const std::uint64_t seed = forein::testing::test_seed("hot cache zipf");
  constexpr std::size_t kTraversers = 176;
  constexpr std::uint64_t kKeys = 1000000;
  auto run = [&](bool zipf) {
    std::vector<HotCache> caches;
    for (std::size_t t = 0; t < kTraversers; ++t) caches.emplace_back(seed + t, 0.25);
    forein::testing::ZipfGenerator gen(kKeys, 0.99);
    std::mt19937_64 rng(seed);
    std::uint64_t hits = 0, lookups = 0;
    for (int i = 0; i < 1500000; ++i) {
      const std::uint64_t rank = zipf ? gen(rng) : rng() % kKeys;
      const std::uint64_t key = key_at(seed, rank);
      HotCache& c = caches[traverser_of(key, kTraversers)];
      std::uint64_t v = 0;
      const bool hit = c.get(key, &v, nullptr);
      if (hit) REQUIRE(v == rank);
      if (!hit) c.offer(key, rank);
      if (i >= 500000) {  // after warm-up
        ++lookups;
        hits += hit ? 1 : 0;
      }
    }
    std::size_t entries = 0;
    for (const auto& c : caches) entries += c.entries();
    REQUIRE(entries <= kTraversers * kHotEntriesPerThread);
    return static_cast<double>(hits) / static_cast<double>(lookups);
  };
  const double uniform = run(false);
  const double zipf = run(true);
  std::cout << "hot cache hit ratio, 176 traversers x 96 pairs over 1M keys: uniform " << uniform
            << ", Zipf 0.99 " << zipf << "\n";
  REQUIRE(uniform < 0.03);  // 16,896 of 1M keys cached at most: 1.7%
  REQUIRE(zipf > uniform + 0.15);
}

// dpa store: the hot-entry cache of one traverser thread (DPA-Store
// section 3.1.2): a 256-bit Bloom filter with three hashes, kept in the
// thread context's cache line (free to test: no DPA memory access), and
// 96 key-value pairs in 24 buckets of four pairs, a bucket one cache line
// of DPA memory (one access to read it). Admission is random: a value
// fetched from the host is admitted with probability admit_probability,
// replacing a random pair of its bucket. Keys are stored with their
// values, so a hash collision is detected; UPDATE and DELETE invalidate.
//
// Bloom bits cannot be cleared one key at a time; after an eviction or an
// invalidation the filter is rebuilt from the pairs left (96 keys, in the
// thread's own cache line), so its false-positive rate stays the paper's.
//
// Not thread safe: one traverser thread owns it (the store locks a
// traverser's context when several OS threads share it).
#pragma once

#include <array>
#include <bitset>
#include <cstdint>
#include <random>

#include "forein/dpa/op_cost.h"
#include "forein/dpa/types.h"

namespace forein::offload::dpa {

class HotCache {
 public:
  explicit HotCache(std::uint64_t seed = 1, double admit_probability = 0.25);

  // The cached value of key. Counts one DPA line when the Bloom filter
  // says "maybe" (the bucket read), none when it says "no". Leaves
  // cost->hot_hits alone: the store counts the requests it answers here.
  bool get(std::uint64_t key, std::uint64_t* value, OpCost* cost);
  // Offer a value just read from the host: admitted at random.
  void offer(std::uint64_t key, std::uint64_t value);
  // Drop key if cached (UPDATE, DELETE); counts the bucket line if the
  // filter says "maybe".
  void invalidate(std::uint64_t key, OpCost* cost);

  std::size_t entries() const;
  std::uint64_t lookups() const { return lookups_; }
  std::uint64_t hits() const { return hits_; }
  std::uint64_t bloom_negatives() const { return bloom_negatives_; }
  std::uint64_t false_positives() const { return false_positives_; }

  // The bucket and Bloom positions of a key (the client computes these and
  // sends them in the request, 3.1.2).
  static std::size_t bucket_of(std::uint64_t key);
  static std::array<std::uint16_t, kBloomHashes> bloom_bits_of(std::uint64_t key);

 private:
  struct Pair {
    std::uint64_t key = 0;
    std::uint64_t value = 0;
    bool used = false;
  };
  void rebuild_bloom();

  std::bitset<kBloomBits> bloom_;
  std::array<std::array<Pair, kHotBucketPairs>, kHotBuckets> buckets_{};
  std::mt19937_64 rng_;
  double admit_probability_;
  std::uint64_t lookups_ = 0, hits_ = 0, bloom_negatives_ = 0, false_positives_ = 0;
};

// traverser_of (which traverser, and so which hot-entry cache, a key goes
// to) is part of the store's public API: forein/dpa/store.h.

}  // namespace forein::offload::dpa

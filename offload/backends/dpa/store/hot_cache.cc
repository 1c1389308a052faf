#include "dpa/store/hot_cache.h"

#include "forein/dpa/store.h"

namespace forein::offload::dpa {

namespace {

// SplitMix64's finalizer: a bijection on 64 bits whose output bits each
// depend on every input bit.
constexpr std::uint64_t mix64(std::uint64_t z) noexcept {
  z ^= z >> 30;
  z *= 0xbf58476d1ce4e5b9ULL;
  z ^= z >> 27;
  z *= 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return z;
}

// Independent hash functions of one key: the key is mixed, salted and mixed
// again, so the traverser a key goes to, its bucket and its Bloom bits are
// not correlated (with one hash, 176 traversers and 24 buckets share the
// factor 8 and a traverser would see only 3 of its 24 buckets).
constexpr std::uint64_t kSaltTraverser = 0x9e3779b97f4a7c15ULL;
constexpr std::uint64_t kSaltBucket = 0xd1b54a32d192ed03ULL;
constexpr std::uint64_t kSaltBloom = 0x8cb92ba72f3d8dd7ULL;

constexpr std::uint64_t salted_hash(std::uint64_t key, std::uint64_t salt) noexcept {
  return mix64(mix64(key) ^ salt);
}

static_assert(kBloomBits == 256, "bloom_bits_of takes 8-bit positions");
static_assert(kBloomHashes * 8 <= 64, "bloom positions come from one 64-bit hash");

}  // namespace

HotCache::HotCache(std::uint64_t seed, double admit_probability)
    : rng_(seed), admit_probability_(admit_probability) {}

std::size_t HotCache::bucket_of(std::uint64_t key) {
  // The high 32 bits times the bucket count, shifted: an unbiased-enough
  // range reduction without a division.
  return static_cast<std::size_t>(((salted_hash(key, kSaltBucket) >> 32) * kHotBuckets) >> 32);
}

std::array<std::uint16_t, kBloomHashes> HotCache::bloom_bits_of(std::uint64_t key) {
  const std::uint64_t h = salted_hash(key, kSaltBloom);
  std::array<std::uint16_t, kBloomHashes> bits{};
  for (std::size_t i = 0; i < kBloomHashes; ++i) {
    bits[i] = static_cast<std::uint16_t>((h >> (8 * i)) & 0xffu);
  }
  return bits;
}

bool HotCache::get(std::uint64_t key, std::uint64_t* value, OpCost* cost) {
  ++lookups_;
  for (const std::uint16_t b : bloom_bits_of(key)) {
    if (!bloom_.test(b)) {
      ++bloom_negatives_;  // the thread context's own line: no DPA access
      return false;
    }
  }
  if (cost != nullptr) cost->dpa_lines += 1;  // the bucket's cache line
  for (const Pair& p : buckets_[bucket_of(key)]) {
    if (p.used && p.key == key) {
      ++hits_;
      if (value != nullptr) *value = p.value;
      return true;
    }
  }
  ++false_positives_;
  return false;
}

void HotCache::offer(std::uint64_t key, std::uint64_t value) {
  auto& bucket = buckets_[bucket_of(key)];
  // A key already cached takes the new value whatever the draw: the cache
  // never holds a value older than one the host has returned.
  for (Pair& p : bucket) {
    if (p.used && p.key == key) {
      p.value = value;
      return;
    }
  }
  // 53 random bits as a double in [0, 1): p = 1 always admits, p = 0 never.
  const double u = static_cast<double>(rng_() >> 11) * 0x1.0p-53;
  if (!(u < admit_probability_)) return;
  Pair* slot = nullptr;
  for (Pair& p : bucket) {
    if (!p.used) {
      slot = &p;
      break;
    }
  }
  bool evicted = false;
  if (slot == nullptr) {
    slot = &bucket[static_cast<std::size_t>(rng_() % kHotBucketPairs)];
    evicted = true;
  }
  slot->key = key;
  slot->value = value;
  slot->used = true;
  if (evicted) {
    rebuild_bloom();  // the evicted key's bits may be set by it alone
  } else {
    for (const std::uint16_t b : bloom_bits_of(key)) bloom_.set(b);
  }
}

void HotCache::invalidate(std::uint64_t key, OpCost* cost) {
  for (const std::uint16_t b : bloom_bits_of(key)) {
    if (!bloom_.test(b)) return;  // certainly not cached: no DPA access
  }
  if (cost != nullptr) cost->dpa_lines += 1;
  for (Pair& p : buckets_[bucket_of(key)]) {
    if (p.used && p.key == key) {
      p = Pair{};
      rebuild_bloom();
      return;
    }
  }
}

std::size_t HotCache::entries() const {
  std::size_t n = 0;
  for (const auto& bucket : buckets_) {
    for (const Pair& p : bucket) n += p.used ? 1 : 0;
  }
  return n;
}

void HotCache::rebuild_bloom() {
  bloom_.reset();
  for (const auto& bucket : buckets_) {
    for (const Pair& p : bucket) {
      if (!p.used) continue;
      for (const std::uint16_t b : bloom_bits_of(p.key)) bloom_.set(b);
    }
  }
}

std::size_t traverser_of(std::uint64_t key, std::size_t traversers) {
  if (traversers <= 1) return 0;
  return static_cast<std::size_t>(salted_hash(key, kSaltTraverser) % traversers);
}

}  // namespace forein::offload::dpa

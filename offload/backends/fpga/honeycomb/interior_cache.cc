#include "fpga/honeycomb/interior_cache.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace forein::offload::fpga {

namespace {

// Enough stripes that workers rarely meet, few enough to stay small.
constexpr std::uint64_t kMaxStripes = 4096;

std::uint64_t splitmix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

std::uint32_t ChunkRange::mask() const {
  if (count == 0) return 0;
  const std::uint64_t bits = (count >= 32 ? ~std::uint64_t{0} : ((std::uint64_t{1} << count) - 1));
  return static_cast<std::uint32_t>(bits << first);
}

ChunkRange chunks_of(std::uint32_t offset, std::uint32_t length) {
  if (static_cast<std::uint64_t>(offset) + length > kNodeBytes)
    throw std::out_of_range("honeycomb cache: read past the 8 KB node");
  if (length == 0) return {offset / static_cast<std::uint32_t>(kChunkBytes), 0};
  const auto chunk = static_cast<std::uint32_t>(kChunkBytes);
  const std::uint32_t first = offset / chunk;
  const std::uint32_t last = (offset + length - 1) / chunk;
  return {first, last - first + 1};
}

InteriorCache::InteriorCache(CacheMode mode, std::uint64_t dram_bytes, std::uint64_t seed)
    : mode_(mode),
      sets_(mode == CacheMode::kInterior ? cache_sets(dram_bytes) : 0),
      ways_(sets_ * kCacheWays),
      stripes_(std::max<std::uint64_t>(1, std::min(sets_, kMaxStripes))),
      rng_(stripes_.size()),
      metadata_tags_(kMetadataLines) {
  for (std::size_t i = 0; i < rng_.size(); ++i) rng_[i] = splitmix(seed ^ (i * 0x2545F4914F6CDD1Dull)) | 1;
}

void InteriorCache::set_root(Lid root) {
  std::lock_guard lock(sram_mu_);
  root_.store(root, std::memory_order_release);
  if (sram_.lid != root) clear(sram_);
}

CacheLevel InteriorCache::level_of(Lid lid, bool interior) const {
  if (!interior || mode_ == CacheMode::kNone || lid == kNoLid) return CacheLevel::kUncached;
  if (lid == root()) return CacheLevel::kSram;
  return mode_ == CacheMode::kInterior ? CacheLevel::kDram : CacheLevel::kUncached;
}

InteriorCache::Way* InteriorCache::find(std::uint64_t set, Lid lid) {
  Way* ways = &ways_[set * kCacheWays];
  for (std::uint32_t w = 0; w < kCacheWays; ++w)
    if (ways[w].lid == lid) return &ways[w];
  return nullptr;
}

void InteriorCache::clear(Way& way) {
  way.lid = kNoLid;
  way.address = nullptr;
  way.occupancy = 0;
  way.data.reset();
}

CacheLookup InteriorCache::lookup(Lid lid, bool interior, NodeAddress address,
                                  std::uint32_t offset, std::uint32_t length, std::byte* out) {
  CacheLookup result;
  result.level = level_of(lid, interior);
  if (result.level == CacheLevel::kUncached) return result;
  const ChunkRange range = chunks_of(offset, length);
  const std::uint32_t need = range.mask();
  auto serve = [&](const Way& way) {
    if (way.lid != lid) return;
    if (way.address != address) {
      result.address_mismatch = true;
      return;
    }
    if ((way.occupancy & need) != need || !way.data) return;
    std::memcpy(out, way.data.get() + offset, length);
    result.hit = true;
  };
  if (result.level == CacheLevel::kSram) {
    std::lock_guard lock(sram_mu_);
    serve(sram_);
    return result;
  }
  const std::uint64_t set = cache_set_of(lid, sets_);
  std::atomic<std::uint64_t>& tag = metadata_tags_[set % kMetadataLines];
  result.metadata_read = tag.exchange(set + 1, std::memory_order_relaxed) != set + 1;
  std::lock_guard lock(stripe(set));
  if (Way* way = find(set, lid)) serve(*way);
  return result;
}

CacheFill InteriorCache::fill_way(Way& way, bool found, Lid lid, NodeAddress address,
                                  ChunkRange range, const std::byte* data, bool allocate) {
  CacheFill result;
  if (found && way.address != address) {
    // A way left from another version: only a first-block miss may take
    // it over (the page table now maps the LID to `address`).
    if (!allocate) return result;
    way.occupancy = 0;
    way.address = address;
  }
  if (!found) {
    way.lid = lid;
    way.address = address;
    way.occupancy = 0;
    result.allocated = true;
  }
  if (!way.data) way.data = std::make_unique<std::byte[]>(kNodeBytes);
  for (std::uint32_t c = range.first; c < range.first + range.count; ++c) {
    const std::uint32_t bit = std::uint32_t{1} << c;
    if (way.occupancy & bit) continue;
    std::memcpy(way.data.get() + c * kChunkBytes, data + (c - range.first) * kChunkBytes,
                kChunkBytes);
    way.occupancy |= bit;
    result.bytes_written += kChunkBytes;
  }
  return result;
}

CacheFill InteriorCache::fill(CacheLevel level, Lid lid, NodeAddress address, ChunkRange range,
                              const std::byte* data, bool allocate,
                              const DevicePageTable& page_table) {
  if (level == CacheLevel::kUncached || range.count == 0) return {};
  if (level == CacheLevel::kSram) {
    std::lock_guard lock(sram_mu_);
    // set_root and invalidate take this lock: the root and mapping seen
    // here are current.
    if (lid != root() || page_table.lookup(lid) != address) return {};
    const bool found = sram_.lid == lid;
    if (!found && !allocate) return {};
    return fill_way(sram_, found, lid, address, range, data, allocate);
  }
  const std::uint64_t set = cache_set_of(lid, sets_);
  std::lock_guard lock(stripe(set));
  if (page_table.lookup(lid) != address) return {};
  if (Way* way = find(set, lid)) return fill_way(*way, true, lid, address, range, data, allocate);
  if (!allocate) return {};
  Way* ways = &ways_[set * kCacheWays];
  Way* victim = nullptr;
  for (std::uint32_t w = 0; w < kCacheWays && !victim; ++w)
    if (ways[w].lid == kNoLid) victim = &ways[w];
  bool evicted = false;
  if (!victim) {
    std::uint64_t& x = rng_[set % rng_.size()];
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    victim = &ways[x % kCacheWays];
    clear(*victim);
    evicted = true;
    evictions_.fetch_add(1, std::memory_order_relaxed);
  } else {
    slots_used_.fetch_add(1, std::memory_order_relaxed);
  }
  CacheFill result = fill_way(*victim, false, lid, address, range, data, true);
  result.evicted = evicted;
  return result;
}

bool InteriorCache::invalidate(Lid lid) {
  bool dropped = false;
  {
    std::lock_guard lock(sram_mu_);
    if (sram_.lid == lid && lid != kNoLid) {
      clear(sram_);
      dropped = true;
    }
  }
  if (sets_ != 0 && lid != kNoLid) {
    const std::uint64_t set = cache_set_of(lid, sets_);
    std::lock_guard lock(stripe(set));
    if (Way* way = find(set, lid)) {
      clear(*way);
      slots_used_.fetch_sub(1, std::memory_order_relaxed);
      dropped = true;
    }
  }
  if (dropped) invalidations_.fetch_add(1, std::memory_order_relaxed);
  return dropped;
}

std::uint64_t InteriorCache::capacity_bytes() const { return sets_ * kCacheWays * kNodeBytes; }

std::uint64_t InteriorCache::used_bytes() const {
  return slots_used_.load(std::memory_order_relaxed) * kNodeBytes;
}

void InteriorCache::reset_counters() {
  evictions_.store(0, std::memory_order_relaxed);
  invalidations_.store(0, std::memory_order_relaxed);
}

}  // namespace forein::offload::fpga

// The accelerator's interior-node cache (paper 003, section 5).
//
//  - The root lives in on-chip SRAM (one 8 KB slot), other interior nodes
//    in on-board DRAM: four-way set associative by LID (cache_geometry.h),
//    each way = LID, node buffer address, 32-bit occupancy map of 256 B
//    chunks, and a copy of those chunks' bytes. A hit returns the copy,
//    never host memory: staleness is prevented only by invalidation on
//    page-table updates and by the address check below, as in the paper.
//  - A hit needs the way's address to equal the request's node address
//    (its NAT entry, section 5); otherwise the read goes over PCIe.
//  - Misses are written back by the caller (fill): space for a node is
//    allocated only when the missing access was the first 512 B block;
//    other chunks are filled into an allocated way when segments are read.
//    A fill is dropped unless the page table still maps the LID to that
//    address, checked under the set's lock that invalidation also takes
//    (the paper's write-back locking scheme), so an invalidated version is
//    never re-inserted.
//  - Eviction picks a random way of the set (seeded xorshift per stripe).
//  - Leaves are never cached.
//  - The metadata table lives in DRAM with a 1K-entry on-chip metadata
//    cache. Modelled as 256 direct-mapped lines of one set's four entries,
//    tagged by set index: a lookup whose line holds another set is one
//    metadata read from DRAM. With <= 256 sets (1K entries) every set has
//    its own line, so after warm-up no metadata read reaches DRAM, as
//    section 6.4 reports for small caches.
// Thread-safe: workers look up and fill, writer threads invalidate; each
// set is guarded by one of a bounded number of striped mutexes.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "forein/fpga/accelerator.h"
#include "fpga/honeycomb/cache_geometry.h"
#include "fpga/honeycomb/device_page_table.h"

namespace forein::offload::fpga {

enum class CacheLevel : std::uint8_t { kUncached, kSram, kDram };

struct CacheLookup {
  CacheLevel level = CacheLevel::kUncached;
  bool hit = false;               // bytes copied to out
  bool address_mismatch = false;  // a way holds the LID at another address
  bool metadata_read = false;     // metadata came from DRAM (on-chip miss)
};

struct CacheFill {
  std::uint64_t bytes_written = 0;  // chunks newly written (DRAM writes)
  bool allocated = false;
  bool evicted = false;
};

// Chunks [first, last] covering bytes [offset, offset + length).
struct ChunkRange {
  std::uint32_t first = 0, count = 0;
  std::uint32_t mask() const;
};
ChunkRange chunks_of(std::uint32_t offset, std::uint32_t length);

class InteriorCache {
 public:
  static constexpr std::uint32_t kMetadataLines = 1024 / kCacheWays;  // 1K entries

  InteriorCache(CacheMode mode, std::uint64_t dram_bytes, std::uint64_t seed);

  // The root moved to `root` (set_root): the SRAM slot is emptied if it
  // held another LID.
  void set_root(Lid root);
  Lid root() const { return root_.load(std::memory_order_acquire); }
  CacheMode mode() const { return mode_; }

  // Where this cache would keep lid's node.
  CacheLevel level_of(Lid lid, bool interior) const;

  // Copies bytes [offset, offset + length) of lid's node at `address` to
  // out if every chunk of them is cached for that address.
  CacheLookup lookup(Lid lid, bool interior, NodeAddress address, std::uint32_t offset,
                     std::uint32_t length, std::byte* out);

  // Writes back `range` (bytes in data, from range.first * 256) of lid's
  // node at `address`, fetched after a miss at `level`. allocate: the miss
  // was the first block, so a way may be allocated (evicting at random).
  CacheFill fill(CacheLevel level, Lid lid, NodeAddress address, ChunkRange range,
                 const std::byte* data, bool allocate, const DevicePageTable& page_table);

  // The LID's mapping changed or it was freed: drop its copies.
  bool invalidate(Lid lid);

  std::uint64_t sets() const { return sets_; }
  std::uint64_t capacity_bytes() const;  // DRAM slots (0 unless kInterior)
  std::uint64_t used_bytes() const;      // DRAM slots holding a node
  std::uint64_t evictions() const { return evictions_.load(std::memory_order_relaxed); }
  std::uint64_t invalidations() const { return invalidations_.load(std::memory_order_relaxed); }
  void reset_counters();

 private:
  struct Way {
    Lid lid = kNoLid;
    NodeAddress address = nullptr;
    std::uint32_t occupancy = 0;
    std::unique_ptr<std::byte[]> data;  // kNodeBytes, allocated while valid
  };
  std::mutex& stripe(std::uint64_t set) { return stripes_[set % stripes_.size()]; }
  Way* find(std::uint64_t set, Lid lid);
  CacheFill fill_way(Way& way, bool found, Lid lid, NodeAddress address, ChunkRange range,
                     const std::byte* data, bool allocate);
  void clear(Way& way);

  const CacheMode mode_;
  const std::uint64_t sets_;
  std::atomic<Lid> root_{kNoLid};

  std::mutex sram_mu_;
  Way sram_;

  std::vector<Way> ways_;  // sets_ * kCacheWays (empty unless kInterior)
  std::vector<std::mutex> stripes_;
  std::vector<std::uint64_t> rng_;  // per stripe, under its mutex
  std::vector<std::atomic<std::uint64_t>> metadata_tags_;

  std::atomic<std::uint64_t> slots_used_{0};
  std::atomic<std::uint64_t> evictions_{0};
  std::atomic<std::uint64_t> invalidations_{0};
};

}  // namespace forein::offload::fpga

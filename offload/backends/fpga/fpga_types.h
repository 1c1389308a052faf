// fpga: Honeycomb's interior-node cache as a source of start hints
// (Honeycomb, shared/papers/003_a83c9de61e1029db.txt, sections 2 and 5;
// docs/offload.md "fpga (Honeycomb)") -- the records the control plane
// places in the accelerator's cache and the limits they live under.
//
// The accelerator caches interior B-tree nodes: the root in on-chip SRAM,
// every other cached interior node in an 8 KB slot of the card's on-board
// DRAM (4 GB), four-way set associative by node id (LID); leaves are never
// cached; a node's entry is invalidated when its page-table mapping
// changes (section 5). The geometry is honeycomb/cache_geometry.h's, shared
// with the accelerator model in honeycomb/.
//
// A cached node's record is what a walk needs from it: its id, level and
// interval, and its children (each child's lo word and node id, ascending).
// Its data takes a 32-byte header and 16 bytes a child, so a record fits
// one 8 KB slot with up to 510 children; the 256-byte chunks that data
// covers are the slot's occupancy map.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "forein/key.h"
#include "forein/offload/bytes.h"
#include "forein/page_store.h"
#include "fpga/honeycomb/cache_geometry.h"
#include "forein/fpga/honeycomb_types.h"

namespace forein::offload::fpga {

// Bytes of a record's data: header, then one entry per child.
inline constexpr std::size_t kRecordHeaderBytes = 32;
inline constexpr std::size_t kChildBytes = 16;
inline constexpr std::size_t kMaxChildren = (kNodeBytes - kRecordHeaderBytes) / kChildBytes;  // 510
inline constexpr std::uint16_t kMaxLevel = 64;
// The largest capacity a device takes (cache bytes): 1 TiB.
inline constexpr std::uint64_t kMaxCapacity = std::uint64_t{1} << 40;

// The bytes of the 256-byte chunks a node's data occupies, and its 32-bit
// occupancy map (bit i: chunk i holds data).
inline constexpr std::size_t record_data_bytes(std::size_t children) {
  return kRecordHeaderBytes + children * kChildBytes;
}
inline constexpr std::uint32_t occupancy_of(std::size_t children) {
  const std::size_t chunks = (record_data_bytes(children) + kChunkBytes - 1) / kChunkBytes;
  return chunks >= 32 ? ~std::uint32_t{0} : (std::uint32_t{1} << chunks) - 1;
}
inline constexpr std::uint64_t occupied_bytes(std::uint32_t occupancy) {
  return static_cast<std::uint64_t>(std::popcount(occupancy)) * kChunkBytes;
}

// DRAM slots of a cache of `capacity` bytes: whole 8 KB slots, and no more
// than its sets' ways.
inline constexpr std::uint64_t cache_slots(std::uint64_t capacity) {
  const std::uint64_t slots = capacity / kNodeBytes;
  const std::uint64_t ways = cache_sets(capacity) * kCacheWays;
  return slots < ways ? slots : ways;
}

struct CacheChild {
  Word lo = 0;
  PageId node = kNoPage;
  bool operator==(const CacheChild&) const = default;
};

// One cached interior node. root: the tree's root, held in on-chip SRAM
// (its node may be kNoPage: the manager's synthetic root over several
// top-level nodes); otherwise an 8 KB slot of on-board DRAM.
struct CacheRecord {
  PageId node = kNoPage;
  std::uint16_t level = 0;
  bool root = false;
  bool hi_inf = false;
  Word lo = 0;
  Word hi = 0;
  std::vector<CacheChild> children;  // ascending by lo

  bool operator==(const CacheRecord&) const = default;
};

}  // namespace forein::offload::fpga

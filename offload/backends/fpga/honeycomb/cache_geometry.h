// The accelerator's interior-node cache geometry (section 5): four-way set
// associative, indexed by LID, one 8 KB slot per node with a 32-bit
// occupancy map of 256-byte chunks. Shared by the Honeycomb accelerator
// model (honeycomb/interior_cache.h) and the fpga hint backend's device.
#pragma once

#include <cstdint>

#include "forein/fpga/honeycomb_types.h"

namespace forein::offload::fpga {

constexpr std::uint32_t kCacheWays = 4;
// On-board DRAM of the paper's card: 4 GB (section 6.1).
constexpr std::uint64_t kBoardDramBytes = std::uint64_t{4} << 30;

// Sets of a cache of `bytes` (at least one).
constexpr std::uint64_t cache_sets(std::uint64_t bytes) {
  const std::uint64_t nodes = bytes / kNodeBytes;
  return nodes / kCacheWays == 0 ? 1 : nodes / kCacheWays;
}

// The set a LID maps to: a multiplicative hash, so consecutive LIDs spread.
constexpr std::uint64_t cache_set_of(std::uint64_t lid, std::uint64_t sets) {
  return ((lid * 0x9E3779B97F4A7C15ull) >> 17) % sets;
}

}  // namespace forein::offload::fpga

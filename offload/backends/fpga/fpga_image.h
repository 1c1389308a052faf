// fpga's cache as one flat, position-independent image, and the pure walk
// every host runs on it: from the root record (on-chip SRAM) down through
// the cached interior nodes (on-board DRAM) as the accelerator's
// interior-node search would, until the child the word falls in is not
// cached.
//
// Safety contract, as for every backend's image (docs/offload.md): the
// walk accepts any bytes, reads only inside the span, loads with memcpy,
// checks the header against the span on every call and checks every
// record against it before reading; every loop is bounded (binary searches
// over counts the header vouches for, at most kMaxLevel + 1 steps down,
// each to a strictly lower level).
//
// Layout (format 1), little-endian, offsets from the image start:
//   header, 64 bytes: u32 magic "FPC1"; u16 format; u16 0; u64 length;
//     u32 dram_nodes; u32 root node; u64 root offset (0: no root);
//     u64 capacity (cache bytes); 24 bytes 0
//   index: [dram_nodes] x 16 bytes: u32 node; u32 0; u64 record offset
//     (ascending by node)
//   records, each 32 + 16 x children bytes (the node's data in its slot):
//     u32 node; u16 level; u8 flags (bit 0 root, bit 1 hi_inf); u8 0;
//     u32 children; u32 occupancy map; u64 lo; u64 hi;
//     then [children] x 16 bytes: u64 lo; u32 node; u32 0 (ascending lo)
//
// The walk. At a cached record, the child is the last whose lo <= word. If
// that child is cached (and one level down), the walk goes on there;
// otherwise the child is the primary hint (level = the record's level - 1)
// and the deepest cached node walked (the record) the secondary. A word
// below every child's lo hints the record itself. No root: no hint.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "fpga/fpga_types.h"
#include "forein/node_interval.h"
#include "forein/offload/backend.h"

namespace forein::offload::fpga {

inline constexpr std::size_t kImageHeaderBytes = 64;
inline constexpr std::size_t kImageIndexBytes = 16;
// The image room: hosts reserve up to this much per image (PostgreSQL's
// shared memory), whatever the DRAM capacity; the planner keeps a plan to
// half of it, so installs queued before removals still fit.
inline constexpr std::size_t kMaxImageBytes = std::size_t{4} << 20;

// The image of a root (may be null) and DRAM records (any order).
std::vector<std::byte> build_image(const CacheRecord* root, const std::vector<const CacheRecord*>& dram,
                                   std::uint64_t capacity);

// What a walk did: the hints, and the cached records it read (the root
// included), for the cost model and tests.
struct CacheWalk {
  StartHints hints;
  std::size_t cached_nodes = 0;
};

CacheWalk fpga_walk(std::span<const std::byte> image, Word w) noexcept;
StartHints fpga_image_hint(std::span<const std::byte> image, Word w) noexcept;

std::size_t fpga_image_max_bytes(std::uint64_t capacity);
std::vector<ImageRecord> fpga_image_records(std::span<const std::byte> image);
std::vector<UsageRow> fpga_image_usage(std::span<const std::byte> image, std::uint64_t capacity);

}  // namespace forein::offload::fpga

// fattree's switch tables as one flat, position-independent image, and the
// pure lookup every host runs on it: a packet's walk through the fat root
// (Algorithm 1's four chained 16-bit range tables) and the node sets of
// the path, one 16-branch node per set, compared as the paper's 32-bit
// ALUs and cal_result tables do (compare64.h).
//
// Safety contract, as for every backend's image (docs/offload.md): the
// lookup accepts any bytes, reads only inside the span, loads with memcpy,
// checks the header against the span on every call and bounds every loop
// (4 range stages, 5 node sets, 16 pivots each, binary searches).
//
// Layout (format 1), little-endian, offsets from the image start:
//   header, 64 bytes: u32 magic "FTB1"; u16 format; u16 0; u64 length;
//     u32 ranges; u32 node sets (5); u32 stage_entries[4]; u32 set_nodes[5];
//     u32 0
//   ranges: [ranges] 32 bytes each: u64 lo; u64 hi; u64 target;
//     u32 hint_node; u16 hint_level; u16 server   (ascending, disjoint)
//   stage tables: for each of the 4 stages, [stage_entries] 16 bytes each:
//     u32 table; u32 lo; u32 hi; u32 result    (by table, then lo)
//   node sets: for each set, [set_nodes] 272 bytes each: u64 address;
//     u32 owner; u16 owner_level; u8 children; u8 set; u64 pivot[16];
//     u64 child[16]                                 (by address)
//
// The walk. The fat root's match gives a range: its target address, and
// its tree node as both hints. Then each node set in path order: if it
// holds the packet's address, the 16 pivots are compared with the key word
// (result[15 - i] = key > pivot[i]), the thermometer code's leading ones t
// pick child t - 1 (t = 0 matches no get_child_address entry: the packet
// keeps its address), and a real child address becomes the primary hint.
// The primary hint is the deepest tree node the switches resolved, the
// secondary the fat root's.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "fattree/fattree_types.h"
#include "fattree/range_tables.h"
#include "forein/fattree/data_plane.h"
#include "forein/node_interval.h"
#include "forein/offload/backend.h"

namespace forein::offload::fattree {

inline constexpr std::size_t kImageHeaderBytes = 64;
inline constexpr std::size_t kImageRangeBytes = 32;
inline constexpr std::size_t kImageStageEntryBytes = 16;
inline constexpr std::size_t kImageNodeBytes = 272;

// Ranges as the fat root matches them: a later lo cuts an earlier range
// short (while installs precede removals two plans' ranges may overlap).
std::vector<RangeRecord> effective_ranges(const std::vector<RangeRecord>& ranges);

// The image of the given tables. `ranges` must be effective (ascending,
// disjoint) and `tables` built from them; each set sorted by address.
std::vector<std::byte> build_image(const std::vector<RangeRecord>& ranges,
                                   const RangeTables& tables,
                                   const std::array<std::vector<NodeRecord>, kNodeSets>& sets);

// The walk itself (Walk, fattree_walk_switch, fattree_walk) is the public
// data-plane API: forein/fattree/data_plane.h. The backend's HintFunction:
StartHints fattree_image_hint(std::span<const std::byte> image, Word w) noexcept;

std::size_t fattree_image_max_bytes(std::uint64_t capacity);
std::vector<ImageRecord> fattree_image_records(std::span<const std::byte> image);
std::vector<UsageRow> fattree_image_usage(std::span<const std::byte> image, std::uint64_t capacity);

}  // namespace forein::offload::fattree

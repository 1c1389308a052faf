// dpa's DPA memory as one flat, position-independent image, and the pure
// walk every host runs on it: DPA-Store's traversal of its learned index
// (section 3.1.1) from the root pointer down to an index leaf, whose last
// boundary <= word names the host node to start at.
//
// Safety contract, as for every backend's image (docs/offload.md): the
// walk accepts any bytes, reads only inside the span, loads with memcpy,
// checks the header against the span on every call and every node against
// it before reading; every loop is bounded (binary search over the node
// index the header vouches for, at most 7 segments, window searches that
// step at most a segment's keys, at most kMaxIndexDepth steps down, each to
// a strictly lower index level).
//
// Layout (format 1), little-endian, offsets from the image start:
//   header, 64 bytes: u32 magic "DPA1"; u16 format; u16 0; u64 length;
//     u32 nodes; u32 0; u64 root DPA address (~0: none); u64 capacity
//     (DPA bytes); u64 used (DPA bytes); 16 bytes 0
//   index: [nodes] x 16 bytes: u64 DPA address; u64 node offset (ascending
//     by address)
//   nodes: each its DPA bytes as dpa_layout.h lays them out
//
// The walk. At an inner node: the segment is the last whose first key <=
// word (the first if none); its model predicts the pivot, the +-eps window
// around it is searched for the last pivot <= word (stepping outwards if
// the word lies past the window); that pivot's child is next (the first
// child for a word below every pivot). At the index leaf the same search
// over the boundaries gives the entry: primary hint {its host node, the
// leaf's host level}, secondary {the node's parent, host level + 1} if
// known. A word below the first boundary hints the first entry (the host
// validates). No root, a node missing or garbage on the way: no hint.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "dpa/dpa_layout.h"
#include "forein/node_interval.h"
#include "forein/offload/backend.h"

namespace forein::offload::dpa {

inline constexpr std::size_t kImageHeaderBytes = 64;
inline constexpr std::size_t kImageIndexBytes = 16;

// The image of DPA memory: nodes by address (each its DPA bytes) and the
// root pointer (kNoAddress: none).
std::vector<std::byte> build_image(const std::map<std::uint64_t, std::vector<std::byte>>& nodes,
                                   std::uint64_t root, std::uint64_t capacity);

// What a walk did: the hints, and the index nodes it read (for the cost
// model and tests).
struct IndexWalk {
  StartHints hints;
  std::size_t inner_nodes = 0;
  std::size_t leaves = 0;
  std::size_t probes = 0;  // keys compared
};

IndexWalk dpa_walk(std::span<const std::byte> image, Word w) noexcept;
StartHints dpa_image_hint(std::span<const std::byte> image, Word w) noexcept;

// The index as read off an image (for usage rows, records and tests).
struct ImageSummary {
  bool ok = false;
  std::uint64_t root = kNoAddress;
  std::uint64_t capacity = 0;
  std::size_t inner_nodes = 0, leaves = 0;
  std::uint64_t inner_bytes = 0, leaf_bytes = 0;
  std::size_t depth = 0;  // index levels from the root (0: no root)
  std::uint16_t host_level = 0;
};
ImageSummary summarize_image(std::span<const std::byte> image);

std::size_t dpa_image_max_bytes(std::uint64_t capacity);
std::vector<ImageRecord> dpa_image_records(std::span<const std::byte> image);
std::vector<UsageRow> dpa_image_usage(std::span<const std::byte> image, std::uint64_t capacity);

}  // namespace forein::offload::dpa

// dpa: the DPA-side layout of the learned index's nodes (DPA-Store,
// shared/papers/004_af7888c35286a936.txt, sections 3.1, 3.1.1, 4.2.6), as
// the start-hint backend places them in DPA memory. The same bytes are what
// a COPY stitch carries (dpa_batch.h), what the device holds at a DPA
// address and what the image (dpa_image.h) lays out, so a node's DPA bytes
// are its size here.
//
// Little-endian, every node a multiple of 16 bytes:
//
//   inner node, 64 + 64 x segments + 16 x pivots bytes:
//     metadata line (64): u8 kind = 1; u8 segments (1..7); u16 index level
//       (>= 1); u16 host level; u8 eps; u8 0; 7 x u64 the segments' first
//       keys (unused ones 0) -- "the node's metadata and the segment's first
//       keys" in one cache line (3.1.1, 4.2.6)
//     a model line per segment (64): u64 key0; u64 slope mantissa; i64
//       intercept (Q32.32); u8 slope shift; u8 0; u16 pivots (1..128); u32
//       the segment's first pivot index; 32 bytes 0
//     pivots: [pivots] x u64 (ascending), then children: [pivots] x u64 DPA
//       address -- stored apart, as the paper does ("we store pivots and
//       child pointers separately")
//   index leaf, 64 + 16 x entries bytes:
//     metadata line (64): u8 kind = 2; u8 0; u16 index level = 0; u16 host
//       level; u8 eps; u8 0; u32 entries (1..128); u32 0; u64 key0; u64
//       slope mantissa; i64 intercept; u8 slope shift; 23 bytes 0
//     keys: [entries] x u64 (ascending): the host nodes' lo words;
//     payload: [entries] x (u32 host node id; u32 its parent's id, 0 if
//       unknown) -- the key window and the payload, fetched apart (4.2.6)
//
// The view below reads a node only inside the bytes it is given (memcpy
// loads, every count checked before use); strict validation (what a device
// accepts) is node_error().
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "forein/dpa/types.h"
#include "dpa/fixed_point.h"
#include "forein/key.h"
#include "forein/offload/bytes.h"
#include "forein/page_store.h"

namespace forein::offload::dpa {

inline constexpr std::size_t kNodeLineBytes = 64;  // metadata and model lines
inline constexpr std::size_t kPivotBytes = 16;     // a pivot and its child pointer
inline constexpr std::size_t kEntryBytes = 16;     // a boundary key and its payload
inline constexpr std::uint8_t kInnerKind = 1;
inline constexpr std::uint8_t kLeafKind = 2;
// Index levels (leaf 0): far more than 1 GiB of nodes can need.
inline constexpr std::uint16_t kMaxIndexDepth = 16;
// Host levels the index may point at.
inline constexpr std::uint16_t kMaxHostLevel = 64;
inline constexpr std::size_t kMaxInnerPivots = kInnerSegments * kSegmentPivots;  // 896
// The image room: hosts reserve up to this much per image (PostgreSQL's
// shared memory), whatever the DPA memory; the planner keeps a plan to half
// of it, so installs queued before removals still fit.
inline constexpr std::size_t kMaxImageBytes = std::size_t{4} << 20;
// No DPA address (an empty device's root).
inline constexpr std::uint64_t kNoAddress = ~std::uint64_t{0};

inline constexpr std::uint64_t inner_node_bytes(std::size_t segments, std::size_t pivots) {
  return kNodeLineBytes + kNodeLineBytes * segments + kPivotBytes * pivots;
}
inline constexpr std::uint64_t leaf_node_bytes(std::size_t entries) { return kNodeLineBytes + kEntryBytes * entries; }
// The smallest node: a leaf of one entry.
inline constexpr std::uint64_t kMinNodeBytes = leaf_node_bytes(1);

// A node of the index as the planner builds it.
struct IndexSegment {
  FixedModel model;
  std::uint32_t start = 0;   // first pivot index
  std::uint32_t pivots = 0;  // 1..128
  bool operator==(const IndexSegment&) const = default;
};

struct IndexNode {
  bool leaf = true;
  std::uint16_t index_level = 0;  // 0: an index leaf
  std::uint16_t host_level = 0;   // the level of the host nodes the leaves name
  std::uint8_t eps = 0;
  std::vector<Word> keys;                // leaf: boundaries; inner: pivots
  FixedModel model;                      // leaf
  std::vector<PageId> nodes, parents;    // leaf payload
  std::vector<IndexSegment> segments;    // inner
  std::vector<std::uint64_t> children;   // inner: DPA addresses
  bool operator==(const IndexNode&) const = default;
};

std::vector<std::byte> encode_node(const IndexNode& n);

// A node read in place. ok = false if the bytes available cannot hold the
// node its metadata describes (or the metadata is out of range).
struct NodeView {
  bool ok = false;
  const std::byte* at = nullptr;
  std::uint8_t kind = 0;
  std::uint8_t segments = 0;
  std::uint16_t index_level = 0;
  std::uint16_t host_level = 0;
  std::uint8_t eps = 0;
  std::uint32_t count = 0;  // pivots (inner) or entries (leaf)
  std::uint64_t bytes = 0;  // the node's DPA bytes

  Word key(std::size_t i) const noexcept {  // pivot or boundary i < count
    return load<std::uint64_t>(at + keys_at() + i * 8);
  }
  std::uint64_t child(std::size_t i) const noexcept {
    return load<std::uint64_t>(at + keys_at() + std::size_t{count} * 8 + i * 8);
  }
  PageId entry_node(std::size_t i) const noexcept {
    return load<std::uint32_t>(at + keys_at() + std::size_t{count} * 8 + i * 8);
  }
  PageId entry_parent(std::size_t i) const noexcept {
    return load<std::uint32_t>(at + keys_at() + std::size_t{count} * 8 + i * 8 + 4);
  }
  Word segment_first(std::size_t s) const noexcept { return load<std::uint64_t>(at + 8 + s * 8); }
  FixedModel leaf_model() const noexcept { return model_at(16); }
  FixedModel segment_model(std::size_t s) const noexcept { return model_at(kNodeLineBytes * (1 + s)); }
  std::uint32_t segment_pivots(std::size_t s) const noexcept {
    return load<std::uint16_t>(at + kNodeLineBytes * (1 + s) + 26);
  }
  std::uint32_t segment_start(std::size_t s) const noexcept {
    return load<std::uint32_t>(at + kNodeLineBytes * (1 + s) + 28);
  }

 private:
  std::size_t keys_at() const noexcept {
    return kind == kInnerKind ? kNodeLineBytes * (1 + std::size_t{segments}) : kNodeLineBytes;
  }
  FixedModel model_at(std::size_t off) const noexcept {
    FixedModel m;
    m.key0 = load<std::uint64_t>(at + off);
    m.slope_mant = load<std::uint64_t>(at + off + 8);
    m.intercept_q32 = load<std::int64_t>(at + off + 16);
    m.slope_shift = load<std::uint8_t>(at + off + 24);
    return m;
  }
};

// The node at p, `available` bytes readable there.
NodeView view_node(const std::byte* p, std::size_t available) noexcept;

// What a device checks of a node's bytes (exactly its size, reserved bytes
// 0, segments contiguous and within 128 pivots, keys strictly ascending,
// first keys equal to their segment's first pivot, every model within its
// eps on its keys, levels in range, node ids present): empty when valid.
std::string node_error(std::span<const std::byte> bytes);

// The last key <= w among view.key(first .. first + n - 1) (n >= 1, inside
// the node), searched from the model's window and stepping outwards at
// most n keys; -1 (relative) if w is below them all. Integer arithmetic
// only; bounded by n.
std::int64_t window_search(const NodeView& v, std::uint32_t first, std::uint32_t n, const FixedModel& model,
                           Word w, std::size_t* probes = nullptr) noexcept;

}  // namespace forein::offload::dpa

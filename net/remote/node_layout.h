// The bytes a memory node holds (docs/remote-read.md has the tables): the
// region header at address 0, B+tree nodes and value records. All fields
// little-endian at fixed offsets. The three kinds share one frame: a magic
// at 0, a version (u32) at 8 and a checksum (u32) at 12: CRC32C of the
// object's 8-byte address (little-endian) followed by its bytes with the
// checksum field zero. The header's and a node's version is a seqlock, odd
// while the owner rewrites it in place (seqlock_write); a record is never
// rewritten, its version is the value's. Binding the address means a copy of an object
// elsewhere (inside a value, a stale buffer, a READ answered from the
// wrong place) does not check.
//
// A reader checks everything it read before using it: a READ racing the
// owner's write (odd version, or bytes from before and after it: the
// checksum) or one that lands on garbage is rejected, never trusted.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <vector>

#include "remote/region.h"

namespace forein::net::remote {

// Little-endian fields at any alignment: one load on a little-endian host
// (the checks run over every key of every node READ).
template <typename T>
T load_le(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  if constexpr (std::endian::native == std::endian::big) {
    T r = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i, v >>= 8) r = static_cast<T>((r << 8) | (v & 0xFF));
    v = r;
  }
  return v;
}

template <typename T>
void store_le(std::byte* p, T v) {
  if constexpr (std::endian::native == std::endian::big) {
    T r = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i, v >>= 8) r = static_cast<T>((r << 8) | (v & 0xFF));
    v = r;
  }
  std::memcpy(p, &v, sizeof v);
}

// The shared frame.
inline constexpr std::size_t kVersionOffset = 8;
inline constexpr std::size_t kChecksumOffset = 12;
std::uint32_t object_checksum(Address address, std::span<const std::byte> bytes);

// The owner's in-place rewrite of a published header or node: `image` is
// the new bytes, its version even and one step (2) past the stored one,
// its checksum set. Stores the version word odd (checksum 0), then the
// rest, then the version word with the checksum, in that order (release
// stores, region.h): a concurrent READ sees the odd version, or a mix that
// fails the checksum, or one whole image.
void seqlock_write(Region& region, Address address, std::span<const std::byte> image);

inline constexpr std::uint32_t kHeaderMagic = 0x31475246;  // bytes "FRG1"
inline constexpr std::uint16_t kNodeMagic = 0x4E42;        // bytes "BN"
inline constexpr std::uint32_t kRecordMagic = 0x31525646;  // bytes "FVR1"
inline constexpr std::uint16_t kFormatVersion = 1;

inline constexpr std::size_t kNodeHeaderBytes = 40;
inline constexpr std::size_t kRecordHeaderBytes = 24;
inline constexpr std::uint32_t kMinFanout = 4;
inline constexpr std::uint32_t kMaxFanout = 1024;
inline constexpr std::uint8_t kMaxLevel = 31;  // height at most 32
inline constexpr std::size_t kMaxValueBytes = kMaxReadBytes - kRecordHeaderBytes;
inline constexpr std::uint8_t kFlagHiInf = 0x01;

// The offload layer's name for a node (its PageId, forein/node_interval.h):
// the address / 8 (nodes are 8-aligned), so a switch turns a hint back into
// a READ address without a table. Ids fit 32 bits for regions up to 32 GiB;
// 0 is the header, never a node (PageId 0 is "no page").
inline constexpr std::uint64_t kMaxNodeIdRegionBytes = std::uint64_t{8} << 32;
inline std::uint32_t node_id(Address a) { return static_cast<std::uint32_t>(a / 8); }
inline Address node_address(std::uint32_t id) { return Address{id} * 8; }

// A node's size and branching: keys at 40, pointers at 40 + 8 * fanout.
struct Geometry {
  std::uint32_t fanout = 16;
  std::uint32_t node_bytes = kNodeHeaderBytes + 16 * 16;
};
// The smallest node for `fanout` (4..1024).
Geometry geometry_for_fanout(std::uint32_t fanout);
// The largest fanout whose node fits `node_bytes` (a page: 8192 -> 509).
Geometry geometry_for_node_bytes(std::uint32_t node_bytes);
bool valid_geometry(const Geometry& g);

// Why read bytes were rejected. kShort: a record longer than what was read
// (read again with record_bytes()).
enum class Check : std::uint8_t { kOk = 0, kBadMagic, kOddVersion, kBadChecksum, kBadShape, kShort };
const char* to_string(Check c);

// ---- the region header (address 0, kRegionHeaderBytes) ----
struct RegionHeader {
  std::uint32_t version = 0;  // seqlock, even when stable
  Geometry geometry;
  Address root = 0;
  std::uint32_t height = 1;  // levels; the root's level is height - 1
  std::uint32_t max_value_bytes = 0;
  std::uint64_t key_count = 0;
  std::uint64_t region_bytes = 0;
  std::uint64_t used_bytes = 0;
};
std::array<std::byte, kRegionHeaderBytes> encode_header(const RegionHeader& h);
Check check_header(std::span<const std::byte> bytes, RegionHeader* out);

// ---- nodes ----
// An owned node (writers, the builder, tests). level 0 = leaf. ptrs[i] is
// child i (owning [keys[i], keys[i+1])) in an inner node, the value record
// of keys[i] in a leaf.
struct Node {
  std::uint8_t level = 0;
  bool hi_inf = true;
  std::uint32_t version = 0;
  std::uint64_t lo = 0;
  std::uint64_t hi = 0;
  Address right = 0;
  std::vector<std::uint64_t> keys;
  std::vector<Address> ptrs;
};
// Writes node_bytes bytes (unused slots and padding zero) with the
// checksum for `address`.
void encode_node(const Node& n, const Geometry& g, Address address, std::byte* out);

// A checked node in a read buffer.
struct NodeView {
  const std::byte* bytes = nullptr;
  std::uint32_t fanout = 0;
  std::uint8_t level = 0;
  bool hi_inf = false;
  std::uint16_t count = 0;
  std::uint32_t version = 0;
  std::uint64_t lo = 0;
  std::uint64_t hi = 0;
  Address right = 0;

  std::uint64_t key(std::size_t i) const { return load_le<std::uint64_t>(bytes + kNodeHeaderBytes + 8 * i); }
  Address ptr(std::size_t i) const {
    return load_le<std::uint64_t>(bytes + kNodeHeaderBytes + 8 * (std::size_t{fanout} + i));
  }
  bool above(std::uint64_t k) const { return !hi_inf && k >= hi; }  // k past the node: move right
  // Inner: the child owning k (lo <= k). Leaf: k's slot, or count if absent.
  std::size_t child_of(std::uint64_t k) const;
  std::size_t find(std::uint64_t k) const;
  Node to_node() const;
};
// `bytes` is node_bytes read at `address`. Checks magic, version, checksum
// and shape (count <= fanout, level <= kMaxLevel, lo < hi, keys strictly
// increasing inside [lo, hi), an inner node's first key = lo, pointers
// nonzero and 8-aligned).
Check check_node(std::span<const std::byte> bytes, const Geometry& g, Address address, NodeView* out);

// ---- value records ----
// Bytes a record of `value_len` takes (header, value, padding to 8).
std::uint64_t record_bytes(std::uint64_t value_len);
std::vector<std::byte> encode_record(std::uint64_t key, std::uint32_t version, std::string_view value,
                                     Address address);
struct RecordView {
  std::uint64_t key = 0;
  std::uint32_t version = 0;
  std::uint32_t value_len = 0;
  std::string_view value;  // into the read buffer
};
// `bytes` read at `address`; kShort (with out->value_len set) when the
// record needs more bytes than were read.
Check check_record(std::span<const std::byte> bytes, Address address, RecordView* out);

}  // namespace forein::net::remote

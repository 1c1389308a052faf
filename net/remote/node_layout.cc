#include "remote/node_layout.h"

#include <algorithm>

#include "forein/error.h"
#include "forein/page_store.h"

namespace forein::net::remote {

namespace {

// Header fields (docs/remote-read.md, "Region header").
constexpr std::size_t kHdrFormat = 4, kHdrReserved = 6, kHdrNodeBytes = 16, kHdrFanout = 20,
                      kHdrRoot = 24, kHdrHeight = 32, kHdrMaxValue = 36, kHdrKeyCount = 40,
                      kHdrRegionBytes = 48, kHdrUsed = 56;
// Node fields.
constexpr std::size_t kNodeLevel = 2, kNodeFlags = 3, kNodeCount = 4, kNodeReserved = 6, kNodeLo = 16,
                      kNodeHi = 24, kNodeRight = 32;
// Record fields.
constexpr std::size_t kRecValueLen = 4, kRecKey = 16;

bool aligned_address(Address a) { return a != 0 && a % 8 == 0; }

Check check_frame_version(std::span<const std::byte> bytes, Address address) {
  if (load_le<std::uint32_t>(bytes.data() + kVersionOffset) % 2 != 0) return Check::kOddVersion;
  if (load_le<std::uint32_t>(bytes.data() + kChecksumOffset) != object_checksum(address, bytes)) {
    return Check::kBadChecksum;
  }
  return Check::kOk;
}

}  // namespace

std::uint32_t object_checksum(Address address, std::span<const std::byte> bytes) {
  std::byte a[8];
  store_le<std::uint64_t>(a, address);
  const std::byte zero[4] = {};
  std::uint32_t crc = crc32c(a, sizeof a);
  crc = crc32c(bytes.data(), kChecksumOffset, crc);
  crc = crc32c(zero, sizeof zero, crc);
  return crc32c(bytes.data() + kChecksumOffset + 4, bytes.size() - kChecksumOffset - 4, crc);
}

void seqlock_write(Region& region, Address address, std::span<const std::byte> image) {
  std::byte odd[8];
  store_le<std::uint32_t>(odd, load_le<std::uint32_t>(image.data() + kVersionOffset) - 1);
  store_le<std::uint32_t>(odd + 4, 0);
  region.write(address + kVersionOffset, odd);
  region.write(address, image.first(kVersionOffset));
  region.write(address + kChecksumOffset + 4, image.subspan(kChecksumOffset + 4));
  region.write(address + kVersionOffset, image.subspan(kVersionOffset, 8));
}

const char* to_string(Check c) {
  switch (c) {
    case Check::kOk:
      return "ok";
    case Check::kBadMagic:
      return "bad_magic";
    case Check::kOddVersion:
      return "odd_version";
    case Check::kBadChecksum:
      return "bad_checksum";
    case Check::kBadShape:
      return "bad_shape";
    case Check::kShort:
      return "short";
  }
  return "unknown";
}

Geometry geometry_for_fanout(std::uint32_t fanout) {
  if (fanout < kMinFanout || fanout > kMaxFanout) {
    throw InvalidArgument("remote: fanout must be in [4, 1024]");
  }
  return Geometry{fanout, static_cast<std::uint32_t>(kNodeHeaderBytes + 16 * std::size_t{fanout})};
}

Geometry geometry_for_node_bytes(std::uint32_t node_bytes) {
  if (node_bytes % 8 != 0 || node_bytes > kMaxReadBytes ||
      node_bytes < kNodeHeaderBytes + 16 * std::size_t{kMinFanout}) {
    throw InvalidArgument("remote: node bytes must be a multiple of 8 in [104, 32768]");
  }
  const auto fanout = std::min<std::uint32_t>(kMaxFanout, (node_bytes - kNodeHeaderBytes) / 16);
  return Geometry{fanout, node_bytes};
}

bool valid_geometry(const Geometry& g) {
  return g.fanout >= kMinFanout && g.fanout <= kMaxFanout && g.node_bytes % 8 == 0 &&
         g.node_bytes <= kMaxReadBytes && g.node_bytes >= kNodeHeaderBytes + 16 * std::size_t{g.fanout};
}

// ---- region header ----

std::array<std::byte, kRegionHeaderBytes> encode_header(const RegionHeader& h) {
  std::array<std::byte, kRegionHeaderBytes> b{};
  std::byte* p = b.data();
  store_le<std::uint32_t>(p, kHeaderMagic);
  store_le<std::uint16_t>(p + kHdrFormat, kFormatVersion);
  store_le<std::uint32_t>(p + kVersionOffset, h.version);
  store_le<std::uint32_t>(p + kHdrNodeBytes, h.geometry.node_bytes);
  store_le<std::uint32_t>(p + kHdrFanout, h.geometry.fanout);
  store_le<std::uint64_t>(p + kHdrRoot, h.root);
  store_le<std::uint32_t>(p + kHdrHeight, h.height);
  store_le<std::uint32_t>(p + kHdrMaxValue, h.max_value_bytes);
  store_le<std::uint64_t>(p + kHdrKeyCount, h.key_count);
  store_le<std::uint64_t>(p + kHdrRegionBytes, h.region_bytes);
  store_le<std::uint64_t>(p + kHdrUsed, h.used_bytes);
  store_le<std::uint32_t>(p + kChecksumOffset, object_checksum(0, b));
  return b;
}

Check check_header(std::span<const std::byte> bytes, RegionHeader* out) {
  if (bytes.size() < kRegionHeaderBytes) return Check::kShort;
  bytes = bytes.first(kRegionHeaderBytes);
  const std::byte* p = bytes.data();
  if (load_le<std::uint32_t>(p) != kHeaderMagic || load_le<std::uint16_t>(p + kHdrFormat) != kFormatVersion) {
    return Check::kBadMagic;
  }
  if (Check c = check_frame_version(bytes, 0); c != Check::kOk) return c;
  RegionHeader h;
  h.version = load_le<std::uint32_t>(p + kVersionOffset);
  h.geometry.node_bytes = load_le<std::uint32_t>(p + kHdrNodeBytes);
  h.geometry.fanout = load_le<std::uint32_t>(p + kHdrFanout);
  h.root = load_le<std::uint64_t>(p + kHdrRoot);
  h.height = load_le<std::uint32_t>(p + kHdrHeight);
  h.max_value_bytes = load_le<std::uint32_t>(p + kHdrMaxValue);
  h.key_count = load_le<std::uint64_t>(p + kHdrKeyCount);
  h.region_bytes = load_le<std::uint64_t>(p + kHdrRegionBytes);
  h.used_bytes = load_le<std::uint64_t>(p + kHdrUsed);
  if (load_le<std::uint16_t>(p + kHdrReserved) != 0 || !valid_geometry(h.geometry) || !aligned_address(h.root) ||
      h.height < 1 || h.height > std::uint32_t{kMaxLevel} + 1 || h.max_value_bytes > kMaxValueBytes ||
      h.region_bytes < kRegionHeaderBytes || h.root >= h.region_bytes || h.used_bytes > h.region_bytes) {
    return Check::kBadShape;
  }
  *out = h;
  return Check::kOk;
}

// ---- nodes ----

void encode_node(const Node& n, const Geometry& g, Address address, std::byte* out) {
  if (n.keys.size() != n.ptrs.size() || n.keys.size() > g.fanout) {
    throw InvalidArgument("remote: node entries do not fit its geometry");
  }
  std::memset(out, 0, g.node_bytes);
  store_le<std::uint16_t>(out, kNodeMagic);
  store_le<std::uint8_t>(out + kNodeLevel, n.level);
  store_le<std::uint8_t>(out + kNodeFlags, n.hi_inf ? kFlagHiInf : 0);
  store_le<std::uint16_t>(out + kNodeCount, static_cast<std::uint16_t>(n.keys.size()));
  store_le<std::uint32_t>(out + kVersionOffset, n.version);
  store_le<std::uint64_t>(out + kNodeLo, n.lo);
  store_le<std::uint64_t>(out + kNodeHi, n.hi_inf ? ~std::uint64_t{0} : n.hi);
  store_le<std::uint64_t>(out + kNodeRight, n.right);
  for (std::size_t i = 0; i < n.keys.size(); ++i) {
    store_le<std::uint64_t>(out + kNodeHeaderBytes + 8 * i, n.keys[i]);
    store_le<std::uint64_t>(out + kNodeHeaderBytes + 8 * (g.fanout + i), n.ptrs[i]);
  }
  store_le<std::uint32_t>(out + kChecksumOffset,
                          object_checksum(address, std::span<const std::byte>(out, g.node_bytes)));
}

std::size_t NodeView::child_of(std::uint64_t k) const {
  // The last key <= k; a checked inner node has key(0) = lo <= k.
  std::size_t lo_i = 0, hi_i = count;  // answer in [lo_i, hi_i)
  while (hi_i - lo_i > 1) {
    const std::size_t mid = lo_i + (hi_i - lo_i) / 2;
    if (key(mid) <= k) {
      lo_i = mid;
    } else {
      hi_i = mid;
    }
  }
  return lo_i;
}

std::size_t NodeView::find(std::uint64_t k) const {
  std::size_t lo_i = 0, hi_i = count;  // first key >= k in [lo_i, hi_i]
  while (lo_i < hi_i) {
    const std::size_t mid = lo_i + (hi_i - lo_i) / 2;
    if (key(mid) < k) {
      lo_i = mid + 1;
    } else {
      hi_i = mid;
    }
  }
  return lo_i < count && key(lo_i) == k ? lo_i : count;
}

Node NodeView::to_node() const {
  Node n;
  n.level = level;
  n.hi_inf = hi_inf;
  n.version = version;
  n.lo = lo;
  n.hi = hi;
  n.right = right;
  n.keys.resize(count);
  n.ptrs.resize(count);
  for (std::size_t i = 0; i < count; ++i) {
    n.keys[i] = key(i);
    n.ptrs[i] = ptr(i);
  }
  return n;
}

Check check_node(std::span<const std::byte> bytes, const Geometry& g, Address address, NodeView* out) {
  if (bytes.size() < g.node_bytes) return Check::kShort;
  bytes = bytes.first(g.node_bytes);
  const std::byte* p = bytes.data();
  if (load_le<std::uint16_t>(p) != kNodeMagic) return Check::kBadMagic;
  if (Check c = check_frame_version(bytes, address); c != Check::kOk) return c;
  NodeView v;
  v.bytes = p;
  v.fanout = g.fanout;
  v.level = load_le<std::uint8_t>(p + kNodeLevel);
  const auto flags = load_le<std::uint8_t>(p + kNodeFlags);
  v.hi_inf = (flags & kFlagHiInf) != 0;
  v.count = load_le<std::uint16_t>(p + kNodeCount);
  v.version = load_le<std::uint32_t>(p + kVersionOffset);
  v.lo = load_le<std::uint64_t>(p + kNodeLo);
  v.hi = load_le<std::uint64_t>(p + kNodeHi);
  v.right = load_le<std::uint64_t>(p + kNodeRight);
  if ((flags & ~kFlagHiInf) != 0 || load_le<std::uint16_t>(p + kNodeReserved) != 0 || v.count > g.fanout ||
      v.level > kMaxLevel || (!v.hi_inf && v.lo >= v.hi) || (v.right % 8) != 0 ||
      (v.level > 0 && (v.count == 0 || v.key(0) != v.lo))) {
    return Check::kBadShape;
  }
  for (std::size_t i = 0; i < v.count; ++i) {
    const std::uint64_t k = v.key(i);
    if (k < v.lo || v.above(k) || (i > 0 && k <= v.key(i - 1)) || !aligned_address(v.ptr(i))) {
      return Check::kBadShape;
    }
  }
  *out = v;
  return Check::kOk;
}

// ---- value records ----

std::uint64_t record_bytes(std::uint64_t value_len) { return (kRecordHeaderBytes + value_len + 7) & ~std::uint64_t{7}; }

std::vector<std::byte> encode_record(std::uint64_t key, std::uint32_t version, std::string_view value,
                                     Address address) {
  if (value.size() > kMaxValueBytes) throw InvalidArgument("remote: value longer than kMaxValueBytes");
  std::vector<std::byte> b(record_bytes(value.size()));
  std::byte* p = b.data();
  store_le<std::uint32_t>(p, kRecordMagic);
  store_le<std::uint32_t>(p + kRecValueLen, static_cast<std::uint32_t>(value.size()));
  store_le<std::uint32_t>(p + kVersionOffset, version);
  store_le<std::uint64_t>(p + kRecKey, key);
  std::memcpy(p + kRecordHeaderBytes, value.data(), value.size());
  // The checksum covers header and value, not the padding.
  store_le<std::uint32_t>(
      p + kChecksumOffset,
      object_checksum(address, std::span<const std::byte>(p, kRecordHeaderBytes + value.size())));
  return b;
}

Check check_record(std::span<const std::byte> bytes, Address address, RecordView* out) {
  if (bytes.size() < kRecordHeaderBytes) return Check::kShort;
  const std::byte* p = bytes.data();
  if (load_le<std::uint32_t>(p) != kRecordMagic) return Check::kBadMagic;
  const auto len = load_le<std::uint32_t>(p + kRecValueLen);
  if (len > kMaxValueBytes) return Check::kBadShape;
  if (bytes.size() - kRecordHeaderBytes < len) {
    out->value_len = len;
    return Check::kShort;
  }
  // A record is never rewritten: its version is the value's (how many
  // puts of the key wrote it), not a seqlock, so any number is fine.
  if (load_le<std::uint32_t>(p + kChecksumOffset) != object_checksum(address, bytes.first(kRecordHeaderBytes + len))) {
    return Check::kBadChecksum;
  }
  out->key = load_le<std::uint64_t>(p + kRecKey);
  out->version = load_le<std::uint32_t>(p + kVersionOffset);
  out->value_len = len;
  out->value = std::string_view(reinterpret_cast<const char*>(p + kRecordHeaderBytes), len);
  return Check::kOk;
}

}  // namespace forein::net::remote

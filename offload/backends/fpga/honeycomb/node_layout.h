// The byte format of one 8 KB node buffer (section 3.1, Figure 2), shared
// by the reader (reader.cc) and the writers (store*.cc).
//
//   [0, 48)     header: six 8-byte words, always stored with atomic_ref
//               and read by copy_node_bytes (writers change word1 and the
//               sibling LIDs of a published buffer in place):
//                 w0  type (8 bits) | level (8, 0 = leaf) << 8 | leftmost child LID << 16
//                 w1  size (32: bytes used) | sequence (31) << 32 | lock << 63
//                     (one word, so the fast path's "size, sequence, unlock"
//                     is one store: section 3.4)
//                 w2  node version
//                 w3  old-version pointer (address of the previous buffer, 0: none)
//                 w4  left sibling LID (48) | sorted-block end (16) << 48
//                 w5  right sibling LID (48) | shortcut count (16) << 48
//   [48, 512)   shortcut block: per boundary, u16 segment offset, u16 key
//               length, key. Segment 0 starts at 512 and has no shortcut;
//               segment i > 0 starts at its offset with the value (leaf) or
//               child LID (interior) of its boundary key, whose bytes live
//               only here.
//   [512, end)  sorted block: leaf items u16 klen, key, u16 vlen, value;
//               interior items u16 klen, key, 6-byte child LID.
//   [end, size) leaf log block: entries u16 back-pointer, u8 order hint,
//               u8 flags (op | replaces), 5-byte version delta, u16 klen,
//               key, u16 vlen, value.
//
// Every parser here bounds-checks against the bytes it was given: a reader
// may see any bytes (torn, freed-and-reused in a broken test port, random)
// and must stop, not crash.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "forein/fpga/honeycomb_types.h"

namespace forein::offload::fpga::layout {

enum class NodeType : std::uint8_t { kLeaf = 1, kInterior = 2 };

constexpr std::size_t kSortedStart = kFirstBlockBytes;
constexpr std::size_t kLogEntryHeaderBytes = 9;  // back 2 + hint 1 + flags 1 + delta 5
constexpr std::uint64_t kMaxVersionDelta = (std::uint64_t{1} << 40) - 1;
constexpr std::size_t kLidBytes = 6;

// Log entry flags: the operation, and whether the back-pointer names the
// entry this one replaces (same key: a sorted item, or a log entry when it
// points at or past the sorted block's end) rather than the first greater
// sorted item (a key new to the node; sorted_end when there is none).
// Readers need the bit to merge without comparing keys.
enum : std::uint8_t { kOpInsert = 1, kOpUpdate = 2, kOpDelete = 3, kOpMask = 3, kReplaces = 4 };

struct Header {
  NodeType type = NodeType::kLeaf;
  std::uint8_t level = 0;
  Lid leftmost = kNoLid;
  bool locked = false;
  std::uint32_t seq = 0;
  std::uint32_t size = kSortedStart;
  Version version = 0;
  std::uint64_t old_version = 0;
  Lid left = kNoLid, right = kNoLid;
  std::uint16_t sorted_end = kSortedStart;
  std::uint16_t shortcuts = 0;

  bool interior() const { return type == NodeType::kInterior; }
  // Sane enough to parse: a torn or garbage header fails here.
  bool plausible() const;
};

std::uint64_t pack_word0(NodeType type, std::uint8_t level, Lid leftmost);
std::uint64_t pack_lock_word(bool locked, std::uint32_t seq, std::uint32_t size);
std::uint64_t pack_sibling_word(Lid lid, std::uint16_t extra);
inline bool lock_bit(std::uint64_t w1) { return (w1 >> 63) != 0; }
inline std::uint32_t seq_of(std::uint64_t w1) { return static_cast<std::uint32_t>(w1 >> 32) & 0x7fffffffu; }
inline std::uint32_t size_of(std::uint64_t w1) { return static_cast<std::uint32_t>(w1); }

// Decodes the 48 header bytes (as copied by copy_node_bytes).
Header decode_header(const std::byte* bytes);

// Atomic header-word access on a live buffer (writers).
std::uint64_t load_word(NodeAddress node, int word);
void store_word(std::byte* node, int word, std::uint64_t value);
bool cas_word(std::byte* node, int word, std::uint64_t& expected, std::uint64_t desired);
void write_header(std::byte* node, const Header& h);

// A local copy of the parts of one node a request has read, at their node
// offsets, so every parser works with node offsets.
struct Image {
  std::array<std::byte, kNodeBytes> bytes{};
  Header header;
};

struct Shortcut {
  std::uint16_t offset = 0;
  std::string_view key;  // into the image's shortcut block
};

// Segment boundaries of a node: shortcuts.size() + 1 segments; segment i
// spans [start(i), start(i + 1)), the last ends at sorted_end.
struct Segments {
  std::vector<Shortcut> shortcuts;
  std::uint16_t sorted_end = kSortedStart;
  std::size_t count() const { return shortcuts.size() + 1; }
  std::uint16_t start(std::size_t i) const {
    return i == 0 ? static_cast<std::uint16_t>(kSortedStart)
                  : i <= shortcuts.size() ? shortcuts[i - 1].offset : sorted_end;
  }
  std::uint16_t end(std::size_t i) const { return start(i + 1); }
  // The segment holding key's predecessor: the last boundary <= key.
  std::size_t find(std::string_view key) const;
};

// Parses the shortcut block; nullopt if malformed.
std::optional<Segments> parse_shortcuts(const Image& image);

struct SortedItem {
  std::uint16_t offset = 0;
  std::string_view key;
  std::string_view value;  // leaves
  Lid child = kNoLid;      // interior nodes
};
// Appends segment i's items; false if malformed (items parsed so far kept).
bool parse_segment(const Image& image, const Segments& segs, std::size_t i,
                   std::vector<SortedItem>& out);

// In-place access for writers (section 3.4's fast path): the writer reads
// its leaf's own bytes under the leaf's lock, or an interior buffer that
// never changes in place, without copying or allocating. `node` points at
// a whole buffer's bytes (a live one or an Image's), offsets are node
// offsets, and every read is bounds-checked like the parsers'.

// One segment of the sorted block: [start, end), and the boundary key
// whose bytes live in the shortcut block (empty for segment 0).
struct SegmentRef {
  std::size_t index = 0;
  std::uint16_t start = kSortedStart, end = kSortedStart;
  std::string_view boundary;
};
// The segment holding key's predecessor (the last boundary <= key), found
// by scanning the shortcut block in place; nullopt if it is malformed.
std::optional<SegmentRef> find_segment(const std::byte* node, const Header& h, std::string_view key);

// Walks one segment's items in order.
class SegmentCursor {
 public:
  SegmentCursor(const std::byte* node, bool interior, const SegmentRef& seg)
      : node_(node), interior_(interior), pos_(seg.start), end_(seg.end), boundary_(seg.boundary),
        first_(seg.index > 0) {}
  // The next item; false at the end or at a malformed item (then !ok()).
  bool next(SortedItem& item);
  bool ok() const { return ok_; }

 private:
  const std::byte* node_;
  bool interior_;
  std::size_t pos_, end_;
  std::string_view boundary_;
  bool first_;  // the boundary key's bytes live in the shortcut block
  bool ok_ = true;
};

struct LogEntry {
  std::uint16_t offset = 0, back = 0;
  std::uint8_t hint = 0, flags = 0;
  Version version = 0;
  std::string_view key, value;
  // Resolved by resolve_log: the sorted offset it sits before (a new key)
  // or at (it replaces that sorted item), and the group it belongs to:
  // -1 for a sorted item's group, else the index of the log entry that
  // introduced the key.
  std::uint16_t anchor = 0;
  bool at = false;
  int root = -1;
  bool live_op() const { return (flags & kOpMask) != kOpDelete; }
};
// Walks a leaf's log entries [sorted_end, size) in append order, stopping
// at the first malformed one. Versions are node version + delta; anchor,
// at and root are left unresolved.
class LogCursor {
 public:
  LogCursor(const std::byte* node, const Header& h)
      : node_(node), base_(h.version), pos_(h.sorted_end), end_(std::min<std::size_t>(h.size, kNodeBytes)) {}
  bool next(LogEntry& e);

 private:
  const std::byte* node_;
  Version base_;
  std::size_t pos_, end_;
};
// The most entries a log may hold (order hints are one byte).
constexpr std::size_t kMaxLogEntries = 256;

// Parses [sorted_end, size) of a leaf image; stops at the first malformed
// entry. Versions are node version + delta.
std::vector<LogEntry> parse_log(const Image& image);
// The log's sorted order from the order hints alone (section 4.3): entry i
// is inserted at position hint_i of the order built so far; no key is
// compared. Bad hints are clamped.
std::vector<int> order_by_hints(const std::vector<LogEntry>& log);
// Fills anchor/at/root; entries whose back-pointer names no earlier entry
// get root = -2 (ignored).
void resolve_log(std::vector<LogEntry>& log, std::uint16_t sorted_end);

// One key of a leaf as seen at a read version: the newest entry <= rv.
struct LeafItem {
  std::string_view key, value;
  bool live = true;
  std::uint16_t latest = 0;  // offset of the newest entry (a writer's back-pointer)
};

// A leaf's log resolved at one read version, then merged with any range of
// sorted segments through the back-pointers.
class LeafMerger {
 public:
  LeafMerger(const Image& image, std::vector<LogEntry> log, Version rv);
  // Keys of segments [a, b] in order (log keys new to the node included
  // where they belong: a key before segment a's first item belongs to a-1).
  std::vector<LeafItem> merge(const Segments& segs, std::size_t a, std::size_t b,
                              bool* ok = nullptr) const;
  // The same into `out` (cleared first), so a caller can reuse its buffer.
  void merge_into(const Segments& segs, std::size_t a, std::size_t b, std::vector<LeafItem>& out,
                  bool* ok = nullptr) const;
  const std::vector<LogEntry>& log() const { return log_; }

 private:
  const Image& image_;
  std::vector<LogEntry> log_;
  std::vector<int> order_;           // log indices in key order
  std::vector<int> winner_of_root_;  // per log entry that roots a group
  std::vector<std::pair<std::uint16_t, int>> winner_at_;  // sorted offset -> entry
  Version rv_;
};

// Builds a node's sorted block and shortcuts into `node` (an unpublished,
// zeroed buffer) and writes the whole header. Returns false if the items do
// not fit in `limit` bytes. Shortcut keys are chosen while copying (section
// 3.4): segments of similar size, at least kMinSegmentBytes, as many as the
// shortcut block holds.
struct BuildItem {
  std::string_view key;
  std::string_view value;  // leaves
  Lid child = kNoLid;      // interior
};
bool build_node(std::byte* node, const Header& header, const std::vector<BuildItem>& items,
                std::size_t limit = kNodeBytes);
std::size_t item_bytes(const BuildItem& item, bool interior);

// Encodes one log entry; its size is kLogEntryHeaderBytes + 4 + key + value.
std::size_t log_entry_bytes(std::string_view key, std::string_view value);
void encode_log_entry(std::byte* out, std::uint16_t back, std::uint8_t hint, std::uint8_t flags,
                      std::uint64_t delta, std::string_view key, std::string_view value);

// Inline so the writers' in-place searches and the parsers' loops do not
// pay a call per item.
namespace detail {
inline std::uint16_t get_u16(const std::byte* p) {
  std::uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
inline std::uint64_t get_u48(const std::byte* p) {
  std::uint64_t v = 0;
  std::memcpy(&v, p, 6);
  return v;
}
inline std::uint64_t get_u40(const std::byte* p) {
  std::uint64_t v = 0;
  std::memcpy(&v, p, 5);
  return v;
}
inline std::string_view view(const std::byte* node, std::size_t offset, std::size_t length) {
  return {reinterpret_cast<const char*>(node) + offset, length};
}
}  // namespace detail

inline bool SegmentCursor::next(SortedItem& item) {
  if (pos_ >= end_ || !ok_) return false;
  ok_ = false;  // until the item parses
  if (end_ > kNodeBytes) return false;
  item.offset = static_cast<std::uint16_t>(pos_);
  std::size_t pos = pos_;
  if (first_) {
    item.key = boundary_;
    first_ = false;
  } else {
    if (pos + 2 > end_) return false;
    const std::uint16_t klen = detail::get_u16(node_ + pos);
    pos += 2;
    if (klen == 0 || klen > kMaxKeyBytes || pos + klen > end_) return false;
    item.key = detail::view(node_, pos, klen);
    pos += klen;
  }
  if (interior_) {
    if (pos + kLidBytes > end_) return false;
    item.child = detail::get_u48(node_ + pos);
    item.value = {};
    pos += kLidBytes;
  } else {
    if (pos + 2 > end_) return false;
    const std::uint16_t vlen = detail::get_u16(node_ + pos);
    pos += 2;
    if (vlen > kMaxValueBytes || pos + vlen > end_) return false;
    item.value = detail::view(node_, pos, vlen);
    item.child = kNoLid;
    pos += vlen;
  }
  pos_ = pos;
  ok_ = true;
  return true;
}

inline bool LogCursor::next(LogEntry& e) {
  std::size_t pos = pos_;
  if (pos + kLogEntryHeaderBytes + 4 > end_) return false;
  e.offset = static_cast<std::uint16_t>(pos);
  e.back = detail::get_u16(node_ + pos);
  e.hint = static_cast<std::uint8_t>(node_[pos + 2]);
  e.flags = static_cast<std::uint8_t>(node_[pos + 3]);
  e.version = base_ + detail::get_u40(node_ + pos + 4);
  pos += kLogEntryHeaderBytes;
  const std::uint16_t klen = detail::get_u16(node_ + pos);
  pos += 2;
  if (klen == 0 || klen > kMaxKeyBytes || pos + klen + 2 > end_) return false;
  e.key = detail::view(node_, pos, klen);
  pos += klen;
  const std::uint16_t vlen = detail::get_u16(node_ + pos);
  pos += 2;
  if (vlen > kMaxValueBytes || pos + vlen > end_) return false;
  e.value = detail::view(node_, pos, vlen);
  pos += vlen;
  if ((e.flags & kOpMask) == 0) return false;
  pos_ = pos;
  return true;
}

}  // namespace forein::offload::fpga::layout

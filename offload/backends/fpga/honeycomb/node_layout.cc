// Node buffer encoding and parsing (node_layout.h).
#include "fpga/honeycomb/node_layout.h"

#include <algorithm>
#include <atomic>
#include <cstring>

namespace forein::offload::fpga::layout {
namespace {

constexpr std::uint64_t kLidMask = kMaxLid;
using detail::get_u16;
using detail::get_u48;
using detail::view;

void put_u16(std::byte* p, std::size_t v) {
  const auto x = static_cast<std::uint16_t>(v);
  std::memcpy(p, &x, 2);
}
void put_u48(std::byte* p, std::uint64_t v) { std::memcpy(p, &v, 6); }
std::uint64_t word_at(const std::byte* bytes, int w) {
  std::uint64_t v;
  std::memcpy(&v, bytes + 8 * w, 8);
  return v;
}
std::atomic_ref<std::uint64_t> word_ref(const std::byte* node, int w) {
  return std::atomic_ref<std::uint64_t>(
      *reinterpret_cast<std::uint64_t*>(const_cast<std::byte*>(node) + 8 * w));
}
std::string_view view(const Image& image, std::size_t offset, std::size_t length) {
  return view(image.bytes.data(), offset, length);
}

}  // namespace

bool Header::plausible() const {
  if (type != NodeType::kLeaf && type != NodeType::kInterior) return false;
  if (sorted_end < kSortedStart || sorted_end > kNodeBytes) return false;
  if (size < sorted_end || size > kNodeBytes) return false;
  if (interior() && (level == 0 || size != sorted_end)) return false;
  if (!interior() && level != 0) return false;
  return shortcuts <= kShortcutBytes / 5;
}

std::uint64_t pack_word0(NodeType type, std::uint8_t level, Lid leftmost) {
  return static_cast<std::uint64_t>(type) | (std::uint64_t{level} << 8) | ((leftmost & kLidMask) << 16);
}
std::uint64_t pack_lock_word(bool locked, std::uint32_t seq, std::uint32_t size) {
  return std::uint64_t{size} | (std::uint64_t{seq & 0x7fffffffu} << 32) |
         (locked ? std::uint64_t{1} << 63 : 0);
}
std::uint64_t pack_sibling_word(Lid lid, std::uint16_t extra) {
  return (lid & kLidMask) | (std::uint64_t{extra} << 48);
}

Header decode_header(const std::byte* bytes) {
  Header h;
  const std::uint64_t w0 = word_at(bytes, 0), w1 = word_at(bytes, 1);
  const std::uint64_t w4 = word_at(bytes, 4), w5 = word_at(bytes, 5);
  h.type = static_cast<NodeType>(w0 & 0xff);
  h.level = static_cast<std::uint8_t>(w0 >> 8);
  h.leftmost = w0 >> 16;
  h.locked = lock_bit(w1);
  h.seq = seq_of(w1);
  h.size = size_of(w1);
  h.version = word_at(bytes, 2);
  h.old_version = word_at(bytes, 3);
  h.left = w4 & kLidMask;
  h.sorted_end = static_cast<std::uint16_t>(w4 >> 48);
  h.right = w5 & kLidMask;
  h.shortcuts = static_cast<std::uint16_t>(w5 >> 48);
  return h;
}

std::uint64_t load_word(NodeAddress node, int word) {
  return word_ref(node, word).load(std::memory_order_acquire);
}
void store_word(std::byte* node, int word, std::uint64_t value) {
  word_ref(node, word).store(value, std::memory_order_release);
}
bool cas_word(std::byte* node, int word, std::uint64_t& expected, std::uint64_t desired) {
  return word_ref(node, word).compare_exchange_strong(expected, desired, std::memory_order_acq_rel,
                                                      std::memory_order_acquire);
}
void write_header(std::byte* node, const Header& h) {
  store_word(node, 0, pack_word0(h.type, h.level, h.leftmost));
  store_word(node, 1, pack_lock_word(h.locked, h.seq, h.size));
  store_word(node, 2, h.version);
  store_word(node, 3, h.old_version);
  store_word(node, 4, pack_sibling_word(h.left, h.sorted_end));
  store_word(node, 5, pack_sibling_word(h.right, h.shortcuts));
}

std::size_t Segments::find(std::string_view key) const {
  // Shortcut keys ascend; the last one <= key names the segment.
  std::size_t lo = 0, hi = shortcuts.size();
  while (lo < hi) {
    const std::size_t mid = (lo + hi) / 2;
    if (shortcuts[mid].key <= key) lo = mid + 1; else hi = mid;
  }
  return lo;  // segment lo: shortcuts[lo - 1] is its boundary
}

std::optional<Segments> parse_shortcuts(const Image& image) {
  const Header& h = image.header;
  Segments segs;
  segs.sorted_end = h.sorted_end;
  std::size_t pos = kHeaderBytes;
  std::uint16_t prev = kSortedStart;
  for (std::size_t i = 0; i < h.shortcuts; ++i) {
    if (pos + 4 > kFirstBlockBytes) return std::nullopt;
    const std::uint16_t offset = get_u16(image.bytes.data() + pos);
    const std::uint16_t klen = get_u16(image.bytes.data() + pos + 2);
    pos += 4;
    if (klen == 0 || klen > kMaxKeyBytes || pos + klen > kFirstBlockBytes) return std::nullopt;
    if (offset <= prev || offset >= h.sorted_end) return std::nullopt;
    segs.shortcuts.push_back({offset, view(image, pos, klen)});
    pos += klen;
    prev = offset;
  }
  return segs;
}

std::optional<SegmentRef> find_segment(const std::byte* node, const Header& h, std::string_view key) {
  // Shortcut entries have variable length, so walk them once (validating
  // each as parse_shortcuts does), then binary-search the ascending keys:
  // key comparisons, not the walk, are what costs.
  constexpr std::size_t kMaxShortcuts = kShortcutBytes / 5;
  std::array<std::uint16_t, kMaxShortcuts> offsets;
  std::array<std::uint16_t, kMaxShortcuts> key_at;  // the key's position in the block
  const std::size_t n = h.shortcuts;
  if (n > kMaxShortcuts) return std::nullopt;
  std::size_t pos = kHeaderBytes;
  std::uint16_t prev = kSortedStart;
  for (std::size_t i = 0; i < n; ++i) {
    if (pos + 4 > kFirstBlockBytes) return std::nullopt;
    const std::uint16_t offset = get_u16(node + pos);
    const std::uint16_t klen = get_u16(node + pos + 2);
    pos += 4;
    if (klen == 0 || klen > kMaxKeyBytes || pos + klen > kFirstBlockBytes) return std::nullopt;
    if (offset <= prev || offset >= h.sorted_end) return std::nullopt;
    offsets[i] = offset;
    key_at[i] = static_cast<std::uint16_t>(pos);
    pos += klen;
    prev = offset;
  }
  auto boundary = [&](std::size_t i) {
    const std::size_t at = key_at[i];
    return view(node, at, get_u16(node + at - 2));
  };
  std::size_t lo = 0, hi = n;  // segment lo: the last boundary <= key is lo - 1
  while (lo < hi) {
    const std::size_t mid = (lo + hi) / 2;
    if (boundary(mid) <= key) lo = mid + 1; else hi = mid;
  }
  SegmentRef seg;
  seg.index = lo;
  seg.start = lo == 0 ? static_cast<std::uint16_t>(kSortedStart) : offsets[lo - 1];
  seg.end = lo < n ? offsets[lo] : h.sorted_end;
  if (lo > 0) seg.boundary = boundary(lo - 1);
  return seg;
}

bool parse_segment(const Image& image, const Segments& segs, std::size_t i,
                   std::vector<SortedItem>& out) {
  if (i >= segs.count()) return false;
  const SegmentRef seg{i, segs.start(i), segs.end(i), i > 0 ? segs.shortcuts[i - 1].key : std::string_view{}};
  if (seg.end > kNodeBytes || seg.start > seg.end) return false;
  SegmentCursor cursor(image.bytes.data(), image.header.interior(), seg);
  SortedItem item;
  while (cursor.next(item)) out.push_back(item);
  return cursor.ok();
}

std::vector<LogEntry> parse_log(const Image& image) {
  std::vector<LogEntry> log;
  log.reserve(16);
  LogCursor cursor(image.bytes.data(), image.header);
  LogEntry e;
  while (log.size() < kMaxLogEntries && cursor.next(e)) log.push_back(e);
  return log;
}

std::vector<int> order_by_hints(const std::vector<LogEntry>& log) {
  // The indirection array of section 4.3: each entry lands at the index it
  // had in the log's sorted order when it was appended. (In hardware the
  // shift is one parallel step; here it is a short memmove.)
  std::vector<int> order;
  order.reserve(log.size());
  for (std::size_t i = 0; i < log.size(); ++i) {
    const std::size_t at = std::min<std::size_t>(log[i].hint, order.size());
    order.insert(order.begin() + static_cast<std::ptrdiff_t>(at), static_cast<int>(i));
  }
  return order;
}

void resolve_log(std::vector<LogEntry>& log, std::uint16_t sorted_end) {
  for (std::size_t i = 0; i < log.size(); ++i) {
    LogEntry& e = log[i];
    if ((e.flags & kReplaces) != 0 && e.back >= sorted_end) {
      // Replaces an earlier log entry: join its group. Offsets ascend.
      const auto it = std::lower_bound(log.begin(), log.begin() + static_cast<std::ptrdiff_t>(i), e.back,
                                       [](const LogEntry& x, std::uint16_t off) { return x.offset < off; });
      if (it == log.begin() + static_cast<std::ptrdiff_t>(i) || it->offset != e.back || it->root == -2) {
        e.root = -2;
        continue;
      }
      e.anchor = it->anchor;
      e.at = it->at;
      e.root = it->root;
    } else if ((e.flags & kReplaces) != 0) {
      e.anchor = e.back;
      e.at = true;
      e.root = -1;
    } else {
      e.anchor = e.back;
      e.at = false;
      e.root = static_cast<int>(i);
    }
  }
}

LeafMerger::LeafMerger(const Image& image, std::vector<LogEntry> log, Version rv)
    : image_(image), log_(std::move(log)), rv_(rv) {
  resolve_log(log_, image.header.sorted_end);
  order_ = order_by_hints(log_);
  winner_of_root_.assign(log_.size(), -1);
  // Versions ascend in append order (appends hold the leaf lock), so the
  // last visible entry of a group is its newest.
  for (std::size_t i = 0; i < log_.size(); ++i) {
    const LogEntry& e = log_[i];
    if (e.version > rv_ || e.root == -2) continue;
    if (e.root >= 0) {
      winner_of_root_[static_cast<std::size_t>(e.root)] = static_cast<int>(i);
    } else {
      auto it = std::find_if(winner_at_.begin(), winner_at_.end(),
                             [&](const auto& p) { return p.first == e.anchor; });
      if (it == winner_at_.end()) winner_at_.emplace_back(e.anchor, static_cast<int>(i));
      else it->second = static_cast<int>(i);
    }
  }
  std::sort(winner_at_.begin(), winner_at_.end());
}

std::vector<LeafItem> LeafMerger::merge(const Segments& segs, std::size_t a, std::size_t b,
                                        bool* ok) const {
  std::vector<LeafItem> out;
  merge_into(segs, a, b, out, ok);
  return out;
}

void LeafMerger::merge_into(const Segments& segs, std::size_t a, std::size_t b, std::vector<LeafItem>& out,
                            bool* ok) const {
  out.clear();
  const bool in_bounds = a <= b && b < segs.count();
  // Reserve once for items of 16 bytes or more (a guess: smaller ones
  // only cost a few reallocations).
  if (in_bounds) out.reserve((segs.end(b) - segs.start(a)) / 16 + 1 + log_.size());
  // Log keys new to the node belong to [a, b] when they sit before an item
  // after segment a's first (or anywhere from the start, for segment 0),
  // up to and including the next segment's first item.
  const std::uint16_t lower = segs.start(std::min(a, segs.count() - 1));
  const std::uint16_t upper = segs.end(std::min(b, segs.count() - 1));
  auto in_range = [&](const LogEntry& e) {
    return (a == 0 ? e.anchor >= lower : e.anchor > lower) && e.anchor <= upper;
  };
  auto emit_root = [&](int i) {
    const int w = winner_of_root_[static_cast<std::size_t>(i)];
    if (w < 0) return;
    const LogEntry& e = log_[static_cast<std::size_t>(w)];
    out.push_back({log_[static_cast<std::size_t>(i)].key, e.value, e.live_op(), e.offset});
  };
  std::size_t j = 0;
  auto next_root = [&]() {
    while (j < order_.size()) {
      const LogEntry& e = log_[static_cast<std::size_t>(order_[j])];
      if (e.root == order_[j] && in_range(e)) return true;
      ++j;
    }
    return false;
  };
  auto emit_sorted = [&](const SortedItem& s) {
    while (next_root() && log_[static_cast<std::size_t>(order_[j])].anchor <= s.offset) emit_root(order_[j++]);
    const auto it = std::lower_bound(winner_at_.begin(), winner_at_.end(), std::make_pair(s.offset, -1));
    if (it != winner_at_.end() && it->first == s.offset) {
      const LogEntry& e = log_[static_cast<std::size_t>(it->second)];
      out.push_back({s.key, e.value, e.live_op(), e.offset});
    } else {
      out.push_back({s.key, s.value, true, s.offset});
    }
  };
  // Sorted items straight from the node bytes (no intermediate vector),
  // up to the first malformed one, as parse_segment would give them.
  bool good = in_bounds;
  for (std::size_t i = a; good && i <= b; ++i) {
    const SegmentRef seg{i, segs.start(i), segs.end(i), i > 0 ? segs.shortcuts[i - 1].key : std::string_view{}};
    if (seg.end > kNodeBytes || seg.start > seg.end) {
      good = false;
      break;
    }
    SegmentCursor cursor(image_.bytes.data(), image_.header.interior(), seg);
    SortedItem item;
    while (cursor.next(item)) emit_sorted(item);
    good = cursor.ok();
  }
  if (ok != nullptr) *ok = good;
  while (next_root()) emit_root(order_[j++]);
}

std::size_t item_bytes(const BuildItem& item, bool interior) {
  return 2 + item.key.size() + (interior ? kLidBytes : 2 + item.value.size());
}

bool build_node(std::byte* node, const Header& header, const std::vector<BuildItem>& items,
                std::size_t limit) {
  const bool interior = header.type == NodeType::kInterior;
  limit = std::min(limit, kNodeBytes);
  std::size_t total = 0, key_total = 0;
  for (const BuildItem& it : items) {
    total += item_bytes(it, interior);
    key_total += it.key.size();
  }
  // As many segments as the shortcut block can name at the average key
  // size, none smaller than kMinSegmentBytes.
  const std::size_t avg_key = items.empty() ? 1 : std::max<std::size_t>(1, key_total / items.size());
  const std::size_t max_shortcuts = kShortcutBytes / (4 + avg_key);
  const std::size_t segments = std::max<std::size_t>(1, std::min(total / kMinSegmentBytes, max_shortcuts + 1));
  const std::size_t target = std::max(kMinSegmentBytes, total / segments);

  std::size_t pos = kSortedStart, sc_pos = kHeaderBytes, seg_bytes = 0, remaining = total;
  std::uint16_t shortcuts = 0;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const BuildItem& it = items[i];
    const std::size_t full = item_bytes(it, interior);
    const bool boundary = i > 0 && seg_bytes >= target && remaining >= kMinSegmentBytes &&
                          sc_pos + 4 + it.key.size() <= kFirstBlockBytes;
    const std::size_t need = boundary ? full - 2 - it.key.size() : full;
    if (pos + need > limit) return false;
    if (boundary) {
      put_u16(node + sc_pos, pos);
      put_u16(node + sc_pos + 2, it.key.size());
      std::memcpy(node + sc_pos + 4, it.key.data(), it.key.size());
      sc_pos += 4 + it.key.size();
      ++shortcuts;
      seg_bytes = 0;
    } else {
      put_u16(node + pos, it.key.size());
      std::memcpy(node + pos + 2, it.key.data(), it.key.size());
      pos += 2 + it.key.size();
    }
    if (interior) {
      put_u48(node + pos, it.child);
      pos += kLidBytes;
    } else {
      put_u16(node + pos, it.value.size());
      if (!it.value.empty()) std::memcpy(node + pos + 2, it.value.data(), it.value.size());
      pos += 2 + it.value.size();
    }
    seg_bytes += full;
    remaining -= full;
  }
  Header h = header;
  h.sorted_end = static_cast<std::uint16_t>(pos);
  h.size = static_cast<std::uint32_t>(pos);
  h.shortcuts = shortcuts;
  write_header(node, h);
  return true;
}

std::size_t log_entry_bytes(std::string_view key, std::string_view value) {
  return kLogEntryHeaderBytes + 4 + key.size() + value.size();
}

void encode_log_entry(std::byte* out, std::uint16_t back, std::uint8_t hint, std::uint8_t flags,
                      std::uint64_t delta, std::string_view key, std::string_view value) {
  put_u16(out, back);
  out[2] = static_cast<std::byte>(hint);
  out[3] = static_cast<std::byte>(flags);
  std::memcpy(out + 4, &delta, 5);
  std::size_t pos = kLogEntryHeaderBytes;
  put_u16(out + pos, key.size());
  std::memcpy(out + pos + 2, key.data(), key.size());
  pos += 2 + key.size();
  put_u16(out + pos, value.size());
  if (!value.empty()) std::memcpy(out + pos + 2, value.data(), value.size());
}

}  // namespace forein::offload::fpga::layout

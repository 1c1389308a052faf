// The on-page layout of a tree node, and a view that reads and edits it.
//
//   [0, 64)    header (below); bytes [0, 12) belong to the page store
//   [64, ...)  slot array in key order: 16 bytes per entry in inner nodes,
//              24 in leaves (below)
//   [..., end) heap, growing down from the page end: long keys, long
//              values, and the node's hi key; lo's bytes are always the
//              last ones
//
// A slot is [word 8][heap offset 2][key length 2][aux 4], plus in a leaf
// [value 8]. It holds the key's word, so the search compares 8-byte
// integers and touches the heap only when two words tie. Keys of up to 8
// bytes live entirely in the slot (word + length). In a leaf `aux` is the
// value length; a value of up to 8 bytes sits in the slot itself, so a
// lookup reads it from the cache line its search already brought in, and
// a longer one follows the key bytes (if any) in the heap. In an inner node
// `aux` is the child page id and slot i's key is the lowest key of child i
// (slot 0's key equals the node's lo).
//
// forein/leaf_run.h reads leaf slots with these offsets too (in-place
// scans of single-threaded hosts).
//
// Fixed-shape leaves (format 3): a leaf whose keys all have one length
// and whose values all have one length, both of up to 8 bytes (integer
// keys with integer or rowid values: the common case), stores 16-byte
// slots [word 8][value 8] and the two lengths in its flags (kFlagFixed).
// A lookup's window is then 2/3 the lines, the value is in the line its
// word is, and a page holds 1.5x the entries. The first entry of an empty
// leaf sets its shape; an entry of another shape rewrites the leaf in the
// 24-byte layout (to_general(): fits() counts that rewrite's bytes).
//
// Leaves written before format 2 have 16-byte slots and every value in the
// heap; their header lacks kFlagInlineValues and kFlagFixed, and they keep
// working (a split or merge rewrites them in the current layout).
//
// Optimistic readers call Node's const members on a page a writer may be
// changing (latch.h): every access goes through page_bytes.h, and every
// offset or length read from the page is clamped to the page, so a torn
// read yields wrong values (which the version check then discards), never
// an access outside the page. The members that return views into the page
// (lo(), hi(), value_at(), StoredKey::long_bytes) are for writers holding
// the exclusive latch and for private copies; readers use the comparing and
// copying forms.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "forein/key.h"
#include "forein/page_store.h"
#include "page_bytes.h"

namespace forein::detail {

inline constexpr std::uint32_t kNodeMagic = 0x464E4F44;  // "FNOD"
inline constexpr std::uint32_t kMetaMagic = 0x464D4554;  // "FMET"

inline constexpr std::uint16_t kFlagDead = 1;   // merged away; follow right
inline constexpr std::uint16_t kFlagHiInf = 2;  // hi is +infinity
inline constexpr std::uint16_t kFlagInlineValues = 4;  // 24-byte leaf slots
inline constexpr std::uint16_t kFlagFixed = 8;          // 16-byte fixed-shape leaf slots
// A fixed-shape leaf's key length (flag bits 8-11) and value length (bits
// 12-15), clamped to 8 so that a torn or corrupt header stays in the slot.
inline constexpr unsigned kFixedKeyLenShift = 8, kFixedValueLenShift = 12;
inline constexpr std::uint16_t kFixedShapeBits = 0xFF00;
inline std::size_t fixed_key_len(std::uint16_t flags) {
  const std::size_t n = (flags >> kFixedKeyLenShift) & 0xF;
  return n <= 8 ? n : 8;
}
inline std::size_t fixed_value_len(std::uint16_t flags) {
  const std::size_t n = (flags >> kFixedValueLenShift) & 0xF;
  return n <= 8 ? n : 8;
}

inline constexpr std::size_t kHeaderSize = 64;
inline constexpr std::size_t kSlotSize = 16;      // inner nodes, format-1 leaves
inline constexpr std::size_t kLeafSlotSize = 24;  // leaves: slot + value of up to 8 bytes
inline constexpr std::size_t kFixedSlotSize = 16;  // fixed-shape leaves: word + value
inline constexpr std::size_t kInlineValueMax = 8;

// Header field offsets.
namespace off {
inline constexpr std::size_t kMagic = 12;
inline constexpr std::size_t kVersion = 16;
inline constexpr std::size_t kRight = 24;
inline constexpr std::size_t kLeft = 28;
inline constexpr std::size_t kLevel = 32;
inline constexpr std::size_t kCount = 34;
inline constexpr std::size_t kFlags = 36;
inline constexpr std::size_t kHeapStart = 38;
inline constexpr std::size_t kGarbage = 40;
inline constexpr std::size_t kLoLen = 42;  // lo's bytes always end the page
inline constexpr std::size_t kHiOff = 44;
inline constexpr std::size_t kHiLen = 46;
inline constexpr std::size_t kLoWord = 48;  // words of lo and hi: interpolation
inline constexpr std::size_t kHiWord = 56;  // bounds and hi checks in the
                                            // header's cache line
}  // namespace off

// A key being searched for, with its word computed once.
struct SearchKey {
  std::string_view bytes;
  Word word;
  explicit SearchKey(std::string_view k) : bytes(k), word(word_of(k)) {}
};

// A key stored in a node: its word and length, plus its bytes when longer
// than a word.
struct StoredKey {
  Word word;
  std::uint16_t len;
  const std::byte* long_bytes;  // null when len <= 8; read with page_bytes.h

  std::string to_string() const;
  void append_to(std::string& out) const;
};

// Compares a search key with a stored key in memcmp order. Equal words
// mean equal first 8 bytes with the shorter key zero-padded, so a key of up
// to 8 bytes is then a prefix of the other one.
inline int compare(const SearchKey& k, const StoredKey& s) {
  if (k.word != s.word) return k.word < s.word ? -1 : 1;
  const std::size_t klen = k.bytes.size();
  if (klen > kWordBytes && s.len > kWordBytes) {
    const std::size_t common = (klen < s.len ? klen : s.len) - kWordBytes;
    if (int c = compare_bytes(k.bytes.data() + kWordBytes, s.long_bytes + kWordBytes, common)) {
      return c;
    }
  }
  return klen < s.len ? -1 : (klen > s.len ? 1 : 0);
}

// Bytes an entry takes in an inner node or a leaf of the 24-byte layout:
// slot plus heap.
inline std::size_t entry_bytes(bool leaf, std::size_t key_len, std::size_t value_len) {
  const std::size_t key_heap = key_len > kWordBytes ? key_len : 0;
  if (!leaf) return kSlotSize + key_heap;
  return kLeafSlotSize + key_heap + (value_len > kInlineValueMax ? value_len : 0);
}

// The bytes a run of entries takes in one leaf built by appending them
// (Node::append_leaf): 16 each while they share one shape of up to 8-byte
// key and value, their 24-byte layout bytes otherwise. Builders and splits
// size leaves with it.
class LeafBytes {
 public:
  void add(std::size_t key_len, std::size_t value_len) {
    if (n_ == 0) {
      key_len_ = key_len;
      value_len_ = value_len;
      fixed_ = key_len <= kWordBytes && value_len <= kInlineValueMax;
    } else if (key_len != key_len_ || value_len != value_len_) {
      fixed_ = false;
    }
    ++n_;
    general_ += entry_bytes(true, key_len, value_len);
  }
  std::size_t bytes() const { return fixed_ ? n_ * kFixedSlotSize : general_; }
  std::size_t bytes_with(std::size_t key_len, std::size_t value_len) const {
    LeafBytes more = *this;
    more.add(key_len, value_len);
    return more.bytes();
  }

 private:
  std::size_t n_ = 0, key_len_ = 0, value_len_ = 0, general_ = 0;
  bool fixed_ = false;
};

class Node {
 public:
  Node(std::byte* page, std::uint32_t page_size) : p_(page), size_(page_size) {
    if (page != nullptr) set_layout(flags());
  }

  std::byte* page() const { return p_; }
  std::uint32_t page_size() const { return size_; }

  std::uint32_t magic() const { return load<std::uint32_t>(p_, off::kMagic); }
  bool is_node() const { return magic() == kNodeMagic; }
  std::uint64_t version() const { return load<std::uint64_t>(p_, off::kVersion); }
  PageId right() const { return load<PageId>(p_, off::kRight); }
  PageId left() const { return load<PageId>(p_, off::kLeft); }
  std::uint16_t level() const { return load<std::uint16_t>(p_, off::kLevel); }
  // Clamped to the slots a page can hold: a torn read stays inside the page.
  std::uint16_t count() const {
    const auto n = load<std::uint16_t>(p_, off::kCount);
    return n * stride_ <= size_ - kHeaderSize ? n : static_cast<std::uint16_t>(max_slots());
  }
  std::uint16_t flags() const { return load<std::uint16_t>(p_, off::kFlags); }
  bool dead() const { return flags() & kFlagDead; }
  bool hi_inf() const { return flags() & kFlagHiInf; }
  bool is_leaf() const { return level() == 0; }

  void set_version(std::uint64_t v) { store(p_, off::kVersion, v); }
  void bump_version() { set_version(version() + 1); }
  void set_right(PageId id) { store(p_, off::kRight, id); }
  void set_left(PageId id) { store(p_, off::kLeft, id); }
  void mark_dead() { store<std::uint16_t>(p_, off::kFlags, flags() | kFlagDead); }

  // Views into the page: exclusive latch or private copy only.
  std::string_view lo() const;
  std::string_view hi() const;  // meaningless when hi_inf()
  // Copies, and memcmp-order comparisons of a key with lo / hi: safe for
  // optimistic readers.
  std::string lo_copy() const { return copy_span(lo_span()); }
  std::string hi_copy() const { return copy_span(hi_span()); }
  int compare_with_lo(std::string_view key) const { return compare_span(key, lo_span()); }
  int compare_with_hi(std::string_view key) const { return compare_span(key, hi_span()); }
  bool lo_empty() const { return load<std::uint16_t>(p_, off::kLoLen) == 0; }

  // lo <= k, and k < hi.
  // Both compare words first: the words sit in the header's cache line,
  // while the keys' bytes sit at the far end of the page.
  bool above_lo(const SearchKey& k) const {
    const Word lw = load<Word>(p_, off::kLoWord);
    if (k.word != lw) return k.word > lw;
    return compare_with_lo(k.bytes) >= 0;
  }
  bool below_hi(const SearchKey& k) const {
    if (hi_inf()) return true;
    const Word hw = load<Word>(p_, off::kHiWord);
    if (k.word != hw) return k.word < hw;
    return compare_with_hi(k.bytes) < 0;
  }

  StoredKey key_at(std::size_t i) const {
    const std::size_t s = slot(i);
    if (fixed_) return {load<Word>(p_, s), static_cast<std::uint16_t>(key_len_), nullptr};
    const auto len = load<std::uint16_t>(p_, s + 10);
    if (len <= kWordBytes) return {load<Word>(p_, s), len, nullptr};
    return long_key_at(s, len);
  }
  // Leaves; a view (see above). Inline: in-place scans call it per row.
  std::string_view value_at(std::size_t i) const {
    const Span v = value_span(i);
    return {reinterpret_cast<const char*>(p_) + v.at, v.len};
  }
  // Leaves; reader-safe. An inline value is one aligned 8-byte load.
  void copy_value(std::size_t i, std::string* out) const {
    const std::size_t s = slot(i);
    const std::size_t len = fixed_ ? value_len_ : load<std::uint32_t>(p_, s + 12);
    if (fixed_ || value_inline(len)) {
      const std::uint64_t w = load<std::uint64_t>(p_, s + (fixed_ ? 8 : 16));
      out->resize(len);
      std::memcpy(out->data(), &w, len);
      return;
    }
    out->clear();
    append_value_to(i, *out);
  }
  void append_value_to(std::size_t i, std::string& out) const;  // leaves; reader-safe
  PageId child_at(std::size_t i) const { return load<PageId>(p_, slot(i) + 12); }
  void set_child_at(std::size_t i, PageId id) { store(p_, slot(i) + 12, id); }

  // First slot whose key is >= k (count() if none).
  std::size_t lower_bound(const SearchKey& k) const { return search<false>(k); }
  // First slot whose key is > k.
  std::size_t upper_bound(const SearchKey& k) const { return search<true>(k); }
  // Inner nodes: the slot whose child covers k.
  std::size_t child_index(const SearchKey& k) const {
    std::size_t i = upper_bound(k);
    return i == 0 ? 0 : i - 1;
  }
  bool key_equals(std::size_t i, const SearchKey& k) const {
    return i < count() && compare(k, key_at(i)) == 0;
  }

  // Space accounting. used_bytes() counts live slots and heap.
  std::size_t used_bytes() const;
  // used_bytes() once rewritten in the 24-byte leaf layout (what a leaf of
  // another layout, or a rewrite mixing shapes, takes).
  std::size_t general_layout_bytes() const;
  // The bytes of a node built from a's entries followed by b's (merges).
  static std::size_t merged_bytes(const Node& a, const Node& b);
  std::size_t capacity() const { return size_ - kHeaderSize; }
  // Bytes an entry adds to this node: in a fixed-shape leaf, an entry of
  // another shape adds the rewrite to the 24-byte layout too.
  std::size_t entry_size(std::size_t key_len, std::size_t value_len) const {
    const std::size_t key_heap = key_len > kWordBytes ? key_len : 0;
    if (!is_leaf()) return kSlotSize + key_heap;
    if (fixed_) {
      if (takes_fixed(key_len, value_len)) return kFixedSlotSize;
      return general_layout_bytes() - used_bytes() + entry_bytes(true, key_len, value_len);
    }
    return stride_ + key_heap + (value_inline(value_len) ? 0 : value_len);
  }
  bool fits(std::size_t key_len, std::size_t value_len) const {
    return used_bytes() + entry_size(key_len, value_len) <= capacity();
  }
  std::size_t slot_size() const { return stride_; }
  // A fixed-shape leaf (16-byte slots), and its key and value lengths.
  bool fixed() const { return fixed_; }
  std::size_t fixed_key_len() const { return key_len_; }
  std::size_t fixed_value_len() const { return value_len_; }
  // A leaf of the format-1 layout (16-byte slots, values in the heap).
  bool format1_leaf() const { return is_leaf() && !fixed_ && stride_ == kSlotSize; }

  // Edits; the caller holds the exclusive latch and has checked fits().
  void insert_leaf(std::size_t i, std::string_view key, std::string_view value);
  void insert_inner(std::size_t i, std::string_view key, PageId child);
  void remove_at(std::size_t i);
  // Replaces entry i's value in place if it fits, else returns false.
  bool replace_value(std::size_t i, std::string_view value);

  // Gives a node whose hi is +inf the finite hi `hi` (a split that keeps
  // every entry in the left node). Needs used_bytes() + hi.size() <=
  // capacity(); compacts the heap if the bytes do not fit its free gap.
  void set_hi(std::string_view hi);

  // Whole-node (re)initialisation, as done on a scratch page by builders.
  void init(std::uint16_t level, std::uint64_t version, std::string_view lo,
            std::optional<std::string_view> hi, PageId left, PageId right);

  // Appends in key order without checks (builders on scratch pages).
  void append_leaf(std::string_view key, std::string_view value) {
    insert_leaf(count(), key, value);
  }
  void append_inner(std::string_view key, PageId child) { insert_inner(count(), key, child); }

  // Structural sanity of the header and slot array (for corrupt pages):
  // returns an error text or empty.
  std::string layout_error() const;

  // Slots counted around the interpolation guess (a node with fewer is
  // binary-searched). A leaf of ~300 random keys misses its guess by ~9
  // slots (sigma ~ sqrt(n/4)), so 24 keep the answer inside nearly always.
  static constexpr std::size_t kSearchWindow = 24;
  // Fixed-shape leaves hold 1.5x the keys (~457 at 90% fill): 40 slots of
  // 16 bytes are the lines of 24 slots of 24 bytes, and miss the answer for
  // 2.6% of keys where 24 would for 17% (simulated over random keys;
  // measured: 40 faster than 32 and 24, docs/engine-benchmark.md).
  static constexpr std::size_t kFixedSearchWindow = 40;

 private:
  static std::size_t stride_of(std::uint16_t flags) {
    if (flags & kFlagFixed) return kFixedSlotSize;
    return (flags & kFlagInlineValues) ? kLeafSlotSize : kSlotSize;
  }
  void set_layout(std::uint16_t flags) {
    stride_ = stride_of(flags);
    fixed_ = (flags & kFlagFixed) != 0;
    key_len_ = detail::fixed_key_len(flags);
    value_len_ = detail::fixed_value_len(flags);
  }
  bool value_inline(std::size_t value_len) const {
    return stride_ == kLeafSlotSize && value_len <= kInlineValueMax;
  }
  // A fixed-shape leaf takes the entry as a 16-byte slot: its shape, or
  // any shape of up to 8-byte key and value while the leaf is empty.
  bool takes_fixed(std::size_t key_len, std::size_t value_len) const {
    if (count() == 0) return key_len <= kWordBytes && value_len <= kInlineValueMax;
    return key_len == key_len_ && value_len == value_len_;
  }
  void insert_fixed(std::size_t i, std::string_view key, std::string_view value);
  // Rewrites a fixed-shape leaf in the 24-byte layout, entries unchanged.
  void to_general();
  template <bool kStrict>
  std::size_t search(const SearchKey& k) const;
  StoredKey long_key_at(std::size_t slot_at, std::uint16_t len) const;
  std::size_t slot(std::size_t i) const { return kHeaderSize + i * stride_; }
  std::size_t max_slots() const { return (size_ - kHeaderSize) / stride_; }
  // [at, at + len) cut to the page.
  struct Span {
    std::size_t at, len;
  };
  Span clamp(std::size_t at, std::size_t len) const {
    if (at > size_) at = size_;
    if (len > size_ - at) len = size_ - at;
    return {at, len};
  }
  Span lo_span() const {
    const std::size_t len = load<std::uint16_t>(p_, off::kLoLen);
    return clamp(len <= size_ ? size_ - len : 0, len);
  }
  Span hi_span() const {
    return clamp(load<std::uint16_t>(p_, off::kHiOff), load<std::uint16_t>(p_, off::kHiLen));
  }
  Span value_span(std::size_t i) const {
    const std::size_t s = slot(i);
    if (fixed_) return {s + 8, value_len_};
    const auto value_len = load<std::uint32_t>(p_, s + 12);
    if (value_inline(value_len)) return {s + 16, value_len};
    const auto key_len = load<std::uint16_t>(p_, s + 10);
    std::size_t start = load<std::uint16_t>(p_, s + 8);
    if (key_len > kWordBytes) start += key_len;
    return clamp(start, value_len);
  }
  std::string copy_span(Span s) const {
    std::string out(s.len, '\0');
    read_bytes(p_ + s.at, s.len, out.data());
    return out;
  }
  int compare_span(std::string_view key, Span s) const {
    const std::size_t common = key.size() < s.len ? key.size() : s.len;
    if (const int c = compare_bytes(key.data(), p_ + s.at, common)) return c;
    return key.size() < s.len ? -1 : (key.size() > s.len ? 1 : 0);
  }
  std::uint16_t heap_start() const { return load<std::uint16_t>(p_, off::kHeapStart); }
  std::uint16_t garbage() const { return load<std::uint16_t>(p_, off::kGarbage); }
  void set_count(std::size_t n) { store(p_, off::kCount, static_cast<std::uint16_t>(n)); }
  // Reserves `n` contiguous heap bytes, compacting first if needed.
  std::size_t heap_alloc(std::size_t n);
  void add_garbage(std::size_t n) {
    store(p_, off::kGarbage, static_cast<std::uint16_t>(garbage() + n));
  }
  void compact();
  void insert_slot(std::size_t i, std::string_view key, std::uint32_t aux, std::string_view value);
  std::size_t heap_bytes_of(std::size_t i) const;

  std::byte* p_;
  std::uint32_t size_;
  // From the flags when the view was made (or its own last rewrite).
  std::size_t stride_ = kSlotSize;  // slot size
  bool fixed_ = false;
  std::size_t key_len_ = 0, value_len_ = 0;  // fixed-shape leaves
};

template <std::size_t kStride, bool kLeaf>
std::size_t word_search(const std::byte* page, std::size_t n, Word kw);

// Slot search: the first slot whose key is >= k (or > k when kStrict).
//
// Slots are ordered by word first, so the search runs on words alone and
// compares whole keys only among slots whose word equals k's (none or one
// for keys of up to 8 bytes). Keys spread evenly enough inside a node that
// interpolating on the header's lo and hi words lands within a few slots of
// the answer: word_search() looks in a window of kSearchWindow slots around
// the guess (below), and only when the answer lies outside it searches the
// rest, so the worst case stays logarithmic.
template <bool kStrict>
std::size_t Node::search(const SearchKey& k) const {
  const std::size_t n = count();
  const Word kw = k.word;
  std::size_t i;
  if (stride_ == kLeafSlotSize) {
    i = detail::word_search<kLeafSlotSize, true>(p_, n, kw);
  } else if (fixed_) {
    i = detail::word_search<kFixedSlotSize, true>(p_, n, kw);
  } else {
    i = detail::word_search<kSlotSize, false>(p_, n, kw);
  }
  const std::byte* base = p_ + kHeaderSize;
  const std::size_t stride = stride_;
  auto word_at = [&](std::size_t s) { return load<Word>(base, s * stride); };
  // Slots [i, j) share k's word: order them by the whole key.
  if (i == n || word_at(i) != kw) return i;
  auto before = [&](std::size_t s) {
    const int c = compare(k, key_at(s));
    return kStrict ? c >= 0 : c > 0;
  };
  if (i + 1 == n || word_at(i + 1) != kw) return before(i) ? i + 1 : i;
  std::size_t lo = i, hi = i + 1;
  while (hi < n && word_at(hi) == kw) hi = hi + (hi - i) < n ? hi + (hi - i) : n;
  while (lo < hi) {  // the answer is in [lo, hi]
    const std::size_t mid = (lo + hi) / 2;
    if (mid < n && word_at(mid) == kw && before(mid)) {
      lo = mid + 1;
    } else if (mid < n && word_at(mid) < kw) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

// The first slot in [from, from + kLen) whose word is >= kw, or from + kLen:
// lower_bound's steps with the length a constant, unrolled into a chain of
// loads and conditional moves.
template <std::size_t kStride, std::size_t kLen>
inline std::size_t fixed_lower_bound(const std::byte* base, std::size_t from, Word kw) {
  if constexpr (kLen == 1) {
    return from + (load<Word>(base, from * kStride) < kw ? 1 : 0);
  } else {
    constexpr std::size_t kHalf = kLen / 2;
    from = load<Word>(base, (from + kHalf - 1) * kStride) < kw ? from + kHalf : from;
    return fixed_lower_bound<kStride, kLen - kHalf>(base, from, kw);
  }
}

// Fetches the cache lines of kSlots slots of kStride bytes from `first`.
template <std::size_t kStride, std::size_t kSlots>
[[gnu::always_inline]] inline void prefetch_slots(const std::byte* first) {
  const auto line = reinterpret_cast<std::uintptr_t>(first) & ~std::uintptr_t{63};
#pragma GCC unroll 16
  for (std::size_t l = 0; l <= kSlots * kStride / 64; ++l) {
    __builtin_prefetch(reinterpret_cast<const void*>(line + 64 * l));
  }
}

// The first of kWindow slots (n >= kWindow) placed around slot `guess`.
template <std::size_t kWindow>
[[gnu::always_inline]] inline std::size_t window_around(std::size_t guess, std::size_t n) {
  const std::size_t from = guess > kWindow / 2 ? guess - kWindow / 2 : 0;
  return from > n - kWindow ? n - kWindow : from;
}

// The words a node's search interpolates between: the header's lo and hi
// words, ~0 for a hi of +inf.
[[gnu::always_inline]] inline std::pair<Word, Word> interpolation_bounds(const std::byte* page) {
  const Word hi = (load<std::uint16_t>(page, off::kFlags) & kFlagHiInf)
                      ? ~Word{0}
                      : load<Word>(page, off::kHiWord);
  return {load<Word>(page, off::kLoWord), hi};
}

// The slots word_search() looks in first for kw in a node of n slots of
// kStride bytes: kWindow slots from the one returned, or none (n returned)
// when it binary-searches the whole node.
template <std::size_t kStride, bool kLeaf>
inline constexpr std::size_t kWindowOf =
    kLeaf && kStride == kFixedSlotSize ? Node::kFixedSearchWindow : Node::kSearchWindow;
template <std::size_t kStride, bool kLeaf>
[[gnu::always_inline]] inline std::size_t search_window(const std::byte* page, std::size_t n,
                                                        Word kw) {
  constexpr std::size_t kWindow = kWindowOf<kStride, kLeaf>;
  const auto [lo_word, hi_word] = interpolation_bounds(page);
  if (n < kWindow || kw <= lo_word || kw >= hi_word) return n;
  // Floating point: a 128-bit integer divide costs more than the
  // search. Shifting first keeps both operands below 2^53, where the
  // conversion to double is one instruction.
  const double span = static_cast<double>(static_cast<std::int64_t>((hi_word - lo_word) >> 11));
  const double dist = static_cast<double>(static_cast<std::int64_t>((kw - lo_word) >> 11));
  // Signed conversions: one instruction each (n and the guess are small).
  const auto guess = static_cast<std::size_t>(static_cast<std::int64_t>(
      dist / (span + 1.0) * static_cast<double>(static_cast<std::int64_t>(n))));
  return window_around<kWindow>(guess, n);
}

// The first slot in [0, n) whose word is >= kw (n if none), in the node on
// `page` with slots of kStride bytes (a leaf's when kLeaf: its window is
// prefetched). Shared by Node::search() and the lookup fast path
// (tree_get.cc), which has no Node view. LeafWindows (leaf_windows.h)
// predicts search_window() from a copy of the header's fields.
template <std::size_t kStride, bool kLeaf>
inline std::size_t word_search(const std::byte* page, std::size_t n, Word kw) {
  constexpr std::size_t kSearchWindow = kWindowOf<kStride, kLeaf>;
  const std::byte* base = page + kHeaderSize;
  auto word_at = [&](std::size_t s) { return load<Word>(base, s * kStride); };
  // The first slot in [from, to) whose word is >= kw, or `to`.
  auto lower_bound = [&](std::size_t from, std::size_t to) {
    std::size_t len = to - from;
    if (len == 0) return from;
    while (len > 1) {
      const std::size_t half = len / 2;
      from = word_at(from + half - 1) < kw ? from + half : from;
      len -= half;
    }
    return from + (word_at(from) < kw ? 1 : 0);
  };
  const std::size_t from = search_window<kStride, kLeaf>(page, n, kw);
  if (from == n) return lower_bound(0, n);
  const std::size_t to = from + kSearchWindow;
  if constexpr (kLeaf) {
    // A leaf's window is usually out of cache: its lines are fetched
    // together, and a binary search inside it waits only for the few lines
    // it touches (counting would wait for all of them, measured slower).
    // An inner node's window is usually cached; it is binary-searched too
    // (counting its 24 words costs more instructions for no measured gain:
    // docs/engine-benchmark.md).
    prefetch_slots<kStride, kSearchWindow>(base + from * kStride);
  }
  // Outside the window the answer is most often just past its edge: the
  // window beside it is tried before the rest is binary-searched.
  if (from > 0 && word_at(from - 1) >= kw) {  // the answer is in [0, from - 1]
    const std::size_t before = from > kSearchWindow ? from - kSearchWindow : 0;
    if (before > 0 && word_at(before - 1) >= kw) return lower_bound(0, before - 1);
    return fixed_lower_bound<kStride, kSearchWindow>(base, before, kw);
  }
  if (to < n && word_at(to) < kw) {  // the answer is in [to + 1, n]
    const std::size_t after = n - to > kSearchWindow ? to + kSearchWindow : n;
    if (after < n && word_at(after) < kw) return lower_bound(after + 1, n);
    return fixed_lower_bound<kStride, kSearchWindow>(base, after - kSearchWindow, kw);
  }
  return fixed_lower_bound<kStride, kSearchWindow>(base, from, kw);
}


}  // namespace forein::detail

// The on-page layout of a tree node, and a view that reads and edits it.
//
//   [0, 64)    header (below); bytes [0, 12) belong to the page store
//   [64, ...)  slot array, 16 bytes per entry, in key order
//   [..., end) heap, growing down from the page end: long keys, values,
//              and the node's hi key; lo's bytes are always the last ones
//
// A slot holds the key's word, so binary search compares 8-byte integers
// and touches the heap only when two words tie. Keys of up to 8 bytes live
// entirely in the slot (word + length). In a leaf a slot's `aux` is the
// value length and the value follows the key bytes (if any) in the heap; in
// an inner node `aux` is the child page id and slot i's key is the lowest
// key of child i (slot 0's key equals the node's lo).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "forein/key.h"
#include "forein/page_store.h"

namespace forein::detail {

inline constexpr std::uint32_t kNodeMagic = 0x464E4F44;  // "FNOD"
inline constexpr std::uint32_t kMetaMagic = 0x464D4554;  // "FMET"

inline constexpr std::uint16_t kFlagDead = 1;   // merged away; follow right
inline constexpr std::uint16_t kFlagHiInf = 2;  // hi is +infinity

inline constexpr std::size_t kHeaderSize = 64;
inline constexpr std::size_t kSlotSize = 16;

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

template <typename T>
inline T load(const std::byte* p, std::size_t at) {
  T v;
  std::memcpy(&v, p + at, sizeof v);
  return v;
}
template <typename T>
inline void store(std::byte* p, std::size_t at, T v) {
  std::memcpy(p + at, &v, sizeof v);
}

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
  const std::byte* long_bytes;  // null when len <= 8

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
    if (int c = std::memcmp(k.bytes.data() + kWordBytes, s.long_bytes + kWordBytes, common)) {
      return c;
    }
  }
  return klen < s.len ? -1 : (klen > s.len ? 1 : 0);
}

// Bytes an entry takes in a node: slot plus heap.
inline std::size_t entry_bytes(std::size_t key_len, std::size_t value_len) {
  return kSlotSize + (key_len > kWordBytes ? key_len : 0) + value_len;
}

class Node {
 public:
  Node(std::byte* page, std::uint32_t page_size) : p_(page), size_(page_size) {}

  std::byte* page() const { return p_; }
  std::uint32_t page_size() const { return size_; }

  std::uint32_t magic() const { return load<std::uint32_t>(p_, off::kMagic); }
  bool is_node() const { return magic() == kNodeMagic; }
  std::uint64_t version() const { return load<std::uint64_t>(p_, off::kVersion); }
  PageId right() const { return load<PageId>(p_, off::kRight); }
  PageId left() const { return load<PageId>(p_, off::kLeft); }
  std::uint16_t level() const { return load<std::uint16_t>(p_, off::kLevel); }
  std::uint16_t count() const { return load<std::uint16_t>(p_, off::kCount); }
  std::uint16_t flags() const { return load<std::uint16_t>(p_, off::kFlags); }
  bool dead() const { return flags() & kFlagDead; }
  bool hi_inf() const { return flags() & kFlagHiInf; }
  bool is_leaf() const { return level() == 0; }

  void set_version(std::uint64_t v) { store(p_, off::kVersion, v); }
  void bump_version() { set_version(version() + 1); }
  void set_right(PageId id) { store(p_, off::kRight, id); }
  void set_left(PageId id) { store(p_, off::kLeft, id); }
  void mark_dead() { store<std::uint16_t>(p_, off::kFlags, flags() | kFlagDead); }

  std::string_view lo() const;
  std::string_view hi() const;  // meaningless when hi_inf()

  // lo <= k, and k < hi.
  // Both compare words first: the words sit in the header's cache line,
  // while the keys' bytes sit at the far end of the page.
  bool above_lo(const SearchKey& k) const {
    const Word lw = load<Word>(p_, off::kLoWord);
    if (k.word != lw) return k.word > lw;
    return compare_keys(k.bytes, lo()) >= 0;
  }
  bool below_hi(const SearchKey& k) const {
    if (hi_inf()) return true;
    const Word hw = load<Word>(p_, off::kHiWord);
    if (k.word != hw) return k.word < hw;
    return compare_keys(k.bytes, hi()) < 0;
  }

  StoredKey key_at(std::size_t i) const;
  std::string_view value_at(std::size_t i) const;  // leaves
  PageId child_at(std::size_t i) const { return load<PageId>(p_, slot(i) + 12); }
  void set_child_at(std::size_t i, PageId id) { store(p_, slot(i) + 12, id); }

  // First slot whose key is >= k (count() if none).
  std::size_t lower_bound(const SearchKey& k) const { return search(k, false); }
  // First slot whose key is > k.
  std::size_t upper_bound(const SearchKey& k) const { return search(k, true); }
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
  std::size_t capacity() const { return size_ - kHeaderSize; }
  bool fits(std::size_t key_len, std::size_t value_len) const {
    return used_bytes() + entry_bytes(key_len, value_len) <= capacity();
  }

  // Edits; the caller holds the exclusive latch and has checked fits().
  void insert_leaf(std::size_t i, std::string_view key, std::string_view value);
  void insert_inner(std::size_t i, std::string_view key, PageId child);
  void remove_at(std::size_t i);
  // Replaces entry i's value in place if it fits, else returns false.
  bool replace_value(std::size_t i, std::string_view value);

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

 private:
  static constexpr std::size_t kInterpolateMin = 16;  // below this, binary search
  static constexpr std::size_t kPrefetchSlots = 12;   // around an interpolation guess
  std::size_t search(const SearchKey& k, bool strict) const;
  std::size_t slot(std::size_t i) const { return kHeaderSize + i * kSlotSize; }
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
};

}  // namespace forein::detail

// A run of leaf slots that an in-place scan hands out at once
// (Cursor::next_run), read by the host one slot at a time with the inline
// accessors below (the current row, advance() to the next): for hosts with a call per row (SQLite's xNext and
// xColumn), where copying rows out first would cost more than reading them.
//
// The run views the leaf's page frame: it is valid until the tree or its
// pages change (a write, an eviction, a host's page restore), as the values
// of an in-place cursor are. Reads are plain loads: in-place scans are for
// trees no other thread changes meanwhile.
//
// Slot layout (the leaf page format, engine/src/node.h and docs/engine.md):
//   [key word 8][heap offset 2][key length 2][value length 4][value 8, leaves
//   with inline values]. A key of up to 8 bytes is its word's leading bytes;
//   a longer one sits in the heap at the heap offset, and its value (when
//   not inline) right after it. Every offset is clamped to the page.
//   Fixed-shape leaves: [key word 8][value 8], one key length and one value
//   length (both up to 8) for the whole leaf.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace forein {

class LeafRun {
 public:
  bool empty() const { return left_ == 0; }
  // Rows left, the current one included.
  std::size_t size() const { return left_; }
  // Moves to the next row of the run; false (staying) at its last.
  bool advance() {
    if (left_ <= 1) return false;
    --left_;
    slot_ += step_;
    return true;
  }

  // The current row: the key's word (its first 8 bytes as a big-endian
  // integer, zero-padded; an encode_int64 key's word is the integer with
  // its sign bit flipped) and length.
  std::uint64_t key_word() const { return load<std::uint64_t>(slot_); }
  std::size_t key_size() const {
    return fixed_ ? fixed_key_len_ : load<std::uint16_t>(slot_ + kKeyLenAt);
  }
  // The key's bytes: a short key's are written to *buf, a long key's are
  // viewed on the page.
  std::string_view key(std::uint64_t* buf) const {
    const std::size_t len = key_size();
    if (len <= kShortKey) {
      std::uint64_t bytes = key_word();
      if constexpr (std::endian::native == std::endian::little) bytes = __builtin_bswap64(bytes);
      *buf = bytes;
      return {reinterpret_cast<const char*>(buf), len};
    }
    return view(load<std::uint16_t>(slot_ + kHeapAt), len);
  }
  std::string_view value() const {
    if (fixed_) return {reinterpret_cast<const char*>(slot_ + kFixedValueAt), fixed_value_len_};
    const std::size_t len = load<std::uint32_t>(slot_ + kValueLenAt);
    if (inline_values_ && len <= kInlineValue) return {reinterpret_cast<const char*>(slot_ + kInlineValueAt), len};
    const std::size_t key_len = key_size();
    const std::size_t heap = load<std::uint16_t>(slot_ + kHeapAt);
    return view(key_len > kShortKey ? heap + key_len : heap, len);
  }

 private:
  friend class Cursor;
  static constexpr std::size_t kHeapAt = 8, kKeyLenAt = 10, kValueLenAt = 12, kInlineValueAt = 16;
  static constexpr std::size_t kFixedValueAt = 8;
  static constexpr std::size_t kShortKey = 8, kInlineValue = 8;

  template <typename T>
  static T load(const std::byte* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  // Page bytes [at, at + len) cut to the page.
  std::string_view view(std::size_t at, std::size_t len) const {
    if (at > page_size_) at = page_size_;
    if (len > page_size_ - at) len = page_size_ - at;
    return {reinterpret_cast<const char*>(page_) + at, len};
  }

  const std::byte* page_ = nullptr;
  std::size_t page_size_ = 0;
  const std::byte* slot_ = nullptr;  // the current row's slot
  std::ptrdiff_t step_ = 0;          // to the next slot: the slot size, negated backward
  std::size_t left_ = 0;             // rows left, the current one included
  bool inline_values_ = false;
  bool fixed_ = false;  // a fixed-shape leaf: the lengths below, not the slot's
  std::size_t fixed_key_len_ = 0, fixed_value_len_ = 0;
};

}  // namespace forein

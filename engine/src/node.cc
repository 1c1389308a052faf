#include "node.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <vector>

namespace forein::detail {

std::string StoredKey::to_string() const {
  std::string out;
  append_to(out);
  return out;
}

void StoredKey::append_to(std::string& out) const {
  if (long_bytes != nullptr) {
    const std::size_t at = out.size();
    out.resize(at + len);
    read_bytes(long_bytes, len, out.data() + at);
    return;
  }
  // The word holds the key's bytes from the most significant one: in
  // memory order after a byte swap on little-endian machines.
  std::uint64_t bytes = word;
  if constexpr (std::endian::native == std::endian::little) bytes = __builtin_bswap64(bytes);
  const std::size_t at = out.size();
  out.resize(at + len);
  std::memcpy(out.data() + at, &bytes, len);
}

std::string_view Node::lo() const {
  const Span s = lo_span();
  return {reinterpret_cast<const char*>(p_) + s.at, s.len};
}

std::string_view Node::hi() const {
  const Span s = hi_span();
  return {reinterpret_cast<const char*>(p_) + s.at, s.len};
}

StoredKey Node::long_key_at(std::size_t s, std::uint16_t len) const {
  const Span bytes = clamp(load<std::uint16_t>(p_, s + 8), len);
  // A torn read may name bytes past the page; the version check discards
  // the result, but the bytes read must stay inside the page.
  if (bytes.len != len) return {load<Word>(p_, s), len, p_ + kHeaderSize};
  return {load<Word>(p_, s), len, p_ + bytes.at};
}

void Node::append_value_to(std::size_t i, std::string& out) const {
  const Span v = value_span(i);
  const std::size_t at = out.size();
  out.resize(at + v.len);
  read_bytes(p_ + v.at, v.len, out.data() + at);
}

std::size_t Node::heap_bytes_of(std::size_t i) const {
  if (fixed_) return 0;
  const std::size_t s = slot(i);
  const auto key_len = load<std::uint16_t>(p_, s + 10);
  std::size_t n = key_len > kWordBytes ? key_len : 0;
  if (is_leaf()) {
    const auto value_len = load<std::uint32_t>(p_, s + 12);
    if (!value_inline(value_len)) n += value_len;
  }
  return n;
}

std::size_t Node::general_layout_bytes() const {
  if (!is_leaf() || stride_ == kLeafSlotSize) return used_bytes();
  if (fixed_) return used_bytes() + count() * (kLeafSlotSize - kFixedSlotSize);
  std::size_t n = lo().size() + (hi_inf() ? 0 : hi().size());
  for (std::size_t i = 0; i < count(); ++i) {
    n += entry_bytes(true, key_at(i).len, load<std::uint32_t>(p_, slot(i) + 12));
  }
  return n;
}

std::size_t Node::merged_bytes(const Node& a, const Node& b) {
  // Two fixed-shape leaves of one shape (or one empty) merge into one.
  const bool one_shape =
      a.fixed_ && b.fixed_ &&
      (a.count() == 0 || b.count() == 0 ||
       (a.key_len_ == b.key_len_ && a.value_len_ == b.value_len_));
  if (one_shape) return a.used_bytes() + b.used_bytes();
  return a.general_layout_bytes() + b.general_layout_bytes();
}

std::size_t Node::used_bytes() const {
  return count() * stride_ + (size_ - heap_start()) - garbage();
}

std::size_t Node::heap_alloc(std::size_t n) {
  const std::size_t slots_end = slot(count() + 1);  // room for one more slot
  if (heap_start() < slots_end + n) compact();
  const std::size_t at = heap_start() - n;
  store(p_, off::kHeapStart, static_cast<std::uint16_t>(at));
  return at;
}

// Rewrites the heap without holes. Copies through a per-thread scratch
// page because live bytes may overlap their new place.
void Node::compact() {
  thread_local std::vector<std::byte> scratch;
  scratch.resize(size_);
  // Never read the latch word: other threads update it atomically.
  read_bytes(p_ + kPageLatchBytes, size_ - kPageLatchBytes, scratch.data() + kPageLatchBytes);
  Node old(scratch.data(), size_);

  std::size_t top = size_;
  auto move_down = [&](std::size_t from, std::size_t len) {
    top -= len;
    write_bytes(p_ + top, scratch.data() + from, len);
    return static_cast<std::uint16_t>(top);
  };
  move_down(size_ - old.lo().size(), old.lo().size());  // lo keeps ending the page
  if (!hi_inf()) {
    store(p_, off::kHiOff,
          move_down(load<std::uint16_t>(scratch.data(), off::kHiOff), old.hi().size()));
  }
  for (std::size_t i = 0; !fixed_ && i < count(); ++i) {  // fixed-shape slots have no heap bytes
    const std::size_t n = old.heap_bytes_of(i);
    const auto from = load<std::uint16_t>(scratch.data(), slot(i) + 8);
    store(p_, slot(i) + 8, n > 0 ? move_down(from, n) : std::uint16_t{0});
  }
  store(p_, off::kHeapStart, static_cast<std::uint16_t>(top));
  store(p_, off::kGarbage, std::uint16_t{0});
}

void Node::insert_slot(std::size_t i, std::string_view key, std::uint32_t aux,
                       std::string_view value) {
  const bool long_key = key.size() > kWordBytes;
  const bool inline_value = is_leaf() && value_inline(value.size());
  if (inline_value) value = {};
  const std::size_t heap_n = (long_key ? key.size() : 0) + value.size();
  const std::size_t at = heap_alloc(heap_n);  // also makes room for the slot
  std::size_t w = at;
  if (long_key) {
    write_bytes(p_ + w, key.data(), key.size());
    w += key.size();
  }
  write_bytes(p_ + w, value.data(), value.size());

  const std::size_t n = count();
  move_bytes(p_ + slot(i + 1), p_ + slot(i), (n - i) * stride_);
  const std::size_t s = slot(i);
  store(p_, s, word_of(key));
  store(p_, s + 8, static_cast<std::uint16_t>(at));
  store(p_, s + 10, static_cast<std::uint16_t>(key.size()));
  store(p_, s + 12, aux);
  if (stride_ == kLeafSlotSize) store<std::uint64_t>(p_, s + 16, 0);
  set_count(n + 1);
}

void Node::insert_leaf(std::size_t i, std::string_view key, std::string_view value) {
  if (fixed_) {
    if (takes_fixed(key.size(), value.size())) {
      insert_fixed(i, key, value);
      return;
    }
    to_general();
  }
  insert_slot(i, key, static_cast<std::uint32_t>(value.size()), value);
  if (value_inline(value.size())) write_bytes(p_ + slot(i) + 16, value.data(), value.size());
}

void Node::insert_fixed(std::size_t i, std::string_view key, std::string_view value) {
  const std::size_t n = count();
  if (n == 0) {  // the first entry sets the leaf's shape
    const auto shape = static_cast<std::uint16_t>((key.size() << kFixedKeyLenShift) |
                                                  (value.size() << kFixedValueLenShift));
    const auto f = static_cast<std::uint16_t>((flags() & ~kFixedShapeBits) | shape);
    store(p_, off::kFlags, f);
    set_layout(f);
  }
  heap_alloc(0);  // room for one more slot
  move_bytes(p_ + slot(i + 1), p_ + slot(i), (n - i) * stride_);
  const std::size_t s = slot(i);
  store(p_, s, word_of(key));
  store<std::uint64_t>(p_, s + 8, 0);
  write_bytes(p_ + s + 8, value.data(), value.size());
  set_count(n + 1);
}

void Node::to_general() {
  thread_local std::vector<std::byte> scratch;
  scratch.resize(size_);
  // Never read the latch word: other threads update it atomically.
  read_bytes(p_ + kPageLatchBytes, size_ - kPageLatchBytes, scratch.data() + kPageLatchBytes);
  const Node old(scratch.data(), size_);
  const auto f = static_cast<std::uint16_t>(
      (flags() & ~(kFlagFixed | kFixedShapeBits)) | kFlagInlineValues);
  store(p_, off::kFlags, f);
  set_layout(f);
  set_count(0);
  for (std::size_t i = 0; i < old.count(); ++i) {
    const std::string key = old.key_at(i).to_string();
    insert_leaf(i, key, old.value_at(i));
  }
}

void Node::insert_inner(std::size_t i, std::string_view key, PageId child) {
  insert_slot(i, key, child, {});
}

void Node::remove_at(std::size_t i) {
  add_garbage(heap_bytes_of(i));
  const std::size_t n = count();
  move_bytes(p_ + slot(i), p_ + slot(i + 1), (n - i - 1) * stride_);
  set_count(n - 1);
}

bool Node::replace_value(std::size_t i, std::string_view value) {
  if (fixed_) {
    if (value.size() == value_len_) {
      store<std::uint64_t>(p_, slot(i) + 8, 0);
      write_bytes(p_ + slot(i) + 8, value.data(), value.size());
      return true;
    }
    const std::size_t grows = entry_bytes(true, key_len_, value.size()) - kLeafSlotSize;
    if (general_layout_bytes() + grows > capacity()) return false;
    to_general();
  }
  const std::string_view old = value_at(i);
  const bool was_inline = value_inline(old.size());
  if (value_inline(value.size())) {
    if (!was_inline) add_garbage(old.size());
    store<std::uint64_t>(p_, slot(i) + 16, 0);
    write_bytes(p_ + slot(i) + 16, value.data(), value.size());
    store(p_, slot(i) + 12, static_cast<std::uint32_t>(value.size()));
    return true;
  }
  if (!was_inline && value.size() <= old.size()) {
    write_bytes(p_ + value_span(i).at, value.data(), value.size());
    store(p_, slot(i) + 12, static_cast<std::uint32_t>(value.size()));
    add_garbage(old.size() - value.size());
    return true;
  }
  const StoredKey k = key_at(i);
  const std::size_t old_heap = was_inline ? 0 : old.size();
  if (used_bytes() - old_heap + value.size() > capacity()) return false;
  const std::string key = k.to_string();
  remove_at(i);
  insert_leaf(i, key, value);
  return true;
}

void Node::set_hi(std::string_view hi) {
  if (heap_start() < slot(count()) + hi.size()) compact();
  const std::size_t at = heap_start() - hi.size();
  write_bytes(p_ + at, hi.data(), hi.size());
  store(p_, off::kHeapStart, static_cast<std::uint16_t>(at));
  store(p_, off::kHiOff, static_cast<std::uint16_t>(at));
  store(p_, off::kHiLen, static_cast<std::uint16_t>(hi.size()));
  store(p_, off::kHiWord, word_of(hi));
  store(p_, off::kFlags, static_cast<std::uint16_t>(flags() & ~kFlagHiInf));
}

void Node::init(std::uint16_t level, std::uint64_t version, std::string_view lo,
                std::optional<std::string_view> hi, PageId left, PageId right) {
  zero_bytes(p_ + off::kMagic, kHeaderSize - off::kMagic);
  store(p_, off::kMagic, kNodeMagic);
  set_version(version);
  set_left(left);
  set_right(right);
  store(p_, off::kLevel, level);
  // New leaves take the fixed-shape layout; their first entry sets the
  // shape, and one of another shape rewrites them in the 24-byte one.
  const std::uint16_t layout = level == 0 ? kFlagFixed : 0;
  const auto f = static_cast<std::uint16_t>((hi ? 0 : kFlagHiInf) | layout);
  store(p_, off::kFlags, f);
  set_layout(f);
  std::size_t top = size_ - lo.size();
  write_bytes(p_ + top, lo.data(), lo.size());
  store(p_, off::kLoLen, static_cast<std::uint16_t>(lo.size()));
  store(p_, off::kLoWord, word_of(lo));
  if (hi) {
    top -= hi->size();
    write_bytes(p_ + top, hi->data(), hi->size());
    store(p_, off::kHiOff, static_cast<std::uint16_t>(top));
    store(p_, off::kHiLen, static_cast<std::uint16_t>(hi->size()));
    store(p_, off::kHiWord, word_of(*hi));
  }
  store(p_, off::kHeapStart, static_cast<std::uint16_t>(top));
}

std::string Node::layout_error() const {
  if (!is_node()) return "not a node page (bad magic)";
  const std::size_t n = count(), heap = heap_start();
  if (kHeaderSize + n * stride_ > heap || heap > size_) return "slot array overlaps heap";
  if ((flags() & (kFlagInlineValues | kFlagFixed)) && !is_leaf()) {
    return "inner node flagged with leaf slots";
  }
  if ((flags() & kFlagInlineValues) && (flags() & kFlagFixed)) return "leaf flagged with two layouts";
  if (!fixed_ && (flags() & kFixedShapeBits)) return "fixed shape set on a leaf of another layout";
  if (fixed_ && (((flags() >> kFixedKeyLenShift) & 0xF) > kWordBytes ||
                 ((flags() >> kFixedValueLenShift) & 0xF) > kInlineValueMax)) {
    return "fixed-shape leaf with a key or value longer than 8 bytes";
  }
  if (garbage() > size_ - heap) return "garbage counter exceeds heap";
  auto in_heap = [&](std::size_t at, std::size_t len) {
    return len == 0 || (at >= heap && at + len <= size_);
  };
  if (lo().size() > size_ - heap) return "lo key outside heap";
  if (!hi_inf() && !in_heap(load<std::uint16_t>(p_, off::kHiOff), hi().size())) {
    return "hi key outside heap";
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (!in_heap(load<std::uint16_t>(p_, slot(i) + 8), heap_bytes_of(i))) {
      return "entry " + std::to_string(i) + " outside heap";
    }
  }
  return {};
}

}  // namespace forein::detail

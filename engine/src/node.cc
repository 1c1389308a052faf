#include "node.h"

#include <algorithm>
#include <vector>

namespace forein::detail {

std::string StoredKey::to_string() const {
  std::string out;
  append_to(out);
  return out;
}

void StoredKey::append_to(std::string& out) const {
  if (long_bytes != nullptr) {
    out.append(reinterpret_cast<const char*>(long_bytes), len);
    return;
  }
  for (std::size_t i = 0; i < len; ++i) {
    out.push_back(static_cast<char>(word >> (56 - 8 * i)));
  }
}

std::string_view Node::lo() const {
  const auto len = load<std::uint16_t>(p_, off::kLoLen);
  return {reinterpret_cast<const char*>(p_) + size_ - len, len};
}

std::string_view Node::hi() const {
  return {reinterpret_cast<const char*>(p_) + load<std::uint16_t>(p_, off::kHiOff),
          load<std::uint16_t>(p_, off::kHiLen)};
}

StoredKey Node::key_at(std::size_t i) const {
  const std::size_t s = slot(i);
  const auto len = load<std::uint16_t>(p_, s + 10);
  return {load<Word>(p_, s), len,
          len > kWordBytes ? p_ + load<std::uint16_t>(p_, s + 8) : nullptr};
}

std::string_view Node::value_at(std::size_t i) const {
  const std::size_t s = slot(i);
  const auto key_len = load<std::uint16_t>(p_, s + 10);
  std::size_t start = load<std::uint16_t>(p_, s + 8);
  if (key_len > kWordBytes) start += key_len;
  return {reinterpret_cast<const char*>(p_) + start, load<std::uint32_t>(p_, s + 12)};
}

// Slot search: the first slot whose key is >= k (or > k when `strict`).
// Keys spread evenly enough inside one node that interpolating on the words
// of the first and last slot lands within a few slots of the answer; a
// galloping search from there then touches two or three cache lines where
// a plain binary search over an 8 KiB node touches eight. Skewed words only
// cost more galloping steps: the worst case stays logarithmic.
std::size_t Node::search(const SearchKey& k, bool strict) const {
  const std::size_t n = count();
  // before(i): slot i's key sorts before the answer.
  auto before = [&](std::size_t i) {
    const int c = compare(k, key_at(i));
    return strict ? c >= 0 : c > 0;
  };
  auto binary = [&](std::size_t lo, std::size_t hi) {  // answer in [lo, hi]
    while (lo < hi) {
      const std::size_t mid = (lo + hi) / 2;
      if (before(mid)) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    return lo;
  };
  if (n < kInterpolateMin) return binary(0, n);
  // The header's lo and hi words bound every key's word, and share the
  // cache line the latch brought in; only the rightmost node reads a slot.
  const Word first = load<Word>(p_, off::kLoWord);
  const Word last = hi_inf() ? key_at(n - 1).word : load<Word>(p_, off::kHiWord);
  if (k.word <= first || k.word >= last || first == last) return binary(0, n);
  // Floating point: a 128-bit integer divide costs more than the search.
  const auto guess = std::min(
      n - 1, static_cast<std::size_t>(static_cast<double>(k.word - first) /
                                      static_cast<double>(last - first) *
                                      static_cast<double>(n - 1)));
  // The answer is usually within a dozen slots of the guess: fetch those
  // cache lines together instead of one dependent miss per galloping step.
  const std::size_t from = guess > kPrefetchSlots ? guess - kPrefetchSlots : 0;
  const std::size_t to = std::min(guess + kPrefetchSlots, n - 1);
  for (std::size_t i = from; i <= to; i += 64 / kSlotSize) __builtin_prefetch(p_ + slot(i));
  __builtin_prefetch(p_ + slot(to));
  if (before(guess)) {
    std::size_t step = 1;
    while (guess + step < n && before(guess + step)) step *= 2;
    return binary(guess + step / 2 + 1, std::min(guess + step, n));
  }
  std::size_t step = 1;
  while (step <= guess && !before(guess - step)) step *= 2;
  return binary(step <= guess ? guess - step + 1 : 0, guess - step / 2);
}

std::size_t Node::heap_bytes_of(std::size_t i) const {
  const std::size_t s = slot(i);
  const auto key_len = load<std::uint16_t>(p_, s + 10);
  std::size_t n = key_len > kWordBytes ? key_len : 0;
  if (is_leaf()) n += load<std::uint32_t>(p_, s + 12);
  return n;
}

std::size_t Node::used_bytes() const {
  return count() * kSlotSize + (size_ - heap_start()) - garbage();
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
  std::memcpy(scratch.data() + kPageLatchBytes, p_ + kPageLatchBytes, size_ - kPageLatchBytes);
  Node old(scratch.data(), size_);

  std::size_t top = size_;
  auto move_down = [&](std::size_t from, std::size_t len) {
    top -= len;
    std::memcpy(p_ + top, scratch.data() + from, len);
    return static_cast<std::uint16_t>(top);
  };
  move_down(size_ - old.lo().size(), old.lo().size());  // lo keeps ending the page
  if (!hi_inf()) {
    store(p_, off::kHiOff,
          move_down(load<std::uint16_t>(scratch.data(), off::kHiOff), old.hi().size()));
  }
  for (std::size_t i = 0; i < count(); ++i) {
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
  const std::size_t heap_n = (long_key ? key.size() : 0) + value.size();
  const std::size_t at = heap_alloc(heap_n);  // also makes room for the slot
  std::size_t w = at;
  if (long_key) {
    std::memcpy(p_ + w, key.data(), key.size());
    w += key.size();
  }
  if (!value.empty()) std::memcpy(p_ + w, value.data(), value.size());

  const std::size_t n = count();
  std::memmove(p_ + slot(i + 1), p_ + slot(i), (n - i) * kSlotSize);
  const std::size_t s = slot(i);
  store(p_, s, word_of(key));
  store(p_, s + 8, static_cast<std::uint16_t>(at));
  store(p_, s + 10, static_cast<std::uint16_t>(key.size()));
  store(p_, s + 12, aux);
  set_count(n + 1);
}

void Node::insert_leaf(std::size_t i, std::string_view key, std::string_view value) {
  insert_slot(i, key, static_cast<std::uint32_t>(value.size()), value);
}

void Node::insert_inner(std::size_t i, std::string_view key, PageId child) {
  insert_slot(i, key, child, {});
}

void Node::remove_at(std::size_t i) {
  add_garbage(heap_bytes_of(i));
  const std::size_t n = count();
  std::memmove(p_ + slot(i), p_ + slot(i + 1), (n - i - 1) * kSlotSize);
  set_count(n - 1);
}

bool Node::replace_value(std::size_t i, std::string_view value) {
  const std::string_view old = value_at(i);
  if (value.size() <= old.size()) {
    if (!value.empty()) std::memcpy(const_cast<char*>(old.data()), value.data(), value.size());
    store(p_, slot(i) + 12, static_cast<std::uint32_t>(value.size()));
    add_garbage(old.size() - value.size());
    return true;
  }
  const StoredKey k = key_at(i);
  if (used_bytes() - old.size() + value.size() > capacity()) return false;
  const std::string key = k.to_string();
  remove_at(i);
  insert_leaf(i, key, value);
  return true;
}

void Node::init(std::uint16_t level, std::uint64_t version, std::string_view lo,
                std::optional<std::string_view> hi, PageId left, PageId right) {
  std::memset(p_ + off::kMagic, 0, kHeaderSize - off::kMagic);
  store(p_, off::kMagic, kNodeMagic);
  set_version(version);
  set_left(left);
  set_right(right);
  store(p_, off::kLevel, level);
  store(p_, off::kFlags, hi ? std::uint16_t{0} : kFlagHiInf);
  // (memcpy of zero bytes from an empty view's null data is still UB.)
  std::size_t top = size_ - lo.size();
  if (!lo.empty()) std::memcpy(p_ + top, lo.data(), lo.size());
  store(p_, off::kLoLen, static_cast<std::uint16_t>(lo.size()));
  store(p_, off::kLoWord, word_of(lo));
  if (hi) {
    top -= hi->size();
    if (!hi->empty()) std::memcpy(p_ + top, hi->data(), hi->size());
    store(p_, off::kHiOff, static_cast<std::uint16_t>(top));
    store(p_, off::kHiLen, static_cast<std::uint16_t>(hi->size()));
    store(p_, off::kHiWord, word_of(*hi));
  }
  store(p_, off::kHeapStart, static_cast<std::uint16_t>(top));
}

std::string Node::layout_error() const {
  if (!is_node()) return "not a node page (bad magic)";
  const std::size_t n = count(), heap = heap_start();
  if (kHeaderSize + n * kSlotSize > heap || heap > size_) return "slot array overlaps heap";
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

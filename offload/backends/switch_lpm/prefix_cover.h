// PREFIXCOVER (FOREIN, section IV-A): a word interval as the minimal set of
// aligned prefixes, and hollow-prefix elimination.
//
// Words are W-bit unsigned integers (W = 64 in the offload layer; smaller
// widths exist so tests can enumerate every interval). A prefix value/len
// matches the words whose len high bits equal value's; value keeps its low
// W - len bits zero, so it is also the first word the prefix matches.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "forein/key.h"
#include "forein/node_interval.h"

namespace forein::offload {

inline constexpr unsigned kWordBits = 64;

struct Prefix {
  Word value = 0;
  std::uint8_t len = 0;  // 0..W high bits

  friend bool operator==(const Prefix&, const Prefix&) = default;
};

// Ascending by first word, and a shorter (enclosing) prefix before the longer
// ones that share its first word; the order LPM flattening relies on.
inline bool prefix_less(const Prefix& a, const Prefix& b) {
  return a.value != b.value ? a.value < b.value : a.len < b.len;
}

// Mask of the high `len` bits of a `width`-bit word (len <= width <= 64).
inline Word prefix_mask(unsigned len, unsigned width = kWordBits) {
  if (len == 0) return 0;
  const Word high_len = ~Word{0} << (kWordBits - len);  // len high bits of 64
  return high_len >> (kWordBits - width);
}

// First and last word a prefix matches.
inline Word prefix_first(const Prefix& p) { return p.value; }
inline Word prefix_last(const Prefix& p, unsigned width = kWordBits) {
  const Word all = width == kWordBits ? ~Word{0} : (Word{1} << width) - 1;
  return p.value | (all & ~prefix_mask(p.len, width));
}

inline bool prefix_contains(const Prefix& p, Word w, unsigned width = kWordBits) {
  return (w & prefix_mask(p.len, width)) == p.value;
}

// A well-formed prefix: len <= width, value inside width bits, low bits zero.
bool prefix_valid(const Prefix& p, unsigned width = kWordBits);

// The minimal set of prefixes whose union is exactly [lo, hi_inclusive],
// ascending. Requires lo <= hi_inclusive < 2^width and 1 <= width <= 64
// (InvalidArgument otherwise). At most 2 * width - 2 prefixes (one for the
// whole space).
std::vector<Prefix> prefix_cover(Word lo, Word hi_inclusive, unsigned width = kWordBits);

// The cover of a node's word interval [lo, hi) (hi_inf: through 2^64 - 1);
// empty for an empty interval.
std::vector<Prefix> prefix_cover(const NodeInterval& interval);

// Hollow elimination: the prefixes of `cover` that match at least one word
// of `sorted_present_words` (ascending; duplicates allowed), in cover order.
std::vector<Prefix> drop_hollow(const std::vector<Prefix>& cover,
                                std::span<const Word> sorted_present_words,
                                unsigned width = kWordBits);

}  // namespace forein::offload

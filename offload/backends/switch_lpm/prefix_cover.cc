#include "switch_lpm/prefix_cover.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <string>

#include "forein/error.h"

namespace forein::offload {

namespace {

constexpr Word kMaxWord = std::numeric_limits<Word>::max();

Word width_max(unsigned width) {
  return width == kWordBits ? kMaxWord : (Word{1} << width) - 1;
}

}  // namespace

bool prefix_valid(const Prefix& p, unsigned width) {
  if (width < 1 || width > kWordBits || p.len > width) return false;
  if (p.value > width_max(width)) return false;
  return (p.value & ~prefix_mask(p.len, width)) == 0;
}

// Left to right, each step takes the largest aligned block that starts at
// the cursor and stays inside the interval. These blocks are exactly the
// maximal aligned blocks inside [lo, hi], which is the unique minimal cover
// (the paper's split-until-contained queue yields the same set).
std::vector<Prefix> prefix_cover(Word lo, Word hi_inclusive, unsigned width) {
  if (width < 1 || width > kWordBits) {
    throw InvalidArgument("prefix_cover: width must be in 1..64, got " + std::to_string(width));
  }
  if (lo > hi_inclusive || hi_inclusive > width_max(width)) {
    throw InvalidArgument("prefix_cover: need lo <= hi < 2^width");
  }
  std::vector<Prefix> cover;
  Word cur = lo;
  for (;;) {
    const Word remaining = hi_inclusive - cur;  // words after cur, no overflow
    const unsigned align_bits =
        cur == 0 ? width : std::min<unsigned>(static_cast<unsigned>(std::countr_zero(cur)), width);
    // floor(log2(remaining + 1)) without computing 2^64.
    const unsigned size_bits =
        remaining == kMaxWord ? kWordBits
                              : static_cast<unsigned>(std::bit_width(remaining + 1)) - 1;
    const unsigned block_bits = std::min(align_bits, size_bits);
    cover.push_back(Prefix{cur, static_cast<std::uint8_t>(width - block_bits)});
    if (block_bits == kWordBits) break;  // the whole 64-bit space
    const Word block_last = cur + ((Word{1} << block_bits) - 1);
    if (block_last == hi_inclusive) break;
    cur = block_last + 1;
  }
  return cover;
}

std::vector<Prefix> prefix_cover(const NodeInterval& interval) {
  if (interval.empty()) return {};
  return prefix_cover(interval.lo, interval.hi_inf ? kMaxWord : interval.hi - 1);
}

std::vector<Prefix> drop_hollow(const std::vector<Prefix>& cover,
                                std::span<const Word> sorted_present_words, unsigned width) {
  std::vector<Prefix> kept;
  for (const Prefix& p : cover) {
    const auto first_inside = std::lower_bound(sorted_present_words.begin(),
                                               sorted_present_words.end(), prefix_first(p));
    if (first_inside != sorted_present_words.end() && *first_inside <= prefix_last(p, width)) {
      kept.push_back(p);
    }
  }
  return kept;
}

}  // namespace forein::offload

#include "switch_lpm/lpm_snapshot.h"

#include <algorithm>
#include <bit>

namespace forein::offload {

namespace {

constexpr LpmAction kMiss{};
constexpr unsigned kMaxGridBits = 20;

}  // namespace

LpmSnapshot::LpmSnapshot(std::span<const std::pair<Prefix, LpmAction>> sorted_entries,
                         std::uint64_t version)
    : entry_count_(sorted_entries.size()), version_(version) {
  segments_.reserve(2 * sorted_entries.size() + 1);
  segments_.push_back(Segment{0, kMiss});
  // A new segment begins at `start`; adjacent segments with one action merge.
  auto begin_segment = [&](Word start, const LpmAction& action) {
    if (segments_.back().start == start) {  // an enclosing prefix and a nested one start together
      segments_.back().action = action;
      if (segments_.size() > 1 && segments_[segments_.size() - 2].action == action) {
        segments_.pop_back();
      }
      return;
    }
    if (segments_.back().action == action) return;
    segments_.push_back(Segment{start, action});
  };
  // Sweep in prefix_less order (enclosing before nested) with a stack of
  // the prefixes still open; when one closes, the enclosing one (or a miss)
  // takes over again.
  std::vector<std::pair<Word, LpmAction>> open;  // {last word, action}
  for (const auto& [prefix, action] : sorted_entries) {
    const Word first = prefix_first(prefix);
    while (!open.empty() && open.back().first < first) {
      const Word closed_last = open.back().first;
      open.pop_back();
      begin_segment(closed_last + 1, open.empty() ? kMiss : open.back().second);
    }
    begin_segment(first, action);
    open.emplace_back(prefix_last(prefix), action);
  }
  while (!open.empty()) {
    const Word closed_last = open.back().first;
    open.pop_back();
    if (closed_last == ~Word{0}) break;  // everything still open ends here too
    begin_segment(closed_last + 1, open.empty() ? kMiss : open.back().second);
  }
  segments_.shrink_to_fit();
  build_grid();
}

// Cells of 2^shift words from the first non-zero start, one cell per
// segment or so; grid_[c] is the segment holding cell c's first word, so a
// word in cell c lies in a segment in [grid_[c], grid_[c + 1]].
void LpmSnapshot::build_grid() {
  const std::size_t n = segments_.size();
  grid_base_ = n > 1 ? segments_[1].start : 0;
  const Word span = segments_.back().start - grid_base_;
  const unsigned cell_bits =
      std::clamp<unsigned>(static_cast<unsigned>(std::bit_width(n)), 1, kMaxGridBits);
  const std::size_t cells = std::size_t{1} << cell_bits;
  const unsigned span_bits = static_cast<unsigned>(std::bit_width(span));
  grid_shift_ = span_bits > cell_bits ? span_bits - cell_bits : 0;  // (span >> shift) < cells

  grid_.assign(cells + 1, static_cast<std::uint32_t>(n - 1));
  std::size_t segment = 0;
  for (std::size_t c = 0; c < cells; ++c) {
    const Word offset = static_cast<Word>(c) << grid_shift_;
    if (offset > span) break;  // the rest of the cells lie past the last start
    const Word cell_first = grid_base_ + offset;
    while (segment + 1 < n && segments_[segment + 1].start <= cell_first) ++segment;
    grid_[c] = static_cast<std::uint32_t>(segment);
  }
}

std::size_t LpmSnapshot::bytes() const {
  return segments_.capacity() * sizeof(Segment) + grid_.capacity() * sizeof(std::uint32_t) +
         sizeof(*this);
}

}  // namespace forein::offload

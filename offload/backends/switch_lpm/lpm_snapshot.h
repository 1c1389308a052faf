// One immutable version of the switch_lpm table, flattened for lookup.
//
// The prefixes of a table are laminar (two prefixes are nested or
// disjoint), so longest-prefix match over 64-bit words is a step function:
// word space splits into at most 2n + 1 segments, each answered by one
// action (or a miss). The snapshot stores the segment starts in a sorted
// array and finds a word's segment by binary search, narrowed first by an
// evenly spaced grid over the span of the starts (about one grid cell per
// segment), so a lookup is one grid read plus a search over a few
// neighbouring starts. Chosen over a multibit trie (8-bit strides: up to 8
// dependent reads for long prefixes) because FOREIN's prefixes are up to
// 64 bits long; the grid adapts to keys that cluster in a small part of
// word space (small integers sit just above 2^63 after the sign flip).
// Tables are rebuilt per publish anyway, so immutability costs nothing.
// tests/bench/lpm_lookup_bench: about 16-20 ns per lookup at 73,000 entries
// of B+tree leaf covers; ~35 ns when thousands of segments crowd into a few
// cells (covers of many small intervals in one region), where the search
// inside a cell grows to a few cache misses.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "switch_lpm/prefix_cover.h"

namespace forein::offload {

// The 8-byte action of a match: the node a query should start from.
struct LpmAction {
  std::uint32_t node = 0;         // PageId; 0 (kNoPage) never names a node
  std::uint16_t level = 0;        // the node's level, 0 = leaf
  std::uint16_t version_tag = 0;  // low 16 bits of the node's interval version

  friend bool operator==(const LpmAction&, const LpmAction&) = default;
};
static_assert(sizeof(LpmAction) == 8, "the switch action is 8 bytes");

class LpmSnapshot {
 public:
  // `sorted_entries`: distinct valid 64-bit prefixes in prefix_less order,
  // none with node 0 (the table checks this before building).
  LpmSnapshot(std::span<const std::pair<Prefix, LpmAction>> sorted_entries, std::uint64_t version);

  std::optional<LpmAction> lookup(Word w) const {
    const LpmAction& action = segments_[segment_of(w)].action;
    if (action.node == 0) return std::nullopt;
    return action;
  }

  std::uint64_t version() const { return version_; }  // 0: a new table; +1 per publish
  std::size_t entry_count() const { return entry_count_; }
  std::size_t segment_count() const { return segments_.size(); }
  std::size_t bytes() const;  // memory of the flattened structure

 private:
  // Index of the last segment whose start is <= w.
  std::size_t segment_of(Word w) const {
    if (w < grid_base_) return 0;
    std::size_t cell = static_cast<std::size_t>((w - grid_base_) >> grid_shift_);
    if (cell >= grid_.size() - 1) cell = grid_.size() - 2;
    std::size_t i = grid_[cell];
    std::size_t len = grid_[cell + 1] - i + 1;  // answer in [i, i + len)
    while (len > 1) {
      const std::size_t half = len / 2;
      i = segments_[i + half].start <= w ? i + half : i;
      len -= half;
    }
    return i;
  }

  void build_grid();

  // A segment's start next to its action: the search ends on the line that
  // holds the answer.
  struct Segment {
    Word start;
    LpmAction action;  // node 0: no prefix matches
  };
  std::vector<Segment> segments_;     // segments_[0].start == 0, starts strictly ascending
  std::vector<std::uint32_t> grid_;   // grid_[c]: segment holding the cell's first word
  Word grid_base_ = 0;
  unsigned grid_shift_ = 0;
  std::size_t entry_count_ = 0;
  std::uint64_t version_ = 0;
};

}  // namespace forein::offload

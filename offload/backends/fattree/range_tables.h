// Fat-B+Tree's Algorithm 1 (section III-B, Figure 4 ii): n disjoint ranges
// of key_bits-bit keys encoded as key_bits / slice_bits stages of
// slice_bits-wide range-match tables, because a switch's range tables are
// at most ~20 bits wide (64-bit keys, 16-bit slices on the switch).
//
// Stage s matches key slice s (the top slice first) in the table the
// previous stage chose; table 0 is the first stage's only table. Results
// share one numbering, as in the paper's example: a result v < n is range v
// (0-based, ascending), v >= n is the table to use in the next stage. Table
// ids start at n and follow Construct's depth-first creation order.
//
// Entries are exactly what Construct_i / Generate_i produce: a slice value
// whose key span lies inside one range gets that range, one that meets no
// range gets no entry (a key in a gap matches nothing), any other gets a new
// sub-table; Generate then merges adjacent slice values with equal results.
// The build jumps over runs of slice values inside one range or one gap
// instead of visiting all 2^slice_bits values of each table: the same
// entries in O(stages * n) steps rather than O(2^16 * n + n^2).
//
// Sizes per stage, with B the boundaries between adjacent keys whose range
// differs (a gap counting as a range; B = n - 1 without gaps, <= 2n with):
// at most B tables after the first stage (each sub-table's span holds a
// boundary) and at most tables + 2B entries. The paper's "at most 2n
// entries per stage" holds for the first stage (2n - 1 without gaps) but
// not in general: a table whose one boundary falls inside a middle slice
// has 3 entries, so random 64-bit ranges give about 3n in stages 1 and 2.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "forein/key.h"

namespace forein::offload {

// Keys lo..hi, both inclusive.
struct KeyRange {
  Word lo = 0;
  Word hi = 0;

  friend bool operator==(const KeyRange&, const KeyRange&) = default;
};

// One entry of a stage: in table `table`, slice values lo..hi (inclusive)
// give `result`.
struct RangeTableEntry {
  std::uint32_t table = 0;
  std::uint32_t lo = 0;
  std::uint32_t hi = 0;
  std::uint32_t result = 0;

  friend bool operator==(const RangeTableEntry&, const RangeTableEntry&) = default;
};

struct RangeTables {
  unsigned key_bits = 64;
  unsigned slice_bits = 16;
  std::uint32_t ranges = 0;  // n: results below it are ranges
  // key_bits / slice_bits stages; stage s holds the entries of all its
  // tables, sorted by (table, lo), as one large table on the switch.
  std::vector<std::vector<RangeTableEntry>> stages;
};

// Builds the tables for `ranges`: sorted ascending, disjoint (gaps allowed),
// lo <= hi < 2^key_bits; 1 <= slice_bits <= 16, key_bits <= 64 a multiple of
// slice_bits. Throws InvalidArgument otherwise, or when the table ids would
// not fit 32 bits.
RangeTables build_range_tables(std::span<const KeyRange> ranges, unsigned key_bits = 64,
                               unsigned slice_bits = 16);

// The pipeline's walk: stage 0 looks the top slice up in table 0, a range
// result ends it, a table result names the table of the next stage. The
// range's index, or nullopt when a stage has no matching entry (a gap) or
// the key is not below 2^key_bits. Throws InvalidArgument on widths
// build_range_tables would reject.
std::optional<std::uint32_t> match_range(const RangeTables& tables, Word key);

// The distinct table ids among stage `stage`'s entries (0 past the last
// stage). Only the root can be empty, and then counts 0.
std::uint32_t tables_in_stage(const RangeTables& tables, std::size_t stage);

}  // namespace forein::offload

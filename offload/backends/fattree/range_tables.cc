#include "fattree/range_tables.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "forein/error.h"

namespace forein::offload {

namespace {

constexpr unsigned kMaxKeyBits = 64;
constexpr unsigned kMaxSliceBits = 16;

void check_widths(const char* who, unsigned key_bits, unsigned slice_bits) {
  if (slice_bits < 1 || slice_bits > kMaxSliceBits) {
    throw InvalidArgument(std::string(who) + ": slice_bits must be in 1..16, got " +
                          std::to_string(slice_bits));
  }
  if (key_bits < 1 || key_bits > kMaxKeyBits || key_bits % slice_bits != 0) {
    throw InvalidArgument(std::string(who) + ": key_bits must be in 1..64 and a multiple of " +
                          "slice_bits " + std::to_string(slice_bits) + ", got " +
                          std::to_string(key_bits));
  }
}

Word max_key(unsigned key_bits) {
  return key_bits == kMaxKeyBits ? std::numeric_limits<Word>::max() : (Word{1} << key_bits) - 1;
}

std::string range_text(std::size_t i, const KeyRange& r) {
  return "range " + std::to_string(i) + " [" + std::to_string(r.lo) + ", " + std::to_string(r.hi) +
         "]";
}

void check_ranges(std::span<const KeyRange> ranges, unsigned key_bits) {
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    const KeyRange& r = ranges[i];
    if (r.lo > r.hi) {
      throw InvalidArgument("build_range_tables: " + range_text(i, r) + " has lo > hi");
    }
    if (r.hi > max_key(key_bits)) {
      throw InvalidArgument("build_range_tables: " + range_text(i, r) + " exceeds the " +
                            std::to_string(key_bits) + "-bit key space");
    }
    if (i > 0 && r.lo <= ranges[i - 1].hi) {
      throw InvalidArgument("build_range_tables: " + range_text(i, r) +
                            " is not sorted after and disjoint from " +
                            range_text(i - 1, ranges[i - 1]));
    }
  }
}

// Construct_s for every stage, Generate folded in: entries are merged as
// they are produced, in ascending slice order.
class Builder {
 public:
  Builder(std::span<const KeyRange> ranges, RangeTables& out)
      : ranges_(ranges), out_(out), next_table_(ranges.size()) {}

  // Fills table `table` of stage `stage`, whose span starts at `base`;
  // `first` is the first range whose hi >= base.
  void construct(unsigned stage, std::uint32_t table, Word base, std::size_t first) {
    const unsigned shift = out_.key_bits - (stage + 1) * out_.slice_bits;
    const Word slices = Word{1} << out_.slice_bits;
    const Word slice_last = (Word{1} << shift) - 1;  // offset of a slice's last key
    // Wraps to all ones for the whole 64-bit space, the first stage's span.
    const Word span_last = base + ((slices << shift) - 1);
    const bool last_stage = stage + 1 == out_.stages.size();
    std::size_t r = first;
    Word i = 0;
    while (i < slices) {
      const Word lo = base + (i << shift);
      const Word hi = lo + slice_last;
      while (r < ranges_.size() && ranges_[r].hi < lo) ++r;
      if (r == ranges_.size() || ranges_[r].lo > hi) {
        // A gap: no entry up to the slice that holds the next range's start.
        if (r == ranges_.size() || ranges_[r].lo > span_last) break;
        i = (ranges_[r].lo - base) >> shift;
        continue;
      }
      if (ranges_[r].lo <= lo && ranges_[r].hi >= hi) {
        // Inside range r through the last slice that ends by r's hi.
        const Word run_last =
            ranges_[r].hi >= span_last ? slices - 1 : ((ranges_[r].hi - base + 1) >> shift) - 1;
        add(stage, table, i, run_last, static_cast<std::uint32_t>(r));
        i = run_last + 1;
        continue;
      }
      // Part of a range and something else: a sub-table, built before the
      // next slice so that ids follow the paper's depth-first order. A
      // last-stage slice is one key, so it never gets here.
      if (last_stage) throw std::logic_error("build_range_tables: split at the last stage");
      const std::uint32_t sub = new_table();
      add(stage, table, i, i, sub);
      construct(stage + 1, sub, lo, r);
      ++i;
    }
  }

 private:
  std::uint32_t new_table() {
    if (next_table_ > std::numeric_limits<std::uint32_t>::max()) {
      throw InvalidArgument("build_range_tables: table ids exceed 32 bits");
    }
    return static_cast<std::uint32_t>(next_table_++);
  }

  // Generate: slice values lo..hi give `result`; extends the table's last
  // entry when it ends just before lo with the same result.
  void add(unsigned stage, std::uint32_t table, Word lo, Word hi, std::uint32_t result) {
    std::vector<RangeTableEntry>& entries = out_.stages[stage];
    if (!entries.empty()) {
      RangeTableEntry& prev = entries.back();
      if (prev.table == table && prev.result == result && Word{prev.hi} + 1 == lo) {
        prev.hi = static_cast<std::uint32_t>(hi);
        return;
      }
    }
    entries.push_back(RangeTableEntry{table, static_cast<std::uint32_t>(lo),
                                      static_cast<std::uint32_t>(hi), result});
  }

  std::span<const KeyRange> ranges_;
  RangeTables& out_;
  std::uint64_t next_table_;
};

}  // namespace

RangeTables build_range_tables(std::span<const KeyRange> ranges, unsigned key_bits,
                               unsigned slice_bits) {
  check_widths("build_range_tables", key_bits, slice_bits);
  check_ranges(ranges, key_bits);
  if (ranges.size() > std::numeric_limits<std::uint32_t>::max()) {
    throw InvalidArgument("build_range_tables: more than 2^32 - 1 ranges");
  }
  RangeTables out;
  out.key_bits = key_bits;
  out.slice_bits = slice_bits;
  out.ranges = static_cast<std::uint32_t>(ranges.size());
  out.stages.resize(key_bits / slice_bits);
  // Each stage's tables are created in ascending id order and each table's
  // entries in ascending slice order, so every stage comes out sorted by
  // (table, lo) without a sort.
  Builder(ranges, out).construct(0, 0, 0, 0);
  return out;
}

std::optional<std::uint32_t> match_range(const RangeTables& tables, Word key) {
  check_widths("match_range", tables.key_bits, tables.slice_bits);
  if (key > max_key(tables.key_bits)) return std::nullopt;
  const std::size_t stages =
      std::min<std::size_t>(tables.key_bits / tables.slice_bits, tables.stages.size());
  const Word slice_mask = (Word{1} << tables.slice_bits) - 1;
  std::uint32_t table = 0;
  for (std::size_t s = 0; s < stages; ++s) {
    const unsigned shift = tables.key_bits - static_cast<unsigned>(s + 1) * tables.slice_bits;
    const auto slice = static_cast<std::uint32_t>((key >> shift) & slice_mask);
    const std::vector<RangeTableEntry>& entries = tables.stages[s];
    // The last entry of `table` starting at or before `slice`.
    auto it = std::upper_bound(
        entries.begin(), entries.end(), std::pair{table, slice},
        [](const std::pair<std::uint32_t, std::uint32_t>& probe, const RangeTableEntry& e) {
          return probe.first != e.table ? probe.first < e.table : probe.second < e.lo;
        });
    if (it == entries.begin()) return std::nullopt;
    --it;
    if (it->table != table || slice > it->hi) return std::nullopt;
    if (it->result < tables.ranges) return it->result;
    table = it->result;
  }
  return std::nullopt;  // ran out of stages on a table result: malformed tables
}

std::uint32_t tables_in_stage(const RangeTables& tables, std::size_t stage) {
  if (stage >= tables.stages.size()) return 0;
  std::vector<std::uint32_t> ids;
  ids.reserve(tables.stages[stage].size());
  for (const RangeTableEntry& e : tables.stages[stage]) ids.push_back(e.table);
  std::sort(ids.begin(), ids.end());
  return static_cast<std::uint32_t>(std::unique(ids.begin(), ids.end()) - ids.begin());
}

}  // namespace forein::offload

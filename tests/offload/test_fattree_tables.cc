// fattree's two table encodings from the Fat-B+Tree paper: the 64-bit
// comparator of 32-bit ALUs and cal_result (section III-A, Figure 3), and
// Algorithm 1's range tables (section III-B, Figure 4 ii), checked against
// the paper's examples, plain `>` / binary search, and a literal
// transcription of Construct_i / Generate_i. FOREIN_SEED=<n> replays a run.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <ostream>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "fattree/compare64.h"
#include "fattree/range_tables.h"
#include "forein/error.h"
#include "support/seed.h"

using forein::InvalidArgument;
using forein::Word;
using forein::offload::alu_phase;
using forein::offload::AluResult;
using forein::offload::build_range_tables;
using forein::offload::cal_result_table;
using forein::offload::CalResultEntry;
using forein::offload::CompareAction;
using forein::offload::KeyRange;
using forein::offload::key_greater;
using forein::offload::kCalResultEntries;
using forein::offload::match_cal_result;
using forein::offload::match_range;
using forein::offload::RangeTableEntry;
using forein::offload::RangeTables;
using forein::offload::tables_in_stage;

namespace forein::offload {

// For Catch's messages.
std::ostream& operator<<(std::ostream& os, const RangeTableEntry& e) {
  return os << "{table " << e.table << " [" << e.lo << ", " << e.hi << "] -> " << e.result << "}";
}

}  // namespace forein::offload

namespace {

constexpr Word kMax = std::numeric_limits<Word>::max();

unsigned top_bit(std::uint32_t half) { return half >> 31; }

// ---------------------------------------------------------------------------
// Comparator helpers

std::vector<Word> edge_words() {
  std::vector<Word> v = {
      0,
      1,
      2,
      (Word{1} << 31) - 1,
      Word{1} << 31,
      (Word{1} << 31) + 1,
      (Word{1} << 32) - 1,
      Word{1} << 32,
      (Word{1} << 32) + 1,
      (Word{1} << 63) - 1,
      Word{1} << 63,
      (Word{1} << 63) + 1,
      kMax - 1,
      kMax,
      0x8000000080000000ULL,
      0x7FFFFFFFFFFFFFFFULL,
      0x7FFFFFFF80000000ULL,
      0x800000007FFFFFFFULL,
      0xFFFFFFFF00000000ULL,
      0x00000000FFFFFFFFULL,
      0x12345678FFFFFFFFULL,
      0x1234567800000000ULL,
      0x1234567880000000ULL,
      0x123456787FFFFFFFULL,
      0x1234567800000001ULL,
      0x12345679FFFFFFFFULL,
      0x1234567700000000ULL,
      0xDDAEE7764589DB15ULL,  // the paper's pivot
      0x59A4737582A775ABULL,  // the paper's key
      0xDDAEE77682A775ABULL,  // pivot's high half, key's low half
      0x59A473754589DB15ULL,
  };
  return v;
}

// Pairs a plain `>` must agree on, biased to the cases the table tells
// apart: shared high half, shared or differing top bits, near neighbours.
std::pair<Word, Word> random_pair(std::mt19937_64& rng) {
  Word key = rng();
  Word pivot = rng();
  switch (rng() % 8) {
    case 0: break;
    case 1: pivot = (key & 0xFFFFFFFF00000000ULL) | (pivot & 0xFFFFFFFFULL); break;  // same high
    case 2: pivot = key; break;
    case 3: pivot = key + (rng() % 5) - 2; break;  // neighbours, wrapping at the ends
    case 4: pivot = (pivot & 0x7FFFFFFFFFFFFFFFULL) | (key & 0x8000000000000000ULL); break;
    case 5:  // same high half and same bit 31
      pivot = (key & 0xFFFFFFFF80000000ULL) | (pivot & 0x7FFFFFFFULL);
      break;
    case 6: pivot = key ^ (Word{1} << (rng() % 64)); break;  // one bit apart
    default:  // high halves one apart, low halves arbitrary
      pivot = (((key >> 32) + 1) << 32) | (pivot & 0xFFFFFFFFULL);
      break;
  }
  if (rng() % 2) std::swap(key, pivot);
  return {key, pivot};
}

// ---------------------------------------------------------------------------
// Range-table helpers

std::optional<std::uint32_t> binary_search_range(const std::vector<KeyRange>& ranges, Word key) {
  const auto it = std::partition_point(ranges.begin(), ranges.end(),
                                       [key](const KeyRange& r) { return r.hi < key; });
  if (it == ranges.end() || it->lo > key) return std::nullopt;
  return static_cast<std::uint32_t>(it - ranges.begin());
}

Word key_space_max(unsigned key_bits) { return key_bits == 64 ? kMax : (Word{1} << key_bits) - 1; }

// Boundaries between adjacent keys that map to different ranges, a gap
// counting as one: pieces of the key space minus one.
std::uint64_t boundaries(const std::vector<KeyRange>& ranges, unsigned key_bits) {
  if (ranges.empty()) return 0;
  std::uint64_t pieces = ranges.size();
  if (ranges.front().lo > 0) ++pieces;
  if (ranges.back().hi < key_space_max(key_bits)) ++pieces;
  for (std::size_t i = 1; i < ranges.size(); ++i) {
    if (ranges[i].lo != ranges[i - 1].hi + 1) ++pieces;
  }
  return pieces - 1;
}

bool has_gaps(const std::vector<KeyRange>& ranges, unsigned key_bits) {
  return boundaries(ranges, key_bits) + 1 != ranges.size();
}

// Algorithm 1 as printed, for any width: next_tab over every slice value,
// the first range meeting the slice, a sub-table built depth-first, then
// Generate's merge of equal neighbours. Returns the next free table id.
class LiteralAlgorithm1 {
 public:
  LiteralAlgorithm1(const std::vector<KeyRange>& ranges, unsigned key_bits, unsigned slice_bits)
      : ranges_(ranges) {
    out_.key_bits = key_bits;
    out_.slice_bits = slice_bits;
    out_.ranges = static_cast<std::uint32_t>(ranges.size());
    out_.stages.resize(key_bits / slice_bits);
    construct(0, 0, 0, out_.ranges);
  }
  const RangeTables& tables() const { return out_; }

 private:
  std::uint32_t construct(unsigned stage, std::uint32_t table, Word base, std::uint32_t next) {
    const unsigned shift = out_.key_bits - (stage + 1) * out_.slice_bits;
    const std::size_t slices = std::size_t{1} << out_.slice_bits;
    std::vector<std::optional<std::uint32_t>> next_tab(slices);
    for (std::size_t i = 0; i < slices; ++i) {
      const Word lo = base + (Word{i} << shift);
      const Word hi = lo + ((Word{1} << shift) - 1);
      const auto r = std::partition_point(ranges_.begin(), ranges_.end(),
                                          [lo](const KeyRange& x) { return x.hi < lo; });
      if (r == ranges_.end() || r->lo > hi) continue;  // gap: no entry
      if (r->lo <= lo && r->hi >= hi) {
        next_tab[i] = static_cast<std::uint32_t>(r - ranges_.begin());
      } else {
        next_tab[i] = next;
        next = construct(stage + 1, next, lo, next + 1);
      }
    }
    generate(stage, table, next_tab);
    return next;
  }

  void generate(unsigned stage, std::uint32_t table,
                const std::vector<std::optional<std::uint32_t>>& next_tab) {
    std::optional<RangeTableEntry> open;
    for (std::size_t i = 0; i < next_tab.size(); ++i) {
      const auto v = static_cast<std::uint32_t>(i);
      if (open && next_tab[i] == open->result && open->hi + 1 == v) {
        open->hi = v;
        continue;
      }
      if (open) out_.stages[stage].push_back(*open);
      open.reset();
      if (next_tab[i]) open = RangeTableEntry{table, v, v, *next_tab[i]};
    }
    if (open) out_.stages[stage].push_back(*open);
  }

  const std::vector<KeyRange>& ranges_;
  RangeTables out_;
};

bool same_tables(const RangeTables& a, const RangeTables& b) {
  return a.key_bits == b.key_bits && a.slice_bits == b.slice_bits && a.ranges == b.ranges &&
         a.stages == b.stages;
}

// Shape every build must have, and the size bounds (range_tables.h): stages
// sorted by (table, lo) with disjoint entries; table 0 only in stage 0; each
// sub-table id n.. used in exactly one stage and named by exactly one entry
// of the stage before; at most B tables and tables + 2B entries a stage, and
// the paper's n tables / 2n first-stage entries when there are no gaps.
void check_shape(const RangeTables& t, const std::vector<KeyRange>& ranges) {
  const std::uint32_t n = t.ranges;
  REQUIRE(n == ranges.size());
  REQUIRE(t.stages.size() == t.key_bits / t.slice_bits);
  const std::uint32_t slice_max = (std::uint32_t{1} << t.slice_bits) - 1;
  const std::uint64_t b = boundaries(ranges, t.key_bits);
  const bool gaps = has_gaps(ranges, t.key_bits);
  std::map<std::uint32_t, std::size_t> table_stage;  // sub-table id -> its stage
  std::map<std::uint32_t, std::size_t> named_from;   // sub-table id -> stage naming it
  std::map<std::uint32_t, int> times_named;
  for (std::size_t s = 0; s < t.stages.size(); ++s) {
    const auto& entries = t.stages[s];
    for (std::size_t k = 0; k < entries.size(); ++k) {
      const RangeTableEntry& e = entries[k];
      INFO("stage " << s << " entry " << k << ": table " << e.table << " [" << e.lo << ", " << e.hi
                    << "] -> " << e.result);
      REQUIRE(e.lo <= e.hi);
      REQUIRE(e.hi <= slice_max);
      if (s == 0) {
        REQUIRE(e.table == 0);
      } else {
        REQUIRE(e.table >= n);
        const auto [it, fresh] = table_stage.emplace(e.table, s);
        REQUIRE((fresh || it->second == s));
      }
      if (k > 0) {
        const RangeTableEntry& p = entries[k - 1];
        REQUIRE((p.table < e.table || (p.table == e.table && p.hi < e.lo)));
        // Generate leaves no two adjacent entries of one table with one result.
        REQUIRE(!(p.table == e.table && p.hi + 1 == e.lo && p.result == e.result));
      }
      if (e.result >= n) {
        REQUIRE(s + 1 < t.stages.size());
        named_from[e.result] = s;
        ++times_named[e.result];
      }
    }
    const std::uint32_t tables = tables_in_stage(t, s);
    if (s == 0) {
      REQUIRE(tables == (n == 0 ? 0u : 1u));
    } else {
      REQUIRE(tables <= b);
    }
    REQUIRE(entries.size() <= tables + 2 * b);
    if (!gaps) {
      REQUIRE(tables <= n);
      if (s == 0) REQUIRE(entries.size() <= 2 * std::uint64_t{n});
    }
  }
  REQUIRE(named_from.size() == table_stage.size());
  for (const auto& [id, stage] : table_stage) {
    INFO("table " << id);
    REQUIRE(named_from.count(id) == 1);
    REQUIRE(named_from[id] + 1 == stage);
    REQUIRE(times_named[id] == 1);
  }
  // Ids n, n + 1, ... with none skipped.
  if (!table_stage.empty()) {
    REQUIRE(table_stage.begin()->first == n);
    REQUIRE(table_stage.rbegin()->first == n + table_stage.size() - 1);
  }
  REQUIRE(tables_in_stage(t, t.stages.size()) == 0);
}

// Keys worth asking about: every range's ends and their neighbours, the
// ends of the key space, and random ones, also near the boundaries.
std::vector<Word> probe_keys(const std::vector<KeyRange>& ranges, unsigned key_bits,
                             std::mt19937_64& rng, std::size_t random_count) {
  const Word top = key_space_max(key_bits);
  std::vector<Word> keys = {0, 1, top, top - 1, top / 2, top / 2 + 1};
  for (const KeyRange& r : ranges) {
    keys.push_back(r.lo);
    keys.push_back(r.hi);
    if (r.lo > 0) keys.push_back(r.lo - 1);
    if (r.hi < top) keys.push_back(r.hi + 1);
  }
  for (std::size_t i = 0; i < random_count; ++i) {
    Word k = rng() & top;
    if (!ranges.empty() && i % 2 == 0) {
      const KeyRange& r = ranges[rng() % ranges.size()];
      k = (rng() % 2 ? r.lo : r.hi) + (rng() >> (rng() % 64)) * (rng() % 2 ? 1 : kMax);
      k &= top;
    }
    keys.push_back(k);
  }
  return keys;
}

void check_lookups(const RangeTables& t, const std::vector<KeyRange>& ranges,
                   const std::vector<Word>& keys) {
  for (const Word key : keys) {
    const auto got = match_range(t, key);
    const auto want = binary_search_range(ranges, key);
    if (got != want) {
      INFO("key " << key << ": got " << (got ? std::to_string(*got) : "none") << ", want "
                  << (want ? std::to_string(*want) : "none"));
      REQUIRE(got == want);
    }
  }
}

// Sorted range starts from pieces of the key space: cut points drawn from a
// few clusters of random widths (2^1 .. 2^64 keys), so that boundaries share
// slices at every stage, or fall apart; the ends 1 and 2^w - 1 sometimes
// make one-key pieces at the edges.
std::vector<Word> random_cuts(std::mt19937_64& rng, std::size_t count, unsigned key_bits) {
  const Word top = key_space_max(key_bits);
  std::set<Word> cuts;
  if (rng() % 4 == 0) cuts.insert(1);
  if (rng() % 4 == 0) cuts.insert(top);
  const std::size_t clusters = 1 + rng() % 6;
  std::vector<std::pair<Word, unsigned>> centres;
  for (std::size_t c = 0; c < clusters; ++c) {
    const unsigned width_bits = 1 + static_cast<unsigned>(rng() % key_bits);
    centres.emplace_back(rng() & top, width_bits);
  }
  for (std::size_t tries = 0; cuts.size() < count && tries < 20 * count + 100; ++tries) {
    const auto& [centre, width_bits] = centres[rng() % centres.size()];
    const Word offset = width_bits >= 64 ? rng() : rng() & ((Word{1} << width_bits) - 1);
    const Word cut = (centre + offset) & top;
    if (cut != 0) cuts.insert(cut);
  }
  while (cuts.size() > count) cuts.erase(std::next(cuts.begin(), rng() % cuts.size()));
  return {cuts.begin(), cuts.end()};
}

// Ranges from the pieces between cuts; with gaps, some pieces are dropped
// (now and then the first or last), so ranges may still touch.
std::vector<KeyRange> random_ranges(std::mt19937_64& rng, std::size_t max_ranges, unsigned key_bits,
                                    bool gaps) {
  const Word top = key_space_max(key_bits);
  const std::size_t want = 1 + rng() % max_ranges;
  const std::size_t pieces_wanted = gaps ? 2 * want : want;
  std::vector<Word> starts = {0};
  for (Word c : random_cuts(rng, pieces_wanted - 1, key_bits)) starts.push_back(c);
  const unsigned drop_percent = gaps ? static_cast<unsigned>(10 + rng() % 80) : 0;
  std::vector<KeyRange> ranges;
  for (std::size_t i = 0; i < starts.size(); ++i) {
    const Word hi = i + 1 < starts.size() ? starts[i + 1] - 1 : top;
    if (gaps && rng() % 100 < drop_percent) continue;
    if (ranges.size() < want) ranges.push_back(KeyRange{starts[i], hi});
  }
  return ranges;
}

// All pieces of a small key space, exhaustively checked.
void check_small(const std::vector<KeyRange>& ranges, unsigned key_bits, unsigned slice_bits) {
  INFO("key_bits " << key_bits << ", slice_bits " << slice_bits << ", " << ranges.size()
                   << " ranges");
  const RangeTables t = build_range_tables(ranges, key_bits, slice_bits);
  REQUIRE(same_tables(t, LiteralAlgorithm1(ranges, key_bits, slice_bits).tables()));
  check_shape(t, ranges);
  std::vector<Word> keys;
  for (Word k = 0; k <= key_space_max(key_bits); ++k) keys.push_back(k);
  keys.push_back(key_space_max(key_bits) + 1);  // outside the key space: no range
  keys.push_back(kMax);
  check_lookups(t, ranges, keys);
}

}  // namespace

// ===========================================================================
// 64-bit comparator

TEST_CASE("cal_result holds the four entries in the paper's action order", "[fattree][compare]") {
  const auto table = cal_result_table();
  REQUIRE(table.size() == kCalResultEntries);
  // High halves equal (sub[63:32] == 0 exactly): the low halves decide.
  CHECK(table[0].sub_hi_mask == 0xFFFFFFFFu);
  CHECK(table[0].sub_hi_value == 0);
  CHECK(table[0].xor63_mask == 0);
  CHECK((table[0].xor31_value == 0 && table[0].xor31_mask == 1));
  CHECK(table[0].action == CompareAction::kSubBit31);
  CHECK(table[1].sub_hi_mask == 0xFFFFFFFFu);
  CHECK(table[1].sub_hi_value == 0);
  CHECK(table[1].xor63_mask == 0);
  CHECK((table[1].xor31_value == 1 && table[1].xor31_mask == 1));
  CHECK(table[1].action == CompareAction::kKeyBit31);
  // Otherwise the high halves do, whatever sub[63:32] is.
  CHECK(table[2].sub_hi_mask == 0);
  CHECK((table[2].xor63_value == 0 && table[2].xor63_mask == 1));
  CHECK(table[2].xor31_mask == 0);
  CHECK(table[2].action == CompareAction::kSubBit63);
  CHECK(table[3].sub_hi_mask == 0);
  CHECK((table[3].xor63_value == 1 && table[3].xor63_mask == 1));
  CHECK(table[3].xor31_mask == 0);
  CHECK(table[3].action == CompareAction::kKeyBit63);
  CHECK(static_cast<int>(CompareAction::kKeyBit63) == 4);
}

TEST_CASE("the paper's comparator example takes the fourth action", "[fattree][compare]") {
  const Word key = 0x59A4737582A775ABULL;
  const Word pivot = 0xDDAEE7764589DB15ULL;
  const AluResult alu = alu_phase(key, pivot);
  CHECK(alu.sub_hi == 0x840A7401u);
  CHECK(alu.xor_hi == (0xDDAEE776u ^ 0x59A47375u));
  CHECK(alu.sub_lo == static_cast<std::uint32_t>(0x4589DB15u - 0x82A775ABu));
  CHECK(alu.xor_lo == (0x4589DB15u ^ 0x82A775ABu));
  CHECK(top_bit(alu.xor_hi) == 1);  // xor[63]
  CHECK(top_bit(alu.xor_lo) == 1);  // xor[31]
  CHECK(match_cal_result(alu) == CompareAction::kKeyBit63);
  CHECK_FALSE(key_greater(key, pivot));  // key[63] = 0
  CHECK(key_greater(pivot, key));
}

TEST_CASE("each cal_result action is reached", "[fattree][compare]") {
  // Equal high halves, equal bit 31: sub[31] decides.
  CHECK(match_cal_result(alu_phase(0x0000000500000009ULL, 0x0000000500000003ULL)) ==
        CompareAction::kSubBit31);
  // Equal high halves, bit 31 differs: key[31] decides.
  CHECK(match_cal_result(alu_phase(0x0000000580000000ULL, 0x000000057FFFFFFFULL)) ==
        CompareAction::kKeyBit31);
  // High halves differ, equal top bits: sub[63] decides.
  CHECK(match_cal_result(alu_phase(0x0000000600000000ULL, 0x00000005FFFFFFFFULL)) ==
        CompareAction::kSubBit63);
  // High halves differ in the top bit: key[63] decides.
  CHECK(match_cal_result(alu_phase(0x8000000000000000ULL, 0x7FFFFFFFFFFFFFFFULL)) ==
        CompareAction::kKeyBit63);
}

TEST_CASE("key_greater agrees with > on every pair of edge words", "[fattree][compare]") {
  const std::vector<Word> words = edge_words();
  for (const Word key : words) {
    for (const Word pivot : words) {
      INFO("key " << std::hex << key << ", pivot " << pivot);
      REQUIRE(key_greater(key, pivot) == (key > pivot));
      // Entries 1-2 are taken exactly when the high halves are equal.
      const CompareAction action = match_cal_result(alu_phase(key, pivot));
      const bool low_decides =
          action == CompareAction::kSubBit31 || action == CompareAction::kKeyBit31;
      REQUIRE(low_decides == ((key >> 32) == (pivot >> 32)));
    }
  }
}

TEST_CASE("key_greater agrees with > on a million random pairs", "[fattree][compare]") {
  const std::uint64_t seed = forein::testing::test_seed("fattree compare64 random");
  INFO("FOREIN_SEED=" << seed);
  std::mt19937_64 rng(seed);
  std::size_t action_counts[5] = {};
  for (int i = 0; i < 1'000'000; ++i) {
    const auto [key, pivot] = random_pair(rng);
    ++action_counts[static_cast<int>(match_cal_result(alu_phase(key, pivot)))];
    if (key_greater(key, pivot) != (key > pivot)) {
      INFO("pair " << i << ": key " << std::hex << key << ", pivot " << pivot);
      REQUIRE(key_greater(key, pivot) == (key > pivot));
    }
  }
  for (int a = 1; a <= 4; ++a) {
    INFO("action " << a);
    CHECK(action_counts[a] > 10'000);
  }
}

// ===========================================================================
// Algorithm 1: range tables

TEST_CASE("Figure 4(ii): 6-bit keys as three stages of 2-bit tables", "[fattree][ranges]") {
  // R1..R5 of the paper as ranges 0..4.
  const std::vector<KeyRange> ranges = {{0, 10}, {11, 14}, {15, 37}, {38, 56}, {57, 63}};
  const RangeTables t = build_range_tables(ranges, 6, 2);
  CHECK(t.key_bits == 6);
  CHECK(t.slice_bits == 2);
  CHECK(t.ranges == 5);
  REQUIRE(t.stages.size() == 3);
  const std::vector<RangeTableEntry> stage0 = {
      {0, 0, 0, 5}, {0, 1, 1, 2}, {0, 2, 2, 8}, {0, 3, 3, 10}};
  const std::vector<RangeTableEntry> stage1 = {
      {5, 0, 1, 0},  {5, 2, 2, 6},   {5, 3, 3, 7},   // T5: keys 0..15
      {8, 0, 0, 2},  {8, 1, 1, 9},   {8, 2, 3, 3},   // T8: keys 32..47
      {10, 0, 1, 3}, {10, 2, 2, 11}, {10, 3, 3, 4},  // T10: keys 48..63
  };
  const std::vector<RangeTableEntry> stage2 = {
      {6, 0, 2, 0},  {6, 3, 3, 1},   // T6: keys 8..11
      {7, 0, 2, 1},  {7, 3, 3, 2},   // T7: keys 12..15
      {9, 0, 1, 2},  {9, 2, 3, 3},   // T9: keys 36..39
      {11, 0, 0, 3}, {11, 1, 3, 4},  // T11: keys 56..59
  };
  CHECK(t.stages[0] == stage0);
  CHECK(t.stages[1] == stage1);
  CHECK(t.stages[2] == stage2);
  // The paper's counts: 1 table / 4 entries, 3 / 9, 4 / 8.
  CHECK(tables_in_stage(t, 0) == 1);
  CHECK(tables_in_stage(t, 1) == 3);
  CHECK(tables_in_stage(t, 2) == 4);
  for (Word key = 0; key < 64; ++key) {
    INFO("key " << key);
    REQUIRE(match_range(t, key) == binary_search_range(ranges, key));
  }
  CHECK(match_range(t, 64) == std::nullopt);
  check_small(ranges, 6, 2);
}

TEST_CASE("the paper's 2n-entries bound fails after the first stage", "[fattree][ranges]") {
  // One boundary in a middle slice of each stage-1 table: 3 entries each,
  // 12 in stage 1 for n = 5, while tables + 2B = 4 + 8 holds.
  const std::vector<KeyRange> ranges = {{0, 5}, {6, 21}, {22, 37}, {38, 53}, {54, 63}};
  const RangeTables t = build_range_tables(ranges, 6, 2);
  CHECK(tables_in_stage(t, 1) == 4);
  CHECK(t.stages[1].size() == 12);
  check_small(ranges, 6, 2);
}

TEST_CASE("small key spaces match the literal Algorithm 1 and every key", "[fattree][ranges]") {
  const std::uint64_t seed = forein::testing::test_seed("fattree range tables small");
  INFO("FOREIN_SEED=" << seed);
  std::mt19937_64 rng(seed);
  struct Width {
    unsigned key_bits, slice_bits;
  };
  const std::vector<Width> widths = {{6, 2}, {6, 1}, {6, 3},  {6, 6},  {8, 2},
                                     {8, 4}, {9, 3}, {12, 4}, {12, 6}, {16, 16}};
  for (const Width w : widths) {
    for (int round = 0; round < 60; ++round) {
      const bool gaps = round % 2 == 1;
      const std::size_t max_ranges = round % 3 == 0 ? 4 : 64;
      check_small(random_ranges(rng, max_ranges, w.key_bits, gaps), w.key_bits, w.slice_bits);
    }
  }
  // Singles and edges.
  check_small({}, 6, 2);
  check_small({{0, 63}}, 6, 2);
  check_small({{0, 0}}, 6, 2);
  check_small({{63, 63}}, 6, 2);
  check_small({{0, 0}, {63, 63}}, 6, 2);
  check_small({{5, 20}}, 6, 2);  // one range, two partial stage-0 slices: 2 tables > n
  std::vector<KeyRange> every_key;
  for (Word k = 0; k < 64; ++k) every_key.push_back({k, k});
  check_small(every_key, 6, 2);
  std::vector<KeyRange> every_other;
  for (Word k = 0; k < 64; k += 2) every_other.push_back({k, k});
  check_small(every_other, 6, 2);
}

TEST_CASE("64-bit ranges match a binary search", "[fattree][ranges]") {
  const std::uint64_t seed = forein::testing::test_seed("fattree range tables 64-bit");
  INFO("FOREIN_SEED=" << seed);
  std::mt19937_64 rng(seed);
  const unsigned slice_widths[] = {16, 16, 16, 8, 4, 2, 1};
  for (int round = 0; round < 240; ++round) {
    const bool gaps = round % 2 == 1;
    const unsigned slice_bits = slice_widths[rng() % std::size(slice_widths)];
    // Sizes spread on a log scale up to the fat root's 1,024.
    const std::size_t max_ranges = std::size_t{1} << (rng() % 11);
    const std::vector<KeyRange> ranges = random_ranges(rng, max_ranges, 64, gaps);
    INFO("round " << round << ": " << ranges.size() << " ranges, slice_bits " << slice_bits
                  << (gaps ? ", gaps" : ""));
    const RangeTables t = build_range_tables(ranges, 64, slice_bits);
    check_shape(t, ranges);
    check_lookups(t, ranges, probe_keys(ranges, 64, rng, 2000));
    // Narrow slices keep the literal transcription cheap at full size.
    if (slice_bits <= 8) {
      REQUIRE(same_tables(t, LiteralAlgorithm1(ranges, 64, slice_bits).tables()));
    }
  }
}

TEST_CASE("64-bit, 16-bit slices: the same entries as the literal Algorithm 1",
          "[fattree][ranges]") {
  const std::uint64_t seed = forein::testing::test_seed("fattree range tables literal 16-bit");
  INFO("FOREIN_SEED=" << seed);
  std::mt19937_64 rng(seed);
  // The literal version visits 2^16 slice values per table, so few ranges.
  for (int round = 0; round < 8; ++round) {
    const std::vector<KeyRange> ranges = random_ranges(rng, 12, 64, round % 2 == 1);
    INFO("round " << round << ": " << ranges.size() << " ranges");
    REQUIRE(same_tables(build_range_tables(ranges), LiteralAlgorithm1(ranges, 64, 16).tables()));
  }
}

TEST_CASE("64-bit edge range sets", "[fattree][ranges]") {
  std::mt19937_64 rng(7);
  const std::vector<std::vector<KeyRange>> sets = {
      {},
      {{0, kMax}},
      {{0, 0}},
      {{kMax, kMax}},
      {{0, 0}, {1, kMax - 1}, {kMax, kMax}},
      {{0, 0}, {kMax, kMax}},
      {{Word{1} << 63, Word{1} << 63}},
      {{0, (Word{1} << 48) - 1}, {Word{1} << 48, kMax}},    // aligned: one stage enough
      {{0, (Word{1} << 48)}, {(Word{1} << 48) + 1, kMax}},  // off by one: four stages
      {{0x0000FFFFFFFFFFFFULL, 0x0001000000000000ULL}},     // straddles a top slice
  };
  for (const auto& ranges : sets) {
    INFO(ranges.size() << " ranges");
    const RangeTables t = build_range_tables(ranges);
    check_shape(t, ranges);
    check_lookups(t, ranges, probe_keys(ranges, 64, rng, 200));
    REQUIRE(same_tables(t, LiteralAlgorithm1(ranges, 64, 16).tables()));
  }
  // The whole space is one stage-0 entry; nothing below it.
  const std::vector<KeyRange> all = {{0, kMax}};
  const RangeTables t = build_range_tables(all);
  CHECK(t.stages[0] == std::vector<RangeTableEntry>{{0, 0, 0xFFFF, 0}});
  for (std::size_t s = 1; s < t.stages.size(); ++s) CHECK(t.stages[s].empty());
  CHECK(match_range(build_range_tables({}), 0) == std::nullopt);
}

TEST_CASE("1,024 spread 64-bit ranges build in well under a second", "[fattree][ranges]") {
  const std::uint64_t seed = forein::testing::test_seed("fattree range tables timing");
  INFO("FOREIN_SEED=" << seed);
  std::mt19937_64 rng(seed);
  std::set<Word> cuts;
  while (cuts.size() < 1023) {
    if (const Word c = rng(); c != 0) cuts.insert(c);
  }
  std::vector<KeyRange> ranges;
  Word lo = 0;
  for (Word c : cuts) {
    ranges.push_back({lo, c - 1});
    lo = c;
  }
  ranges.push_back({lo, kMax});
  const auto start = std::chrono::steady_clock::now();
  const RangeTables t = build_range_tables(ranges);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  const double ms = std::chrono::duration<double, std::milli>(elapsed).count();
  std::size_t entries = 0;
  for (const auto& stage : t.stages) entries += stage.size();
  WARN("1024 ranges: " << ms << " ms, " << entries << " entries; per stage " << t.stages[0].size()
                       << ", " << t.stages[1].size() << ", " << t.stages[2].size() << ", "
                       << t.stages[3].size());
  CHECK(ms < 1000.0);
  check_shape(t, ranges);
  check_lookups(t, ranges, probe_keys(ranges, 64, rng, 5000));
}

TEST_CASE("range tables reject bad input", "[fattree][ranges]") {
  const std::vector<KeyRange> ok = {{0, 10}, {11, 20}};
  CHECK_NOTHROW(build_range_tables(ok, 6, 2));
  // Widths.
  CHECK_THROWS_AS(build_range_tables(ok, 6, 0), InvalidArgument);
  CHECK_THROWS_AS(build_range_tables(ok, 34, 17), InvalidArgument);
  CHECK_THROWS_AS(build_range_tables(ok, 6, 4), InvalidArgument);  // not a multiple
  CHECK_THROWS_AS(build_range_tables(ok, 0, 2), InvalidArgument);
  CHECK_THROWS_AS(build_range_tables(ok, 66, 2), InvalidArgument);
  CHECK_THROWS_AS(build_range_tables(ok, 128, 16), InvalidArgument);
  // Ranges.
  const std::vector<KeyRange> reversed = {{5, 4}};
  CHECK_THROWS_AS(build_range_tables(reversed, 6, 2), InvalidArgument);
  const std::vector<KeyRange> unsorted = {{20, 30}, {0, 10}};
  CHECK_THROWS_AS(build_range_tables(unsorted, 6, 2), InvalidArgument);
  const std::vector<KeyRange> overlapping = {{0, 10}, {10, 20}};
  CHECK_THROWS_AS(build_range_tables(overlapping, 6, 2), InvalidArgument);
  const std::vector<KeyRange> nested = {{0, 30}, {5, 6}};
  CHECK_THROWS_AS(build_range_tables(nested, 6, 2), InvalidArgument);
  const std::vector<KeyRange> duplicate = {{3, 3}, {3, 3}};
  CHECK_THROWS_AS(build_range_tables(duplicate, 6, 2), InvalidArgument);
  const std::vector<KeyRange> beyond = {{0, 64}};
  CHECK_THROWS_AS(build_range_tables(beyond, 6, 2), InvalidArgument);
  const std::vector<KeyRange> far_beyond = {{100, 200}};
  CHECK_THROWS_AS(build_range_tables(far_beyond, 6, 2), InvalidArgument);
  CHECK_THROWS_WITH(build_range_tables(overlapping, 6, 2),
                    Catch::Matchers::Contains("not sorted after and disjoint"));
  // Lookups on tables no build would produce.
  RangeTables bad;
  bad.slice_bits = 0;
  CHECK_THROWS_AS(match_range(bad, 0), InvalidArgument);
  bad.slice_bits = 16;
  bad.key_bits = 60;
  CHECK_THROWS_AS(match_range(bad, 0), InvalidArgument);
  // An empty RangeTables (no stages) matches nothing.
  CHECK(match_range(RangeTables{}, 42) == std::nullopt);
}

// PREFIXCOVER against brute force: exact and minimal covers, hollow
// elimination.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "forein/error.h"
#include "switch_lpm/prefix_cover.h"
#include "support/seed.h"

using forein::Word;
using forein::offload::Prefix;
using forein::offload::drop_hollow;
using forein::offload::prefix_contains;
using forein::offload::prefix_cover;
using forein::offload::prefix_first;
using forein::offload::prefix_last;
using forein::offload::prefix_valid;

namespace {

constexpr Word kMax = std::numeric_limits<Word>::max();

// Fewest aligned blocks tiling [lo, hi] at width W, by dynamic programming
// over every block that starts at every word.
std::size_t optimal_cover_size(Word lo, Word hi, unsigned width) {
  const std::size_t unreachable = std::numeric_limits<std::size_t>::max();
  std::vector<std::size_t> best(hi - lo + 2, unreachable);  // best[x - lo]: tiles of [lo, x)
  best[0] = 0;
  for (Word p = lo; p <= hi; ++p) {
    if (best[p - lo] == unreachable) continue;
    for (unsigned k = 0; k <= width; ++k) {
      const Word size = Word{1} << k;
      if (p % size != 0 || p + size - 1 > hi) break;
      best[p + size - lo] = std::min(best[p + size - lo], best[p - lo] + 1);
    }
  }
  return best[hi - lo + 1];
}

// Checks a W = 64 cover without enumerating words: ascending, aligned
// blocks that tile [lo, hi] end to end, each maximal (its parent block
// leaves the interval), which makes the cover the unique minimal one.
void check_cover_64(Word lo, Word hi, const std::vector<Prefix>& cover) {
  INFO("lo=" << lo << " hi=" << hi);
  REQUIRE(!cover.empty());
  REQUIRE(cover.size() <= 126);
  REQUIRE(prefix_first(cover.front()) == lo);
  REQUIRE(prefix_last(cover.back()) == hi);
  for (std::size_t i = 0; i < cover.size(); ++i) {
    const Prefix& p = cover[i];
    REQUIRE(prefix_valid(p));
    if (i > 0) REQUIRE(prefix_first(p) == prefix_last(cover[i - 1]) + 1);
    if (p.len > 0) {
      const Prefix parent{p.value & forein::offload::prefix_mask(p.len - 1), static_cast<std::uint8_t>(p.len - 1)};
      REQUIRE((prefix_first(parent) < lo || prefix_last(parent) > hi));
    }
  }
}

std::size_t matches(const std::vector<Prefix>& cover, Word w, unsigned width = 64) {
  return static_cast<std::size_t>(std::count_if(
      cover.begin(), cover.end(), [&](const Prefix& p) { return prefix_contains(p, w, width); }));
}

}  // namespace

TEST_CASE("prefix cover: the paper's example", "[prefix_cover]") {
  const std::vector<Prefix> expected{{5, 4}, {6, 3}, {8, 2}, {12, 4}};
  CHECK(prefix_cover(5, 12, 4) == expected);
  // Hollow elimination: only keys 5 and 12 exist.
  const std::vector<Word> present{5, 12};
  CHECK(drop_hollow(expected, present, 4) == std::vector<Prefix>{{5, 4}, {12, 4}});
}

TEST_CASE("prefix cover: every interval at widths 4..8 is exact and minimal", "[prefix_cover]") {
  for (unsigned width = 4; width <= 8; ++width) {
    const Word words = Word{1} << width;
    for (Word lo = 0; lo < words; ++lo) {
      for (Word hi = lo; hi < words; ++hi) {
        const std::vector<Prefix> cover = prefix_cover(lo, hi, width);
        bool ok = std::is_sorted(cover.begin(), cover.end(), forein::offload::prefix_less);
        for (const Prefix& p : cover) ok = ok && prefix_valid(p, width);
        for (Word w = 0; w < words && ok; ++w) {
          ok = matches(cover, w, width) == (lo <= w && w <= hi ? 1u : 0u);
        }
        ok = ok && cover.size() == optimal_cover_size(lo, hi, width);
        if (!ok) FAIL("width=" << width << " lo=" << lo << " hi=" << hi << " size=" << cover.size());
      }
    }
  }
}

TEST_CASE("prefix cover: word-space edges at width 64", "[prefix_cover]") {
  CHECK(prefix_cover(0, kMax) == std::vector<Prefix>{{0, 0}});
  CHECK(prefix_cover(7, 7) == std::vector<Prefix>{{7, 64}});
  CHECK(prefix_cover(kMax, kMax) == std::vector<Prefix>{{kMax, 64}});
  CHECK(prefix_cover(Word{1} << 63, kMax) == std::vector<Prefix>{{Word{1} << 63, 1}});
  CHECK(prefix_cover(0, kMax - 1).size() == 64);
  CHECK(prefix_cover(1, kMax).size() == 64);
  CHECK(prefix_cover(1, kMax - 1).size() == 126);  // the worst case, 2W - 2
  for (Word lo : {Word{0}, Word{1}, kMax - 1, kMax}) {
    for (Word hi : {Word{0}, Word{1}, kMax - 1, kMax}) {
      if (lo <= hi) check_cover_64(lo, hi, prefix_cover(lo, hi));
    }
  }
  CHECK_THROWS_AS(prefix_cover(3, 2), forein::InvalidArgument);
  CHECK_THROWS_AS(prefix_cover(0, 16, 4), forein::InvalidArgument);
  CHECK_THROWS_AS(prefix_cover(0, 1, 0), forein::InvalidArgument);
  CHECK_THROWS_AS(prefix_cover(0, 1, 65), forein::InvalidArgument);
}

TEST_CASE("prefix cover: random intervals at width 64", "[prefix_cover]") {
  std::mt19937_64 rng(forein::testing::test_seed("prefix cover random 64"));
  for (int round = 0; round < 20000; ++round) {
    Word lo = rng();
    Word hi = rng();
    switch (round % 4) {
      case 0: break;                                                     // anywhere
      case 1: hi = lo + (rng() % 100000); break;                         // short
      case 2: lo >>= rng() % 64; hi = lo + (rng() >> (rng() % 64)); break;  // mixed scale
      case 3: lo = (Word{1} << 63) + rng() % 5000; hi = lo + rng() % 5000; break;  // int keys
    }
    if (hi < lo) std::swap(lo, hi);
    const std::vector<Prefix> cover = prefix_cover(lo, hi);
    check_cover_64(lo, hi, cover);
    // Words just outside and inside, matched by zero and one prefix.
    if (lo > 0) REQUIRE(matches(cover, lo - 1) == 0);
    if (hi < kMax) REQUIRE(matches(cover, hi + 1) == 0);
    REQUIRE(matches(cover, lo) == 1);
    REQUIRE(matches(cover, hi) == 1);
    const Word inside = lo + rng() % (hi - lo == kMax ? kMax : hi - lo + 1);
    REQUIRE(matches(cover, inside) == 1);
  }
}

TEST_CASE("prefix cover of a node interval", "[prefix_cover]") {
  forein::NodeInterval interval;
  interval.lo = 10;
  interval.hi = 10;
  CHECK(prefix_cover(interval).empty());  // empty: [10, 10)
  interval.hi = 5;
  CHECK(prefix_cover(interval).empty());
  interval.hi = 13;
  CHECK(prefix_cover(interval) == prefix_cover(10, 12));
  interval.hi_inf = true;
  CHECK(prefix_cover(interval) == prefix_cover(10, kMax));
  interval.lo = 0;
  CHECK(prefix_cover(interval) == std::vector<Prefix>{{0, 0}});
}

TEST_CASE("hollow elimination keeps exactly the prefixes holding present words", "[prefix_cover]") {
  std::mt19937_64 rng(forein::testing::test_seed("drop hollow"));
  for (int round = 0; round < 2000; ++round) {
    // Present words clustered in a random window, so both kinds occur.
    const Word base = rng();
    const Word window = Word{1} << (rng() % 40 + 4);
    std::vector<Word> present(rng() % 50);
    for (Word& w : present) w = base + rng() % window;  // may wrap: fine
    std::sort(present.begin(), present.end());
    Word lo = base + rng() % window;
    Word hi = base + rng() % window;
    if (hi < lo) std::swap(lo, hi);
    const std::vector<Prefix> cover = prefix_cover(lo, hi);
    const std::vector<Prefix> kept = drop_hollow(cover, present);
    INFO("round " << round);
    // Kept prefixes are a subsequence of the cover.
    REQUIRE(std::includes(cover.begin(), cover.end(), kept.begin(), kept.end(),
                          forein::offload::prefix_less));
    for (const Prefix& p : cover) {
      const bool holds_present = std::any_of(present.begin(), present.end(),
                                             [&](Word w) { return prefix_contains(p, w); });
      const bool was_kept = std::find(kept.begin(), kept.end(), p) != kept.end();
      REQUIRE(holds_present == was_kept);
    }
    for (Word w : present) {
      if (lo <= w && w <= hi) REQUIRE(matches(kept, w) == 1);
    }
  }
}

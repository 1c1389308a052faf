// dpa: the greedy PLA and the fixed-point models (pla.h, fixed_point.h),
// PGM-style properties on every generated data set, several error bounds
// and segment limits, extreme keys and slopes; and the data sets' own
// contract (ascending, unique, deterministic, no UINT64_MAX).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <limits>
#include <random>
#include <sstream>
#include <span>
#include <vector>

#include "dpa/datasets.h"
#include "dpa/pla.h"
#include "forein/error.h"
#include "support/seed.h"

namespace {

using forein::offload::dpa::FixedModel;
using forein::offload::dpa::PlaSegment;
using forein::offload::dpa::fit_one;
using forein::offload::dpa::max_error;
using forein::offload::dpa::model_lower_bound;
using forein::offload::dpa::pla_segments;
using forein::offload::dpa::to_fixed;
using forein::testing::Dataset;
using forein::testing::make_dataset;

constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
constexpr std::size_t kUnbounded = std::numeric_limits<std::size_t>::max();

// The index of the last key <= key in keys, -1 if none (the oracle).
std::int64_t oracle(std::span<const std::uint64_t> keys, std::uint64_t key) {
  return static_cast<std::int64_t>(std::upper_bound(keys.begin(), keys.end(), key) - keys.begin()) - 1;
}

// Every property of one segmentation, checked exhaustively (the first few
// failures are reported together).
void check_segmentation(std::span<const std::uint64_t> keys, std::uint32_t eps, std::size_t max_count) {
  const std::vector<PlaSegment> segs = pla_segments(keys, eps, max_count);
  INFO("eps " << eps << " max_count " << max_count << " keys " << keys.size() << " segments " << segs.size());
  std::size_t next = 0;
  std::size_t bad = 0;
  std::ostringstream log;  // the first few failures
  for (std::size_t s = 0; s < segs.size(); ++s) {
    const PlaSegment& seg = segs[s];
    if (seg.begin != next || seg.count < 1 || seg.count > max_count || seg.begin + seg.count > keys.size()) {
      FAIL("segment " << s << " begin " << seg.begin << " count " << seg.count << " expected begin " << next);
    }
    next += seg.count;
    const auto sk = keys.subspan(seg.begin, seg.count);
    if (max_error(sk, seg.model) > eps) {
      FAIL("segment " << s << " max_error " << max_error(sk, seg.model) << " > eps");
    }
    const std::uint32_t count = static_cast<std::uint32_t>(seg.count);
    for (std::uint32_t i = 0; i < count; ++i) {
      // Training key: found, within the window around the prediction.
      const std::int64_t p = seg.model.predict(sk[i]);
      std::size_t probes = 0;
      const std::int64_t at = model_lower_bound(sk, seg.model, eps, sk[i], &probes);
      if (at != i || p < static_cast<std::int64_t>(i) - eps || p > static_cast<std::int64_t>(i) + eps ||
          probes > 2 * std::size_t{eps} + 1 || probes == 0) {
        if (++bad <= 5) {
          log << "segment " << s << " key #" << i << " (" << sk[i] << "): found " << at << " predicted "
                                   << p << " probes " << probes << "; ";
        }
      }
      // Keys between this key and the next (not in the training set).
      const std::uint64_t hi = i + 1 < count ? sk[i + 1] : (sk[i] < kMax ? kMax : sk[i]);
      if (hi > sk[i] && hi - sk[i] > 1) {
        for (const std::uint64_t q : {sk[i] + 1, sk[i] + (hi - sk[i]) / 2, hi - 1}) {
          if (model_lower_bound(sk, seg.model, eps, q) != i && ++bad <= 5) {
            log << "segment " << s << " between #" << i << " key " << q << " found "
                                     << model_lower_bound(sk, seg.model, eps, q) << "; ";
          }
        }
      }
    }
    // Below the segment's first key.
    if (sk[0] > 0) {
      for (const std::uint64_t q : {std::uint64_t{0}, sk[0] / 2, sk[0] - 1}) {
        if (model_lower_bound(sk, seg.model, eps, q) != -1 && ++bad <= 5) {
          log << "segment " << s << " below first: key " << q << "; ";
        }
      }
    }
    // Past the last key.
    if (sk.back() < kMax) {
      for (const std::uint64_t q : {sk.back() + 1, kMax}) {
        if (model_lower_bound(sk, seg.model, eps, q) != count - 1 && ++bad <= 5) {
          log << "segment " << s << " past last: key " << q << "; ";
        }
      }
    }
  }
  INFO(log.str());
  REQUIRE(next == keys.size());
  REQUIRE(bad == 0);
}

// A two-level lookup over the whole set (segment by first key, then the
// model), as the store descends: the global lower bound of random keys.
void check_global_lookups(std::span<const std::uint64_t> keys, std::uint32_t eps, std::size_t max_count,
                          std::uint64_t seed) {
  const std::vector<PlaSegment> segs = pla_segments(keys, eps, max_count);
  std::vector<std::uint64_t> firsts;
  for (const PlaSegment& s : segs) firsts.push_back(keys[s.begin]);
  std::mt19937_64 rng(seed);
  std::size_t bad = 0;
  std::ostringstream log;
  for (int t = 0; t < 2000; ++t) {
    std::uint64_t q = rng();
    if (t % 2 == 0) q = keys[rng() % keys.size()] + (rng() % 3) - 1;  // near a key
    const auto it = std::upper_bound(firsts.begin(), firsts.end(), q);
    std::int64_t got = -1;
    if (it != firsts.begin()) {
      const PlaSegment& s = segs[static_cast<std::size_t>(it - firsts.begin()) - 1];
      got = static_cast<std::int64_t>(s.begin) +
            model_lower_bound(keys.subspan(s.begin, s.count), s.model, eps, q);
    }
    if (got != oracle(keys, q) && ++bad <= 5) log << "key " << q << " got " << got << "; ";
  }
  INFO(log.str());
  REQUIRE(bad == 0);
}

}  // namespace

TEST_CASE("data sets: ascending, unique, deterministic, below UINT64_MAX", "[dpa][datasets]") {
  for (const Dataset d : forein::testing::all_datasets()) {
    INFO(forein::testing::dataset_name(d));
    REQUIRE(forein::testing::dataset_by_name(forein::testing::dataset_name(d)) == d);
    REQUIRE(make_dataset(d, 0).empty());
    REQUIRE(make_dataset(d, 1).size() == 1);
    for (const std::size_t n : {std::size_t{1000}, std::size_t{100000}}) {
      const auto keys = make_dataset(d, n, 7);
      REQUIRE(keys.size() == n);
      REQUIRE(std::adjacent_find(keys.begin(), keys.end(), std::greater_equal<>()) == keys.end());
      REQUIRE(keys.back() < kMax);
      REQUIRE(keys == make_dataset(d, n, 7));
      REQUIRE(keys != make_dataset(d, n, 8));
    }
  }
  REQUIRE_FALSE(forein::testing::dataset_by_name("osmc").has_value());
  // dense4x: within [0, 4n), about a quarter of the universe used evenly.
  const auto dense = make_dataset(Dataset::kDense, 100000);
  REQUIRE(dense.back() < 400000);
  REQUIRE(dense[50000] > 180000);
  REQUIRE(dense[50000] < 220000);
  // sparse spans the 64-bit range.
  const auto sparse = make_dataset(Dataset::kSparse, 100000);
  REQUIRE(sparse.front() < (kMax >> 10));
  REQUIRE(sparse.back() > kMax - (kMax >> 10));
  // normal: the median near 2^63.
  const auto normal = make_dataset(Dataset::kNormal, 100000);
  const double mid = static_cast<double>(normal[50000]) / 9223372036854775808.0;
  REQUIRE(mid > 0.98);
  REQUIRE(mid < 1.02);
}

TEST_CASE("pla: every data set, eps x max_count, all properties", "[dpa][pla]") {
  const std::uint64_t seed = forein::testing::test_seed("pla sweep");
  for (const Dataset d : forein::testing::all_datasets()) {
    const auto keys = make_dataset(d, 20000, seed);
    for (const std::uint32_t eps : {1u, 4u, 8u, 16u, 64u}) {
      for (const std::size_t max_count : {std::size_t{1}, std::size_t{7}, std::size_t{128}, kUnbounded}) {
        INFO(forein::testing::dataset_name(d));
        check_segmentation(keys, eps, max_count);
        check_global_lookups(keys, eps, max_count, seed + eps);
      }
    }
  }
}

TEST_CASE("pla: segment counts at eps 8 (reported)", "[dpa][pla]") {
  // Fixed seed 42, 1M keys: the figures docs/dpa.md and reports quote.
  for (const Dataset d : forein::testing::all_datasets()) {
    const auto keys = make_dataset(d, 1000000);
    const auto bounded = pla_segments(keys, 8, 128);
    const auto free = pla_segments(keys, 8, kUnbounded);
    std::cout << "pla eps 8, 1M keys, " << forein::testing::dataset_name(d) << ": " << bounded.size()
              << " segments (max 128 keys), " << free.size() << " unbounded\n";
    REQUIRE(bounded.size() >= keys.size() / 128);
    REQUIRE(free.size() <= bounded.size());
    REQUIRE(free.size() >= 1);
  }
  // dense4x is near linear: a line covers far more than 128 keys.
  REQUIRE(pla_segments(make_dataset(Dataset::kDense, 1000000), 8, kUnbounded).size() < 1000000 / 128);
}

TEST_CASE("pla: extreme keys, gaps and slopes", "[dpa][pla]") {
  std::vector<std::vector<std::uint64_t>> sets;
  sets.push_back({0});
  sets.push_back({kMax - 1});
  sets.push_back({0, kMax - 1});
  sets.push_back({0, 1, kMax - 1});
  sets.push_back({0, kMax - 2, kMax - 1});
  sets.push_back({kMax});  // UINT64_MAX itself is a valid key for the PLA
  sets.push_back({0, kMax});
  // Consecutive integers (slope 1) starting at 0, in the middle and at the top.
  for (const std::uint64_t base : {std::uint64_t{0}, std::uint64_t{1} << 63, kMax - 5000}) {
    std::vector<std::uint64_t> v;
    for (std::uint64_t i = 0; i < 5000; ++i) v.push_back(base + i);
    sets.push_back(v);
  }
  // Slope near 2^-60: keys 2^60 apart (16 of them fit below 2^64).
  {
    std::vector<std::uint64_t> v;
    for (std::uint64_t i = 0; i < 15; ++i) v.push_back(i << 60);
    v.push_back(kMax - 1);
    sets.push_back(v);
  }
  // Huge gaps between dense runs.
  {
    std::vector<std::uint64_t> v;
    for (std::uint64_t i = 0; i < 300; ++i) v.push_back(i);
    for (std::uint64_t i = 0; i < 300; ++i) v.push_back((std::uint64_t{1} << 40) + 3 * i);
    for (std::uint64_t i = 0; i < 300; ++i) v.push_back((std::uint64_t{1} << 63) + (i << 20));
    for (std::uint64_t i = 0; i < 300; ++i) v.push_back(kMax - 301 + i);
    sets.push_back(v);
  }
  // Alternating gaps of 1 and 2^50: a step function.
  {
    std::vector<std::uint64_t> v;
    std::uint64_t k = 5;
    for (int i = 0; i < 2000; ++i) {
      v.push_back(k);
      k += (i % 2 == 0) ? 1 : (std::uint64_t{1} << 50);
    }
    sets.push_back(v);
  }
  for (std::size_t s = 0; s < sets.size(); ++s) {
    for (const std::uint32_t eps : {1u, 4u, 8u, 16u, 64u}) {
      for (const std::size_t max_count : {std::size_t{1}, std::size_t{7}, std::size_t{128}, kUnbounded}) {
        INFO("set " << s << " first key " << sets[s].front());
        check_segmentation(sets[s], eps, max_count);
      }
    }
  }
  // Consecutive integers are one line whatever the count (slope exactly 1).
  std::vector<std::uint64_t> run;
  for (std::uint64_t i = 0; i < 100000; ++i) run.push_back((std::uint64_t{1} << 62) + i);
  REQUIRE(pla_segments(run, 1, kUnbounded).size() == 1);
  FixedModel m;
  REQUIRE(fit_one(run, 1, &m));
  REQUIRE(max_error(run, m) == 0);
  REQUIRE(m.predict(run.back()) == 99999);
}

TEST_CASE("pla: fit_one", "[dpa][pla]") {
  FixedModel m;
  REQUIRE(fit_one({}, 8, &m));
  const std::vector<std::uint64_t> one{42};
  REQUIRE(fit_one(one, 1, &m));
  REQUIRE(m.predict(42) == 0);
  // Every segment the greedy makes is fitted again by fit_one.
  const auto keys = make_dataset(Dataset::kLognormal, 20000);
  for (const PlaSegment& s : pla_segments(keys, 8, 128)) {
    const auto sk = std::span<const std::uint64_t>(keys).subspan(s.begin, s.count);
    REQUIRE(fit_one(sk, 8, &m));
    REQUIRE(max_error(sk, m) <= 8);
  }
  // A knee no line fits within 1: 64 consecutive keys, then 64 keys 2^40 apart.
  std::vector<std::uint64_t> knee;
  for (std::uint64_t i = 0; i < 64; ++i) knee.push_back(i);
  for (std::uint64_t i = 1; i <= 64; ++i) knee.push_back(63 + (i << 40));
  REQUIRE_FALSE(fit_one(knee, 1, &m));
  REQUIRE(fit_one(knee, 64, &m));  // a flat-ish line is within 64 of all 128
  REQUIRE(max_error(knee, m) <= 64);
  // Unsorted or duplicate keys: no model.
  const std::vector<std::uint64_t> unsorted{1, 3, 2};
  const std::vector<std::uint64_t> dup{1, 2, 2, 3};
  REQUIRE_FALSE(fit_one(unsorted, 64, &m));
  REQUIRE_FALSE(fit_one(dup, 64, &m));
}

TEST_CASE("pla: unsorted or duplicate input and max_count 0 are rejected", "[dpa][pla]") {
  const std::vector<std::uint64_t> unsorted{1, 3, 2};
  const std::vector<std::uint64_t> dup{1, 2, 2, 3};
  const std::vector<std::uint64_t> fine{1, 2, 3};
  REQUIRE_THROWS_AS(pla_segments(unsorted, 8, 128), forein::InvalidArgument);
  REQUIRE_THROWS_AS(pla_segments(dup, 8, 128), forein::InvalidArgument);
  REQUIRE_THROWS_AS(pla_segments(fine, 8, 0), forein::InvalidArgument);
  REQUIRE(pla_segments({}, 8, 128).empty());
}

TEST_CASE("fixed point: to_fixed and predict edge cases", "[dpa][pla]") {
  // Zero, negative, NaN and infinite slopes: a flat model.
  for (const long double s : {0.0L, -1.0L, std::numeric_limits<long double>::quiet_NaN(),
                              std::numeric_limits<long double>::infinity()}) {
    const FixedModel m = to_fixed(100, s, 3);
    REQUIRE(m.slope_mant == 0);
    REQUIRE(m.predict(100) == 3);
    REQUIRE(m.predict(kMax) == 3);
  }
  // Slope 1: mantissa 2^63, shift 63; exact on the whole range.
  FixedModel one = to_fixed(0, 1.0L, 0);
  REQUIRE(one.slope_mant == (std::uint64_t{1} << 63));
  REQUIRE(one.slope_shift == 63);
  REQUIRE(one.predict(12345) == 12345);
  REQUIRE(one.predict(std::uint64_t{1} << 29) == (std::int64_t{1} << 29));
  // Predictions saturate (the slope term at 2^30 positions), never wrap.
  REQUIRE(one.predict(std::uint64_t{1} << 40) == (std::int64_t{1} << 30));
  REQUIRE(one.predict(kMax) == (std::int64_t{1} << 30));
  // Both terms saturated (a huge intercept, as garbage bytes may hold): the
  // sum must not overflow 64 bits.
  FixedModel worst;
  worst.slope_mant = kMax;
  worst.slope_shift = 0;
  worst.intercept_q32 = std::numeric_limits<std::int64_t>::max();
  REQUIRE(worst.predict(kMax) > 0);
  REQUIRE(worst.predict(kMax) >= worst.predict(0));
  worst.intercept_q32 = std::numeric_limits<std::int64_t>::min();
  REQUIRE(worst.predict(0) < 0);
  REQUIRE(worst.predict(kMax) == 0);  // -2^62 + 2^62 in Q32.32
  // Slope 0.5 and the floor.
  const FixedModel half = to_fixed(1000, 0.5L, 0);
  REQUIRE(half.predict(1001) == 0);
  REQUIRE(half.predict(1002) == 1);
  REQUIRE(half.predict(1003) == 1);
  // Keys below key0 predict the intercept.
  REQUIRE(half.predict(0) == 0);
  REQUIRE(to_fixed(1000, 0.5L, 7).predict(5) == 7);
  // Slope 2^-60 keeps 63 significant bits (shift 123).
  const FixedModel tiny = to_fixed(0, 0x1p-60L, 0);
  REQUIRE(tiny.slope_mant == (std::uint64_t{1} << 63));
  REQUIRE(tiny.slope_shift == 123);
  REQUIRE(tiny.predict(std::uint64_t{1} << 60) == 1);
  REQUIRE(tiny.predict((std::uint64_t{1} << 60) - 1) == 0);
  REQUIRE(tiny.predict(kMax) == 15);
  // Below 2^-63 the shift stops at 127 and the mantissa loses bits.
  const FixedModel tinier = to_fixed(0, 0x1p-70L, 0);
  REQUIRE(tinier.slope_shift == 127);
  REQUIRE(tinier.slope_mant == (std::uint64_t{1} << 57));
  REQUIRE(tinier.predict(kMax) == 0);
  // A slope just below 1 rounds to a 64-bit mantissa without overflow.
  const FixedModel near1 = to_fixed(0, 1.0L - 0x1p-64L, 0);
  REQUIRE(near1.slope_shift == 64);
  REQUIRE(near1.slope_mant == kMax);
  REQUIRE(near1.predict(1000) == 999);  // 1000 x (1 - 2^-64) floors to 999
  // Intercepts: Q32.32, rounded; negative; clamped at +-2^30 positions.
  REQUIRE(to_fixed(0, 0, 2.25L).intercept_q32 == (std::int64_t{9} << 30));
  REQUIRE(to_fixed(0, 0, -1.5L).predict(0) == -2);
  REQUIRE(to_fixed(0, 0, 1e30L).intercept_q32 == (std::int64_t{1} << 62));
  REQUIRE(to_fixed(0, 0, -1e30L).intercept_q32 == -(std::int64_t{1} << 62));
  // position() clamps to the array.
  REQUIRE(to_fixed(0, 0, -5).position(0, 10) == 0);
  REQUIRE(to_fixed(0, 0, 50).position(0, 10) == 9);
  REQUIRE(one.position(kMax, 10) == 9);
  // search_window clamps both ends.
  const auto w = forein::offload::dpa::search_window(-3, 4, 10);
  REQUIRE(w.first == 0);
  REQUIRE(w.last == 1);
  const auto w2 = forein::offload::dpa::search_window(20, 4, 10);
  REQUIRE(w2.first == 9);
  REQUIRE(w2.last == 9);
}

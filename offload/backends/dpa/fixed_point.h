// dpa: fixed-point linear models. BlueField-3 DPAs have no floating point
// (DPA-Store section 3.1.1), so a model predicts with integers only:
//
//   pos = floor(intercept + slope * (key - key0))
//
// slope = slope_mant / 2^slope_shift (an unsigned mantissa and a shift, so
// both the tiny slopes of sparse 64-bit keys and slopes near 1 keep 63
// significant bits), intercept in Q32.32, and the product formed in 128
// bits, as the paper does ("we temporarily expand it to 128-bit during
// calculations"). key0 is the segment's first key, so key - key0 never
// wraps for keys the segment covers; keys below key0 predict intercept.
//
// A model trained by pla.h guarantees |predict(key_i) - i| <= epsilon for
// every training key i, checked with exactly this arithmetic.
#pragma once

#include <cstdint>
#include <limits>

namespace forein::offload::dpa {

struct FixedModel {
  std::uint64_t key0 = 0;
  std::uint64_t slope_mant = 0;
  std::uint8_t slope_shift = 0;  // 0..127
  std::int64_t intercept_q32 = 0;

  bool operator==(const FixedModel&) const = default;

  // The unclamped prediction (the slope term saturating at 2^30 positions,
  // the sum at +-2^31: garbage bytes cannot make it overflow).
  std::int64_t predict(std::uint64_t key) const noexcept {
    std::int64_t part_q32 = 0;
    if (key > key0 && slope_mant != 0) {
      const unsigned __int128 prod = static_cast<unsigned __int128>(key - key0) * slope_mant;
      // prod / 2^shift in Q32.32: shift right by (shift - 32), or left.
      unsigned __int128 q32;
      const unsigned shift = slope_shift & 127u;
      if (shift >= 32) {
        q32 = prod >> (shift - 32);
      } else {
        const unsigned left = 32 - shift;
        q32 = (prod >> (128 - left)) != 0 ? ~static_cast<unsigned __int128>(0) : prod << left;
      }
      constexpr unsigned __int128 kMax = static_cast<unsigned __int128>(1) << 62;
      part_q32 = q32 >= kMax ? static_cast<std::int64_t>(kMax) : static_cast<std::int64_t>(q32);
    }
    constexpr std::int64_t kLimit = std::int64_t{1} << 62;
    std::int64_t sum = intercept_q32;
    if (sum > kLimit) sum = kLimit;
    if (sum < -kLimit) sum = -kLimit;
    // sum in [-2^62, 2^62] and part_q32 in [0, 2^62]: the one sum that does
    // not fit, 2^63, saturates.
    constexpr std::int64_t kTop = std::numeric_limits<std::int64_t>::max();
    sum = (sum > 0 && part_q32 > kTop - sum) ? kTop : sum + part_q32;
    return sum >> 32;  // arithmetic shift: floor
  }

  // The prediction clamped to [0, count - 1] (count >= 1).
  std::uint32_t position(std::uint64_t key, std::uint32_t count) const noexcept {
    const std::int64_t p = predict(key);
    if (p < 0 || count == 0) return 0;
    if (p >= static_cast<std::int64_t>(count)) return count - 1;
    return static_cast<std::uint32_t>(p);
  }
};

// The search window [first, last] of a prediction with error bound eps
// over count entries (count >= 1), clamped to the array.
struct Window {
  std::uint32_t first = 0;
  std::uint32_t last = 0;
};

inline Window search_window(std::int64_t predicted, std::uint32_t eps, std::uint32_t count) noexcept {
  Window w;
  if (count == 0) return w;
  const std::int64_t lo = predicted - static_cast<std::int64_t>(eps);
  const std::int64_t hi = predicted + static_cast<std::int64_t>(eps);
  const std::int64_t top = static_cast<std::int64_t>(count) - 1;
  w.first = static_cast<std::uint32_t>(lo < 0 ? 0 : (lo > top ? top : lo));
  w.last = static_cast<std::uint32_t>(hi < 0 ? 0 : (hi > top ? top : hi));
  return w;
}

}  // namespace forein::offload::dpa

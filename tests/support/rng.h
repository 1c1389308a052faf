// A seeded random source for randomized tests: one std::mt19937_64 stream
// with the few draws the tests need.
#pragma once

#include <cstdint>
#include <random>

namespace forein::testing {

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : gen_(seed) {}
  std::uint64_t next() { return gen_(); }
  // Uniform in [0, n); n > 0.
  std::uint64_t below(std::uint64_t n) { return std::uniform_int_distribution<std::uint64_t>(0, n - 1)(gen_); }
  // True with probability num / den.
  bool chance(std::uint64_t num, std::uint64_t den) { return below(den) < num; }
  // The underlying engine, for std::shuffle and distributions.
  std::mt19937_64& gen() { return gen_; }

 private:
  std::mt19937_64 gen_;
};

}  // namespace forein::testing

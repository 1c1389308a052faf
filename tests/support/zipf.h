// Zipf-distributed ranks in [0, n) with exponent theta (Gray et al.'s
// method, as in YCSB): constant time per draw after an O(n) setup.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>

namespace forein::testing {

class ZipfGenerator {
 public:
  ZipfGenerator(std::uint64_t n, double theta) : n_(n), theta_(theta) {
    zeta_n_ = zeta(n, theta);
    const double zeta2 = zeta(2, theta);
    alpha_ = 1.0 / (1.0 - theta);
    eta_ = (1.0 - std::pow(2.0 / static_cast<double>(n), 1.0 - theta)) / (1.0 - zeta2 / zeta_n_);
  }

  // Rank 0 is the most popular.
  template <typename Rng>
  std::uint64_t operator()(Rng& rng) {
    const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
    const double uz = u * zeta_n_;
    if (uz < 1.0) return 0;
    if (uz < 1.0 + std::pow(0.5, theta_)) return 1;
    auto rank = static_cast<std::uint64_t>(static_cast<double>(n_) *
                                           std::pow(eta_ * u - eta_ + 1.0, alpha_));
    return rank >= n_ ? n_ - 1 : rank;
  }

 private:
  static double zeta(std::uint64_t n, double theta) {
    double sum = 0;
    for (std::uint64_t i = 1; i <= n; ++i) sum += 1.0 / std::pow(static_cast<double>(i), theta);
    return sum;
  }

  std::uint64_t n_;
  double theta_;
  double zeta_n_, alpha_, eta_;
};

}  // namespace forein::testing

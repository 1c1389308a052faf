// Zipf-distributed ranks in [0, n) with exponent theta: P(rank r) is
// proportional to 1 / (r + 1)^theta.
//
// 0 < theta < 1: Gray et al.'s method, as in YCSB: constant time per draw
// after an O(n) setup. Its closed form (alpha = 1 / (1 - theta)) does not
// exist for theta >= 1, and every benchmark's draws depend on it, so it is
// kept bit for bit.
// theta >= 1: rejection-inversion (Hormann and Derflinger, "Rejection-
// inversion to generate variates from monotone discrete distributions",
// ACM TOMACS 1996), the algorithm of Apache Commons RNG's
// RejectionInversionZipfSampler: exact, O(1) setup, about one uniform per
// draw (the rejection rate is small for any theta).
#pragma once

#include <cmath>
#include <cstdint>
#include <random>

namespace forein::testing {

class ZipfGenerator {
 public:
  ZipfGenerator(std::uint64_t n, double theta) : n_(n), theta_(theta) {
    if (theta < 1.0) {
      zeta_n_ = zeta(n, theta);
      const double zeta2 = zeta(2, theta);
      alpha_ = 1.0 / (1.0 - theta);
      eta_ = (1.0 - std::pow(2.0 / static_cast<double>(n), 1.0 - theta)) / (1.0 - zeta2 / zeta_n_);
    } else {
      h_integral_x1_ = h_integral(1.5) - 1.0;
      h_integral_n_ = h_integral(static_cast<double>(n) + 0.5);
      s_ = 2.0 - h_integral_inverse(h_integral(2.5) - h(2.0));
    }
  }

  // Rank 0 is the most popular.
  template <typename Rng>
  std::uint64_t operator()(Rng& rng) {
    if (theta_ >= 1.0) return rejection_inversion(rng);
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

  // Draws k in [1, n] with P(k) ~ h(k) = k^-theta; returns k - 1.
  template <typename Rng>
  std::uint64_t rejection_inversion(Rng& rng) {
    const double n = static_cast<double>(n_);
    for (;;) {
      const double u = h_integral_n_ + std::uniform_real_distribution<double>(0.0, 1.0)(rng) *
                                           (h_integral_x1_ - h_integral_n_);
      const double x = h_integral_inverse(u);
      double k = std::floor(x + 0.5);
      if (k < 1.0) k = 1.0;
      if (k > n) k = n;
      if (k - x <= s_ || u >= h_integral(k + 0.5) - h(k)) return static_cast<std::uint64_t>(k) - 1;
    }
  }
  // h(x) = x^-theta; H(x) = (x^(1-theta) - 1) / (1 - theta) (log x at 1),
  // written with helper1/2 so that theta = 1 and theta near 1 stay exact.
  double h(double x) const { return std::exp(-theta_ * std::log(x)); }
  double h_integral(double x) const {
    const double log_x = std::log(x);
    return helper2((1.0 - theta_) * log_x) * log_x;
  }
  double h_integral_inverse(double x) const {
    double t = x * (1.0 - theta_);
    if (t < -1.0) t = -1.0;  // rounding; H's range keeps t >= -1
    return std::exp(helper1(t) * x);
  }
  // log(1 + x) / x and (exp(x) - 1) / x, with their series near 0.
  static double helper1(double x) {
    return std::abs(x) > 1e-8 ? std::log1p(x) / x : 1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x));
  }
  static double helper2(double x) {
    return std::abs(x) > 1e-8 ? std::expm1(x) / x : 1.0 + x * 0.5 * (1.0 + x * (1.0 / 3.0) * (1.0 + 0.25 * x));
  }

  std::uint64_t n_;
  double theta_;
  double zeta_n_ = 0, alpha_ = 0, eta_ = 0;
  double h_integral_x1_ = 0, h_integral_n_ = 0, s_ = 0;
};

}  // namespace forein::testing

#include "dpa/datasets.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

namespace forein::testing {

namespace {

constexpr std::uint64_t kTop = std::numeric_limits<std::uint64_t>::max() - 1;  // largest key made

// Distributions written out here (not <random>'s, whose algorithms the
// standard leaves to the library) so a seed gives the same keys everywhere.
class Source {
 public:
  Source(Dataset d, std::uint64_t seed) : rng_(seed ^ (0x9e3779b97f4a7c15ULL * (static_cast<std::uint64_t>(d) + 1))) {}
  std::uint64_t bits() { return rng_(); }
  // [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }
  // (0, 1]: safe for log.
  double uniform_open() { return 1.0 - uniform(); }
  double exponential(double mean) { return -std::log(uniform_open()) * mean; }
  double normal() {  // Box-Muller, one of the pair
    const double r = std::sqrt(-2.0 * std::log(uniform_open()));
    return r * std::cos(6.283185307179586 * uniform());
  }

 private:
  std::mt19937_64 rng_;
};

std::uint64_t clamp_key(double x) {
  if (!(x > 0)) return 0;  // also NaN
  if (x >= 18446744073709549568.0) return kTop;  // the largest double below 2^64
  const auto k = static_cast<std::uint64_t>(x);
  return k > kTop ? kTop : k;
}

// n unique keys from draw(), ascending: draw n, sort, drop duplicates,
// draw what is missing, repeat.
template <typename Draw>
std::vector<std::uint64_t> unique_sample(std::size_t n, Draw draw) {
  std::vector<std::uint64_t> keys;
  keys.reserve(n);
  while (keys.size() < n) {
    const std::size_t missing = n - keys.size();
    for (std::size_t i = 0; i < missing; ++i) keys.push_back(draw());
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  }
  return keys;
}

// dense4x: Knuth's selection sampling (Algorithm S) over [0, 4n): each of
// the 4n candidates is taken with probability (needed / left), which picks
// a uniform n-subset, already in order.
std::vector<std::uint64_t> make_dense(std::size_t n, Source& src) {
  std::vector<std::uint64_t> keys;
  keys.reserve(n);
  const std::uint64_t universe = 4 * static_cast<std::uint64_t>(n);
  for (std::uint64_t t = 0; t < universe && keys.size() < n; ++t) {
    const double left = static_cast<double>(universe - t);
    const double needed = static_cast<double>(n - keys.size());
    if (left * src.uniform() < needed) keys.push_back(t);
  }
  return keys;
}

// books: clusters of keys, as popularity data looks (SOSD's amzn: dense
// runs around popular values, sparse stretches between). Cluster sizes
// follow Zipf weights (exponent 0.8) in shuffled order; inside a cluster
// the gaps are 1 + exponential with a log-uniform mean of 1 to 2^20;
// between clusters an exponential jump of mean 2^28. Every gap is capped
// at 2^31 and the start is below 2^62, so n < 2^32 keys cannot overflow.
std::vector<std::uint64_t> make_books(std::size_t n, Source& src) {
  std::vector<std::uint64_t> keys;
  keys.reserve(n);
  const std::size_t clusters = std::max<std::size_t>(1, n / 512);
  std::vector<double> weight(clusters);
  for (std::size_t r = 0; r < clusters; ++r) weight[r] = 1.0 / std::pow(static_cast<double>(r + 1), 0.8);
  for (std::size_t i = clusters; i > 1; --i) std::swap(weight[i - 1], weight[src.bits() % i]);  // Fisher-Yates
  const double total = std::accumulate(weight.begin(), weight.end(), 0.0);
  constexpr double kCap = 2147483648.0;  // 2^31
  std::uint64_t key = src.bits() >> 2;
  bool first = true;
  for (std::size_t c = 0; c < clusters && keys.size() < n; ++c) {
    std::size_t size = static_cast<std::size_t>(std::ceil(static_cast<double>(n) * weight[c] / total));
    if (c + 1 == clusters || size > n - keys.size()) size = n - keys.size();
    const double mean_gap = std::exp2(20.0 * src.uniform());
    if (!first) key += 1 + static_cast<std::uint64_t>(std::min(src.exponential(268435456.0), kCap));
    for (std::size_t i = 0; i < size; ++i) {
      if (!first) key += 1 + static_cast<std::uint64_t>(std::min(src.exponential(mean_gap), kCap));
      first = false;
      keys.push_back(key);
    }
  }
  // Clusters whose rounded sizes fell short of n continue the last one.
  while (keys.size() < n) {
    key += 1 + static_cast<std::uint64_t>(std::min(src.exponential(1024.0), kCap));
    keys.push_back(key);
  }
  return keys;
}

}  // namespace

const char* dataset_name(Dataset d) {
  switch (d) {
    case Dataset::kDense: return "dense4x";
    case Dataset::kSparse: return "sparse";
    case Dataset::kNormal: return "normal";
    case Dataset::kLognormal: return "lognormal";
    case Dataset::kBooks: return "books";
  }
  return "?";
}

std::optional<Dataset> dataset_by_name(std::string_view name) {
  for (const Dataset d : all_datasets()) {
    if (name == dataset_name(d)) return d;
  }
  return std::nullopt;
}

std::vector<Dataset> all_datasets() {
  return {Dataset::kDense, Dataset::kSparse, Dataset::kNormal, Dataset::kLognormal, Dataset::kBooks};
}

std::vector<std::uint64_t> make_dataset(Dataset d, std::size_t n, std::uint64_t seed) {
  if (n == 0) return {};
  Source src(d, seed);
  switch (d) {
    case Dataset::kDense:
      return make_dense(n, src);
    case Dataset::kSparse:
      return unique_sample(n, [&] {
        std::uint64_t k = src.bits();
        while (k > kTop) k = src.bits();
        return k;
      });
    case Dataset::kNormal:
      // 2^63 + z x 2^60 formed in integers from z x 2^60 (finer than a
      // double at 2^63), clamped to the key range.
      return unique_sample(n, [&] {
        const double off = src.normal() * 1152921504606846976.0;  // 2^60
        if (off >= 9223372036854775807.0) return kTop;
        if (off <= -9223372036854775807.0) return std::uint64_t{0};
        const auto o = static_cast<std::int64_t>(std::llround(off));
        return static_cast<std::uint64_t>(std::int64_t{1} << 62) * 2 + static_cast<std::uint64_t>(o);
      });
    case Dataset::kLognormal:
      // exp(N(0, 2)) x 2^44: the median at 2^44, six sigma (e^12) at ~2^61.
      return unique_sample(n, [&] { return clamp_key(std::exp(2.0 * src.normal()) * 17592186044416.0); });
    case Dataset::kBooks:
      return make_books(n, src);
  }
  return {};
}

}  // namespace forein::testing

// A log-bucketed latency histogram: 32 sub-buckets per power of two, so a
// reported percentile is within ~3% of the true value (the bucket's upper
// bound is reported, never an underestimate beyond that).
#pragma once

#include <array>
#include <cstdint>

namespace forein::net::load {

class LatencyHistogram {
 public:
  static constexpr unsigned kSubBits = 5;
  static constexpr unsigned kSub = 1u << kSubBits;
  static constexpr std::size_t kBuckets = (64 - kSubBits + 1) * kSub;

  void record(std::uint64_t ns);
  void merge(const LatencyHistogram& other);

  std::uint64_t count() const { return count_; }
  std::uint64_t max() const { return max_; }
  std::uint64_t min() const { return count_ == 0 ? 0 : min_; }
  double mean() const { return count_ == 0 ? 0 : static_cast<double>(sum_) / static_cast<double>(count_); }
  // The smallest bucket bound b such that at least q (0..1) of the samples
  // are <= b, capped at max(); 0 when empty.
  std::uint64_t percentile(double q) const;

  static std::size_t bucket_of(std::uint64_t ns);
  // The largest value that falls in bucket i.
  static std::uint64_t bucket_upper(std::size_t i);

 private:
  std::array<std::uint64_t, kBuckets> buckets_{};
  std::uint64_t count_ = 0;
  std::uint64_t sum_ = 0;
  std::uint64_t min_ = UINT64_MAX;
  std::uint64_t max_ = 0;
};

}  // namespace forein::net::load

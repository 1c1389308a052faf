#include "load/histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace forein::net::load {

// Values below kSub get one bucket each; above, bucket (e, m) holds the
// values whose highest set bit is e and whose next kSubBits bits are m.
std::size_t LatencyHistogram::bucket_of(std::uint64_t ns) {
  if (ns < kSub) return static_cast<std::size_t>(ns);
  const unsigned e = 63u - static_cast<unsigned>(std::countl_zero(ns));  // >= kSubBits
  const unsigned shift = e - kSubBits;
  const std::uint64_t m = (ns >> shift) & (kSub - 1);
  return static_cast<std::size_t>((shift + 1) * kSub + m);
}

std::uint64_t LatencyHistogram::bucket_upper(std::size_t i) {
  if (i < kSub) return i;
  const std::size_t shift = i / kSub - 1;
  const std::uint64_t m = i % kSub;
  const std::uint64_t lo = (std::uint64_t{kSub} + m) << shift;
  return lo + ((std::uint64_t{1} << shift) - 1);
}

void LatencyHistogram::record(std::uint64_t ns) {
  ++buckets_[bucket_of(ns)];
  ++count_;
  sum_ += ns;
  min_ = std::min(min_, ns);
  max_ = std::max(max_, ns);
}

void LatencyHistogram::merge(const LatencyHistogram& other) {
  for (std::size_t i = 0; i < kBuckets; ++i) buckets_[i] += other.buckets_[i];
  count_ += other.count_;
  sum_ += other.sum_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
}

std::uint64_t LatencyHistogram::percentile(double q) const {
  if (count_ == 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  auto rank = static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(count_)));
  if (rank == 0) rank = 1;
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < kBuckets; ++i) {
    seen += buckets_[i];
    if (seen >= rank) return std::min(bucket_upper(i), max_);
  }
  return max_;
}

}  // namespace forein::net::load

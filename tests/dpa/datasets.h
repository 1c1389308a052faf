// SOSD-like data sets (Marcus et al., "Benchmarking Learned Indexes"),
// generated here with a fixed seed since nothing can be downloaded:
// strictly ascending unique 64-bit keys. docs/dpa.md documents each
// generator and how it stands in for the paper's data sets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace forein::testing {

enum class Dataset {
  kDense,      // "dense4x": n keys drawn uniformly without replacement from [0, 4n)
  kSparse,     // "sparse": uniform over the whole 64-bit range
  kNormal,     // normal around 2^63, sigma 2^60, rounded
  kLognormal,  // lognormal (mu 0, sigma 2) scaled to 64 bits, rounded (SOSD's lognormal)
  kBooks,      // skewed "books-like": popularity-shaped gaps (Zipf-sized clusters), as amzn
};

const char* dataset_name(Dataset d);
std::optional<Dataset> dataset_by_name(std::string_view name);
std::vector<Dataset> all_datasets();

// n strictly ascending unique keys (n may be 0), the same for the same
// (dataset, n, seed). Keys avoid UINT64_MAX.
std::vector<std::uint64_t> make_dataset(Dataset d, std::size_t n, std::uint64_t seed = 42);

}  // namespace forein::testing

// dpa: greedy piecewise linear approximation with an error bound, as
// DPA-Store trains its models ("the greedy algorithms provided by PGM",
// section 3.1.1). The shrinking-cone greedy (FITing-tree's, one of the
// streaming PLAs PGM-index compares against): a segment starts at a key,
// keeps the cone of slopes that keep every key so far within epsilon of
// its position, and ends when the cone empties, at max_count keys, or
// where the fixed-point model (fixed_point.h) of the cone's middle slope
// would miss a key by more than epsilon. Floating point is used here, on
// the host, to fit; the result is checked key by key in the DPA's integer
// arithmetic, so the bound holds for the model the DPA evaluates.
//
// Positions are relative to the segment: key keys[begin + i] has position
// i, and model.predict(keys[begin + i]) lies in [i - eps, i + eps].
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "dpa/fixed_point.h"

namespace forein::offload::dpa {

struct PlaSegment {
  std::size_t begin = 0;  // index of the segment's first key
  std::size_t count = 0;  // keys in the segment (>= 1)
  FixedModel model;       // position of a key relative to begin
};

// Segments covering keys (strictly ascending; throws InvalidArgument
// otherwise) in order, each of at most max_count keys (>= 1) and error at
// most eps. Empty keys: no segments.
std::vector<PlaSegment> pla_segments(std::span<const std::uint64_t> keys, std::uint32_t eps,
                                     std::size_t max_count);

// The model for keys[begin, begin + count) if one line with error <= eps
// fits them all (in the DPA's arithmetic); false otherwise.
bool fit_one(std::span<const std::uint64_t> keys, std::uint32_t eps, FixedModel* model);

// The largest error of model over keys (positions 0.. in order), in the
// DPA's arithmetic: what tests and the store check.
std::uint64_t max_error(std::span<const std::uint64_t> keys, const FixedModel& model);

// A fixed-point model of the real line pos = intercept + slope * (key - key0).
FixedModel to_fixed(std::uint64_t key0, long double slope, long double intercept);

// Where key falls among sorted keys with a model of error eps: the index of
// the last key <= key within keys[0, count) found by searching only the
// window around the prediction (and stepping outwards if key lies outside
// it, which happens only for keys not in the training set that fall past
// the window's edge). -1 if key is below keys[0]. `probes` (may be null)
// counts the keys compared, for the cost model.
std::int64_t model_lower_bound(std::span<const std::uint64_t> keys, const FixedModel& model,
                               std::uint32_t eps, std::uint64_t key, std::size_t* probes = nullptr);

}  // namespace forein::offload::dpa

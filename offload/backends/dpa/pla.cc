#include "dpa/pla.h"

#include <cmath>
#include <limits>
#include <string>

#include "forein/error.h"

namespace forein::offload::dpa {

namespace {

// The longest prefix of keys (at most max_count) one anchored cone fits,
// and the cone's middle slope. keys.size() >= 1.
std::size_t cone_prefix(std::span<const std::uint64_t> keys, std::uint32_t eps, std::size_t max_count,
                        long double* slope) {
  const long double e = static_cast<long double>(eps);
  long double lo = 0;
  long double hi = std::numeric_limits<long double>::infinity();
  std::size_t n = 1;
  const std::size_t limit = keys.size() < max_count ? keys.size() : max_count;
  for (; n < limit; ++n) {
    const long double dx = static_cast<long double>(keys[n] - keys[0]);
    const long double y = static_cast<long double>(n);
    const long double nlo = (y - e) / dx;
    const long double nhi = (y + e) / dx;
    const long double next_lo = nlo > lo ? nlo : lo;
    const long double next_hi = nhi < hi ? nhi : hi;
    if (next_lo > next_hi) break;
    lo = next_lo;
    hi = next_hi;
  }
  if (n == 1) {
    *slope = 0;
  } else if (std::isinf(hi)) {
    *slope = lo;
  } else {
    *slope = (lo + hi) / 2;
  }
  return n;
}

// The first position whose fixed-point prediction misses by more than eps
// (keys.size() if none).
std::size_t first_miss(std::span<const std::uint64_t> keys, const FixedModel& m, std::uint32_t eps) {
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const std::int64_t d = m.predict(keys[i]) - static_cast<std::int64_t>(i);
    if (d > static_cast<std::int64_t>(eps) || d < -static_cast<std::int64_t>(eps)) return i;
  }
  return keys.size();
}

// One segment at the front of keys: its length and model.
std::size_t fit_front(std::span<const std::uint64_t> keys, std::uint32_t eps, std::size_t max_count,
                      FixedModel* model) {
  std::size_t n = keys.size() < max_count ? keys.size() : max_count;
  for (;;) {
    long double slope = 0;
    n = cone_prefix(keys.first(n), eps, n, &slope);
    const FixedModel m = to_fixed(keys[0], slope, 0);
    const std::size_t miss = first_miss(keys.first(n), m, eps);
    if (miss == n) {
      *model = m;
      return n;
    }
    n = miss;  // >= 1: the first key always predicts 0
  }
}

}  // namespace

FixedModel to_fixed(std::uint64_t key0, long double slope, long double intercept) {
  FixedModel m;
  m.key0 = key0;
  if (slope > 0 && std::isfinite(slope)) {
    int exp = 0;
    (void)std::frexp(slope, &exp);  // slope = f * 2^exp, f in [0.5, 1)
    int shift = 64 - exp;           // slope * 2^shift in [2^63, 2^64)
    if (shift < 0) shift = 0;
    if (shift > 127) shift = 127;
    const long double scaled = std::floor(std::ldexp(slope, shift) + 0.5L);
    constexpr long double kTop = 18446744073709551615.0L;  // 2^64 - 1
    m.slope_mant = scaled >= kTop ? ~std::uint64_t{0} : static_cast<std::uint64_t>(scaled);
    m.slope_shift = static_cast<std::uint8_t>(shift);
  }
  const long double q = std::ldexp(intercept, 32);
  constexpr long double kLim = 4611686018427387904.0L;  // 2^62
  m.intercept_q32 = q >= kLim ? (std::int64_t{1} << 62) : q <= -kLim ? -(std::int64_t{1} << 62)
                                                                      : static_cast<std::int64_t>(std::floor(q + 0.5L));
  return m;
}

std::vector<PlaSegment> pla_segments(std::span<const std::uint64_t> keys, std::uint32_t eps,
                                     std::size_t max_count) {
  if (max_count == 0) throw InvalidArgument("pla: max_count must be at least 1");
  for (std::size_t i = 1; i < keys.size(); ++i) {
    if (keys[i] <= keys[i - 1]) {
      throw InvalidArgument("pla: keys must be strictly ascending (index " + std::to_string(i) + ")");
    }
  }
  std::vector<PlaSegment> out;
  std::size_t at = 0;
  while (at < keys.size()) {
    PlaSegment s;
    s.begin = at;
    s.count = fit_front(keys.subspan(at), eps, max_count, &s.model);
    at += s.count;
    out.push_back(s);
  }
  return out;
}

bool fit_one(std::span<const std::uint64_t> keys, std::uint32_t eps, FixedModel* model) {
  if (keys.empty()) {
    *model = FixedModel{};
    return true;
  }
  for (std::size_t i = 1; i < keys.size(); ++i) {
    if (keys[i] <= keys[i - 1]) return false;
  }
  FixedModel m;
  if (fit_front(keys, eps, keys.size(), &m) != keys.size()) return false;
  *model = m;
  return true;
}

std::uint64_t max_error(std::span<const std::uint64_t> keys, const FixedModel& model) {
  std::uint64_t worst = 0;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const std::int64_t d = model.predict(keys[i]) - static_cast<std::int64_t>(i);
    const std::uint64_t a = d < 0 ? static_cast<std::uint64_t>(-d) : static_cast<std::uint64_t>(d);
    if (a > worst) worst = a;
  }
  return worst;
}

std::int64_t model_lower_bound(std::span<const std::uint64_t> keys, const FixedModel& model, std::uint32_t eps,
                               std::uint64_t key, std::size_t* probes) {
  const std::size_t count = keys.size();
  if (count == 0) return -1;
  const std::uint32_t n = count > 0xffffffffu ? 0xffffffffu : static_cast<std::uint32_t>(count);
  const Window w = search_window(model.predict(key), eps, n);
  std::size_t probed = 0;
  // The last key <= key inside the window.
  std::int64_t at = static_cast<std::int64_t>(w.first) - 1;
  for (std::uint32_t i = w.first; i <= w.last; ++i) {
    ++probed;
    if (keys[i] > key) break;
    at = i;
  }
  // Outside the window (a key the model was not trained on, or a model
  // that does not fit): step outwards until the answer is bracketed. An
  // exact match at the window's last key is the answer (keys are unique):
  // no step, so a training key costs at most the window's 2 eps + 1 probes.
  if (at == static_cast<std::int64_t>(w.last) && keys[static_cast<std::size_t>(at)] != key) {
    while (static_cast<std::size_t>(at) + 1 < count) {
      ++probed;
      if (keys[static_cast<std::size_t>(at) + 1] > key) break;
      ++at;
    }
  } else if (at == static_cast<std::int64_t>(w.first) - 1) {
    while (at >= 0) {
      ++probed;
      if (keys[static_cast<std::size_t>(at)] <= key) break;
      --at;
    }
  }
  if (probes != nullptr) *probes += probed;
  return at;
}

}  // namespace forein::offload::dpa

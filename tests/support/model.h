// The std::map oracle for tree tests, and reading a tree back for
// comparison with it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "forein/tree.h"
#include "support/rng.h"

namespace forein::testing {

using Model = std::map<std::string, std::string>;  // std::string orders like memcmp
using Entries = std::vector<std::pair<std::string, std::string>>;

// The expected result of a scan over the model, at most `limit` entries.
inline Entries model_scan(const Model& m, const ScanSpec& spec, std::size_t limit) {
  Entries out;
  if (spec.direction == Direction::kForward) {
    auto it = m.begin();
    if (spec.lower) it = spec.lower->inclusive ? m.lower_bound(spec.lower->key) : m.upper_bound(spec.lower->key);
    for (; it != m.end() && out.size() < limit; ++it) {
      if (spec.upper) {
        const int c = it->first.compare(spec.upper->key);
        if (c > 0 || (c == 0 && !spec.upper->inclusive)) break;
      }
      out.emplace_back(it->first, it->second);
    }
  } else {
    auto it = m.end();
    if (spec.upper) it = spec.upper->inclusive ? m.upper_bound(spec.upper->key) : m.lower_bound(spec.upper->key);
    while (it != m.begin() && out.size() < limit) {
      --it;
      if (spec.lower) {
        const int c = it->first.compare(spec.lower->key);
        if (c < 0 || (c == 0 && !spec.lower->inclusive)) break;
      }
      out.emplace_back(it->first, it->second);
    }
  }
  return out;
}

// What the tree's callback scan returns for `spec`, at most `limit` entries
// (the callback stops the scan at the limit).
inline Entries scan_entries(Tree& t, const ScanSpec& spec = {},
                            std::size_t limit = std::numeric_limits<std::size_t>::max()) {
  Entries out;
  t.scan(spec, [&](std::string_view k, std::string_view v) {
    out.emplace_back(std::string(k), std::string(v));
    return out.size() < limit;
  });
  return out;
}

// A key present in `m`: the first at or after a fresh key from `keys`
// (wrapping to the first), or that fresh key when `m` is empty.
template <typename Keys>
std::string pick_present(const Model& m, Keys& keys) {
  if (m.empty()) return keys();
  auto it = m.lower_bound(keys());
  if (it == m.end()) it = m.begin();
  return it->first;
}

// A random scan direction and bounds; each bound is open (1/5), a present
// key (2/5) or a fresh one (2/5), inclusive or not. Crossed bounds are
// usually swapped, so most scans are not empty.
template <typename Keys>
ScanSpec random_spec(Rng& rng, const Model& m, Keys& keys) {
  auto bound = [&]() -> std::optional<KeyBound> {
    const std::uint64_t c = rng.below(10);
    if (c < 2) return std::nullopt;
    return KeyBound{c < 6 ? pick_present(m, keys) : keys(), rng.chance(1, 2)};
  };
  ScanSpec spec;
  spec.lower = bound();
  spec.upper = bound();
  if (spec.lower && spec.upper && spec.lower->key > spec.upper->key && rng.chance(4, 5)) {
    std::swap(spec.lower->key, spec.upper->key);
  }
  spec.direction = rng.chance(1, 2) ? Direction::kForward : Direction::kBackward;
  return spec;
}

// An op count: `floor`, or the environment variable `var` when it is larger.
inline std::uint64_t ops_from_env(const char* var, std::uint64_t floor) {
  std::uint64_t ops = floor;
  if (const char* env = std::getenv(var); env != nullptr && *env != '\0') {
    const std::uint64_t v = std::strtoull(env, nullptr, 10);
    if (v > ops) ops = v;
  }
  return ops;
}

}  // namespace forein::testing

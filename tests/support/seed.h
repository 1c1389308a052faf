// Seeds for randomized tests: FOREIN_SEED=<n> replays a run; otherwise a
// fresh seed is drawn. Either way the seed is printed, so a failure can be
// reproduced.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <random>
#include <string>

namespace forein::testing {

inline std::uint64_t test_seed(const std::string& test_name) {
  std::uint64_t seed;
  if (const char* env = std::getenv("FOREIN_SEED"); env != nullptr && *env != '\0') {
    seed = std::strtoull(env, nullptr, 10);
  } else {
    seed = (static_cast<std::uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
  }
  std::cout << test_name << ": seed " << seed << " (rerun with FOREIN_SEED=" << seed << ")\n";
  return seed;
}

}  // namespace forein::testing

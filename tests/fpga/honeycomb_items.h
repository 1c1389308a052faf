// The 16-byte keys and values Honeycomb's tests use (the paper evaluates
// 16 B): key16(k) sorts as k does; value16(k, gen) names the key and the
// write generation, so a stale value is recognisable.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace forein::testing {

inline std::string key16(std::uint64_t k) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "k%015llu", static_cast<unsigned long long>(k));
  return buf;
}

inline std::string value16(std::uint64_t k, std::uint64_t gen) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "v%07llu-%07llu", static_cast<unsigned long long>(k % 10000000),
                static_cast<unsigned long long>(gen % 10000000));
  return buf;
}

}  // namespace forein::testing

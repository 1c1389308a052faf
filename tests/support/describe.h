// Printable forms of keys and hints for failure messages.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>

#include "forein/node_interval.h"

namespace forein::testing {

// "[size]hexbytes", cut after max_bytes bytes with "...".
inline std::string hex(std::string_view s, std::size_t max_bytes = 48) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  const std::size_t n = std::min(s.size(), max_bytes);
  for (std::size_t i = 0; i < n; ++i) {
    const auto b = static_cast<unsigned char>(s[i]);
    out += digits[b >> 4];
    out += digits[b & 15];
  }
  if (s.size() > max_bytes) out += "...";
  return "[" + std::to_string(s.size()) + "]" + out;
}

inline std::string describe(const Hint& h) {
  return "{node " + std::to_string(h.node) + ", level " + std::to_string(h.level) + ", version " +
         std::to_string(h.version) + "}";
}

}  // namespace forein::testing

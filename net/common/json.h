// The network programs' JSON lines and STATS replies: nlohmann-json
// (escaped strings, typed values) with ordered objects, so every object
// keeps its members in the order they were added: the field order
// docs/network.md shows and that tests and scripts, reading the text flat
// ("name":value, an object cut at its first '}'), rely on. json_line()
// renders one.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace forein::net {

using Json = nlohmann::ordered_json;

// j as one line of text: no indent, ASCII only (other characters as \u
// escapes), and bytes that are no UTF-8 (a path, an interface name, an
// error text) as U+FFFD instead of an exception.
inline std::string json_line(const Json& j) { return j.dump(-1, ' ', true, Json::error_handler_t::replace); }

// v rounded to `decimals` decimal places (the figure a "%.Nf" printed) as a
// JSON number; null when v is not finite (JSON has no NaN or infinity).
inline Json json_fixed(double v, int decimals) {
  if (!std::isfinite(v)) return nullptr;
  const double scale = std::pow(10.0, decimals);
  const double r = std::round(v * scale) / scale;
  return std::isfinite(r) ? r : v;
}

// v rounded to a whole number (the figure a "%.0f" printed) as a JSON
// integer; null when v is not finite or out of range.
inline Json json_whole(double v) {
  if (!std::isfinite(v) || std::fabs(v) >= 9.2e18) return nullptr;
  return static_cast<std::int64_t>(std::llround(v));
}

}  // namespace forein::net

// Command-line values the network programs share: whole numbers in a range
// and a /24 given as A.B.C.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

namespace forein::net {

// A whole decimal number in [min, max], nothing else in text.
template <typename T>
bool parse_number(std::string_view text, T min, T max, T* out) {
  T v{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < min || v > max) return false;
  *out = v;
  return true;
}

// A.B.C (three numbers 0..255): A.B.C.0 in host order.
inline bool parse_net(std::string_view net, std::uint32_t* base) {
  if (std::count(net.begin(), net.end(), '.') != 2) return false;
  in_addr a{};
  if (::inet_pton(AF_INET, (std::string(net) + ".0").c_str(), &a) != 1) return false;
  *base = ntohl(a.s_addr);
  return true;
}

}  // namespace forein::net

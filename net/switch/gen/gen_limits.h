// forein-switch-gen's fixed sizes, shared by its two modes (traffic.cc:
// through the switch to its server side; client.cc: to a server and back).
#pragma once

#include <cstddef>
#include <cstdint>

namespace forein::net::swgen {

inline constexpr std::size_t kKeyRing = 1u << 16;                   // keys drawn ahead (a power of two)
inline constexpr std::uint64_t kProbeSeq = std::uint64_t{1} << 63;  // probes: this bit, round << 16, index
inline constexpr unsigned kProbeKeys = 64;
inline constexpr unsigned kMaxBurst = 256;

}  // namespace forein::net::swgen

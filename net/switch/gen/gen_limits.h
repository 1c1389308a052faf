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
// --scan N's largest N: the reply must come back in one frame. A SCAN
// reply of N data-set entries (8-byte key, 16-byte value) is a datagram of
// 24 + 8 + 30 N bytes; forein-kv-server --memif sends one above 1472 bytes
// (a 1500-byte MTU) as IPv4 fragments, which the generator does not
// reassemble: (1472 - 32) / 30 = 48.
inline constexpr std::uint32_t kMaxScanEntries = 48;

}  // namespace forein::net::swgen

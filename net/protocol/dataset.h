// The data set the KV server loads and the load client verifies against
// (docs/network.md): key i (0 <= i < N) is i as 8 big-endian bytes, the
// papers' uint64 keys in key order; its value is derived from i alone, so a
// client can check every GET without being told the data.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace forein::net {

// The index id of forein-kv-server's tree and offload manager, so the image
// its agent mirror publishes is found there; forein-load --agent fetches
// this index unless --index says otherwise.
inline constexpr std::uint64_t kDatasetIndexId = 0;

inline std::string dataset_key(std::uint64_t i) {
  std::string k(8, '\0');
  for (int b = 0; b < 8; ++b) k[static_cast<std::size_t>(b)] = static_cast<char>(i >> (56 - 8 * b));
  return k;
}

// The index of an 8-byte key, or false for any other key.
inline bool dataset_index(const std::string& key, std::uint64_t* i) {
  if (key.size() != 8) return false;
  std::uint64_t v = 0;
  for (unsigned char c : key) v = (v << 8) | c;
  *i = v;
  return true;
}

// 16 bytes: "v" and 15 hex digits of a SplitMix64 hash of i (a PUT by the
// load client writes dataset_value(i, version) for version >= 1).
inline std::string dataset_value(std::uint64_t i, std::uint32_t version = 0) {
  std::uint64_t z = i + 0x9E3779B97F4A7C15ull * (version + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  char buf[17];
  std::snprintf(buf, sizeof buf, "v%015llx", static_cast<unsigned long long>(z >> 4));
  return std::string(buf, 16);
}

}  // namespace forein::net

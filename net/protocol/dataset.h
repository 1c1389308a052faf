// The data set the KV server loads and the load client verifies against
// (docs/network.md): key i (0 <= i < N) is i as 8 big-endian bytes, the
// papers' uint64 keys in key order; its value is derived from i alone, so a
// client can check every GET without being told the data.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

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
  // "v%015llx" of z >> 4, by hand: the generator checks every reply with it
  // and the server builds 1e8 of them, where snprintf was a visible cost.
  std::string out(16, 'v');
  std::uint64_t digits = z >> 4;
  for (std::size_t at = 15; at >= 1; --at, digits >>= 4) out[at] = "0123456789abcdef"[digits & 0xF];
  return out;
}

// A value of `bytes` bytes (the remote tree's, 1000 in Fat-B+Tree's data
// set): dataset_value(i, version) repeated and cut to length, so a reader
// checks a long value by its first 16 bytes (dataset_long_value_head).
inline std::string dataset_long_value(std::uint64_t i, std::uint32_t version, std::size_t bytes) {
  const std::string unit = dataset_value(i, version);
  std::string out;
  out.reserve(bytes);
  while (out.size() < bytes) out.append(unit, 0, std::min(unit.size(), bytes - out.size()));
  return out;
}
// The 16-byte head of a value of dataset_long_value's shape (or a short
// value itself), or "" if the bytes do not repeat it.
inline std::string dataset_long_value_head(std::string_view value) {
  if (value.size() <= 16) return std::string(value);
  for (std::size_t i = 16; i < value.size(); ++i) {
    if (value[i] != value[i % 16]) return "";
  }
  return std::string(value.substr(0, 16));
}

// Several servers (docs/network.md, "Several servers"): shard i of k owns
// the dataset's key indexes [shard_first(i, k, n), shard_first(i + 1, k, n));
// as byte strings, every key from dataset_key(shard_first(i)) (the first
// shard: from the empty key) up to the next shard's first key, the last
// shard everything above, so keys outside the data set have an owner too.
inline std::uint64_t shard_first(std::uint32_t i, std::uint32_t k, std::uint64_t n) {
  return static_cast<std::uint64_t>(static_cast<unsigned __int128>(n) * i / k);
}

// The shard owning `key` (bytes compared unsigned, as the tree orders
// them): binary search over the k - 1 boundaries.
inline std::uint32_t shard_of(std::string_view key, std::uint32_t k, std::uint64_t n) {
  std::uint32_t lo = 0, hi = k;  // the owner is in [lo, hi)
  while (hi - lo > 1) {
    const std::uint32_t mid = lo + (hi - lo) / 2;
    if (key < std::string_view(dataset_key(shard_first(mid, k, n)))) {
      hi = mid;
    } else {
      lo = mid;
    }
  }
  return lo;
}

}  // namespace forein::net

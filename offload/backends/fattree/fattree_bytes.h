// Little-endian loads and stores for fattree's batches and image; memcpy
// only, so any alignment and any bytes are fine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace forein::offload::fattree {

template <typename T>
inline T load_le(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <typename T>
inline void store_le(std::byte* p, T v) {
  std::memcpy(p, &v, sizeof v);
}

}  // namespace forein::offload::fattree

// Unaligned loads and stores of plain values in byte strings (images,
// batches) of every backend: memcpy, which compiles to plain moves and is defined for any
// address.
#pragma once

#include <cstddef>
#include <cstring>

namespace forein::offload {

template <class T>
T load(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <class T>
void store(std::byte* p, const T& v) {
  std::memcpy(p, &v, sizeof v);
}

}  // namespace forein::offload

// Every access to a tree page's bytes goes through these functions.
//
// Optimistic readers (latch.h) read a page while a writer may be changing
// it, so both sides use relaxed atomic accesses: by the C++ memory model
// (and to ThreadSanitizer) there is then no data race, and a reader learns
// from the page version afterwards whether what it read is consistent. On
// x86-64 and AArch64 a relaxed atomic load or store of an aligned scalar is
// the plain instruction, so this costs nothing on the lookup path; byte
// ranges move in aligned 8-byte words where they can.
//
// Scalars sit at offsets aligned to their size (node.h's layout), and page
// frames are page-aligned, so every scalar access is aligned.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace forein::detail {

template <typename T>
inline T load(const std::byte* p, std::size_t at) {
  static_assert(std::is_integral_v<T>);
  using Aliased [[gnu::may_alias]] = T;
  return __atomic_load_n(reinterpret_cast<const Aliased*>(p + at), __ATOMIC_RELAXED);
}

template <typename T>
inline void store(std::byte* p, std::size_t at, T v) {
  static_assert(std::is_integral_v<T>);
  using Aliased [[gnu::may_alias]] = T;
  __atomic_store_n(reinterpret_cast<Aliased*>(p + at), v, __ATOMIC_RELAXED);
}

namespace bytes_impl {
using Word [[gnu::may_alias]] = std::uint64_t;
using Byte [[gnu::may_alias]] = unsigned char;

inline bool word_aligned(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & 7) == 0; }
inline unsigned char load_byte(const std::byte* p) {
  return __atomic_load_n(reinterpret_cast<const Byte*>(p), __ATOMIC_RELAXED);
}
inline void store_byte(std::byte* p, unsigned char v) {
  __atomic_store_n(reinterpret_cast<Byte*>(p), v, __ATOMIC_RELAXED);
}
inline std::uint64_t load_word(const std::byte* p) {
  return __atomic_load_n(reinterpret_cast<const Word*>(p), __ATOMIC_RELAXED);
}
inline void store_word(std::byte* p, std::uint64_t v) {
  __atomic_store_n(reinterpret_cast<Word*>(p), v, __ATOMIC_RELAXED);
}
}  // namespace bytes_impl

// Copies n page bytes at src into ordinary memory.
inline void read_bytes(const std::byte* src, std::size_t n, void* out) {
  using namespace bytes_impl;
  auto* o = static_cast<unsigned char*>(out);
  for (; n > 0 && !word_aligned(src); --n) *o++ = load_byte(src++);
  for (; n >= 8; n -= 8, src += 8, o += 8) {
    const std::uint64_t w = load_word(src);
    std::memcpy(o, &w, 8);
  }
  for (; n > 0; --n) *o++ = load_byte(src++);
}

// Copies n bytes of ordinary memory into the page at dst.
inline void write_bytes(std::byte* dst, const void* in, std::size_t n) {
  using namespace bytes_impl;
  const auto* i = static_cast<const unsigned char*>(in);
  for (; n > 0 && !word_aligned(dst); --n) store_byte(dst++, *i++);
  for (; n >= 8; n -= 8, dst += 8, i += 8) {
    std::uint64_t w;
    std::memcpy(&w, i, 8);
    store_word(dst, w);
  }
  for (; n > 0; --n) store_byte(dst++, *i++);
}

// Sets n page bytes at dst to zero.
inline void zero_bytes(std::byte* dst, std::size_t n) {
  using namespace bytes_impl;
  for (; n > 0 && !word_aligned(dst); --n) store_byte(dst++, 0);
  for (; n >= 8; n -= 8, dst += 8) store_word(dst, 0);
  for (; n > 0; --n) store_byte(dst++, 0);
}

// memmove inside one page: word by word when both ends are word-aligned
// (the slot array always is), else byte by byte.
inline void move_bytes(std::byte* dst, const std::byte* src, std::size_t n) {
  using namespace bytes_impl;
  if (dst == src || n == 0) return;
  const bool words = word_aligned(dst) && word_aligned(src) && n % 8 == 0;
  if (dst < src) {
    if (words) {
      for (std::size_t i = 0; i < n; i += 8) store_word(dst + i, load_word(src + i));
    } else {
      for (std::size_t i = 0; i < n; ++i) store_byte(dst + i, load_byte(src + i));
    }
  } else if (words) {
    for (std::size_t i = n; i > 0; i -= 8) store_word(dst + i - 8, load_word(src + i - 8));
  } else {
    for (std::size_t i = n; i > 0; --i) store_byte(dst + i - 1, load_byte(src + i - 1));
  }
}

// memcmp(a, page bytes b, n).
inline int compare_bytes(const void* a, const std::byte* b, std::size_t n) {
  const auto* x = static_cast<const unsigned char*>(a);
  unsigned char chunk[64];
  while (n > 0) {
    const std::size_t m = n < sizeof chunk ? n : sizeof chunk;
    read_bytes(b, m, chunk);
    if (const int c = std::memcmp(x, chunk, m)) return c;
    x += m;
    b += m;
    n -= m;
  }
  return 0;
}

}  // namespace forein::detail

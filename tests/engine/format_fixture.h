// The contents of tests/data/engine/format2-*.forein and the code that
// wrote it (test_format_fixture.cc). Deterministic, no RNG: the writer and
// the reader must agree across builds and library versions.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "forein/key.h"
#include "forein/page_store.h"
#include "forein/tree.h"

namespace forein::testing {

inline constexpr std::uint32_t kFixturePageSize = 4096;  // the smallest page size

inline std::map<std::string, std::string> fixture_entries() {
  std::map<std::string, std::string> m;
  auto value_for = [](std::uint64_t i) {
    const std::size_t len = (i * 7) % 29;  // 0..28: inline and heap values
    std::string v(len, '\0');
    for (std::size_t j = 0; j < len; ++j) v[j] = static_cast<char>('A' + (i + j) % 26);
    return v;
  };
  for (std::uint64_t i = 0; i < 3000; ++i) {
    const std::string k = encode_word(i * 0x9E3779B97F4A7C15ULL);
    m[k] = value_for(i);                                                     // 8-byte keys
    if (i % 3 == 0) m[k.substr(0, 5)] = value_for(i + 1);                    // shorter ones
    if (i % 5 == 0) m[k + "-long-" + std::to_string(i)] = value_for(i + 2);  // longer ones
  }
  // Keys sharing one word: a short key's word pads with zeros.
  for (const std::string& k :
       {std::string("a"), std::string("a\0", 2), std::string("a\0\0", 3),
        std::string("a\0\0\0\0\0\0\0", 8), std::string("a\0\0\0\0\0\0\0x", 9), std::string("b")}) {
    m[k] = "same-word:" + std::to_string(k.size());
  }
  m[""] = "empty key";
  return m;
}

// Writes the fixture to `path` with the engine this is linked against.
inline void write_format_fixture(const std::string& path) {
  auto tree = Tree::create(FilePageStore::create(path, kFixturePageSize));
  for (const auto& [k, v] : fixture_entries()) tree->put(k, v);
  tree->sync();
}

}  // namespace forein::testing

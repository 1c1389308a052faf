// Shared pieces of the remote-read tests (net/remote): test values that
// carry their key and version, a ReadFn over a region, a root-to-leaf path
// read straight from the region, and a built tree.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "remote/build.h"
#include "remote/node_layout.h"
#include "remote/region.h"
#include "remote/walk.h"

namespace forein::testing::remote {

namespace rr = forein::net::remote;

// key (8 bytes LE), version (4 bytes LE), then filler derived from both,
// `len` bytes in all (at least 12).
inline std::string test_value(std::uint64_t key, std::uint32_t version, std::size_t len = 24) {
  std::string v(std::max<std::size_t>(len, 12), '\0');
  std::memcpy(v.data(), &key, 8);
  std::memcpy(v.data() + 8, &version, 4);
  std::uint64_t x = key * 0x9E3779B97F4A7C15ull + version;
  for (std::size_t i = 12; i < v.size(); ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    v[i] = static_cast<char>('a' + (x >> 59));
  }
  return v;
}

// True when `v` is exactly test_value(key, version, v.size()) for the
// key and version it names.
inline bool parse_test_value(const std::string& v, std::uint64_t* key, std::uint32_t* version) {
  if (v.size() < 12) return false;
  std::memcpy(key, v.data(), 8);
  std::memcpy(version, v.data() + 8, 4);
  return v == test_value(*key, *version, v.size());
}

inline rr::ReadFn region_reader(const rr::Region& region) {
  return [&region](rr::Address a, std::size_t len, std::byte* out) {
    return region.read(a, len, out) == rr::ReadError::kOk;
  };
}

inline rr::RegionHeader read_header(const rr::Region& region) {
  std::byte h[rr::kRegionHeaderBytes];
  rr::RegionHeader header;
  if (region.read(0, sizeof h, h) != rr::ReadError::kOk || rr::check_header(h, &header) != rr::Check::kOk) {
    throw std::runtime_error("test: region header does not check");
  }
  return header;
}

// The nodes a root descent for `key` visits, root first (no writer running).
inline std::vector<rr::Address> path_of(const rr::Region& region, std::uint64_t key) {
  const rr::RegionHeader h = read_header(region);
  std::vector<std::byte> buf(h.geometry.node_bytes);
  std::vector<rr::Address> path;
  rr::Address a = h.root;
  for (;;) {
    rr::NodeView v;
    if (region.read(a, buf.size(), buf.data()) != rr::ReadError::kOk ||
        rr::check_node(buf, h.geometry, a, &v) != rr::Check::kOk) {
      throw std::runtime_error("test: node does not check");
    }
    if (v.above(key)) {
      a = v.right;
      continue;
    }
    path.push_back(a);
    if (v.level == 0) return path;
    a = v.ptr(v.child_of(key));
  }
}

// A region built from keys[i] -> test_value(keys[i], 1, value_len), with
// `spare` bytes of room for writes.
struct Tree {
  std::unique_ptr<rr::Region> region;
  rr::BuildStats stats;
};

inline Tree build_tree(const std::vector<std::uint64_t>& keys, const rr::BuildOptions& options,
                       std::size_t value_len = 24, std::uint64_t spare = 0) {
  Tree t;
  const std::size_t len = std::max<std::size_t>(value_len, 12);
  t.region = std::make_unique<rr::Region>(rr::build_bytes(keys.size(), keys.size() * len, options) + spare);
  t.stats = rr::build(
      *t.region, keys.size(),
      [&](std::uint64_t i, std::string& value) {
        value = test_value(keys[i], 1, len);
        return keys[i];
      },
      options);
  return t;
}

inline std::vector<std::uint64_t> key_range(std::uint64_t n, std::uint64_t step = 1) {
  std::vector<std::uint64_t> k(n);
  for (std::uint64_t i = 0; i < n; ++i) k[i] = i * step;
  return k;
}

}  // namespace forein::testing::remote

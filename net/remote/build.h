// Bulk build of a remote tree (docs/remote-read.md, "Build"): sorted unique
// (key, value) pairs into an empty region, as a B+tree bulk load: value
// records first in key order, then the leaves left to right, then each
// level up to one root; every node's lo/hi fences and right sibling set,
// the region header written last.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "remote/node_layout.h"
#include "remote/region.h"

namespace forein::net::remote {

struct BuildOptions {
  Geometry geometry;  // default: 16 branches (Fat-B+Tree's nodes)
  // Entries per node: fill * fanout (at least 2), the level's entries
  // spread evenly over its nodes; < 1 leaves room for inserts.
  double fill = 1.0;
};

struct BuildStats {
  std::uint64_t keys = 0;
  std::uint32_t height = 0;
  Address root = 0;
  std::vector<std::uint64_t> nodes_per_level;  // [0] = leaves
  std::uint64_t record_bytes = 0;              // value records, with headers and padding
  std::uint64_t node_bytes = 0;                // all nodes
  std::uint64_t used_bytes = 0;                // the region's allocation end (header included)
};

struct Entry {
  std::uint64_t key;
  std::string_view value;
};

// Entry i of count (keys strictly increasing): stores the value, returns the key.
using EntrySource = std::function<std::uint64_t(std::uint64_t i, std::string& value)>;

// `region` must be fresh (nothing allocated). Throws InvalidArgument on
// unsorted or duplicate keys, a value above kMaxValueBytes, a bad
// geometry or fill, or a region too small (build_bytes says what fits).
BuildStats build(Region& region, std::uint64_t count, const EntrySource& source, const BuildOptions& options);
BuildStats build(Region& region, std::span<const Entry> entries, const BuildOptions& options);

// The region size build() fills for `count` keys whose values total
// `value_bytes` (header included; add room for writes).
std::uint64_t build_bytes(std::uint64_t count, std::uint64_t value_bytes, const BuildOptions& options);

}  // namespace forein::net::remote

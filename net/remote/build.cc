#include "remote/build.h"

#include <algorithm>
#include <cmath>

#include "forein/error.h"

namespace forein::net::remote {

namespace {

std::uint32_t per_node(const BuildOptions& o) {
  if (!valid_geometry(o.geometry)) throw InvalidArgument("remote build: bad geometry");
  if (!(o.fill > 0.0 && o.fill <= 1.0)) throw InvalidArgument("remote build: fill must be in (0, 1]");
  const auto per = static_cast<std::uint32_t>(std::lround(o.fill * o.geometry.fanout));
  return std::clamp<std::uint32_t>(per, 2, o.geometry.fanout);
}

std::uint64_t nodes_for(std::uint64_t entries, std::uint32_t per) {
  return std::max<std::uint64_t>(1, (entries + per - 1) / per);
}

Address allocate_or_throw(Region& region, std::uint64_t bytes) {
  const Address a = region.allocate(bytes);
  if (a == 0) throw InvalidArgument("remote build: region too small (see build_bytes)");
  return a;
}

// One level: `entries` (key, address) of the level below (records for the
// leaves) become nodes; returns the next level's entries (each node's lo
// and address).
std::vector<std::pair<std::uint64_t, Address>> build_level(Region& region, const Geometry& g, std::uint32_t per,
                                                           std::uint8_t level,
                                                           const std::vector<std::pair<std::uint64_t, Address>>& entries,
                                                           BuildStats* stats) {
  const std::uint64_t n = entries.size();
  const std::uint64_t nodes = nodes_for(n, per);
  // Every address first, so each node knows its right sibling.
  std::vector<Address> addr(nodes);
  for (auto& a : addr) a = allocate_or_throw(region, g.node_bytes);
  std::vector<std::pair<std::uint64_t, Address>> up(nodes);
  std::vector<std::byte> image(g.node_bytes);
  Node node;
  node.level = level;
  std::uint64_t next = 0;
  std::vector<std::uint64_t> first(nodes + 1);  // entry index where node j starts
  for (std::uint64_t j = 0; j <= nodes; ++j) first[j] = n / nodes * j + std::min(j, n % nodes);
  for (std::uint64_t j = 0; j < nodes; ++j) {
    node.keys.clear();
    node.ptrs.clear();
    for (next = first[j]; next < first[j + 1]; ++next) {
      node.keys.push_back(entries[next].first);
      node.ptrs.push_back(entries[next].second);
    }
    // The level covers every key: the first node from 0, the last to +inf.
    node.lo = j == 0 ? 0 : node.keys.front();
    node.hi_inf = j + 1 == nodes;
    node.hi = node.hi_inf ? 0 : entries[first[j + 1]].first;
    node.right = node.hi_inf ? 0 : addr[j + 1];
    if (level > 0) node.keys.front() = node.lo;  // an inner node's first key is its lo
    encode_node(node, g, addr[j], image.data());
    region.write(addr[j], image);
    up[j] = {node.lo, addr[j]};
  }
  stats->nodes_per_level.push_back(nodes);
  stats->node_bytes += nodes * g.node_bytes;
  return up;
}

}  // namespace

BuildStats build(Region& region, std::uint64_t count, const EntrySource& source, const BuildOptions& options) {
  const std::uint32_t per = per_node(options);
  if (region.used() != kRegionHeaderBytes) throw InvalidArgument("remote build: region not fresh");
  BuildStats stats;
  stats.keys = count;
  std::uint32_t max_value = 0;
  std::vector<std::pair<std::uint64_t, Address>> level;
  level.reserve(count);
  std::string value;
  for (std::uint64_t i = 0; i < count; ++i) {
    value.clear();
    const std::uint64_t key = source(i, value);
    if (i > 0 && key <= level.back().first) throw InvalidArgument("remote build: keys not strictly increasing");
    if (value.size() > kMaxValueBytes) throw InvalidArgument("remote build: value longer than kMaxValueBytes");
    const Address a = allocate_or_throw(region, record_bytes(value.size()));
    region.write(a, encode_record(key, 1, value, a));
    level.emplace_back(key, a);
    stats.record_bytes += record_bytes(value.size());
    max_value = std::max<std::uint32_t>(max_value, static_cast<std::uint32_t>(value.size()));
  }
  std::uint8_t lv = 0;
  do {
    if (lv > kMaxLevel) throw InvalidArgument("remote build: tree taller than 32 levels");
    level = build_level(region, options.geometry, per, lv, level, &stats);
    ++lv;
  } while (level.size() > 1);
  stats.height = lv;
  stats.root = level.front().second;
  stats.used_bytes = region.used();
  RegionHeader h;
  h.geometry = options.geometry;
  h.root = stats.root;
  h.height = stats.height;
  h.max_value_bytes = max_value;
  h.key_count = count;
  h.region_bytes = region.size();
  h.used_bytes = region.used();
  region.write(0, encode_header(h));
  return stats;
}

BuildStats build(Region& region, std::span<const Entry> entries, const BuildOptions& options) {
  return build(
      region, entries.size(),
      [&](std::uint64_t i, std::string& value) {
        value.assign(entries[i].value);
        return entries[i].key;
      },
      options);
}

std::uint64_t build_bytes(std::uint64_t count, std::uint64_t value_bytes, const BuildOptions& options) {
  const std::uint32_t per = per_node(options);
  // Each record: its header, its value, at most 7 bytes of padding.
  std::uint64_t bytes = kRegionHeaderBytes + count * (kRecordHeaderBytes + 7) + value_bytes;
  std::uint64_t n = count;
  do {
    n = nodes_for(n, per);
    bytes += n * options.geometry.node_bytes;
  } while (n > 1);
  return bytes;
}

}  // namespace forein::net::remote

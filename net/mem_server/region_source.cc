#include "mem_server/region_source.h"

#include <array>

namespace forein::net::mem {

namespace {

constexpr int kTries = 8;  // READs of a torn node before it is skipped

bool read_header(const remote::Region& region, remote::RegionHeader* h) {
  std::array<std::byte, remote::kRegionHeaderBytes> bytes{};
  for (int i = 0; i < kTries; ++i) {
    if (region.read(0, bytes.size(), bytes.data()) == remote::ReadError::kOk &&
        remote::check_header(bytes, h) == remote::Check::kOk) {
      return true;
    }
  }
  return false;
}

}  // namespace

bool RegionIndexSource::walk_levels(
    const std::function<bool(remote::Address, const remote::NodeView&)>& fn) const {
  remote::RegionHeader h;
  if (!read_header(region_, &h)) return true;
  std::vector<std::byte> buf(h.geometry.node_bytes);
  const auto read_node = [&](remote::Address a, remote::NodeView* v) {
    for (int i = 0; i < kTries; ++i) {
      if (region_.read(a, buf.size(), buf.data()) == remote::ReadError::kOk &&
          remote::check_node(buf, h.geometry, a, v) == remote::Check::kOk) {
        return true;
      }
    }
    return false;
  };
  remote::Address first = h.root;
  for (int level = static_cast<int>(h.height) - 1; level >= 0 && first != 0; --level) {
    remote::Address next_first = 0;
    std::uint64_t guard = region_.size() / h.geometry.node_bytes + 1;  // no cycle can loop forever
    for (remote::Address a = first; a != 0 && guard-- > 0;) {
      remote::NodeView v;
      if (!read_node(a, &v) || v.level != level) break;  // torn for good: the rest of the level waits
      if (next_first == 0 && level > 0 && v.count > 0) next_first = v.ptr(0);
      if (!fn(a, v)) return false;
      a = v.right;
    }
    first = next_first;
  }
  return true;
}

void RegionIndexSource::for_each_node(const std::function<void(const NodeInterval&)>& fn) const {
  walk_levels([&](remote::Address a, const remote::NodeView& v) {
    NodeInterval n;
    n.index = index_id_;
    n.node = remote::node_id(a);
    n.level = v.level;
    n.lo = v.lo;
    n.hi = v.hi_inf ? 0 : v.hi;
    n.hi_inf = v.hi_inf;
    n.version = v.version;
    fn(n);
    return true;
  });
}

std::vector<NodeInterval> RegionIndexSource::nodes() const {
  std::vector<NodeInterval> out;
  for_each_node([&](const NodeInterval& n) { out.push_back(n); });
  return out;
}

void RegionIndexSource::for_each_word(const std::function<bool(Word)>& fn) const {
  walk_levels([&](remote::Address, const remote::NodeView& v) {
    if (v.level != 0) return true;
    for (std::size_t i = 0; i < v.count; ++i) {
      if (!fn(v.key(i))) return false;
    }
    return true;
  });
}

}  // namespace forein::net::mem

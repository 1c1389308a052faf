#include "dpa/dpa_layout.h"

namespace forein::offload::dpa {

namespace {

void put_model(std::byte* p, const FixedModel& m) {
  store<std::uint64_t>(p, m.key0);
  store<std::uint64_t>(p + 8, m.slope_mant);
  store<std::int64_t>(p + 16, m.intercept_q32);
  store<std::uint8_t>(p + 24, m.slope_shift);
}

bool zero(const std::byte* p, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    if (p[i] != std::byte{0}) return false;
  }
  return true;
}

// The largest |predict(key_i) - i| over v.key(first + i), i < n.
std::uint64_t model_error(const NodeView& v, std::uint32_t first, std::uint32_t n, const FixedModel& m) {
  std::uint64_t worst = 0;
  for (std::uint32_t i = 0; i < n; ++i) {
    const std::int64_t d = m.predict(v.key(first + i)) - static_cast<std::int64_t>(i);
    const std::uint64_t e = d < 0 ? static_cast<std::uint64_t>(-d) : static_cast<std::uint64_t>(d);
    if (e > worst) worst = e;
  }
  return worst;
}

}  // namespace

std::vector<std::byte> encode_node(const IndexNode& n) {
  std::vector<std::byte> out;
  const std::size_t count = n.keys.size();
  if (n.leaf) {
    out.resize(leaf_node_bytes(count));
    std::byte* p = out.data();
    store<std::uint8_t>(p, kLeafKind);
    store<std::uint16_t>(p + 2, 0);
    store<std::uint16_t>(p + 4, n.host_level);
    store<std::uint8_t>(p + 6, n.eps);
    store<std::uint32_t>(p + 8, static_cast<std::uint32_t>(count));
    put_model(p + 16, n.model);
    std::byte* keys = p + kNodeLineBytes;
    std::byte* payload = keys + count * 8;
    for (std::size_t i = 0; i < count; ++i) {
      store<std::uint64_t>(keys + i * 8, n.keys[i]);
      store<std::uint32_t>(payload + i * 8, i < n.nodes.size() ? n.nodes[i] : kNoPage);
      store<std::uint32_t>(payload + i * 8 + 4, i < n.parents.size() ? n.parents[i] : kNoPage);
    }
    return out;
  }
  const std::size_t segs = n.segments.size();
  out.resize(inner_node_bytes(segs, count));
  std::byte* p = out.data();
  store<std::uint8_t>(p, kInnerKind);
  store<std::uint8_t>(p + 1, static_cast<std::uint8_t>(segs));
  store<std::uint16_t>(p + 2, n.index_level);
  store<std::uint16_t>(p + 4, n.host_level);
  store<std::uint8_t>(p + 6, n.eps);
  for (std::size_t s = 0; s < segs && s < kInnerSegments; ++s) {
    const IndexSegment& g = n.segments[s];
    store<std::uint64_t>(p + 8 + s * 8, g.start < count ? n.keys[g.start] : 0);
    std::byte* line = p + kNodeLineBytes * (1 + s);
    put_model(line, g.model);
    store<std::uint16_t>(line + 26, static_cast<std::uint16_t>(g.pivots));
    store<std::uint32_t>(line + 28, g.start);
  }
  std::byte* keys = p + kNodeLineBytes * (1 + segs);
  std::byte* children = keys + count * 8;
  for (std::size_t i = 0; i < count; ++i) {
    store<std::uint64_t>(keys + i * 8, n.keys[i]);
    store<std::uint64_t>(children + i * 8, i < n.children.size() ? n.children[i] : kNoAddress);
  }
  return out;
}

NodeView view_node(const std::byte* p, std::size_t available) noexcept {
  NodeView v;
  if (p == nullptr || available < kNodeLineBytes) return v;
  v.at = p;
  v.kind = load<std::uint8_t>(p);
  v.index_level = load<std::uint16_t>(p + 2);
  v.host_level = load<std::uint16_t>(p + 4);
  v.eps = load<std::uint8_t>(p + 6);
  if (v.kind == kLeafKind) {
    v.count = load<std::uint32_t>(p + 8);
    if (v.count < 1 || v.count > kLeafCapacity) return v;
    v.bytes = leaf_node_bytes(v.count);
  } else if (v.kind == kInnerKind) {
    v.segments = load<std::uint8_t>(p + 1);
    if (v.segments < 1 || v.segments > kInnerSegments) return v;
    if (available < kNodeLineBytes * (1 + std::size_t{v.segments})) return v;
    std::uint32_t count = 0;
    for (std::size_t s = 0; s < v.segments; ++s) {
      const std::uint32_t pivots = v.segment_pivots(s);
      if (pivots < 1 || pivots > kSegmentPivots) return v;
      count += pivots;
    }
    v.count = count;
    v.bytes = inner_node_bytes(v.segments, count);
  } else {
    return v;
  }
  if (v.bytes > available) return v;
  v.ok = true;
  return v;
}

std::string node_error(std::span<const std::byte> bytes) {
  const NodeView v = view_node(bytes.data(), bytes.size());
  if (!v.ok) return "node metadata out of range or node bytes cut short";
  if (v.bytes != bytes.size()) return "node bytes do not match the node's size";
  const std::byte* p = bytes.data();
  if (load<std::uint8_t>(p + 7) != 0) return "reserved bytes in use";
  if (v.host_level > kMaxHostLevel) return "host level out of range";
  for (std::size_t i = 1; i < v.count; ++i) {
    if (v.key(i) <= v.key(i - 1)) return "keys not ascending";
  }
  if (v.kind == kLeafKind) {
    if (load<std::uint8_t>(p + 1) != 0 || !zero(p + 12, 4) || !zero(p + 41, 23)) return "reserved bytes in use";
    if (v.index_level != 0) return "index leaf above level 0";
    for (std::size_t i = 0; i < v.count; ++i) {
      if (v.entry_node(i) == kNoPage) return "boundary names no node";
    }
    if (model_error(v, 0, v.count, v.leaf_model()) > v.eps) return "leaf model outside its error bound";
    return {};
  }
  if (v.index_level < 1 || v.index_level >= kMaxIndexDepth) return "inner node level out of range";
  for (std::size_t s = v.segments; s < kInnerSegments; ++s) {
    if (v.segment_first(s) != 0) return "reserved bytes in use";
  }
  std::uint32_t start = 0;
  for (std::size_t s = 0; s < v.segments; ++s) {
    const std::byte* line = p + kNodeLineBytes * (1 + s);
    if (load<std::uint8_t>(line + 25) != 0 || !zero(line + 32, 32)) return "reserved bytes in use";
    if (v.segment_start(s) != start) return "segments not contiguous";
    const std::uint32_t n = v.segment_pivots(s);
    if (v.segment_first(s) != v.key(start)) return "segment first key is not its first pivot";
    if (model_error(v, start, n, v.segment_model(s)) > v.eps) return "segment model outside its error bound";
    start += n;
  }
  for (std::size_t i = 0; i < v.count; ++i) {
    if (v.child(i) == kNoAddress || v.child(i) % kPivotBytes != 0) return "child address not a node address";
  }
  return {};
}

std::int64_t window_search(const NodeView& v, std::uint32_t first, std::uint32_t n, const FixedModel& model,
                           Word w, std::size_t* probes) noexcept {
  if (n == 0) return -1;
  const Window win = search_window(model.predict(w), v.eps, n);
  std::size_t probed = 0;
  std::int64_t at = static_cast<std::int64_t>(win.first) - 1;
  for (std::uint32_t i = win.first; i <= win.last; ++i) {
    ++probed;
    if (v.key(first + i) > w) break;
    at = i;
  }
  // Outside the window (a word between the model's training keys, or bytes
  // that are no valid node): step outwards, at most n keys.
  if (at == static_cast<std::int64_t>(win.last)) {
    while (static_cast<std::uint64_t>(at) + 1 < n) {
      ++probed;
      if (v.key(first + static_cast<std::uint32_t>(at) + 1) > w) break;
      ++at;
    }
  } else if (at == static_cast<std::int64_t>(win.first) - 1) {
    while (at >= 0) {
      ++probed;
      if (v.key(first + static_cast<std::uint32_t>(at)) <= w) break;
      --at;
    }
  }
  if (probes != nullptr) *probes += probed;
  return at;
}

}  // namespace forein::offload::dpa

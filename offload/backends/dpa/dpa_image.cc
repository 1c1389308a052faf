#include "dpa/dpa_image.h"

#include <algorithm>

#include "forein/offload/image_header.h"

namespace forein::offload::dpa {

namespace {

constexpr std::uint32_t kMagic = 0x31415044;  // "DPA1" in memory order
constexpr std::uint16_t kFormat = 1;

static_assert(kImageIndexBytes == kImageIndexEntryBytes);

// The header checked against the span (image_header.h: entries are the
// index's nodes); ok = false for anything else.
struct View : ImageView {
  std::uint64_t root = kNoAddress;
  std::uint64_t capacity = 0;
};

View view_of(std::span<const std::byte> image) noexcept {
  View v{view_image(image, kMagic, kFormat, kImageHeaderBytes, kImageIndexBytes)};
  if (v.ok) {
    v.root = load<std::uint64_t>(v.base + 24);
    v.capacity = load<std::uint64_t>(v.base + 32);
  }
  return v;
}

std::uint64_t index_end(const View& v) noexcept { return kImageHeaderBytes + std::uint64_t{v.entries} * kImageIndexBytes; }

// The node at an offset, checked against the image.
NodeView node_at(const View& v, std::uint64_t offset) noexcept {
  if (offset < index_end(v) || offset >= v.length) return NodeView{};
  return view_node(v.base + offset, static_cast<std::size_t>(v.length - offset));
}

NodeView node_of_entry(const View& v, std::size_t i) noexcept {
  return node_at(v, index_entry_offset(v, kImageHeaderBytes, i));
}

// The node at a DPA address (binary search of the index), or ok = false.
NodeView find_node(const View& v, std::uint64_t address) noexcept {
  const auto offset = find_index_entry(v, kImageHeaderBytes, 8, address);
  return offset ? node_at(v, *offset) : NodeView{};
}

}  // namespace

std::vector<std::byte> build_image(const std::map<std::uint64_t, std::vector<std::byte>>& nodes,
                                   std::uint64_t root, std::uint64_t capacity) {
  std::size_t length = kImageHeaderBytes + nodes.size() * kImageIndexBytes;
  std::uint64_t used = 0;
  for (const auto& [address, bytes] : nodes) {
    length += bytes.size();
    used += bytes.size();
  }
  std::vector<std::byte> out(length);
  std::byte* p = out.data();
  write_image_head(p, kMagic, kFormat, length, static_cast<std::uint32_t>(nodes.size()));
  store<std::uint64_t>(p + 24, root);
  store<std::uint64_t>(p + 32, capacity);
  store<std::uint64_t>(p + 40, used);
  std::size_t at = kImageHeaderBytes + nodes.size() * kImageIndexBytes;
  std::size_t i = 0;
  for (const auto& [address, bytes] : nodes) {
    std::byte* e = p + kImageHeaderBytes + i * kImageIndexBytes;
    store<std::uint64_t>(e, address);
    store<std::uint64_t>(e + 8, at);
    if (!bytes.empty()) std::copy(bytes.begin(), bytes.end(), p + at);
    at += bytes.size();
    ++i;
  }
  return out;
}

IndexWalk dpa_walk(std::span<const std::byte> image, Word w) noexcept {
  IndexWalk walk;
  const View v = view_of(image);
  if (!v.ok || v.root == kNoAddress) return walk;
  std::uint64_t address = v.root;
  std::uint32_t above = kMaxIndexDepth;  // the index level walked before
  for (std::size_t step = 0; step < kMaxIndexDepth; ++step) {
    const NodeView n = find_node(v, address);
    if (!n.ok || n.index_level >= above) return walk;
    if (n.kind == kLeafKind) {
      if (n.index_level != 0) return walk;
      ++walk.leaves;
      std::int64_t at = window_search(n, 0, n.count, n.leaf_model(), w, &walk.probes);
      if (at < 0) at = 0;  // below the first boundary: the first leaf
      const auto i = static_cast<std::size_t>(at);
      const PageId node = n.entry_node(i);
      if (node == kNoPage) return walk;
      walk.hints.primary = Hint{node, n.host_level, 0};
      const PageId parent = n.entry_parent(i);
      if (parent != kNoPage && n.host_level < kMaxHostLevel) {
        walk.hints.secondary = Hint{parent, static_cast<std::uint16_t>(n.host_level + 1), 0};
      }
      return walk;
    }
    ++walk.inner_nodes;
    // The segment: the last whose first key <= w (at most seven).
    std::size_t seg = 0;
    for (std::size_t s = 1; s < n.segments; ++s) {
      if (n.segment_first(s) <= w) seg = s;
    }
    const std::uint32_t start = n.segment_start(seg);
    const std::uint32_t pivots = n.segment_pivots(seg);
    if (start > n.count || pivots > n.count - start) return walk;
    std::int64_t at = window_search(n, start, pivots, n.segment_model(seg), w, &walk.probes);
    if (at < 0) at = 0;
    above = n.index_level;
    address = n.child(start + static_cast<std::uint32_t>(at));
  }
  return walk;
}

StartHints dpa_image_hint(std::span<const std::byte> image, Word w) noexcept { return dpa_walk(image, w).hints; }

ImageSummary summarize_image(std::span<const std::byte> image) {
  ImageSummary s;
  const View v = view_of(image);
  if (!v.ok) return s;
  s.ok = true;
  s.root = v.root;
  s.capacity = v.capacity;
  for (std::size_t i = 0; i < v.entries; ++i) {
    const NodeView n = node_of_entry(v, i);
    if (!n.ok) continue;
    if (n.kind == kLeafKind) {
      ++s.leaves;
      s.leaf_bytes += n.bytes;
      s.host_level = n.host_level;
    } else {
      ++s.inner_nodes;
      s.inner_bytes += n.bytes;
    }
  }
  if (v.root != kNoAddress) {
    const NodeView r = find_node(v, v.root);
    if (r.ok && r.index_level < kMaxIndexDepth) s.depth = std::size_t{r.index_level} + 1;
  }
  return s;
}

std::size_t dpa_image_max_bytes(std::uint64_t capacity) {
  // Every node takes at least kMinNodeBytes (80) of DPA memory, so its
  // 16-byte index entry adds at most a fifth.
  const std::uint64_t full = kImageHeaderBytes + kImageIndexBytes + capacity + capacity / 5;
  return static_cast<std::size_t>(std::min<std::uint64_t>(full, kMaxImageBytes));
}

std::vector<ImageRecord> dpa_image_records(std::span<const std::byte> image) {
  std::vector<ImageRecord> out;
  const View v = view_of(image);
  if (!v.ok) return out;
  // Inner nodes: kind = their index level, key = their first pivot, no node
  // of the host; index leaves: one record per boundary (kind 0), the host
  // node its words lead to.
  for (std::size_t i = 0; i < v.entries; ++i) {
    const NodeView n = node_of_entry(v, i);
    if (!n.ok) continue;
    if (n.kind == kLeafKind) {
      for (std::size_t e = 0; e < n.count; ++e) {
        out.push_back(ImageRecord{n.key(e), 64, 0, n.host_level, n.entry_node(e)});
      }
    } else {
      out.push_back(ImageRecord{n.key(0), 64, static_cast<std::uint8_t>(std::min<std::uint16_t>(n.index_level, 255)),
                                n.host_level, kNoPage});
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const ImageRecord& a, const ImageRecord& b) {
    if (a.kind != b.kind) return a.kind > b.kind;
    return a.key < b.key;
  });
  return out;
}

std::vector<UsageRow> dpa_image_usage(std::span<const std::byte> image, std::uint64_t capacity) {
  if (capacity == 0) capacity = kDpaMemoryBytes;
  const ImageSummary s = summarize_image(image);
  std::vector<UsageRow> rows;
  rows.push_back({"dpa", "DPA memory: index nodes", "DPA bytes", s.inner_bytes + s.leaf_bytes, capacity});
  rows.push_back({"dpa", "DPA memory: inner nodes", "DPA bytes", s.inner_bytes, capacity});
  rows.push_back({"dpa", "DPA memory: index leaves", "DPA bytes", s.leaf_bytes, capacity});
  rows.push_back({"dpa", "learned index: inner nodes", "nodes", s.inner_nodes, 0});
  rows.push_back({"dpa", "learned index: index leaves", "nodes", s.leaves, 0});
  rows.push_back({"dpa", "learned index: depth", "levels", s.depth, kMaxIndexDepth});
  rows.push_back({"dpa", "learned index: host level hinted", "level", s.host_level, 0});
  return rows;
}

}  // namespace forein::offload::dpa

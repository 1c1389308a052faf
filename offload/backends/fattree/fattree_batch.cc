#include "fattree/fattree_batch.h"

#include "forein/offload/bytes.h"

namespace forein::offload::fattree {

namespace {

constexpr std::uint8_t kRangeKind = 1;
constexpr std::uint8_t kNodeKind = 2;
constexpr std::uint16_t kMaxLevel = 64;

void put_range(std::byte* p, const RangeRecord& r) {
  store<std::uint8_t>(p, kRangeKind);
  store<std::uint16_t>(p + 2, r.hint_level);
  store<std::uint16_t>(p + 4, r.server);
  store<std::uint64_t>(p + 8, r.lo);
  store<std::uint64_t>(p + 16, r.hi);
  store<std::uint64_t>(p + 24, r.target);
  store<std::uint32_t>(p + 32, r.hint_node);
}

RangeRecord get_range(const std::byte* p) {
  RangeRecord r;
  r.hint_level = load<std::uint16_t>(p + 2);
  r.server = load<std::uint16_t>(p + 4);
  r.lo = load<std::uint64_t>(p + 8);
  r.hi = load<std::uint64_t>(p + 16);
  r.target = load<std::uint64_t>(p + 24);
  r.hint_node = load<std::uint32_t>(p + 32);
  return r;
}

void put_node(std::byte* p, const NodeRecord& n) {
  store<std::uint8_t>(p, kNodeKind);
  store<std::uint8_t>(p + 1, n.set);
  store<std::uint8_t>(p + 2, n.children);
  store<std::uint16_t>(p + 4, n.owner_level);
  store<std::uint32_t>(p + 8, n.owner);
  store<std::uint64_t>(p + 16, n.address);
  for (std::size_t i = 0; i < kBranches; ++i) {
    store<std::uint64_t>(p + 24 + 8 * i, n.pivot[i]);
    store<std::uint64_t>(p + 152 + 8 * i, n.child[i]);
  }
}

NodeRecord get_node(const std::byte* p) {
  NodeRecord n;
  n.set = load<std::uint8_t>(p + 1);
  n.children = load<std::uint8_t>(p + 2);
  n.owner_level = load<std::uint16_t>(p + 4);
  n.owner = load<std::uint32_t>(p + 8);
  n.address = load<std::uint64_t>(p + 16);
  for (std::size_t i = 0; i < kBranches; ++i) {
    n.pivot[i] = load<std::uint64_t>(p + 24 + 8 * i);
    n.child[i] = load<std::uint64_t>(p + 152 + 8 * i);
  }
  return n;
}

}  // namespace

ChangeBatch encode_batch(BatchKind kind, const std::vector<RangeRecord>& ranges,
                         const std::vector<NodeRecord>& nodes) {
  ChangeBatch b;
  b.kind = kind;
  b.records = ranges.size() + nodes.size();
  b.bytes.resize(ranges.size() * kRangeRecordBytes + nodes.size() * kNodeRecordBytes);
  std::byte* p = b.bytes.data();
  for (const RangeRecord& r : ranges) {
    put_range(p, r);
    p += kRangeRecordBytes;
  }
  for (const NodeRecord& n : nodes) {
    put_node(p, n);
    p += kNodeRecordBytes;
  }
  return b;
}

std::string range_error(const RangeRecord& r) {
  if (r.lo > r.hi) return "range lo above hi";
  if (r.hint_node == kNoPage) return "range without a tree node";
  if (r.hint_level > kMaxLevel) return "range hint level out of bounds";
  if (is_real(r.target) ? r.target != r.hint_node
                        : !is_virtual(r.target) || ((r.target >> 16) & 0xFFFFFFFFu) != r.hint_node) {
    return "range target does not name its tree node";
  }
  return {};
}

std::string node_error(const NodeRecord& n) {
  if (n.set >= kNodeSets) return "node set out of bounds";
  if (n.children < 1 || n.children > kBranches) return "node with 0 or more than 16 children";
  if (n.owner == kNoPage || n.owner_level < 1 || n.owner_level > kMaxLevel) return "node without a tree node";
  if (is_real(n.address) ? n.address != n.owner
                         : !is_virtual(n.address) || ((n.address >> 16) & 0xFFFFFFFFu) != n.owner) {
    return "node address does not name its tree node";
  }
  for (std::size_t i = 0; i < kBranches; ++i) {
    if (i < n.children) {
      if (i > 0 && n.pivot[i] <= n.pivot[i - 1]) return "node pivots not ascending";
      if (n.pivot[i] == kUnusedPivot) return "node pivot is the unused marker";
      if (!is_real(n.child[i]) && !is_virtual(n.child[i])) return "node child address out of bounds";
      if (n.child[i] == real_address(kNoPage)) return "node child is no page";
    } else if (n.pivot[i] != kUnusedPivot || n.child[i] != 0) {
      return "node slot past its children in use";
    }
  }
  return {};
}

std::optional<DecodedBatch> decode_batch(const ChangeBatch& batch, std::string* why) {
  DecodedBatch out;
  const std::byte* p = batch.bytes.data();
  const std::byte* end = p + batch.bytes.size();
  auto fail = [&](std::string w) -> std::optional<DecodedBatch> {
    if (why != nullptr) *why = std::move(w);
    return std::nullopt;
  };
  while (p < end) {
    const auto kind = load<std::uint8_t>(p);
    const std::size_t left = static_cast<std::size_t>(end - p);
    if (kind == kRangeKind && left >= kRangeRecordBytes) {
      RangeRecord r = get_range(p);
      if (std::string e = range_error(r); !e.empty()) return fail(e);
      out.ranges.push_back(r);
      p += kRangeRecordBytes;
    } else if (kind == kNodeKind && left >= kNodeRecordBytes) {
      NodeRecord n = get_node(p);
      if (std::string e = node_error(n); !e.empty()) return fail(e);
      out.nodes.push_back(n);
      p += kNodeRecordBytes;
    } else {
      return fail("unknown or truncated record");
    }
  }
  if (out.ranges.size() + out.nodes.size() != batch.records) return fail("record count mismatch");
  return out;
}

}  // namespace forein::offload::fattree

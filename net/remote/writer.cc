#include "remote/writer.h"

#include <algorithm>

#include "forein/error.h"

namespace forein::net::remote {

Writer::Writer(Region& region) : region_(region) {
  std::byte h[kRegionHeaderBytes];
  if (region_.read(0, sizeof h, h) != ReadError::kOk || check_header(h, &header_) != Check::kOk ||
      header_.region_bytes != region_.size()) {
    throw CorruptionError("remote writer: the region header does not check");
  }
  image_.resize(header_.geometry.node_bytes);
}

Node Writer::read_node(Address a) const {
  // Only this thread writes, so what it reads is whole.
  std::vector<std::byte> b(header_.geometry.node_bytes);
  NodeView v;
  if (region_.read(a, b.size(), b.data()) != ReadError::kOk || check_node(b, header_.geometry, a, &v) != Check::kOk) {
    throw CorruptionError("remote writer: node does not check");
  }
  return v.to_node();
}

void Writer::rewrite(Address a, Node& n) {
  n.version += 2;
  encode_node(n, header_.geometry, a, image_.data());
  seqlock_write(region_, a, image_);
  ++stats_.rewrites;
}

Address Writer::write_new(const Node& n) {
  // put() checked the room first.
  const Address a = region_.allocate(header_.geometry.node_bytes);
  encode_node(n, header_.geometry, a, image_.data());
  region_.write(a, image_);
  return a;
}

void Writer::publish_header() {
  header_.version += 2;
  header_.used_bytes = region_.used();
  seqlock_write(region_, 0, encode_header(header_));
}

PutResult Writer::put(std::uint64_t key, std::string_view value) {
  if (value.size() > kMaxValueBytes) throw InvalidArgument("remote writer: value longer than kMaxValueBytes");
  // Room for the record and, at worst, one new node per level and a new root.
  if (region_.available() < record_bytes(value.size()) + (header_.height + 1) * std::uint64_t{header_.geometry.node_bytes}) {
    return PutResult::kRegionFull;
  }
  std::vector<Address> path;  // root first
  Address a = header_.root;
  Node n;
  // The writer trusts its own region, but a corrupt one must not make it
  // loop: each level at most once, one level down at a time. (Splits are
  // finished before put() returns, so it never needs to move right.)
  for (int expect = static_cast<int>(header_.height) - 1;; --expect) {
    n = read_node(a);
    if (n.level != expect || key < n.lo || (!n.hi_inf && key >= n.hi)) {
      throw CorruptionError("remote writer: the tree's levels or fences do not hold");
    }
    path.push_back(a);
    if (n.level == 0) break;
    const auto it = std::upper_bound(n.keys.begin(), n.keys.end(), key);
    a = n.ptrs[static_cast<std::size_t>(it - n.keys.begin()) - 1];
  }
  const auto it = std::lower_bound(n.keys.begin(), n.keys.end(), key);
  const bool exists = it != n.keys.end() && *it == key;
  std::uint32_t version = 1;
  if (exists) {
    std::byte head[kRecordHeaderBytes];
    if (region_.read(n.ptrs[static_cast<std::size_t>(it - n.keys.begin())], sizeof head, head) == ReadError::kOk) {
      version = load_le<std::uint32_t>(head + kVersionOffset) + 1;
    }
  }
  const Address rec = region_.allocate(record_bytes(value.size()));
  region_.write(rec, encode_record(key, version, value, rec));
  header_.max_value_bytes = std::max<std::uint32_t>(header_.max_value_bytes, static_cast<std::uint32_t>(value.size()));
  if (exists) {
    n.ptrs[static_cast<std::size_t>(it - n.keys.begin())] = rec;
    rewrite(path.back(), n);
    ++stats_.updates;
  } else {
    insert_at(path, path.size() - 1, key, rec);
    ++header_.key_count;
    ++stats_.inserts;
  }
  publish_header();
  return exists ? PutResult::kUpdated : PutResult::kInserted;
}

void Writer::insert_at(std::vector<Address>& path, std::size_t depth, std::uint64_t key, Address ptr) {
  const Address a = path[depth];
  Node n = read_node(a);
  // A key is always >= its node's first key, except in the leftmost
  // leaf: upper_bound then lands at 0 and keeps the keys sorted.
  const auto pos = static_cast<std::size_t>(std::upper_bound(n.keys.begin(), n.keys.end(), key) - n.keys.begin());
  n.keys.insert(n.keys.begin() + static_cast<std::ptrdiff_t>(pos), key);
  n.ptrs.insert(n.ptrs.begin() + static_cast<std::ptrdiff_t>(pos), ptr);
  if (n.keys.size() <= header_.geometry.fanout) {
    rewrite(a, n);
    return;
  }
  // Split: the upper half to a new right node, written first.
  const std::size_t half = n.keys.size() / 2;
  Node right;
  right.level = n.level;
  right.keys.assign(n.keys.begin() + static_cast<std::ptrdiff_t>(half), n.keys.end());
  right.ptrs.assign(n.ptrs.begin() + static_cast<std::ptrdiff_t>(half), n.ptrs.end());
  right.lo = right.keys.front();
  right.hi = n.hi;
  right.hi_inf = n.hi_inf;
  right.right = n.right;
  const Address r = write_new(right);
  n.keys.resize(half);
  n.ptrs.resize(half);
  n.hi = right.lo;
  n.hi_inf = false;
  n.right = r;
  rewrite(a, n);
  ++stats_.splits;
  if (depth > 0) {
    insert_at(path, depth - 1, right.lo, r);
    return;
  }
  // The root split: a new root over both halves. The old root stays a
  // valid node, so a reader holding it (a stale header) still finds keys
  // by moving right.
  Node root;
  root.level = static_cast<std::uint8_t>(n.level + 1);
  if (root.level > kMaxLevel) throw CorruptionError("remote writer: tree taller than 32 levels");
  root.lo = 0;
  root.hi_inf = true;
  root.keys = {n.lo, right.lo};
  root.ptrs = {a, r};
  header_.root = write_new(root);
  header_.height = root.level + 1u;
  ++stats_.root_splits;
}

}  // namespace forein::net::remote

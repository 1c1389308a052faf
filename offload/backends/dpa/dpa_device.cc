#include "dpa/dpa_device.h"

#include <memory>
#include <string>

#include "dpa/dpa_batch.h"
#include "dpa/dpa_image.h"
#include "forein/error.h"

namespace forein::offload::dpa {

DpaDevice::DpaDevice(std::uint64_t capacity) : capacity_(capacity) {
  if (capacity < 1 || capacity > kMaxCapacity) {
    throw InvalidArgument("dpa: capacity must be 1 to 2^40 DPA bytes (the DPA memory is " +
                          std::to_string(kDpaMemoryBytes) + "), not " + std::to_string(capacity));
  }
}

BackendStatus DpaDevice::apply(const ChangeBatch& batch) {
  const auto decoded = decode_batch(batch, nullptr);
  if (!decoded) return BackendStatus::kInvalidEntry;
  std::lock_guard lock(mu_);
  Memory next = memory_;
  if (batch.kind == BatchKind::kRemove) {
    for (const Stitch& s : *decoded) {
      const auto it = next.nodes.find(s.address);
      if (it == next.nodes.end()) continue;  // not held: skipped
      next.used -= it->second.size();
      next.nodes.erase(it);
      if (next.root == s.address) next.root = kNoAddress;
    }
  } else if (!decoded->empty()) {
    // Inside DPA memory.
    for (const Stitch& s : *decoded) {
      if (s.kind == StitchKind::kCopy && (s.address > capacity_ || s.node.size() > capacity_ - s.address)) {
        return BackendStatus::kCapacityExceeded;
      }
    }
    // A COPY to a held node's address replaces it; one over any other
    // held node is refused.
    for (const Stitch& s : *decoded) {
      if (s.kind != StitchKind::kCopy) continue;
      const auto it = next.nodes.find(s.address);
      if (it != next.nodes.end()) {
        next.used -= it->second.size();
        next.nodes.erase(it);
      }
    }
    for (const Stitch& s : *decoded) {
      if (s.kind != StitchKind::kCopy) continue;
      const std::uint64_t end = s.address + s.node.size();
      auto after = next.nodes.lower_bound(s.address);
      if (after != next.nodes.end() && after->first < end) return BackendStatus::kInvalidEntry;
      if (after != next.nodes.begin()) {
        const auto before = std::prev(after);
        if (before->first + before->second.size() > s.address) return BackendStatus::kInvalidEntry;
      }
    }
    for (const Stitch& s : *decoded) {
      if (s.kind != StitchKind::kCopy) continue;
      next.used += s.node.size();
      next.nodes[s.address] = s.node;
    }
    // Every copied inner node's children are held, one index level down,
    // naming host nodes of the same level.
    for (const Stitch& s : *decoded) {
      if (s.kind != StitchKind::kCopy) continue;
      const NodeView n = view_node(s.node.data(), s.node.size());
      if (n.kind != kInnerKind) continue;
      for (std::size_t i = 0; i < n.count; ++i) {
        const auto it = next.nodes.find(n.child(i));
        if (it == next.nodes.end()) return BackendStatus::kInvalidEntry;
        const NodeView c = view_node(it->second.data(), it->second.size());
        if (!c.ok || c.index_level + 1 != n.index_level || c.host_level != n.host_level) {
          return BackendStatus::kInvalidEntry;
        }
      }
    }
    next.root = decoded->back().address;  // CONNECT
  }
  if (next.used > capacity_) return BackendStatus::kCapacityExceeded;
  if (!publish_locked(next)) return BackendStatus::kCapacityExceeded;
  memory_ = std::move(next);
  return BackendStatus::kOk;
}

bool DpaDevice::publish_locked(const Memory& m) {
  auto image = std::make_shared<BackendImage>();
  image->bytes = build_image(m.nodes, m.root, capacity_);
  if (image->bytes.size() > dpa_image_max_bytes(capacity_)) return false;
  image->version = ++version_;
  publish(std::move(image));
  return true;
}

BackendUsage DpaDevice::usage() const {
  std::lock_guard lock(mu_);
  BackendUsage u;
  u.unit = "DPA bytes";
  u.used = memory_.used;
  u.capacity = capacity_;
  u.hardware_bytes = memory_.used;
  u.host_bytes = load_image()->bytes.size();
  for (const auto& [address, bytes] : memory_.nodes) u.host_bytes += sizeof(address) + sizeof(bytes) + bytes.size();
  return u;
}

BackendModel dpa_model(std::size_t inner_levels, double node_bytes) {
  // Sources. DPA-Store (shared/papers/004_af7888c35286a936.txt), 4.2.6: an
  // inner node costs 4.5 cache lines on average (metadata and first keys,
  // models, 1.5 lines of pivots, the child pointer), a leaf one metadata
  // line, then the key window and the value by DMA; 465 ns a DPA memory
  // access, 910 ns a DMA to host memory; 176 traverser threads (4.2.2);
  // host-to-DPA copies at 120 MB/s (4.2.7).
  constexpr double kInnerLines = 4.5;
  BackendModel m;
  const double t = static_cast<double>(inner_levels) * kInnerLines * kDpaAccessNs + kDpaAccessNs + 2 * kHostDmaNs;
  m.hint_latency_ns = t;
  m.hints_per_second = static_cast<double>(kTraverserThreads) / (t * 1e-9);
  const double bytes = node_bytes > 0 ? node_bytes : static_cast<double>(leaf_node_bytes(kLeafCapacity));
  // A stitched path: one node a level, at the host-to-DPA copy rate.
  m.install_latency_us = static_cast<double>(inner_levels + 1) * bytes / kHostToDpaBytesPerSecond * 1e6;
  m.entries_per_second = kHostToDpaBytesPerSecond / bytes;
  m.source =
      "DPA-Store (shared/papers/004_af7888c35286a936.txt): 4.2.6 per inner level 4.5 cache lines x 465 ns of DPA "
      "memory, the leaf's metadata line 465 ns, the key window and the payload by DMA 910 ns each; 176 traverser "
      "threads (4.2.2); stitched nodes copied host-to-DPA at 120 MB/s (4.2.7)";
  return m;
}

BackendModel DpaDevice::model() const {
  std::lock_guard lock(mu_);
  std::size_t inner_levels = 0;
  if (memory_.root != kNoAddress) {
    const auto it = memory_.nodes.find(memory_.root);
    if (it != memory_.nodes.end()) {
      const NodeView r = view_node(it->second.data(), it->second.size());
      if (r.ok) inner_levels = r.index_level;
    }
  }
  const double avg = memory_.nodes.empty() ? 0.0
                                           : static_cast<double>(memory_.used) / static_cast<double>(memory_.nodes.size());
  return dpa_model(inner_levels, avg);
}

}  // namespace forein::offload::dpa

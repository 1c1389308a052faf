#include "fattree/fattree_device.h"

#include <memory>
#include <string>
#include <vector>

#include "fattree/fattree_batch.h"
#include "fattree/fattree_image.h"
#include "fattree/range_tables.h"
#include "forein/error.h"

namespace forein::offload::fattree {

FattreeDevice::FattreeDevice(std::uint64_t capacity) : capacity_(capacity) {
  // Above kCapacity the per-part limits (1,024 ranges, 4,096 nodes a set)
  // still bind; the bound only keeps the figure sane.
  if (capacity < 1 || capacity > (std::uint64_t{1} << 30)) {
    throw InvalidArgument("fattree: capacity must be 1 to 2^30 in-switch nodes (the switches hold " +
                          std::to_string(kCapacity) + ": 1,024 fat-root ranges + 5 node sets of 4,096), not " +
                          std::to_string(capacity));
  }
}

std::uint64_t FattreeDevice::used(const Tables& t) const {
  std::uint64_t n = t.ranges.size();
  for (const auto& s : t.sets) n += s.size();
  return n;
}

BackendStatus FattreeDevice::apply(const ChangeBatch& batch) {
  const auto decoded = decode_batch(batch, nullptr);
  if (!decoded) return BackendStatus::kInvalidEntry;
  std::lock_guard lock(mu_);
  Tables next = tables_;
  if (batch.kind == BatchKind::kInstall) {
    for (const RangeRecord& r : decoded->ranges) next.ranges[r.lo] = r;
    for (const NodeRecord& n : decoded->nodes) next.sets[n.set][n.address] = n;
    if (next.ranges.size() > kFatRootRangeLimit || used(next) > capacity_) {
      return BackendStatus::kCapacityExceeded;
    }
    for (const auto& s : next.sets) {
      if (s.size() > kNodeSetLimit) return BackendStatus::kCapacityExceeded;
    }
  } else {
    for (const RangeRecord& r : decoded->ranges) next.ranges.erase(r.lo);
    for (const NodeRecord& n : decoded->nodes) next.sets[n.set].erase(n.address);
  }
  if (!publish_locked(next)) return BackendStatus::kCapacityExceeded;
  tables_ = std::move(next);
  return BackendStatus::kOk;
}

bool FattreeDevice::publish_locked(const Tables& t) {
  std::vector<RangeRecord> ranges;
  ranges.reserve(t.ranges.size());
  for (const auto& [lo, r] : t.ranges) ranges.push_back(r);
  ranges = effective_ranges(ranges);
  std::vector<KeyRange> keys;
  keys.reserve(ranges.size());
  for (const RangeRecord& r : ranges) keys.push_back(KeyRange{r.lo, r.hi});
  const RangeTables tables = build_range_tables(keys, 64, kSliceBits);
  std::array<std::vector<NodeRecord>, kNodeSets> sets;
  for (std::size_t s = 0; s < kNodeSets; ++s) {
    for (const auto& [address, n] : t.sets[s]) sets[s].push_back(n);
  }
  auto image = std::make_shared<BackendImage>();
  image->bytes = build_image(ranges, tables, sets);
  if (image->bytes.size() > fattree_image_max_bytes(capacity_)) return false;
  image->version = ++version_;
  publish(std::move(image));
  return true;
}

BackendUsage FattreeDevice::usage() const {
  std::lock_guard lock(mu_);
  BackendUsage u;
  u.unit = "in-switch nodes";
  u.used = used(tables_);
  u.capacity = capacity_;
  // On the switch: a fat-root range is a TCAM range (4 chained 16-bit
  // tables) with a 14-byte action (address, server); a regular node is 16
  // pivots and 16 child addresses of 8 bytes in SRAM.
  u.hardware_bytes = tables_.ranges.size() * 2 * (kRangeStages * 2 + 14);
  for (const auto& s : tables_.sets) u.hardware_bytes += s.size() * kBranches * 16;
  u.host_bytes = load_image()->bytes.size() + u.used * sizeof(NodeRecord);
  return u;
}

BackendModel FattreeDevice::model() const {
  BackendModel m;
  // The switches are on the packet's path anyway: the in-network lookup
  // adds no hop. Line rate and the control plane's install rate are the
  // Tofino figures switch_lpm also uses (no figures in the paper itself).
  m.hint_latency_ns = 0;
  m.hints_per_second = 4.8e9;
  m.install_latency_us = 1000;
  m.entries_per_second = 20000;
  m.source =
      "Fat-B+Tree (ICDE 2024) section IV: lookups in the pipelines of switches on the path "
      "(no added hop); line rate and install rate: typical Tofino figures, as switch_lpm";
  return m;
}

}  // namespace forein::offload::fattree

#include "fpga/fpga_device.h"

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "fpga/fpga_batch.h"
#include "fpga/fpga_image.h"
#include "forein/error.h"

namespace forein::offload::fpga {

FpgaDevice::FpgaDevice(std::uint64_t capacity) : capacity_(capacity), sets_(cache_sets(capacity)) {
  if (capacity < 1 || capacity > kMaxCapacity) {
    throw InvalidArgument("fpga: capacity must be 1 to 2^40 cache bytes (the card's on-board DRAM is " +
                          std::to_string(kBoardDramBytes) + "), not " + std::to_string(capacity));
  }
}

bool FpgaDevice::fits(const Cache& c) const {
  if (c.dram.size() > capacity_ / kNodeBytes) return false;
  std::unordered_map<std::uint64_t, std::uint32_t> ways;
  for (const auto& [id, r] : c.dram) {
    if (++ways[cache_set_of(id, sets_)] > kCacheWays) return false;
  }
  return true;
}

BackendStatus FpgaDevice::apply(const ChangeBatch& batch) {
  const auto decoded = decode_batch(batch, nullptr);
  if (!decoded) return BackendStatus::kInvalidEntry;
  std::lock_guard lock(mu_);
  Cache next = cache_;
  for (const CacheRecord& r : *decoded) {
    if (batch.kind == BatchKind::kInstall) {
      if (r.root) {
        next.dram.erase(r.node);  // a node lives in one place
        next.root = r;
      } else {
        if (next.root && next.root->node == r.node) next.root.reset();
        next.dram[r.node] = r;
      }
    } else {
      if (next.root && next.root->node == r.node) next.root.reset();
      next.dram.erase(r.node);
    }
  }
  if (batch.kind == BatchKind::kInstall && !fits(next)) return BackendStatus::kCapacityExceeded;
  if (!publish_locked(next)) return BackendStatus::kCapacityExceeded;
  cache_ = std::move(next);
  return BackendStatus::kOk;
}

bool FpgaDevice::publish_locked(const Cache& c) {
  std::vector<const CacheRecord*> dram;
  dram.reserve(c.dram.size());
  for (const auto& [id, r] : c.dram) dram.push_back(&r);
  auto image = std::make_shared<BackendImage>();
  image->bytes = build_image(c.root ? &*c.root : nullptr, dram, capacity_);
  if (image->bytes.size() > fpga_image_max_bytes(capacity_)) return false;
  image->version = ++version_;
  publish(std::move(image));
  return true;
}

BackendUsage FpgaDevice::usage() const {
  std::lock_guard lock(mu_);
  BackendUsage u;
  u.unit = "cache bytes";
  u.used = cache_.dram.size() * kNodeBytes;
  u.capacity = capacity_;
  // What the nodes' data occupies: the 256-byte chunks of the occupancy maps.
  for (const auto& [id, r] : cache_.dram) u.hardware_bytes += occupied_bytes(occupancy_of(r.children.size()));
  u.host_bytes = load_image()->bytes.size();
  for (const auto& [id, r] : cache_.dram) u.host_bytes += sizeof(CacheRecord) + r.children.size() * sizeof(CacheChild);
  return u;
}

BackendModel fpga_model(std::size_t dram_levels) {
  // Sources. Honeycomb (shared/papers/003_a83c9de61e1029db.txt): the
  // accelerator is clocked at 220 MHz (section 6.1); the root is cached in
  // on-chip SRAM, other interior nodes in on-board DDR4-2133 DRAM, two
  // channels (sections 5, 6.1); a node's search reads its 512-byte first
  // block (header + shortcuts), then one sorted-block segment, cached as
  // 256-byte chunks (sections 3.1, 5); PCIe: more than 1 us latency, 13
  // GB/s peak (section 2). DDR4-2133 (JEDEC): 2,133 MT/s x 8 bytes = 17.1
  // GB/s a channel; a random read's latency about 80 ns at the FPGA's
  // memory controller (tRCD + CL of about 14 ns each, plus controller and
  // PHY; an estimate, not a figure of the paper).
  constexpr double kCycleNs = 1e3 / 220.0;                 // 220 MHz
  constexpr double kDramAccessNs = 80.0;                   // one DDR4-2133 random read
  constexpr double kDramBytesPerSecond = 2 * 2133e6 * 8;   // two channels
  constexpr double kBytesPerLevel = kFirstBlockBytes + kChunkBytes;  // 512 + 256
  BackendModel m;
  const double levels = static_cast<double>(dram_levels);
  // The root: two on-chip SRAM reads, a cycle each; each cached level
  // below it: two DRAM reads (first block, one chunk) and their transfer.
  m.hint_latency_ns = 2 * kCycleNs + levels * (2 * kDramAccessNs + kBytesPerLevel / kDramBytesPerSecond * 1e9);
  m.hints_per_second = dram_levels == 0 ? 1e9 / kCycleNs  // one walk a cycle from SRAM
                                        : kDramBytesPerSecond / (levels * kBytesPerLevel);
  // A cache/page-table update over PCIe: at least the paper's 1 us.
  m.install_latency_us = 1.0;
  // Each placed node is written over PCIe (13 GB/s) as up to 8 KB.
  m.entries_per_second = 13e9 / static_cast<double>(kNodeBytes);
  m.source =
      "Honeycomb (shared/papers/003_a83c9de61e1029db.txt): 220 MHz accelerator (6.1); root in on-chip SRAM, "
      "interior nodes in on-board DDR4-2133 DRAM (5, 6.1); per cached level a 512-byte first block and a "
      "256-byte chunk (3.1, 5); PCIe > 1 us, 13 GB/s (2). DDR4-2133: 17.1 GB/s a channel, two channels; "
      "~80 ns a random read (estimate)";
  return m;
}

BackendModel FpgaDevice::model() const {
  std::lock_guard lock(mu_);
  // The deepest walk: the distinct levels of the DRAM-cached nodes.
  std::set<std::uint16_t> levels;
  for (const auto& [id, r] : cache_.dram) levels.insert(r.level);
  return fpga_model(levels.size());
}

}  // namespace forein::offload::fpga

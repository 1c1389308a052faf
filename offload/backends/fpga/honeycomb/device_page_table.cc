#include "fpga/honeycomb/device_page_table.h"

#include <mutex>

namespace forein::offload::fpga {

void DevicePageTable::map(Lid lid, NodeAddress address) {
  Shard& s = shard(lid);
  std::unique_lock lock(s.mu);
  s.entries[lid] = address;
}

void DevicePageTable::unmap(Lid lid) {
  Shard& s = shard(lid);
  std::unique_lock lock(s.mu);
  s.entries.erase(lid);
}

NodeAddress DevicePageTable::lookup(Lid lid) const {
  const Shard& s = shard(lid);
  std::shared_lock lock(s.mu);
  const auto it = s.entries.find(lid);
  return it == s.entries.end() ? nullptr : it->second;
}

std::size_t DevicePageTable::size() const {
  std::size_t n = 0;
  for (const Shard& s : shards_) {
    std::shared_lock lock(s.mu);
    n += s.entries.size();
  }
  return n;
}

}  // namespace forein::offload::fpga

// The accelerator's copy of the page table (paper 003, sections 2 and 5):
// LID -> node buffer, kept in on-board DRAM and updated by the CPU over
// PCIe. Read by every worker, written by the store's writer threads:
// sharded maps under reader/writer locks.
#pragma once

#include <array>
#include <cstddef>
#include <shared_mutex>
#include <unordered_map>

#include "forein/fpga/honeycomb_types.h"

namespace forein::offload::fpga {

class DevicePageTable {
 public:
  void map(Lid lid, NodeAddress address);
  void unmap(Lid lid);
  NodeAddress lookup(Lid lid) const;  // null if unmapped
  std::size_t size() const;

 private:
  static constexpr std::size_t kShards = 64;
  struct Shard {
    mutable std::shared_mutex mu;
    std::unordered_map<Lid, NodeAddress> entries;
  };
  Shard& shard(Lid lid) { return shards_[lid % kShards]; }
  const Shard& shard(Lid lid) const { return shards_[lid % kShards]; }
  std::array<Shard, kShards> shards_;
};

}  // namespace forein::offload::fpga

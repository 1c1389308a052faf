// The CPU's page table (section 3.1): LID -> current node buffer. Entries
// are atomic so lock-free readers and writers translate while a merge or
// split remaps. Every map/remap is mirrored to the accelerator's copy
// (AcceleratorLink::map) and a freed LID is unmapped there too.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "forein/fpga/memory_port.h"

namespace forein::offload::fpga {

class PageTable {
 public:
  explicit PageTable(AcceleratorLink* link) : link_(link) {}
  ~PageTable();
  PageTable(const PageTable&) = delete;
  PageTable& operator=(const PageTable&) = delete;

  Lid allocate();                  // a fresh or recycled LID, unmapped
  void free(Lid lid);              // unmaps (both tables) and recycles
  void map(Lid lid, NodeAddress address);  // create or change, both tables
  NodeAddress translate(Lid lid) const;
  // Every mapped entry (teardown; no concurrent writers).
  void for_each(const std::function<void(Lid, NodeAddress)>& fn) const;

  std::uint64_t updates() const { return updates_.load(std::memory_order_relaxed); }
  std::uint64_t live() const { return live_.load(std::memory_order_relaxed); }

 private:
  // Two-level: 2^16 chunks of 2^16 entries, chunks allocated on demand, so
  // translate never takes a lock.
  static constexpr std::size_t kChunkBits = 16;
  static constexpr std::size_t kChunkEntries = std::size_t{1} << kChunkBits;
  static constexpr std::size_t kChunks = std::size_t{1} << 16;
  using Entry = std::atomic<NodeAddress>;
  std::atomic<NodeAddress>* entry(Lid lid, bool create);

  AcceleratorLink* link_;
  std::unique_ptr<std::atomic<Entry*>[]> chunks_{new std::atomic<Entry*>[kChunks]()};
  std::mutex alloc_mutex_;
  std::vector<Lid> free_lids_;
  Lid next_lid_ = 1;
  std::atomic<std::uint64_t> updates_{0}, live_{0};
};

}  // namespace forein::offload::fpga

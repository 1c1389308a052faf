// LID allocation and the CPU page table (page_table.h).
#include "fpga/honeycomb/page_table.h"

#include "forein/error.h"

namespace forein::offload::fpga {

PageTable::~PageTable() {
  for (std::size_t i = 0; i < kChunks; ++i) delete[] chunks_[i].load(std::memory_order_relaxed);
}

std::atomic<NodeAddress>* PageTable::entry(Lid lid, bool create) {
  const std::size_t c = static_cast<std::size_t>(lid >> kChunkBits);
  if (lid == kNoLid || c >= kChunks) return nullptr;
  Entry* chunk = chunks_[c].load(std::memory_order_acquire);
  if (chunk == nullptr) {
    if (!create) return nullptr;
    Entry* fresh = new Entry[kChunkEntries]();
    if (chunks_[c].compare_exchange_strong(chunk, fresh, std::memory_order_acq_rel)) {
      chunk = fresh;
    } else {
      delete[] fresh;
    }
  }
  return &chunk[lid & (kChunkEntries - 1)];
}

Lid PageTable::allocate() {
  std::lock_guard lock(alloc_mutex_);
  if (!free_lids_.empty()) {
    const Lid lid = free_lids_.back();
    free_lids_.pop_back();
    return lid;
  }
  if ((next_lid_ >> kChunkBits) >= kChunks) throw Error("honeycomb: out of LIDs");
  return next_lid_++;
}

void PageTable::free(Lid lid) {
  if (auto* e = entry(lid, false)) {
    if (e->exchange(nullptr, std::memory_order_acq_rel) != nullptr) live_.fetch_sub(1, std::memory_order_relaxed);
  }
  if (link_ != nullptr) link_->unmap(lid);
  std::lock_guard lock(alloc_mutex_);
  free_lids_.push_back(lid);
}

void PageTable::map(Lid lid, NodeAddress address) {
  auto* e = entry(lid, true);
  if (e == nullptr) throw Error("honeycomb: bad LID");
  if (e->exchange(address, std::memory_order_seq_cst) == nullptr) live_.fetch_add(1, std::memory_order_relaxed);
  updates_.fetch_add(1, std::memory_order_relaxed);
  if (link_ != nullptr) link_->map(lid, address);
}

void PageTable::for_each(const std::function<void(Lid, NodeAddress)>& fn) const {
  for (Lid lid = 1; lid < next_lid_; ++lid) {
    if (NodeAddress a = translate(lid)) fn(lid, a);
  }
}

NodeAddress PageTable::translate(Lid lid) const {
  const std::size_t c = static_cast<std::size_t>(lid >> kChunkBits);
  if (lid == kNoLid || c >= kChunks) return nullptr;
  const Entry* chunk = chunks_[c].load(std::memory_order_acquire);
  if (chunk == nullptr) return nullptr;
  return chunk[lid & (kChunkEntries - 1)].load(std::memory_order_seq_cst);
}

}  // namespace forein::offload::fpga

#include "epoch.h"

#include "forein/error.h"

namespace forein::detail {
namespace {

// The calling thread's slot, released when the thread exits.
struct ThreadSlot {
  std::size_t index = ~std::size_t{0};
  unsigned depth = 0;
  ~ThreadSlot();
};
thread_local ThreadSlot t_slot;

}  // namespace

EpochManager& EpochManager::instance() {
  static EpochManager manager;
  return manager;
}

std::size_t EpochManager::acquire_slot() {
  for (std::size_t i = 0; i < kSlots; ++i) {
    bool expected = false;
    if (!slots_[i].taken.load(std::memory_order_relaxed) &&
        slots_[i].taken.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) {
      std::size_t used = slots_used_.load(std::memory_order_relaxed);
      while (used < i + 1 &&
             !slots_used_.compare_exchange_weak(used, i + 1, std::memory_order_acq_rel)) {
      }
      return i;
    }
  }
  throw Error("forein: more than 1024 threads use forein trees at once");
}

void EpochManager::release_slot(std::size_t slot) {
  slots_[slot].epoch.store(kIdle, std::memory_order_release);
  slots_[slot].taken.store(false, std::memory_order_release);
}

ThreadSlot::~ThreadSlot() {
  if (index != ~std::size_t{0}) EpochManager::instance().release_slot(index);
  EpochManager::t_slot_index = EpochManager::kNoSlot;
}

EpochManager::Guard::Guard() {
  if (t_slot.depth++ > 0) return;
  EpochManager& m = instance();
  if (t_slot.index == ~std::size_t{0}) take_thread_slot();
  // seq_cst: the reclaimer's scan must see this store before we read any
  // page id, or see an epoch no older than the unlink it is reclaiming for.
  m.slots_[t_slot.index].epoch.store(m.global_.load(std::memory_order_seq_cst),
                                     std::memory_order_seq_cst);
}

EpochManager::Guard::~Guard() {
  if (--t_slot.depth > 0) return;
  instance().slots_[t_slot.index].epoch.store(kIdle, std::memory_order_release);
}

std::size_t EpochManager::take_thread_slot() {
  if (t_slot.index == ~std::size_t{0}) t_slot.index = instance().acquire_slot();
  t_slot_index = t_slot.index;
  return t_slot.index;
}

std::uint64_t EpochManager::retire_epoch() {
  return global_.fetch_add(1, std::memory_order_seq_cst);
}

std::uint64_t EpochManager::safe_before() const {
  std::uint64_t oldest = global_.load(std::memory_order_seq_cst);
  for (const Slot& s : slots_) {
    std::uint64_t e = s.epoch.load(std::memory_order_seq_cst);
    if (e < oldest) oldest = e;
  }
  return oldest;
}

void RetiredPages::retire(PageId id, std::uint64_t epoch) {
  std::lock_guard<std::mutex> lock(mu_);
  pages_.emplace_back(epoch, id);
}

std::vector<PageId> RetiredPages::take_reclaimable() {
  const std::uint64_t safe = EpochManager::instance().safe_before();
  std::vector<PageId> out;
  std::lock_guard<std::mutex> lock(mu_);
  std::erase_if(pages_, [&](const auto& p) {
    if (p.first >= safe) return false;
    out.push_back(p.second);
    return true;
  });
  return out;
}

std::vector<PageId> RetiredPages::take_all() {
  std::vector<PageId> out;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& p : pages_) out.push_back(p.second);
  pages_.clear();
  return out;
}

}  // namespace forein::detail

// Epoch-based reclamation for tree pages.
//
// A writer may hold a page id it read from a parent or sibling (or its
// path) without holding any latch on that page yet. A page that is
// unlinked from the tree is therefore "retired", and only handed back to
// the page store once every writing operation that was running when it was
// unlinked has finished. Optimistic readers take no epoch: a page is
// freed and reused only under its exclusive latch, so a reader holding its
// id sees the page version move and restarts (tree_impl.h). Entering an
// epoch costs a sequentially consistent store; writers pay it, lookups do
// not.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "forein/page_store.h"

namespace forein::detail {

class EpochManager {
 public:
  static EpochManager& instance();

  // Marks the calling thread active for its lifetime. Nestable.
  class Guard {
   public:
    Guard();
    ~Guard();
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;
  };

  // Ends the current epoch and returns it: a page retired now is safe to
  // reuse once safe_before() exceeds the returned value.
  std::uint64_t retire_epoch();
  // The oldest epoch any active thread may still observe.
  std::uint64_t safe_before() const;

  // The calling thread's slot index, unique among live threads (< kSlots),
  // taken on first use and given back when the thread exits. Inline: the
  // lookup path publishes its counters to this slot.
  static std::size_t thread_slot() {
    return t_slot_index != kNoSlot ? t_slot_index : take_thread_slot();
  }
  static constexpr std::size_t kNoSlot = ~std::size_t{0};
  // A copy of the thread's slot index with a trivial type, so that reading
  // it needs no TLS wrapper call.
  static inline thread_local std::size_t t_slot_index = kNoSlot;
  static constexpr std::size_t kSlots = 1024;
  // One past the highest slot index ever handed out: per-slot arrays need
  // only be scanned this far.
  std::size_t slots_used() const { return slots_used_.load(std::memory_order_acquire); }

  // Thread slots: taken on a thread's first guard, given back at its exit.
  std::size_t acquire_slot();
  static std::size_t take_thread_slot();
  void release_slot(std::size_t slot);

 private:
  friend class Guard;
  static constexpr std::uint64_t kIdle = ~std::uint64_t{0};

  struct alignas(64) Slot {
    std::atomic<std::uint64_t> epoch{kIdle};
    std::atomic<bool> taken{false};
  };

  std::atomic<std::uint64_t> global_{1};
  std::atomic<std::size_t> slots_used_{0};
  Slot slots_[kSlots];
};

// Pages retired by one tree, waiting for their epoch to pass.
class RetiredPages {
 public:
  void retire(PageId id, std::uint64_t epoch);
  // Removes and returns the pages no active thread can still reach.
  std::vector<PageId> take_reclaimable();
  std::vector<PageId> take_all();

 private:
  std::mutex mu_;
  std::vector<std::pair<std::uint64_t, PageId>> pages_;
};

}  // namespace forein::detail

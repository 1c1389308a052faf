// The latch word in a page's first 8 bytes (the page-store convention
// reserves them): an exclusive lock bit plus a version that every exclusive
// unlock that changed the page advances.
//
// Writers lock exclusively. Readers never write the word: an optimistic
// reader reads the version (waiting while a writer holds the lock), reads
// what it needs from the page, then checks the version again; a change
// means a writer was in between, and the reader discards what it read and
// restarts (optimistic lock coupling, as in BTreeOLC and LeanStore). The
// reader therefore writes no shared cache line and issues no locked
// instruction, and a reader never delays a writer.
//
// Memory-model argument (Boehm, "Can seqlocks get along with programming
// language memory models?", MSPC 2012): the page bytes themselves are read
// and written with relaxed atomic accesses (page_bytes.h), so there is no
// data race; a writer issues a release fence after taking the lock and
// before its first store, a reader an acquire fence after its last load and
// before re-reading the version. If the reader saw any store of a writer,
// the fences synchronise and the second version read sees that writer's
// lock or a later version.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <thread>

namespace forein::detail {

class PageLatch {
 public:
  static constexpr std::uint64_t kLocked = std::uint64_t{1} << 63;  // a writer holds the page

  explicit PageLatch(std::byte* page) : word_(*reinterpret_cast<std::uint64_t*>(page)) {}
  explicit PageLatch(const std::byte* page)
      : word_(*reinterpret_cast<std::uint64_t*>(const_cast<std::byte*>(page))) {}

  // --- optimistic readers ---

  // The current version, once no writer holds the page.
  std::uint64_t read_begin() const {
    for (unsigned spins = 0;; ++spins) {
      const std::uint64_t v = word_.load(std::memory_order_acquire);
      if ((v & kLocked) == 0) return v;
      backoff(spins);
    }
  }

  // The latch word as it is now, for readers that go elsewhere instead of
  // waiting while it has kLocked (the lookup fast path); otherwise as
  // read_begin().
  std::uint64_t read_once() const { return word_.load(std::memory_order_acquire); }

  // True if no writer changed the page since read_begin() returned v.
  bool read_valid(std::uint64_t v) const {
    acquire_fence();
    return word_.load(std::memory_order_relaxed) == v;
  }

  // --- writers ---

  void lock_exclusive() {
    for (unsigned spins = 0;; ++spins) {
      std::uint64_t v = word_.load(std::memory_order_relaxed);
      if ((v & kLocked) == 0 &&
          word_.compare_exchange_weak(v, v | kLocked, std::memory_order_acquire,
                                      std::memory_order_relaxed)) {
        release_fence();
        return;
      }
      backoff(spins);
    }
  }

  // The version the page had when the holder locked it.
  std::uint64_t locked_version() const {
    return word_.load(std::memory_order_relaxed) & ~kLocked;
  }

  // Unlocks and advances the version: optimistic readers of the page
  // restart.
  void unlock_exclusive() {
    word_.store((word_.load(std::memory_order_relaxed) & ~kLocked) + 1,
                std::memory_order_release);
  }

  // Unlocks a page the holder did not change: readers need not restart.
  void unlock_unchanged() {
    word_.store(word_.load(std::memory_order_relaxed) & ~kLocked, std::memory_order_release);
  }

 private:
  // ThreadSanitizer does not model standalone fences (GCC warns and -Werror
  // stops the build); every page access is atomic, so it has no race to
  // report either way, and on x86 these fences emit no instruction.
  static void acquire_fence() {
#if !defined(__SANITIZE_THREAD__)
    std::atomic_thread_fence(std::memory_order_acquire);
#endif
  }
  static void release_fence() {
#if !defined(__SANITIZE_THREAD__)
    std::atomic_thread_fence(std::memory_order_release);
#endif
  }

  static void backoff(unsigned spins) {
    if (spins < 64) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    } else {
      std::this_thread::yield();
    }
  }

  std::atomic_ref<std::uint64_t> word_;
};

}  // namespace forein::detail

// Reader/writer latch living in a page's first 8 bytes (the page-store
// convention reserves them). Readers take it shared, writers exclusive; a
// waiting writer blocks new readers so splits are not starved by lookups.
// Latches are short (one page's worth of work) and never held across I/O,
// so spinning, then yielding, beats parking threads.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <thread>

namespace forein::detail {

class PageLatch {
 public:
  explicit PageLatch(std::byte* page) : word_(*reinterpret_cast<std::uint64_t*>(page)) {}

  void lock_shared() {
    for (unsigned spins = 0;; ++spins) {
      std::uint64_t v = word_.load(std::memory_order_relaxed);
      if ((v & (kWriter | kWriterWaiting)) == 0 &&
          word_.compare_exchange_weak(v, v + 1, std::memory_order_acquire,
                                      std::memory_order_relaxed)) {
        return;
      }
      backoff(spins);
    }
  }

  void unlock_shared() { word_.fetch_sub(1, std::memory_order_release); }

  void lock_exclusive() {
    for (unsigned spins = 0;; ++spins) {
      std::uint64_t v = word_.load(std::memory_order_relaxed);
      if ((v & ~kWriterWaiting) == 0) {
        if (word_.compare_exchange_weak(v, kWriter, std::memory_order_acquire,
                                        std::memory_order_relaxed)) {
          return;
        }
      } else if ((v & kWriterWaiting) == 0) {
        word_.fetch_or(kWriterWaiting, std::memory_order_relaxed);
      }
      backoff(spins);
    }
  }

  // Clears the waiting bit too; a writer still waiting sets it again.
  void unlock_exclusive() { word_.store(0, std::memory_order_release); }

  void lock(bool exclusive) { exclusive ? lock_exclusive() : lock_shared(); }
  void unlock(bool exclusive) { exclusive ? unlock_exclusive() : unlock_shared(); }

 private:
  static constexpr std::uint64_t kWriter = std::uint64_t{1} << 63;
  static constexpr std::uint64_t kWriterWaiting = std::uint64_t{1} << 62;

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

// dpa store: DPA memory as a capacity-limited allocator (DPA-Store 2.3:
// "a dedicated 1 GiB region"). The host pre-calculates every destination
// address before it sends COPY stitches (3.2.2), so allocation happens on
// the host side, here, and can fail; stitchers never allocate.
#pragma once

#include <atomic>
#include <cstdint>

namespace forein::offload::dpa::detail {

class DpaMemory {
 public:
  explicit DpaMemory(std::uint64_t capacity) : capacity_(capacity) {}
  // Reserves bytes; false (and nothing reserved) if they do not fit.
  bool reserve(std::uint64_t bytes) {
    std::uint64_t used = used_.load();
    do {
      if (bytes > capacity_ || used > capacity_ - bytes) return false;
    } while (!used_.compare_exchange_weak(used, used + bytes));
    return true;
  }
  void release(std::uint64_t bytes) { used_.fetch_sub(bytes); }
  std::uint64_t used() const { return used_.load(); }
  std::uint64_t capacity() const { return capacity_; }

 private:
  const std::uint64_t capacity_;
  std::atomic<std::uint64_t> used_{0};
};

}  // namespace forein::offload::dpa::detail

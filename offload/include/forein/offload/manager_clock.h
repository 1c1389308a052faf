// The clock of the offload manager's install-delay model. Production uses
// the steady clock; tests drive a ManualClock so that "installed after the
// delay" is decided by the test, never by sleeping.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace forein::offload {

using ManagerDuration = std::chrono::nanoseconds;

class ManagerClock {
 public:
  virtual ~ManagerClock() = default;
  // Monotone time since an arbitrary origin.
  virtual ManagerDuration now() const = 0;
};

class SteadyManagerClock final : public ManagerClock {
 public:
  ManagerDuration now() const override {
    return std::chrono::duration_cast<ManagerDuration>(
        std::chrono::steady_clock::now().time_since_epoch());
  }
};

// Time moves only when the test says so. Safe to advance from any thread.
class ManualClock final : public ManagerClock {
 public:
  ManagerDuration now() const override { return ManagerDuration(ns_.load(std::memory_order_acquire)); }
  void advance(ManagerDuration d) { ns_.fetch_add(d.count(), std::memory_order_acq_rel); }

 private:
  std::atomic<std::int64_t> ns_{0};
};

}  // namespace forein::offload

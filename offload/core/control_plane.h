// The control-plane path between "computed" and "installed": change
// batches wait in FIFO order until their due time, then are applied to
// the device (FOREIN's phase II, where the switch agent installs late).
//
// A batch is applied only after every batch queued before it, even if its
// own due time came first (random delays), so the manager's ordering
// (installs of a recompute before its removals) holds on the device.
// pump() is driven by the caller (a background thread, or a test with a
// ManualClock); nothing here sleeps.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "forein/offload/backend.h"
#include "forein/offload/manager.h"
#include "forein/offload/manager_clock.h"

namespace forein::offload {


struct PumpResult {
  std::size_t batches = 0;         // applied by this call
  std::size_t installed = 0;       // records
  std::size_t removed = 0;         // records
  std::size_t failed_installs = 0; // batches the device refused
  std::uint64_t applied_seq = 0;   // the last batch applied so far (0: none)
};

class DelayedControlPlane {
 public:
  explicit DelayedControlPlane(Device& device) : device_(device) {}

  // Sets (null: clears) the listener told of every batch applied from now
  // on; returns the device's image at that moment, so the listener knows
  // exactly which batches the image already holds. Once this returns, the
  // previous listener is not called again.
  std::shared_ptr<const BackendImage> set_listener(ApplyListener* listener);

  // Queues a batch due at `due`; returns its sequence number (1, 2, ...).
  std::uint64_t enqueue(ChangeBatch batch, ManagerDuration due);

  // Applies, in order, the batches at the head of the queue that are due at `now`.
  PumpResult pump(ManagerDuration now);
  // Applies every queued batch, due or not.
  PumpResult flush();

  std::size_t pending() const;
  std::uint64_t enqueued_seq() const;
  std::uint64_t applied_seq() const;

 private:
  struct Batch {
    std::uint64_t seq;
    ManagerDuration due;
    ChangeBatch batch;
  };

  PumpResult apply_head(bool only_due, ManagerDuration now);

  Device& device_;
  mutable std::mutex mu_;  // one pump at a time, so the device sees batches in order
  std::deque<Batch> queue_;
  std::uint64_t next_seq_ = 1;
  std::uint64_t applied_seq_ = 0;
  ApplyListener* listener_ = nullptr;  // guarded by mu_
};

}  // namespace forein::offload

// Global write/read versions and in-order release (versions.h).
#include "fpga/honeycomb/versions.h"

#include <thread>

namespace forein::offload::fpga {

Version Versions::acquire() {
  if (!mvcc_) return 0;
  return gwv_.fetch_add(1, std::memory_order_acq_rel) + 1;
}

void Versions::release(Version version) {
  if (!mvcc_) return;
  if (out_of_order_) {
    // Widen the window in which a smaller version publishes after a larger
    // one (GRV moves backwards, hiding a write that already returned).
    std::this_thread::yield();
    grv_.store(version, std::memory_order_seq_cst);
    if (link_ != nullptr) link_->set_read_version(version);
    return;
  }
  // Versions are dense (every acquire is released), so "smallest
  // unreleased" is "turn_ == version - 1" (turn_ cannot pass it before
  // this release).
  wait_turn(version - 1);
  if (link_ != nullptr) link_->set_read_version(version);
  grv_.store(version, std::memory_order_seq_cst);
  // seq_cst store, then seq_cst load of waiters_ (wait_turn does the
  // mirror image): either a waiter is counted here or it sees this turn.
  turn_.store(version, std::memory_order_seq_cst);
  if (waiters_.load(std::memory_order_seq_cst) != 0) turn_.notify_all();
}

void Versions::wait_released(Version version) {
  if (!mvcc_ || out_of_order_) return;
  wait_turn(version);
}

void Versions::wait_turn(Version version) {
  if (turn_.load(std::memory_order_acquire) >= version) return;
  // Block rather than spin: the writer we wait for may need this core to
  // finish.
  waiters_.fetch_add(1, std::memory_order_seq_cst);
  for (Version t = turn_.load(std::memory_order_seq_cst); t < version; t = turn_.load(std::memory_order_seq_cst)) {
    turn_.wait(t, std::memory_order_acquire);
  }
  waiters_.fetch_sub(1, std::memory_order_release);
}

}  // namespace forein::offload::fpga

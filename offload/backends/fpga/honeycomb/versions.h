// MVCC versions (section 3.2): writers take a write version from the
// global write version (GWV) and release their changes to readers in
// version order by advancing the global read version (GRV), mirrored to the
// accelerator. With MVCC off every version is 0 and nothing is released.
#pragma once

#include <atomic>
#include <cstdint>

#include "forein/fpga/memory_port.h"

namespace forein::offload::fpga {

class Versions {
 public:
  Versions(bool mvcc, bool out_of_order, AcceleratorLink* link)
      : mvcc_(mvcc), out_of_order_(out_of_order), link_(link) {}

  bool mvcc() const { return mvcc_; }
  // A new write version (GWV fetch-and-add); 0 with MVCC off. Every
  // version taken must be released, or later writers wait forever.
  Version acquire();
  // Returns once GRV >= version: waits until every smaller version is
  // released, then publishes GRV = version to the CPU and the accelerator.
  // The out-of-order test variant publishes at once, so GRV may skip
  // unreleased versions and even move backwards.
  void release(Version version);

  // Returns once every version up to `version` is released (a write that
  // changes nothing must not report a state readers cannot see yet).
  void wait_released(Version version);

  // The version CPU reads run at: GRV, or the accelerator's copy if that
  // is ahead. release() sets the accelerator's copy first, so a version
  // any reader (NIC or CPU) has seen is seen by every later reader; with
  // GRV alone, a NIC read could return a write that a later CPU read, at
  // the older GRV, did not see.
  Version read_version() const {
    const Version cpu = grv_.load(std::memory_order_seq_cst);
    const Version nic = link_ != nullptr ? link_->current_read_version() : 0;
    return nic > cpu ? nic : cpu;
  }
  Version write_version() const { return gwv_.load(std::memory_order_acquire); }

 private:
  const bool mvcc_, out_of_order_;
  AcceleratorLink* link_;
  std::atomic<Version> gwv_{0};   // last version handed out
  std::atomic<Version> grv_{0};   // last version released
  std::atomic<Version> turn_{0};  // in-order release: the last version done
  // Writers blocked in turn_.wait: release notifies only when there are
  // some (libstdc++'s notify is a read-modify-write on a waiter pool line
  // shared by every atomic, even with no waiter).
  std::atomic<std::uint32_t> waiters_{0};

  // Returns once turn_ >= version.
  void wait_turn(Version version);
};

}  // namespace forein::offload::fpga

// Idle back-off for DPDK poll loops on shared cores (docs/network.md,
// "forein-switch"): forein-switch, forein-switch-gen and forein-kv-server --memif.
#pragma once

#include <rte_pause.h>
#include <time.h>

#include <algorithm>

namespace forein::net::dpdk {

// After `idle` empty polls in a row: a few pause spins, then sleeps
// doubling from 1 us to 256 us, so a poller shares the cores with the
// servers and clients instead of burning one.
inline void back_off(unsigned idle) {
  if (idle < 64) {
    rte_pause();
  } else {
    const unsigned shift = std::min(idle - 64, 8u);
    const timespec ts{0, static_cast<long>(1000u << shift)};
    ::nanosleep(&ts, nullptr);
  }
}

}  // namespace forein::net::dpdk

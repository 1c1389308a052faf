// Idle back-off for DPDK poll loops on shared cores (docs/network.md,
// "forein-switch"): forein-switch, forein-switch-gen and forein-kv-server --memif.
#pragma once

#include <rte_pause.h>
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <cstdlib>
#include <string_view>

namespace forein::net::dpdk {

// FOREIN_DPDK_IDLE=yield in the environment: an idle poller yields the
// core (sched_yield) instead of sleeping. For pollers that share one core
// (scripts/testbed.sh --mode dpdk runs forein-switch and forein-switch-gen
// on core 0): the other one runs at once instead of after a timer sleep
// the kernel stretches to ~50 us; on a core of its own a yield returns at
// once, so a poller there spins. Read once.
inline bool yield_when_idle() {
  static const bool yield = [] {
    const char* v = std::getenv("FOREIN_DPDK_IDLE");
    return v != nullptr && std::string_view(v) == "yield";
  }();
  return yield;
}

// Empty polls after which a poller counts as asleep: about a second of
// 256 us sleeps (each a wake-up, ~14 us of CPU: 5% of a core) past the
// spins and the doubling sleeps.
inline constexpr unsigned kDeepIdlePolls = 64 + 8 + 4000;
// The sleep once asleep: 100 wake-ups a second, well under 1% of a core;
// the first packet after a quiet second waits up to this long.
inline constexpr long kDeepIdleSleepNs = 10'000'000;

// After `idle` empty polls in a row: a few pause spins, then sleeps
// doubling from 1 us to 256 us, so a poller shares the cores with the
// servers and clients instead of burning one; after about a second with
// nothing, 10 ms sleeps, so an idle poller costs nothing
// (FOREIN_DPDK_IDLE=yield: yields instead of the short sleeps).
inline void back_off(unsigned idle) {
  if (idle >= kDeepIdlePolls) {
    const timespec ts{0, kDeepIdleSleepNs};
    ::nanosleep(&ts, nullptr);
  } else if (idle >= 64 && yield_when_idle()) {
    sched_yield();
  } else if (idle < 64) {
    rte_pause();
  } else {
    const unsigned shift = std::min(idle - 64, 8u);
    const timespec ts{0, static_cast<long>(1000u << shift)};
    ::nanosleep(&ts, nullptr);
  }
}

// A poller waiting for answers to what it sent (forein-switch-gen with
// requests in flight): spins, or with FOREIN_DPDK_IDLE=yield yields after
// a few spins, so the switch sharing its core forwards them.
inline void wait_in_flight(unsigned idle) {
  if (idle >= 16 && yield_when_idle()) {
    sched_yield();
  } else {
    rte_pause();
  }
}

}  // namespace forein::net::dpdk

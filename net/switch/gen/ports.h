// forein-switch-gen's DPDK side: EAL start, the memif client ports (two, or
// the client side's alone in --mode client),
// waiting for their links.
#pragma once

#include <rte_mempool.h>

#include <cstdint>

#include "options.h"

namespace forein::net::swgen {

struct Ports {
  std::uint16_t port[2] = {0, 0};  // [0] on the switch's client side, [1] its server side
  int count = 0;                   // ports started: 2, or 1 in --mode client (the client side)
  rte_mempool* pool = nullptr;
};

// rte_eal_init with eal_args(o); false (after a message) on failure.
bool init_eal(const GenOptions& o);

// The mbuf pool and both ports started; then waits (polling, up to
// connect_timeout_ms) until both memif links are up, i.e. the switch
// accepted them. False after a message.
bool start_ports(const GenOptions& o, Ports* p);

void stop_ports(const Ports& p);

}  // namespace forein::net::swgen

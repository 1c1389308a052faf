// forein-switch's two DPDK ports: EAL start, the TAP devices (DPDK side and
// kernel side), stop.
#pragma once

#include <rte_ether.h>

#include <cstdint>
#include <string>

#include "counters.h"
#include "options.h"

namespace forein::net::sw {

// One port: a TAP device whose kernel side gets A.B.C.1 while the switch
// answers for A.B.C.2. sides[0] is the client side, sides[1] the server's.
struct Side {
  std::uint16_t port = 0;
  std::string iface;
  std::uint32_t kernel_ip = 0;  // host order: A.B.C.1
  std::uint32_t switch_ip = 0;  // A.B.C.2
  rte_ether_addr kernel_mac{};
  rte_ether_addr switch_mac{};
  PortCounters counters;
};

std::string ip_string(std::uint32_t host_order);

// Addresses and interface names from the options; false (after a message)
// when they are unusable.
bool init_sides(const Options& o, Side sides[2]);

// rte_eal_init with eal_args(o); false (after a message) on failure.
bool init_eal(const Options& o);

// The mbuf pool, both DPDK ports started and the kernel sides configured;
// false (after a message) on failure.
bool start_ports(Side sides[2]);

void stop_ports(Side sides[2]);

}  // namespace forein::net::sw

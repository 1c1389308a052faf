// forein-switch's two DPDK ports: EAL start, the TAP devices (DPDK side and
// kernel side) or memif sockets (the switch serves, a DPDK peer joins),
// the memif peer's MAC, stop.
#pragma once

#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_mbuf.h>

#include <cstdint>
#include <string>

#include "counters.h"
#include "options.h"

namespace forein::net::sw {

// One port: a TAP device whose kernel side gets A.B.C.1 while the switch
// answers for A.B.C.2, or a memif socket whose peer (a DPDK program) uses
// A.B.C.1 and sends to A.B.C.2 without ARP. sides[0] is the client side,
// sides[1] the server's. "kernel" names the peer: the TAP's kernel side or
// the memif peer.
struct Side {
  PortKind kind = PortKind::kTap;
  std::uint16_t port = 0;
  std::string device;           // DPDK device name: net_tapI or net_memifI
  std::string iface;            // the TAP device, or "memif:PATH" (messages, exit line)
  std::string memif_socket;     // kMemif: the socket file
  bool memif_client = false;    // kMemif: joined as client; this switch is .1 and the peer .2
  std::uint32_t kernel_ip = 0;  // host order: A.B.C.1
  std::uint32_t switch_ip = 0;  // A.B.C.2
  rte_ether_addr kernel_mac{};  // TAP: from the kernel; memif: learned (learn_peer_mac)
  rte_ether_addr switch_mac{};
  PortCounters counters;
};

std::string ip_string(std::uint32_t host_order);

// Addresses, port kinds and interface names from the options; a memif
// socket file left by a switch that died is removed (one in use is an
// error). False (after a message) when they are unusable.
bool init_sides(const Options& o, Side sides[2]);

// rte_eal_init with eal_args(o); false (after a message) on failure.
bool init_eal(const Options& o);

// The mbuf pool, both DPDK ports started and the kernel sides configured;
// false (after a message) on failure.
bool start_ports(Side sides[2]);

void stop_ports(Side sides[2]);

// A memif side has no ARP: the peer's MAC is the source of its IPv4 frames
// from A.B.C.1 (checked per frame; a peer that reconnects may have a new one).
inline void learn_peer_mac(Side& side, const rte_mbuf* m) {
  if (m->data_len < sizeof(rte_ether_hdr) + sizeof(rte_ipv4_hdr)) return;
  const auto* eth = rte_pktmbuf_mtod(m, const rte_ether_hdr*);
  if (eth->ether_type != rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4)) return;
  const auto* ip = reinterpret_cast<const rte_ipv4_hdr*>(eth + 1);
  if (ip->src_addr != rte_cpu_to_be_32(side.kernel_ip) || !rte_is_valid_assigned_ether_addr(&eth->src_addr)) {
    return;
  }
  if (!rte_is_same_ether_addr(&eth->src_addr, &side.kernel_mac)) rte_ether_addr_copy(&eth->src_addr, &side.kernel_mac);
}

}  // namespace forein::net::sw

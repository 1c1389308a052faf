// Frame rewriting for forein-switch: ARP answers, address translation and
// the checksums it changes.
#pragma once

#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_udp.h>

#include <cstdint>

#include "ports.h"

namespace forein::net::sw {

// RFC 1624 incremental update of a one's complement checksum for a 32-bit
// field changing from old_v to new_v. The checksum and the values must be
// in the same byte order (host order here: the sum's bytes pair up only
// then); a 16-bit field is passed with its upper half zero.
std::uint16_t cksum_adjust(std::uint16_t cksum, std::uint32_t old_v, std::uint32_t new_v);

// The same on a checksum field as it sits in the packet (network order),
// for a field given in host order.
inline std::uint16_t cksum_adjust_be(rte_be16_t field, std::uint32_t old_v, std::uint32_t new_v) {
  const std::uint16_t ck = cksum_adjust(rte_be_to_cpu_16(field), old_v, new_v);
  // 0 means "no checksum" in UDP: its one's complement twin stands for it.
  return rte_cpu_to_be_16(ck == 0 ? 0xFFFF : ck);
}

// Turns an ARP request for the switch's address on this side into its reply
// (learning the kernel's MAC) and returns true; other ARP frames are
// counted as dropped, freed, and false is returned.
bool answer_arp(Side& side, rte_mbuf* m);

// Rewrites an IPv4 frame to go out on `to`: from the switch's address there
// to the kernel's, with both MACs, the IP checksum and (when udp is set) the
// UDP checksum updated.
void translate(rte_ether_hdr* eth, rte_ipv4_hdr* ip, rte_udp_hdr* udp, bool fragment, const Side& to);

}  // namespace forein::net::sw

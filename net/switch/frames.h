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
// field changing from old_v to new_v (both network order).
std::uint16_t cksum_adjust(std::uint16_t cksum, std::uint32_t old_v, std::uint32_t new_v);

// Turns an ARP request for the switch's address on this side into its reply
// (learning the kernel's MAC) and returns true; other ARP frames are
// counted as dropped, freed, and false is returned.
bool answer_arp(Side& side, rte_mbuf* m);

// Rewrites an IPv4 frame to go out on `to`: from the switch's address there
// to the kernel's, with both MACs, the IP checksum and (when udp is set) the
// UDP checksum updated.
void translate(rte_ether_hdr* eth, rte_ipv4_hdr* ip, rte_udp_hdr* udp, bool fragment, const Side& to);

}  // namespace forein::net::sw

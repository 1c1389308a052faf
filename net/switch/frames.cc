#include "frames.h"

#include <rte_arp.h>

namespace forein::net::sw {

std::uint16_t cksum_adjust(std::uint16_t cksum, std::uint32_t old_v, std::uint32_t new_v) {
  std::uint32_t sum = static_cast<std::uint16_t>(~cksum);
  sum += static_cast<std::uint16_t>(~(old_v >> 16)) + static_cast<std::uint16_t>(~(old_v & 0xFFFF));
  sum += (new_v >> 16) + (new_v & 0xFFFF);
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  return static_cast<std::uint16_t>(~sum);
}

bool answer_arp(Side& side, rte_mbuf* m) {
  auto* eth = rte_pktmbuf_mtod(m, rte_ether_hdr*);
  if (m->data_len < sizeof(rte_ether_hdr) + sizeof(rte_arp_hdr)) {
    bump(side.counters.dropped);
    bump(side.counters.bad_ip);
    rte_pktmbuf_free(m);
    return false;
  }
  auto* a = reinterpret_cast<rte_arp_hdr*>(eth + 1);
  if (rte_be_to_cpu_16(a->arp_opcode) != RTE_ARP_OP_REQUEST ||
      rte_be_to_cpu_32(a->arp_data.arp_tip) != side.switch_ip) {
    bump(side.counters.dropped);
    bump(side.counters.not_for_switch);
    rte_pktmbuf_free(m);
    return false;
  }
  if (rte_be_to_cpu_32(a->arp_data.arp_sip) == side.kernel_ip) {
    rte_ether_addr_copy(&a->arp_data.arp_sha, &side.kernel_mac);
  }
  a->arp_opcode = rte_cpu_to_be_16(RTE_ARP_OP_REPLY);
  rte_ether_addr_copy(&a->arp_data.arp_sha, &a->arp_data.arp_tha);
  a->arp_data.arp_tip = a->arp_data.arp_sip;
  rte_ether_addr_copy(&side.switch_mac, &a->arp_data.arp_sha);
  a->arp_data.arp_sip = rte_cpu_to_be_32(side.switch_ip);
  rte_ether_addr_copy(&eth->src_addr, &eth->dst_addr);
  rte_ether_addr_copy(&side.switch_mac, &eth->src_addr);
  bump(side.counters.arp_replies);
  return true;
}

void translate(rte_ether_hdr* eth, rte_ipv4_hdr* ip, rte_udp_hdr* udp, bool fragment, const Side& to) {
  const std::uint32_t old_src = ip->src_addr, old_dst = ip->dst_addr;
  const std::uint32_t new_src = rte_cpu_to_be_32(to.switch_ip);
  const std::uint32_t new_dst = rte_cpu_to_be_32(to.kernel_ip);
  ip->src_addr = new_src;
  ip->dst_addr = new_dst;
  ip->hdr_checksum = 0;
  ip->hdr_checksum = rte_ipv4_cksum(ip);
  if (udp != nullptr) {
    // Whole datagrams get a fresh checksum: the kernel may hand the TAP
    // a partial one (checksum offload), which no incremental update fixes.
    // A first fragment cannot be summed here: its sum is adjusted.
    if (!fragment) {
      udp->dgram_cksum = 0;
      const std::uint16_t ck = rte_ipv4_udptcp_cksum(ip, udp);
      udp->dgram_cksum = ck == 0 ? 0xFFFF : ck;
    } else if (udp->dgram_cksum != 0) {
      udp->dgram_cksum = cksum_adjust_be(udp->dgram_cksum, rte_be_to_cpu_32(old_src), rte_be_to_cpu_32(new_src));
      udp->dgram_cksum = cksum_adjust_be(udp->dgram_cksum, rte_be_to_cpu_32(old_dst), rte_be_to_cpu_32(new_dst));
    }
  }
  rte_ether_addr_copy(&to.kernel_mac, &eth->dst_addr);
  rte_ether_addr_copy(&to.switch_mac, &eth->src_addr);
}

}  // namespace forein::net::sw

#include "frames.h"

#include "common/parse.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <rte_ethdev.h>
#include <rte_ip.h>
#include <rte_udp.h>

#include <cstring>
#include <optional>
#include <span>
#include <string>

#include "protocol/dataset.h"
#include "protocol/packet.h"

namespace forein::net::swgen {
namespace {

constexpr std::size_t kL2L3L4 = sizeof(rte_ether_hdr) + sizeof(rte_ipv4_hdr) + sizeof(rte_udp_hdr);
// protocol/packet.h's layout of a datagram.
constexpr std::size_t kVersionAt = 2, kSeqAt = 8, kKeyAt = forein::net::kHeaderBytes;


void put_be64(std::byte* at, std::uint64_t v) {
  for (int b = 0; b < 8; ++b) at[b] = static_cast<std::byte>(v >> (56 - 8 * b));
}

void set_frame(rte_mbuf* m, const void* bytes, std::size_t n) {
  rte_pktmbuf_reset(m);
  std::memcpy(rte_pktmbuf_mtod(m, void*), bytes, n);
  m->data_len = static_cast<std::uint16_t>(n);
  m->pkt_len = static_cast<std::uint32_t>(n);
}

}  // namespace

bool make_addresses(const GenOptions& o, const std::uint16_t ports[2], Addresses* out) {
  std::uint32_t client = 0, server = 0;
  if (!parse_net(o.net[0], &client) || !parse_net(o.net[1], &server)) return false;
  out->client_peer = client + 1;
  out->client_switch = client + 2;
  out->server_switch = server + 2;
  out->server_net = server;
  out->service_port = o.service_port;
  for (int i = 0; i < sides(o); ++i) {
    rte_eth_macaddr_get(ports[i], &out->gen_mac[i]);
    out->switch_mac[i] = rte_ether_addr{{0x02, 0xF0, 0xE1, 0x5C, 0x00, static_cast<std::uint8_t>(i + 1)}};
  }
  return true;
}

RequestFrame::RequestFrame(const Addresses& a, std::uint32_t scan) {
  forein::net::Packet p;
  p.op = scan > 0 ? forein::net::Op::kScan : forein::net::Op::kGet;
  p.count = scan;
  p.key = forein::net::dataset_key(0);
  const std::vector<std::byte> datagram = forein::net::encode_packet(p);
  bytes_.resize(kL2L3L4 + datagram.size());
  auto* eth = reinterpret_cast<rte_ether_hdr*>(bytes_.data());
  rte_ether_addr_copy(&a.switch_mac[0], &eth->dst_addr);
  rte_ether_addr_copy(&a.gen_mac[0], &eth->src_addr);
  eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
  auto* ip = reinterpret_cast<rte_ipv4_hdr*>(eth + 1);
  ip->version_ihl = RTE_IPV4_VHL_DEF;
  ip->total_length = rte_cpu_to_be_16(static_cast<std::uint16_t>(bytes_.size() - sizeof(rte_ether_hdr)));
  ip->fragment_offset = rte_cpu_to_be_16(RTE_IPV4_HDR_DF_FLAG);
  ip->time_to_live = 64;
  ip->next_proto_id = IPPROTO_UDP;
  ip->src_addr = rte_cpu_to_be_32(a.client_peer);
  ip->dst_addr = rte_cpu_to_be_32(a.client_switch);
  ip->hdr_checksum = rte_ipv4_cksum(ip);
  auto* udp = reinterpret_cast<rte_udp_hdr*>(ip + 1);
  udp->src_port = rte_cpu_to_be_16(40000);
  udp->dst_port = rte_cpu_to_be_16(a.service_port);
  udp->dgram_len = rte_cpu_to_be_16(static_cast<std::uint16_t>(sizeof(rte_udp_hdr) + datagram.size()));
  udp->dgram_cksum = 0;
  std::memcpy(bytes_.data() + kL2L3L4, datagram.data(), datagram.size());
  seq_at_ = kL2L3L4 + kSeqAt;
  key_at_ = kL2L3L4 + kKeyAt;
  version_at_ = kL2L3L4 + kVersionAt;
}

void RequestFrame::write(rte_mbuf* m, std::uint64_t seq, std::uint64_t key) const {
  set_frame(m, bytes_.data(), bytes_.size());
  auto* at = rte_pktmbuf_mtod(m, std::byte*);
  put_be64(at + seq_at_, seq);
  put_be64(at + key_at_, key);  // dataset_key(key): 8 big-endian bytes
}

void RequestFrame::write_wrong_version(rte_mbuf* m, std::uint64_t seq) const {
  write(m, seq, 0);
  rte_pktmbuf_mtod(m, std::byte*)[version_at_] = std::byte{forein::net::kVersion + 1};
}

void write_random_frame(rte_mbuf* m, std::mt19937_64& rng) {
  unsigned char bytes[200];
  const std::size_t n = 60 + rng() % 141;
  for (std::size_t i = 0; i < n; ++i) bytes[i] = static_cast<unsigned char>(rng());
  const std::uint16_t type = static_cast<std::uint16_t>((bytes[12] << 8) | bytes[13]);
  if (type == RTE_ETHER_TYPE_IPV4 || type == RTE_ETHER_TYPE_ARP) bytes[12] ^= 0x80;
  set_frame(m, bytes, n);
}

void write_truncated_ipv4(rte_mbuf* m, const rte_ether_addr& src, const rte_ether_addr& dst) {
  unsigned char bytes[sizeof(rte_ether_hdr) + 10] = {};
  auto* eth = reinterpret_cast<rte_ether_hdr*>(bytes);
  rte_ether_addr_copy(&dst, &eth->dst_addr);
  rte_ether_addr_copy(&src, &eth->src_addr);
  eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
  bytes[sizeof(rte_ether_hdr)] = RTE_IPV4_VHL_DEF;  // claims a 20-byte header, has 10
  set_frame(m, bytes, sizeof bytes);
}

std::optional<std::span<const std::byte>> udp_datagram(rte_mbuf* m, std::uint32_t src, std::uint32_t dst,
                                                       std::uint32_t dst_mask) {
  if (m->nb_segs != 1 || m->data_len < kL2L3L4) return std::nullopt;
  auto* eth = rte_pktmbuf_mtod(m, rte_ether_hdr*);
  if (eth->ether_type != rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4)) return std::nullopt;
  auto* ip = reinterpret_cast<rte_ipv4_hdr*>(eth + 1);
  const std::size_t ihl = static_cast<std::size_t>(ip->version_ihl & 0x0F) * 4;
  const std::size_t total = rte_be_to_cpu_16(ip->total_length);
  if ((ip->version_ihl >> 4) != 4 || ihl < sizeof(rte_ipv4_hdr) || total < ihl + sizeof(rte_udp_hdr) ||
      sizeof(rte_ether_hdr) + total > m->data_len || ip->next_proto_id != IPPROTO_UDP ||
      rte_ipv4_cksum(ip) != 0) {
    return std::nullopt;
  }
  if (rte_be_to_cpu_32(ip->src_addr) != src || (rte_be_to_cpu_32(ip->dst_addr) & dst_mask) != dst) {
    return std::nullopt;
  }
  auto* udp = reinterpret_cast<rte_udp_hdr*>(reinterpret_cast<std::byte*>(ip) + ihl);
  const std::size_t udp_len = rte_be_to_cpu_16(udp->dgram_len);
  if (udp_len != total - ihl || udp_len < sizeof(rte_udp_hdr)) return std::nullopt;
  if (const std::uint16_t sent_sum = udp->dgram_cksum; sent_sum != 0) {
    // Recompute with the field zeroed (the frame is ours to change).
    udp->dgram_cksum = 0;
    std::uint16_t sum = rte_ipv4_udptcp_cksum(ip, udp);
    if (sum == 0) sum = 0xFFFF;
    if (sum != sent_sum) return std::nullopt;
  }
  return std::span<const std::byte>(reinterpret_cast<const std::byte*>(udp + 1), udp_len - sizeof(rte_udp_hdr));
}

Forwarded check_forwarded(rte_mbuf* m, const Addresses& a) {
  Forwarded f;
  // From the switch's server-side address to a server on that /24.
  const auto dg = udp_datagram(m, a.server_switch, a.server_net, ~0xFFu);
  if (!dg) return f;
  const std::span<const std::byte> datagram = *dg;
  forein::net::Packet p;
  if (forein::net::parse_packet(datagram, &p) != forein::net::ParseError::kNone || p.op != forein::net::Op::kGet ||
      !forein::net::dataset_index(p.key, &f.key)) {
    return f;
  }
  f.valid = true;
  f.hinted = p.hints.has_value();
  f.seq = p.seq;
  return f;
}

}  // namespace forein::net::swgen

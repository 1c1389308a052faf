#include "forward.h"

#include <netinet/in.h>

#include <cstring>
#include <span>
#include <string_view>
#include <vector>

#include "forein/key.h"
#include "fattree_stage.h"
#include "frames.h"
#include "protocol/dataset.h"
#include "protocol/packet.h"

namespace forein::net::sw {
namespace {

int drop(PortCounters& c, std::atomic<std::uint64_t>& reason, rte_mbuf* m) {
  bump(c.dropped);
  bump(reason);
  rte_pktmbuf_free(m);
  return -1;
}

}  // namespace

int Forwarder::handle(int in, rte_mbuf* m) {
  Side& side = sides_[in];
  PortCounters& c = side.counters;
  if (m->nb_segs != 1 || m->data_len < sizeof(rte_ether_hdr)) return drop(c, c.bad_ip, m);
  auto* eth = rte_pktmbuf_mtod(m, rte_ether_hdr*);
  const std::uint16_t type = rte_be_to_cpu_16(eth->ether_type);
  if (type == RTE_ETHER_TYPE_ARP) return answer_arp(side, m) ? in : -1;
  if (type != RTE_ETHER_TYPE_IPV4) return drop(c, c.not_ipv4, m);
  const std::size_t frame = m->data_len;
  if (frame < sizeof(rte_ether_hdr) + sizeof(rte_ipv4_hdr)) return drop(c, c.bad_ip, m);
  auto* ip = reinterpret_cast<rte_ipv4_hdr*>(eth + 1);
  const std::size_t ihl = static_cast<std::size_t>(ip->version_ihl & 0x0F) * 4;
  const std::size_t total = rte_be_to_cpu_16(ip->total_length);
  if ((ip->version_ihl >> 4) != 4 || ihl < sizeof(rte_ipv4_hdr) || total < ihl ||
      sizeof(rte_ether_hdr) + total > frame) {
    return drop(c, c.bad_ip, m);
  }
  if (rte_be_to_cpu_32(ip->dst_addr) != side.switch_ip) return drop(c, c.not_for_switch, m);
  // Trim Ethernet padding.
  if (sizeof(rte_ether_hdr) + total < frame) {
    rte_pktmbuf_trim(m, static_cast<std::uint16_t>(frame - sizeof(rte_ether_hdr) - total));
  }
  const int out = 1 - in;
  const std::uint16_t frag = rte_be_to_cpu_16(ip->fragment_offset);
  const bool fragment = (frag & (RTE_IPV4_HDR_MF_FLAG | RTE_IPV4_HDR_OFFSET_MASK)) != 0;
  const bool first = (frag & RTE_IPV4_HDR_OFFSET_MASK) == 0;
  rte_udp_hdr* udp = nullptr;
  if (ip->next_proto_id == IPPROTO_UDP && first) {
    if (total < ihl + sizeof(rte_udp_hdr)) return drop(c, c.bad_ip, m);
    udp = reinterpret_cast<rte_udp_hdr*>(reinterpret_cast<std::byte*>(ip) + ihl);
  }
  const bool several = !routing_.servers.empty();
  if (in == 0 && udp != nullptr) {
    // With several servers a request is routed by its key, so it must be
    // one whole datagram in one frame (nothing here reassembles).
    if (several && fragment) return drop(c, c.fragment, m);
    if (several && rte_be_to_cpu_16(udp->dst_port) != routing_.service_port) return drop(c, c.not_for_switch, m);
    // Whole datagrams from the client side are requests to hint and route.
    if (!fragment) {
      const int server = route_request(c, m, ip, ihl, total, udp);
      if (server < 0) return -1;
      if (several) udp->dst_port = rte_cpu_to_be_16(routing_.servers[static_cast<std::size_t>(server)]);
    }
  } else if (in == 1 && udp != nullptr && several) {
    // A server's reply leaves as if from the one service port. translate()
    // recomputes a whole datagram's checksum; a first fragment's is adjusted.
    const std::uint16_t from = rte_be_to_cpu_16(udp->src_port);
    udp->src_port = rte_cpu_to_be_16(routing_.service_port);
    if (fragment && udp->dgram_cksum != 0) {
      udp->dgram_cksum = cksum_adjust_be(udp->dgram_cksum, from, routing_.service_port);
    }
  }
  // Address translation: in from the client side (to our client-side
  // address) -> out from our server-side address to the server; back the
  // other way.
  translate(eth, ip, udp, fragment, sides_[out]);
  return out;
}

int Forwarder::route_request(PortCounters& c, rte_mbuf* m, rte_ipv4_hdr* ip, std::size_t ihl, std::size_t total,
                             rte_udp_hdr* udp) {
  const std::size_t udp_len = rte_be_to_cpu_16(udp->dgram_len);
  if (udp_len < sizeof(rte_udp_hdr) || udp_len > total - ihl) return drop(c, c.bad_ip, m);
  const std::span<const std::byte> payload(reinterpret_cast<const std::byte*>(udp + 1),
                                           udp_len - sizeof(rte_udp_hdr));
  if (forein::net::check_datagram(payload) != forein::net::ParseError::kNone) {
    bump(c.malformed);
    rte_pktmbuf_free(m);
    return -1;
  }
  const auto op = static_cast<Op>(static_cast<std::uint8_t>(payload[3]));
  // STATS and anything else without a key goes to server 0.
  if (op != Op::kGet && op != Op::kPut && op != Op::kDelete && op != Op::kScan) return 0;
  const std::string_view key = forein::net::packet_key(payload);
  const std::size_t k = routing_.servers.size();
  const std::size_t server =
      k > 1 ? forein::net::shard_of(key, static_cast<std::uint32_t>(k), routing_.keys) : 0;
  if (k > 0) bump(routed[server]);
  if (!routing_.hints) return static_cast<int>(server);
  if (!add_hint(c, m, ip, ihl, udp, payload, key, server)) return -1;
  return static_cast<int>(server);
}

std::optional<std::vector<std::byte>> Forwarder::rewrite(std::span<const std::byte> payload, std::string_view key,
                                                         std::size_t shard) {
  return image_->read([&](const Image& img) -> std::optional<std::vector<std::byte>> {
    if (shard >= img.shards.size() || img.shards[shard].info == nullptr) return std::nullopt;
    const ShardImage& s = img.shards[shard];
    if (routing_.stage >= 0) {
      // A chain's stage walks fattree images only; any other passes unchanged.
      if (std::string_view(s.info->name) != "fattree") return std::nullopt;
      bool went_deeper = false;
      auto out = walk_stage(s.image->bytes, routing_.stage, payload, key, &went_deeper);
      if (went_deeper) bump(deeper);
      return out;
    }
    const forein::StartHints h = s.info->hint(s.image->bytes, forein::word_of(key));
    if (!h.primary.present() && !h.secondary.present()) return std::nullopt;
    std::vector<std::byte> datagram(payload.begin(), payload.end());
    if (!forein::net::set_hint_trailer(datagram, h)) return std::nullopt;
    return datagram;
  });
}

bool Forwarder::add_hint(PortCounters& c, rte_mbuf* m, rte_ipv4_hdr* ip, std::size_t ihl, rte_udp_hdr* udp,
                         std::span<const std::byte> payload, std::string_view key, std::size_t shard) {
  const std::optional<std::vector<std::byte>> datagram = rewrite(payload, key, shard);
  bump(lookups);
  bump(server_lookups[shard]);
  if (!datagram) {
    bump(c.misses);
    return true;
  }
  if (datagram->size() > payload.size() &&
      rte_pktmbuf_append(m, static_cast<std::uint16_t>(datagram->size() - payload.size())) == nullptr) {
    drop(c, c.no_room, m);
    return false;
  }
  std::memcpy(udp + 1, datagram->data(), datagram->size());
  udp->dgram_len = rte_cpu_to_be_16(static_cast<std::uint16_t>(sizeof(rte_udp_hdr) + datagram->size()));
  ip->total_length = rte_cpu_to_be_16(static_cast<std::uint16_t>(ihl + sizeof(rte_udp_hdr) + datagram->size()));
  bump(c.hinted);
  return true;
}

}  // namespace forein::net::sw

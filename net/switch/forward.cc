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
#include "remote/node_layout.h"

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
  if (plane_ != nullptr && udp != nullptr) {
    // Switch-delta's ops are whole datagrams in one frame.
    if (fragment) return drop(c, c.fragment, m);
    return plane_->handle(in, m, eth, ip, ihl, udp, &copy_);
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
  if (op != Op::kGet && op != Op::kPut && op != Op::kDelete && op != Op::kScan && op != Op::kRead) return 0;
  const std::string_view key = forein::net::packet_key(payload);
  const std::size_t k = routing_.servers.size();
  const std::size_t server =
      k > 1 ? forein::net::shard_of(key, static_cast<std::uint32_t>(k), routing_.keys) : 0;
  if (k > 0) bump(routed[server]);
  if (op == Op::kRead) bump(reads);
  if (!routing_.hints) return static_cast<int>(server);
  if (op == Op::kRead) {
    // A READ carries no hint trailer (the memory node knows no tree); only
    // its address changes, in place (same length).
    rewrite_read(c, udp, payload, key, server);
    return static_cast<int>(server);
  }
  if (!add_hint(c, m, ip, ihl, udp, payload, key, server)) return -1;
  return static_cast<int>(server);
}

void Forwarder::rewrite_read(PortCounters& c, rte_udp_hdr* udp, std::span<const std::byte> payload,
                             std::string_view key, std::size_t shard) {
  const std::size_t at = forein::net::read_header_offset(payload);
  if (at == 0) return;  // not one READ header: the memory node refuses it
  std::byte* const header = reinterpret_cast<std::byte*>(udp + 1) + at;
  // Only a valid header (known flags, reserved 0) is rewritten: a malformed
  // one passes unchanged for the memory node to refuse, not "repaired" here.
  const std::optional<forein::net::ReadHeader> valid = forein::net::decode_read_header(
      std::string_view(reinterpret_cast<const char*>(header), forein::net::kReadHeaderBytes));
  if (!valid || (valid->flags & forein::net::kReadStart) == 0) return;  // later READs go where they say
  forein::net::ReadHeader h = *valid;
  bump(lookups);
  bump(server_lookups[shard]);
  // The deepest node the image resolves (fattree: its walk's end; switch_lpm:
  // the longest-prefix match, else the bottom line's node).
  const forein::StartHints hints = hint_of(key, shard);
  const forein::Hint& pick = hints.primary.present() ? hints.primary : hints.secondary;
  if (!pick.present()) {
    bump(c.misses);
    return;
  }
  h.address = forein::net::remote::node_address(pick.node);
  h.flags = static_cast<std::uint16_t>(h.flags | forein::net::kReadRewritten);
  forein::net::store_read_header(header, h);
  bump(reads_rewritten);
  bump(c.hinted);
}

forein::StartHints Forwarder::hint_of(std::string_view key, std::size_t shard) {
  const auto lookup = [&](const Image& img) {
    if (shard >= img.shards.size() || img.shards[shard].info == nullptr) return forein::StartHints{};
    const ShardImage& s = img.shards[shard];
    return s.info->hint(s.image->bytes, forein::word_of(key));
  };
  return pinned_ ? lookup(*pinned_) : image_->read(lookup);
}

std::optional<std::vector<std::byte>> Forwarder::stage_rewrite(std::span<const std::byte> payload,
                                                               std::string_view key, std::size_t shard) {
  return image_->read([&](const Image& img) -> std::optional<std::vector<std::byte>> {
    if (shard >= img.shards.size() || img.shards[shard].info == nullptr) return std::nullopt;
    const ShardImage& s = img.shards[shard];
    // A chain's stage walks fattree images only; any other passes unchanged.
    if (std::string_view(s.info->name) != "fattree") return std::nullopt;
    bool went_deeper = false;
    auto out = walk_stage(s.image->bytes, routing_.stage, payload, key, &went_deeper);
    if (went_deeper) bump(deeper);
    return out;
  });
}

void Forwarder::set_lengths(rte_ipv4_hdr* ip, std::size_t ihl, rte_udp_hdr* udp, std::size_t datagram) {
  udp->dgram_len = rte_cpu_to_be_16(static_cast<std::uint16_t>(sizeof(rte_udp_hdr) + datagram));
  ip->total_length = rte_cpu_to_be_16(static_cast<std::uint16_t>(ihl + sizeof(rte_udp_hdr) + datagram));
}

bool Forwarder::add_hint(PortCounters& c, rte_mbuf* m, rte_ipv4_hdr* ip, std::size_t ihl, rte_udp_hdr* udp,
                         std::span<const std::byte> payload, std::string_view key, std::size_t shard) {
  bump(lookups);
  bump(server_lookups[shard]);
  std::byte* const datagram = reinterpret_cast<std::byte*>(udp + 1);
  if (routing_.stage >= 0) {
    const std::optional<std::vector<std::byte>> out = stage_rewrite(payload, key, shard);
    if (!out) {
      bump(c.misses);
      return true;
    }
    if (out->size() > payload.size() &&
        rte_pktmbuf_append(m, static_cast<std::uint16_t>(out->size() - payload.size())) == nullptr) {
      drop(c, c.no_room, m);
      return false;
    }
    std::memcpy(datagram, out->data(), out->size());
    set_lengths(ip, ihl, udp, out->size());
    bump(c.hinted);
    return true;
  }
  const forein::StartHints h = hint_of(key, shard);
  if (!h.primary.present() && !h.secondary.present()) {
    bump(c.misses);
    return true;
  }
  // In place: grow the frame by the trailer and write it behind the
  // datagram (no copy of the datagram, no allocation per request).
  if (rte_pktmbuf_append(m, static_cast<std::uint16_t>(forein::net::kHintTrailerBytes)) == nullptr) {
    drop(c, c.no_room, m);
    return false;
  }
  const std::size_t room = payload.size() + forein::net::kHintTrailerBytes;
  const std::size_t n = forein::net::set_hint_trailer_in_place(std::span<std::byte>(datagram, room), payload.size(), h);
  const std::size_t used = n != 0 ? n : payload.size();
  if (used < room) rte_pktmbuf_trim(m, static_cast<std::uint16_t>(room - used));
  if (n == 0) {
    bump(c.misses);
    return true;
  }
  set_lengths(ip, ihl, udp, n);
  bump(c.hinted);
  return true;
}

}  // namespace forein::net::sw

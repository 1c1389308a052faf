#include "kv_server/memif_frames.h"

#include <algorithm>
#include <cstring>

namespace forein::net::kv {

namespace {

constexpr std::uint16_t kEthertypeIpv4 = 0x0800;
constexpr std::uint16_t kEthertypeArp = 0x0806;
constexpr std::uint8_t kProtoUdp = 17;
constexpr std::uint16_t kFlagMoreFragments = 0x2000;
constexpr std::uint16_t kOffsetMask = 0x1FFF;
// Fragment payloads are multiples of 8 bytes (1480 at MTU 1500).
constexpr std::size_t kFragmentPayload = (kLinkMtu - kIpv4Bytes) / 8 * 8;

std::uint16_t get16(const std::byte* p) {
  return static_cast<std::uint16_t>((static_cast<unsigned>(p[0]) << 8) | static_cast<unsigned>(p[1]));
}
std::uint32_t get32(const std::byte* p) {
  return (std::uint32_t{get16(p)} << 16) | get16(p + 2);
}
void put16(std::byte* p, std::uint16_t v) {
  p[0] = static_cast<std::byte>(v >> 8);
  p[1] = static_cast<std::byte>(v & 0xFF);
}
void put32(std::byte* p, std::uint32_t v) {
  put16(p, static_cast<std::uint16_t>(v >> 16));
  put16(p + 2, static_cast<std::uint16_t>(v & 0xFFFF));
}

// One's complement sum of 16-bit big-endian words (an odd last byte padded).
std::uint32_t add_words(std::uint32_t sum, std::span<const std::byte> bytes) {
  std::size_t i = 0;
  for (; i + 1 < bytes.size(); i += 2) sum += get16(bytes.data() + i);
  if (i < bytes.size()) sum += static_cast<std::uint32_t>(bytes[i]) << 8;
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  return sum;
}

MacAddress mac_at(const std::byte* p) {
  MacAddress m{};
  std::memcpy(m.data(), p, m.size());
  return m;
}

// Ethernet and IPv4 headers at `at`: from self to peer, IPv4 total length
// ip_total, the fragment field frag; the header checksum filled in.
void write_headers(std::byte* at, const UdpEndpoint& self, const UdpEndpoint& peer, std::size_t ip_total,
                   std::uint16_t ip_id, std::uint16_t frag) {
  std::memcpy(at, peer.mac.data(), 6);
  std::memcpy(at + 6, self.mac.data(), 6);
  put16(at + 12, kEthertypeIpv4);
  std::byte* ip = at + kEthernetBytes;
  std::memset(ip, 0, kIpv4Bytes);
  ip[0] = std::byte{0x45};
  put16(ip + 2, static_cast<std::uint16_t>(ip_total));
  put16(ip + 4, ip_id);
  put16(ip + 6, frag);
  ip[8] = std::byte{64};  // TTL
  ip[9] = std::byte{kProtoUdp};
  put32(ip + 12, self.ip);
  put32(ip + 16, peer.ip);
  put16(ip + 10, internet_checksum(std::span<const std::byte>(ip, kIpv4Bytes)));
}

}  // namespace

const char* to_string(FrameVerdict v) {
  switch (v) {
    case FrameVerdict::kDatagram: return "datagram";
    case FrameVerdict::kNotIpv4: return "not_ipv4";
    case FrameVerdict::kArp: return "arp";
    case FrameVerdict::kBadIp: return "bad_ip";
    case FrameVerdict::kNotForUs: return "not_for_server";
    case FrameVerdict::kFragment: return "fragment";
    case FrameVerdict::kNotUdp: return "not_udp";
    case FrameVerdict::kBadUdp: return "bad_udp";
  }
  return "unknown";
}

std::uint16_t internet_checksum(std::span<const std::byte> bytes) {
  return static_cast<std::uint16_t>(~add_words(0, bytes) & 0xFFFF);
}

std::uint16_t udp_checksum(std::uint32_t src, std::uint32_t dst, std::span<const std::byte> segment) {
  std::uint32_t sum = (src >> 16) + (src & 0xFFFF) + (dst >> 16) + (dst & 0xFFFF);
  sum += kProtoUdp;
  sum += static_cast<std::uint32_t>(segment.size() & 0xFFFF);
  return static_cast<std::uint16_t>(~add_words(sum, segment) & 0xFFFF);
}

FrameVerdict parse_udp_frame(std::span<const std::byte> frame, std::uint32_t our_ip, UdpFrame* out) {
  if (frame.size() < kEthernetBytes) return FrameVerdict::kNotIpv4;
  const std::uint16_t type = get16(frame.data() + 12);
  if (type == kEthertypeArp) return FrameVerdict::kArp;
  if (type != kEthertypeIpv4) return FrameVerdict::kNotIpv4;
  const std::span<const std::byte> l3 = frame.subspan(kEthernetBytes);
  if (l3.size() < kIpv4Bytes) return FrameVerdict::kBadIp;
  const auto vhl = static_cast<std::uint8_t>(l3[0]);
  const std::size_t ihl = static_cast<std::size_t>(vhl & 0x0F) * 4;
  const std::size_t total = get16(l3.data() + 2);
  if ((vhl >> 4) != 4 || ihl < kIpv4Bytes || total < ihl || total > l3.size() ||
      internet_checksum(l3.first(ihl)) != 0) {
    return FrameVerdict::kBadIp;
  }
  if (get32(l3.data() + 16) != our_ip) return FrameVerdict::kNotForUs;
  if ((get16(l3.data() + 6) & (kFlagMoreFragments | kOffsetMask)) != 0) return FrameVerdict::kFragment;
  if (static_cast<std::uint8_t>(l3[9]) != kProtoUdp) return FrameVerdict::kNotUdp;
  // Ethernet padding after the IPv4 datagram is ignored.
  const std::span<const std::byte> segment = l3.subspan(ihl, total - ihl);
  if (segment.size() < kUdpBytes) return FrameVerdict::kBadUdp;
  const std::size_t udp_len = get16(segment.data() + 4);
  if (udp_len != segment.size()) return FrameVerdict::kBadUdp;
  const std::uint32_t src = get32(l3.data() + 12);
  if (get16(segment.data() + 6) != 0 && udp_checksum(src, our_ip, segment) != 0) return FrameVerdict::kBadUdp;
  out->from = UdpEndpoint{mac_at(frame.data() + 6), src, get16(segment.data())};
  out->to = UdpEndpoint{mac_at(frame.data()), our_ip, get16(segment.data() + 2)};
  out->payload = segment.subspan(kUdpBytes);
  return FrameVerdict::kDatagram;
}

bool build_udp_frames(const UdpEndpoint& self, const UdpEndpoint& peer, std::span<const std::byte> datagram,
                      std::uint16_t ip_id, Frames* out) {
  out->bytes.clear();
  out->sizes.clear();
  out->fragments = 0;
  const std::size_t udp_len = kUdpBytes + datagram.size();
  if (kIpv4Bytes + udp_len > 0xFFFF) return false;
  // The UDP segment, checksum included, then cut into frames.
  std::vector<std::byte> segment(udp_len);
  put16(segment.data(), self.port);
  put16(segment.data() + 2, peer.port);
  put16(segment.data() + 4, static_cast<std::uint16_t>(udp_len));
  if (!datagram.empty()) std::memcpy(segment.data() + kUdpBytes, datagram.data(), datagram.size());
  const bool fragmented = kIpv4Bytes + udp_len > kLinkMtu;
  // A fragmented datagram goes without a UDP checksum (0, as IPv4
  // allows): forein-switch rewrites the addresses of a first fragment and
  // can only adjust its checksum, not recompute it.
  if (!fragmented) {
    const std::uint16_t ck = udp_checksum(self.ip, peer.ip, segment);
    put16(segment.data() + 6, ck == 0 ? 0xFFFF : ck);
  }

  const std::size_t per_frame = fragmented ? kFragmentPayload : udp_len;
  for (std::size_t offset = 0; offset < udp_len; offset += per_frame) {
    const std::size_t chunk = std::min(per_frame, udp_len - offset);
    const bool last = offset + chunk == udp_len;
    const std::uint16_t frag =
        fragmented ? static_cast<std::uint16_t>((offset / 8) | (last ? 0 : kFlagMoreFragments)) : 0;
    const std::size_t at = out->bytes.size();
    const std::size_t size = kEthernetBytes + kIpv4Bytes + chunk;
    out->bytes.resize(at + size);
    write_headers(out->bytes.data() + at, self, peer, kIpv4Bytes + chunk, ip_id, frag);
    std::memcpy(out->bytes.data() + at + kEthernetBytes + kIpv4Bytes, segment.data() + offset, chunk);
    out->sizes.push_back(size);
  }
  if (fragmented) out->fragments = out->sizes.size();
  return true;
}

std::size_t write_reply_frame(std::span<std::byte> out, const UdpEndpoint& self, const UdpEndpoint& peer,
                              std::uint16_t ip_id, std::uint8_t op, std::uint8_t status, std::uint64_t seq,
                              std::span<const std::byte> key, std::span<const std::byte> value) {
  // The protocol's header (docs/protocol.md): magic, version 1, op, flags,
  // status, key length, seq, value length, count.
  constexpr std::size_t kHeader = 24;
  const std::size_t datagram = kHeader + key.size() + value.size();
  if (datagram > kMaxUnfragmented) return 0;
  const std::size_t udp_len = kUdpBytes + datagram;
  const std::size_t size = kEthernetBytes + kIpv4Bytes + udp_len;
  if (size > out.size()) return 0;
  std::byte* udp = out.data() + kEthernetBytes + kIpv4Bytes;
  std::byte* h = udp + kUdpBytes;
  put16(h, 0xF0E1);
  h[2] = std::byte{1};
  h[3] = static_cast<std::byte>(op);
  h[4] = std::byte{0};
  h[5] = static_cast<std::byte>(status);
  put16(h + 6, static_cast<std::uint16_t>(key.size()));
  put32(h + 8, static_cast<std::uint32_t>(seq >> 32));
  put32(h + 12, static_cast<std::uint32_t>(seq & 0xFFFFFFFFu));
  put32(h + 16, static_cast<std::uint32_t>(value.size()));
  put32(h + 20, 0);
  if (!key.empty()) std::memcpy(h + kHeader, key.data(), key.size());
  if (!value.empty()) std::memcpy(h + kHeader + key.size(), value.data(), value.size());
  put16(udp, self.port);
  put16(udp + 2, peer.port);
  put16(udp + 4, static_cast<std::uint16_t>(udp_len));
  put16(udp + 6, 0);
  const std::uint16_t ck = udp_checksum(self.ip, peer.ip, std::span<const std::byte>(udp, udp_len));
  put16(udp + 6, ck == 0 ? 0xFFFF : ck);
  write_headers(out.data(), self, peer, kIpv4Bytes + udp_len, ip_id, 0);
  return size;
}

}  // namespace forein::net::kv

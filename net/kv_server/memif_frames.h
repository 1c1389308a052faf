// The Ethernet/IPv4/UDP frames of forein-kv-server's memif port
// (docs/network.md, "forein-kv-server"): parsing a received frame down to
// its UDP datagram, and building the reply frames (one frame, or IPv4
// fragments when the reply does not fit a 1500-byte MTU). Plain bytes, no
// DPDK, so tests can check them directly.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace forein::net::kv {

inline constexpr std::size_t kEthernetBytes = 14;
inline constexpr std::size_t kIpv4Bytes = 20;  // without options
inline constexpr std::size_t kUdpBytes = 8;
inline constexpr std::size_t kLinkMtu = 1500;  // the switch's TAP side
inline constexpr std::size_t kMaxFrameBytes = kEthernetBytes + kLinkMtu;
// The most datagram bytes one unfragmented frame carries (1472).
inline constexpr std::size_t kMaxUnfragmented = kLinkMtu - kIpv4Bytes - kUdpBytes;

using MacAddress = std::array<std::uint8_t, 6>;

// Why a received frame carries no datagram for the server.
enum class FrameVerdict : std::uint8_t {
  kDatagram,  // a whole UDP datagram to our address
  kNotIpv4,   // another ethertype (ARP excepted), or too short for Ethernet
  kArp,       // ARP (the memif link has none: the switch never asks)
  kBadIp,     // IPv4 header truncated, not version 4, bad length or checksum
  kNotForUs,  // IPv4 to another address
  kFragment,  // an IPv4 fragment (nothing here reassembles)
  kNotUdp,    // another IP protocol
  kBadUdp,    // UDP header truncated, bad length or checksum
};
inline constexpr std::size_t kFrameVerdicts = 8;
const char* to_string(FrameVerdict v);

// One end of a UDP exchange on the link.
struct UdpEndpoint {
  MacAddress mac{};
  std::uint32_t ip = 0;  // host order
  std::uint16_t port = 0;
};

// A received datagram: who sent it, to where, and its payload (a view
// into the frame).
struct UdpFrame {
  UdpEndpoint from, to;
  std::span<const std::byte> payload;
};

// Parses an Ethernet II frame: IPv4 (header checksum checked, options
// allowed, Ethernet padding ignored) to our_ip (host order), not a
// fragment, UDP with a consistent length and a correct checksum (0: none).
// Any destination MAC is accepted (memif is point to point; the switch
// sends to the broadcast MAC until it has learned ours).
FrameVerdict parse_udp_frame(std::span<const std::byte> frame, std::uint32_t our_ip, UdpFrame* out);

// Frames laid back to back in bytes; sizes[i] is frame i's length.
struct Frames {
  std::vector<std::byte> bytes;
  std::vector<std::size_t> sizes;
  std::size_t fragments = 0;  // frames that are IPv4 fragments (0 for a single frame)
};

// The reply frames from `self` to `peer` carrying `datagram`: one frame
// with the UDP checksum when it fits kLinkMtu, else IPv4 fragments of at
// most kLinkMtu bytes (the first holds the UDP header, more-fragments set
// on all but the last, offsets in 8-byte units; UDP checksum 0, none).
// ip_id identifies the IPv4 datagram. False (out
// empty) when the datagram is larger than UDP over IPv4 allows.
bool build_udp_frames(const UdpEndpoint& self, const UdpEndpoint& peer, std::span<const std::byte> datagram,
                      std::uint16_t ip_id, Frames* out);

// The run-to-completion path's reply: one Ethernet/IPv4/UDP frame from
// `self` to `peer` written straight into `out` (the received frame's own
// buffer), its datagram the protocol header of a reply (op, status, seq,
// key, value; no flags, count 0) followed by key and value, with the IPv4
// and UDP checksums: the same bytes as build_udp_frames() of
// encode_packet() of that reply. Returns the frame's size, or 0 (out
// untouched) when it would need fragments (a datagram over kMaxUnfragmented)
// or does not fit `out`.
std::size_t write_reply_frame(std::span<std::byte> out, const UdpEndpoint& self, const UdpEndpoint& peer,
                              std::uint16_t ip_id, std::uint8_t op, std::uint8_t status, std::uint64_t seq,
                              std::span<const std::byte> key, std::span<const std::byte> value);

// The Internet checksum (RFC 1071) of bytes, folded and complemented.
std::uint16_t internet_checksum(std::span<const std::byte> bytes);
// The UDP checksum of a segment (header and payload, its checksum field
// as found) between src and dst (host order): 0 means a correct one when
// the field holds the checksum. A computed 0 is sent as 0xFFFF.
std::uint16_t udp_checksum(std::uint32_t src, std::uint32_t dst, std::span<const std::byte> segment);

}  // namespace forein::net::kv

// The frames forein-switch-gen sends (protocol GETs, garbage) and the
// check of the frames the switch forwards.
#pragma once

#include <rte_ether.h>
#include <rte_mbuf.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <vector>

#include "options.h"

namespace forein::net::swgen {

// The two sides' addresses, as forein-switch uses them: the peer of a side
// is A.B.C.1, the switch A.B.C.2.
struct Addresses {
  std::uint32_t client_peer = 0;    // host order: the generator on the client side
  std::uint32_t client_switch = 0;  // where GETs are sent
  std::uint32_t server_switch = 0;  // the source of forwarded GETs
  std::uint32_t server_net = 0;     // A.B.C.0 of the server side (the destination's /24)
  std::uint16_t service_port = 9000;
  rte_ether_addr gen_mac[2]{};      // our ports' MACs
  rte_ether_addr switch_mac[2]{};   // forein-switch's (its memif vdevs' mac=)
};

// From the options and our ports; false on an unusable network.
bool make_addresses(const GenOptions& o, const std::uint16_t ports[2], Addresses* out);

// A GET (or, scan > 0, a SCAN wanting `scan` entries) as a whole
// Ethernet/IPv4/UDP frame, written into mbufs with only the seq and key
// changed (the layout of protocol/packet.h: seq at 8, key at 24 of the
// datagram). The UDP checksum is 0 (none, as IPv4 allows): the switch
// recomputes it when it forwards.
class RequestFrame {
 public:
  explicit RequestFrame(const Addresses& a, std::uint32_t scan = 0);
  void write(rte_mbuf* m, std::uint64_t seq, std::uint64_t key) const;
  // The same GET with protocol version 2 (the switch counts it malformed).
  void write_wrong_version(rte_mbuf* m, std::uint64_t seq) const;

 private:
  std::vector<std::byte> bytes_;
  std::size_t seq_at_ = 0, key_at_ = 0, version_at_ = 0;
};

// Garbage: random bytes (60..200, the ethertype forced off IPv4 and ARP so
// the switch's reason is not_ipv4), and an IPv4 frame cut inside its
// header (bad_ip).
void write_random_frame(rte_mbuf* m, std::mt19937_64& rng);
void write_truncated_ipv4(rte_mbuf* m, const rte_ether_addr& src, const rte_ether_addr& dst);

// The UDP payload of m when it is one Ethernet/IPv4/UDP frame with a good
// IPv4 header checksum, consistent lengths and a good UDP checksum (or
// none), from src to an address with (dst_addr & dst_mask) == dst (host
// order); nullopt otherwise. Zeroes the UDP checksum field to verify it.
std::optional<std::span<const std::byte>> udp_datagram(rte_mbuf* m, std::uint32_t src, std::uint32_t dst,
                                                       std::uint32_t dst_mask);

// A frame the switch sent out of its server side.
struct Forwarded {
  bool valid = false;   // Ethernet/IPv4/UDP with good checksums and lengths, a well-formed GET
  bool hinted = false;  // carries the hint trailer
  std::uint64_t seq = 0;
  std::uint64_t key = 0;  // dataset index of the GET's key
};
// (It zeroes the UDP checksum field to verify it.)
Forwarded check_forwarded(rte_mbuf* m, const Addresses& a);

}  // namespace forein::net::swgen

// What the forein-switch end-to-end tests share: whether TAP devices can be
// made here, interface names and /24s, free UDP ports, raw frames into a
// TAP, and reading the switch's exit JSON line. The tests run in a network
// namespace of their own (private_netns.h, netns_main.cc): the TAP devices,
// their private-range addresses and all the traffic stay inside it.
#pragma once

#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "private_netns.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace forein::testing {

// TAP ports need root (CAP_NET_ADMIN), /dev/net/tun and this process in a
// network namespace of its own (netns_main.cc entered one at start-up).
inline bool can_make_taps() {
  return ::geteuid() == 0 && ::access("/dev/net/tun", R_OK | W_OK) == 0 && in_private_netns();
}

// Why can_make_taps() is false, for the skip message.
inline std::string no_taps_reason() {
  if (::geteuid() != 0) return "TAP ports need root";
  if (::access("/dev/net/tun", R_OK | W_OK) != 0) return "TAP ports need /dev/net/tun";
  if (!in_private_netns()) return "no network namespace of its own: " + private_netns_problem();
  return "";
}

// Interface names and the two /24s of one switch: `variant` (0..3) keeps
// the switches of one test apart. Nothing else can hold them: the test's
// namespace is its own.
struct TapNets {
  std::string client_iface, server_iface;
  std::string client_net, server_net;  // A.B.C

  TapNets(const std::string& name, int variant) {
    REQUIRE(variant >= 0);
    REQUIRE(variant < 4);
    REQUIRE(in_private_netns());  // never these addresses in the machine's own namespace
    client_iface = "fc" + name + "v" + std::to_string(variant);
    server_iface = "fs" + name + "v" + std::to_string(variant);
    client_net = "10.77." + std::to_string(2 * variant);
    server_net = "10.77." + std::to_string(2 * variant + 1);
  }

  // IPv4 (host order) of A.B.C.host on either side.
  static std::uint32_t addr(const std::string& net, int host) {
    in_addr a{};
    REQUIRE(::inet_pton(AF_INET, (net + "." + std::to_string(host)).c_str(), &a) == 1);
    return ntohl(a.s_addr);
  }
};

// A UDP port nobody holds right now (bound to the wildcard address and
// released): the servers behind a switch need theirs before they start.
inline std::uint16_t free_udp_port() {
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  socklen_t len = sizeof a;
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  ::close(fd);
  return ntohs(a.sin_port);
}

// The object after "name": in the switch's JSON line (flat enough for json_number).
inline std::string json_object(const std::string& json, const std::string& name) {
  const std::size_t at = json.find("\"" + name + "\":{");
  if (at == std::string::npos) return {};
  return json.substr(at, json.find('}', at) - at + 1);
}

// Sends n raw Ethernet frames of `bytes` bytes out of iface (into the switch's port).
inline void send_raw_frames(const std::string& iface, std::uint16_t ethertype, std::size_t bytes, int n) {
  const int fd = ::socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  sockaddr_ll to{};
  to.sll_family = AF_PACKET;
  to.sll_ifindex = static_cast<int>(::if_nametoindex(iface.c_str()));
  to.sll_halen = ETH_ALEN;
  std::vector<unsigned char> frame(bytes, 0xA5);
  const unsigned char mac[6] = {0x02, 0xF0, 0xE1, 0x5C, 0x00, 0x01};
  std::memcpy(frame.data(), mac, 6);
  std::memcpy(to.sll_addr, mac, 6);
  frame[12] = static_cast<unsigned char>(ethertype >> 8);
  frame[13] = static_cast<unsigned char>(ethertype & 0xFF);
  for (int i = 0; i < n; ++i) {
    CHECK(::sendto(fd, frame.data(), frame.size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof to) ==
          static_cast<ssize_t>(frame.size()));
  }
  ::close(fd);
}

}  // namespace forein::testing

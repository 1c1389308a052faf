// What the forein-switch end-to-end tests share: whether TAP devices can be
// made here, interface names and /24s unique to a run, free UDP ports, raw
// frames into a TAP, and reading the switch's exit JSON line.
#pragma once

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <set>
#include <string>
#include <vector>

namespace forein::testing {

// TAP ports need root (CAP_NET_ADMIN) and /dev/net/tun.
inline bool can_make_taps() { return ::geteuid() == 0 && ::access("/dev/net/tun", R_OK | W_OK) == 0; }

// The A.B.C of every IPv4 address this host's interfaces have now.
inline std::set<std::string> host_ipv4_nets() {
  std::set<std::string> nets;
  ifaddrs* all = nullptr;
  if (::getifaddrs(&all) != 0) return nets;
  for (const ifaddrs* i = all; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    const std::uint32_t a = ntohl(reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr);
    nets.insert(std::to_string(a >> 24) + "." + std::to_string((a >> 16) & 0xFF) + "." +
                std::to_string((a >> 8) & 0xFF));
  }
  ::freeifaddrs(all);
  return nets;
}

// Interface names and the two /24s of one switch, unique to this process
// and `variant` (0..3), so parallel tests and runs do not share them. The
// /24s are in 10.100-149.x (scripts/testbed.sh takes 10.200-249.x,
// tests/bench/run_switch_delta.sh 10.150-199.x): 1,600 places of 8 /24s,
// the first from the pid, skipped forward while an interface here has an
// address in either /24 (another test's switch already up). Two processes
// that start their switches at the same moment still collide when their
// pids agree modulo 1,600.
struct TapNets {
  std::string client_iface, server_iface;
  std::string client_net, server_net;  // A.B.C

  TapNets(const std::string& name, int variant) {
    REQUIRE(variant >= 0);
    REQUIRE(variant < 4);
    const int tag = static_cast<int>(::getpid()) % 100000;
    client_iface = "fc" + name + std::to_string(tag) + "v" + std::to_string(variant);
    server_iface = "fs" + name + std::to_string(tag) + "v" + std::to_string(variant);
    const std::set<std::string> taken = host_ipv4_nets();
    for (int k = 0; k < 1600; ++k) {
      const int place = (tag + k) % 1600;
      const std::string prefix = "10." + std::to_string(100 + place % 50) + ".";
      const int third = 8 * (place / 50) + 2 * variant;
      client_net = prefix + std::to_string(third);
      server_net = prefix + std::to_string(third + 1);
      if (taken.count(client_net) == 0 && taken.count(server_net) == 0) return;
    }
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

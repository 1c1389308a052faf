// A UDP peer's socket address (IPv4 or IPv6), comparable and printable:
// where the metadata node's CLEARs, replies and LOG_FETCH requests go.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <string>

namespace forein::net::kv {

struct UdpAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;  // 0: no address

  bool empty() const { return length == 0; }
  int family() const { return storage.ss_family; }
  const sockaddr* get() const { return reinterpret_cast<const sockaddr*>(&storage); }
  // Family, address and port equal (IPv6 scope and flow info ignored).
  bool operator==(const UdpAddress& o) const;
  // "A.B.C.D:P" or "[v6]:P".
  std::string text() const;
};

// The address of HOST:PORT (numeric IPv4/IPv6 or a name; the first
// answer), of `family` unless AF_UNSPEC. Throws std::runtime_error naming
// the host when it does not resolve.
UdpAddress resolve_udp(const std::string& host, std::uint16_t port, int family);

}  // namespace forein::net::kv

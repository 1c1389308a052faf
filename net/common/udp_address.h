// A UDP peer's socket address (IPv4 or IPv6), comparable and printable:
// where the metadata node's CLEARs, replies and LOG_FETCH requests go, and
// forein-data-node's LOG_REPLICATEs to its backups.
#pragma once

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

namespace forein::net {

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
inline UdpAddress resolve_udp(const std::string& host, std::uint16_t port, int family);

inline bool UdpAddress::operator==(const UdpAddress& o) const {
  if (length == 0 || o.length == 0) return length == o.length;
  if (family() != o.family()) return false;
  if (family() == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&storage);
    const auto* b = reinterpret_cast<const sockaddr_in*>(&o.storage);
    return a->sin_port == b->sin_port && a->sin_addr.s_addr == b->sin_addr.s_addr;
  }
  if (family() == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&storage);
    const auto* b = reinterpret_cast<const sockaddr_in6*>(&o.storage);
    return a->sin6_port == b->sin6_port &&
           std::memcmp(&a->sin6_addr, &b->sin6_addr, sizeof a->sin6_addr) == 0;
  }
  return length == o.length && std::memcmp(&storage, &o.storage, length) == 0;
}

inline std::string UdpAddress::text() const {
  char host[INET6_ADDRSTRLEN] = {};
  if (family() == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&storage);
    ::inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
    return std::string(host) + ":" + std::to_string(ntohs(a->sin_port));
  }
  if (family() == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&storage);
    ::inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
    return "[" + std::string(host) + "]:" + std::to_string(ntohs(a->sin6_port));
  }
  return "(none)";
}

inline UdpAddress resolve_udp(const std::string& host, std::uint16_t port, int family) {
  addrinfo hints{};
  hints.ai_family = family;
  hints.ai_socktype = SOCK_DGRAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const std::string port_text = std::to_string(port);
  if (const int rc = ::getaddrinfo(host.c_str(), port_text.c_str(), &hints, &res); rc != 0 || res == nullptr) {
    throw std::runtime_error("cannot resolve '" + host + "'" +
                             (family == AF_INET ? " as IPv4" : family == AF_INET6 ? " as IPv6" : "") + ": " +
                             ::gai_strerror(rc));
  }
  UdpAddress out;
  std::memcpy(&out.storage, res->ai_addr, res->ai_addrlen);
  out.length = res->ai_addrlen;
  ::freeaddrinfo(res);
  return out;
}

}  // namespace forein::net

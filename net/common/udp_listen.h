// The UDP servers' listening sockets (forein-kv-server, forein-data-node):
// `count` sockets bound to HOST:PORT with SO_REUSEPORT, so each worker
// thread owns one and the kernel spreads datagrams over them; port 0 takes
// the kernel's pick for the first and the others join it.
#pragma once

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace forein::net {

// Appends the sockets to *fds as it opens them (the caller closes them,
// also when this throws std::runtime_error with the reason); returns the
// port they listen on.
inline std::uint16_t listen_udp(const std::string& host, std::uint16_t port, unsigned count, std::vector<int>* fds) {
  const auto error = [](const std::string& what) { return std::runtime_error(what + ": " + std::strerror(errno)); };
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  hints.ai_flags = AI_NUMERICSERV | AI_PASSIVE;
  addrinfo* res = nullptr;
  const std::string port_text = std::to_string(port);
  if (const int rc = ::getaddrinfo(host.c_str(), port_text.c_str(), &hints, &res); rc != 0 || res == nullptr) {
    throw std::runtime_error("cannot resolve listen host '" + host + "': " + ::gai_strerror(rc));
  }
  sockaddr_storage addr{};
  std::memcpy(&addr, res->ai_addr, res->ai_addrlen);
  const socklen_t addr_len = res->ai_addrlen;
  const int family = res->ai_family;
  ::freeaddrinfo(res);
  const auto port_of = [family](sockaddr_storage& a) -> in_port_t& {
    return family == AF_INET ? reinterpret_cast<sockaddr_in*>(&a)->sin_port
                             : reinterpret_cast<sockaddr_in6*>(&a)->sin6_port;
  };
  const std::string where = host + ":" + port_text;
  for (unsigned i = 0; i < count; ++i) {
    const int fd = ::socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) throw error("socket");
    fds->push_back(fd);
    const int one = 1;
    if (::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0) throw error("SO_REUSEPORT");
    const int rcvbuf = 4 << 20;
    (void)::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);  // best effort
    if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), addr_len) != 0) throw error("cannot listen on " + where);
    if (i == 0) {
      sockaddr_storage bound{};
      socklen_t len = sizeof bound;
      if (::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len) != 0) throw error("getsockname");
      port_of(addr) = port_of(bound);  // the others join the port the first one got
    }
  }
  return ntohs(port_of(addr));
}

}  // namespace forein::net

// The UDP servers' listening sockets (forein-kv-server, forein-data-node):
// `count` sockets bound to HOST:PORT with SO_REUSEPORT, so each worker
// thread owns one and the kernel spreads datagrams over them; port 0 takes
// the kernel's pick for the first and the others join it. And
// listen_udp_ports: one socket per port on consecutive ports.
#pragma once

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace forein::net {

namespace udp_listen_detail {

inline std::runtime_error errno_error(const std::string& what) {
  return std::runtime_error(what + ": " + std::strerror(errno));
}

// HOST:PORT resolved for a passive UDP socket.
struct ListenAddress {
  sockaddr_storage addr{};
  socklen_t len = 0;
  int family = AF_INET;

  in_port_t& port_field() {
    return family == AF_INET ? reinterpret_cast<sockaddr_in*>(&addr)->sin_port
                             : reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port;
  }
};

inline ListenAddress resolve_listen(const std::string& host, std::uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  hints.ai_flags = AI_NUMERICSERV | AI_PASSIVE;
  addrinfo* res = nullptr;
  const std::string port_text = std::to_string(port);
  if (const int rc = ::getaddrinfo(host.c_str(), port_text.c_str(), &hints, &res); rc != 0 || res == nullptr) {
    throw std::runtime_error("cannot resolve listen host '" + host + "': " + ::gai_strerror(rc));
  }
  ListenAddress a;
  std::memcpy(&a.addr, res->ai_addr, res->ai_addrlen);
  a.len = res->ai_addrlen;
  a.family = res->ai_family;
  ::freeaddrinfo(res);
  return a;
}

// A UDP socket appended to *fds (SO_REUSEPORT when shared); its bind()
// result (0, or -1 with errno set).
inline int open_and_bind(ListenAddress& a, bool reuse_port, std::vector<int>* fds) {
  const int fd = ::socket(a.family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw errno_error("socket");
  fds->push_back(fd);
  const int one = 1;
  if (reuse_port && ::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0) {
    throw errno_error("SO_REUSEPORT");
  }
  const int rcvbuf = 4 << 20;
  (void)::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);  // best effort
  return ::bind(fd, reinterpret_cast<const sockaddr*>(&a.addr), a.len);
}

// The port the kernel gave fd.
inline std::uint16_t bound_port(int fd, ListenAddress& a) {
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len) != 0) throw errno_error("getsockname");
  ListenAddress b = a;
  b.addr = bound;
  return ntohs(b.port_field());
}

// Whether a UDP socket that is not one of *fds is bound to `port` on an
// address that overlaps a's (the same one, or either side the wildcard):
// read from /proc/net/udp and udp6, which list this network namespace's
// sockets with their inodes.
inline bool port_shared_with_others(const ListenAddress& a, std::uint16_t port, const std::vector<int>& fds) {
  std::vector<unsigned long> ours;
  for (const int fd : fds) {
    struct stat st {};
    if (::fstat(fd, &st) == 0) ours.push_back(static_cast<unsigned long>(st.st_ino));
  }
  // Our address as /proc writes it: the 32-bit word in native order (IPv4),
  // or the 16 bytes as four such words (IPv6).
  char ours_hex[40] = "";
  const bool v4 = a.family == AF_INET;
  const unsigned char* bytes = v4 ? reinterpret_cast<const unsigned char*>(
                                        &reinterpret_cast<const sockaddr_in*>(&a.addr)->sin_addr)
                                  : reinterpret_cast<const unsigned char*>(
                                        &reinterpret_cast<const sockaddr_in6*>(&a.addr)->sin6_addr);
  for (int w = 0; w < (v4 ? 1 : 4); ++w) {
    std::uint32_t word = 0;
    std::memcpy(&word, bytes + 4 * w, 4);
    std::snprintf(ours_hex + 8 * w, 9, "%08X", word);
  }
  for (const char* file : {"/proc/net/udp", "/proc/net/udp6"}) {
    std::FILE* f = std::fopen(file, "r");
    if (f == nullptr) continue;
    char line[512];
    bool header = true;
    bool shared = false;
    while (!shared && std::fgets(line, sizeof line, f) != nullptr) {
      if (std::exchange(header, false)) continue;
      char local[64] = "";
      unsigned long inode = 0;
      // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
      if (std::sscanf(line, " %*s %63s %*s %*s %*s %*s %*s %*s %*s %lu", local, &inode) != 2) continue;
      const char* colon = std::strrchr(local, ':');
      if (colon == nullptr || std::strtoul(colon + 1, nullptr, 16) != port) continue;
      if (std::find(ours.begin(), ours.end(), inode) != ours.end()) continue;
      const std::string address(local, static_cast<std::size_t>(colon - local));
      const bool wildcard = address.find_first_not_of('0') == std::string::npos;
      const bool ours_wildcard = std::string(ours_hex).find_first_not_of('0') == std::string::npos;
      shared = wildcard || ours_wildcard || address == ours_hex;
    }
    std::fclose(f);
    if (shared) return true;
  }
  return false;
}

}  // namespace udp_listen_detail

// Appends the sockets to *fds as it opens them (the caller closes them,
// also when this throws std::runtime_error with the reason); returns the
// port they listen on. SO_REUSEPORT would also let another process of the
// same user join the port and take a share of the clients: once bound,
// the sockets on the port are checked, and a port another socket holds
// (another forein server, started before) is refused.
inline std::uint16_t listen_udp(const std::string& host, std::uint16_t port, unsigned count, std::vector<int>* fds) {
  using namespace udp_listen_detail;
  ListenAddress a = resolve_listen(host, port);
  const std::string where = host + ":" + std::to_string(port);
  for (unsigned i = 0; i < count; ++i) {
    if (open_and_bind(a, /*reuse_port=*/true, fds) != 0) throw errno_error("cannot listen on " + where);
    if (i == 0) a.port_field() = htons(bound_port(fds->back(), a));  // the others join the port the first one got
  }
  const std::uint16_t bound = ntohs(a.port_field());
  if (port_shared_with_others(a, bound, *fds)) {
    errno = EADDRINUSE;
    throw errno_error("cannot listen on " + where + " (another process holds the port)");
  }
  return bound;
}

// One socket per port (forein-kv-server --engine dpa: worker i owns port
// first + i), appended to *fds in port order: ports PORT..PORT+count-1, or
// with PORT 0 a free block (the kernel picks the first, the next count-1
// must be free too; a taken one makes it try another block, up to 64
// times). No SO_REUSEPORT: a port another socket holds is an error, never
// shared. Returns the first port; throws std::runtime_error naming the
// port that could not be bound (the caller closes *fds).
inline std::uint16_t listen_udp_ports(const std::string& host, std::uint16_t port, unsigned count,
                                      std::vector<int>* fds) {
  using namespace udp_listen_detail;
  ListenAddress a = resolve_listen(host, port);
  for (int attempt = 0; attempt < 64; ++attempt) {
    const std::size_t mark = fds->size();
    if (open_and_bind(a, /*reuse_port=*/false, fds) != 0) {
      throw errno_error("cannot listen on " + host + ":" + std::to_string(port));
    }
    const std::uint16_t first = port != 0 ? port : bound_port(fds->back(), a);
    bool block = true;
    for (unsigned i = 1; i < count && block; ++i) {
      const std::uint32_t p = std::uint32_t{first} + i;
      if (p > 65535) {
        if (port != 0) throw std::runtime_error("cannot listen on " + host + ":" + std::to_string(p) + ": past 65535");
        block = false;
        break;
      }
      ListenAddress next = a;
      next.port_field() = htons(static_cast<std::uint16_t>(p));
      if (open_and_bind(next, /*reuse_port=*/false, fds) != 0) {
        if (port == 0 && errno == EADDRINUSE) {
          block = false;
        } else {
          throw errno_error("cannot listen on " + host + ":" + std::to_string(p) + " (port " + std::to_string(i) +
                            " of " + std::to_string(first) + ".." + std::to_string(first + count - 1) + ")");
        }
      }
    }
    if (block) return first;
    // PORT 0 and a taken port in the block: free it all and try another.
    for (std::size_t i = mark; i < fds->size(); ++i) ::close((*fds)[i]);
    fds->resize(mark);
  }
  throw std::runtime_error("cannot find " + std::to_string(count) + " free consecutive UDP ports on " + host);
}

}  // namespace forein::net

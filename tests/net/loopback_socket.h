// A test's own UDP socket on 127.0.0.1 (a free port), for tests that play
// a Switch-delta node's peers (the switch, a data node) over real
// datagrams: send a Packet to a port, receive the next one parsed, with a
// deadline (no sleeps). Test code only.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "protocol/packet.h"

namespace forein::testing {

// Unconnected: it talks to any port on 127.0.0.1.
class LoopbackSocket {
 public:
  LoopbackSocket() {
    fd_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd_ >= 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    socklen_t len = sizeof a;
    REQUIRE(::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0);
    port_ = ntohs(a.sin_port);
  }
  ~LoopbackSocket() { ::close(fd_); }
  LoopbackSocket(const LoopbackSocket&) = delete;
  LoopbackSocket& operator=(const LoopbackSocket&) = delete;

  int fd() const { return fd_; }
  std::uint16_t port() const { return port_; }

  void send_to(std::uint16_t port, const net::Packet& p) const {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const std::vector<std::byte> wire = net::encode_packet(p);
    REQUIRE(::sendto(fd_, wire.data(), wire.size(), 0, reinterpret_cast<sockaddr*>(&a), sizeof a) ==
            static_cast<ssize_t>(wire.size()));
  }

  // The next datagram (parsed) within timeout, with its sender's port.
  std::optional<net::Packet> receive(std::chrono::milliseconds timeout, std::uint16_t* from_port = nullptr) const {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::vector<std::byte> buf(net::kMaxDatagram + 1);
    for (;;) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return std::nullopt;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      sockaddr_in from{};
      socklen_t len = sizeof from;
      const ssize_t n =
          ::recvfrom(fd_, buf.data(), buf.size(), MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&from), &len);
      if (n <= 0) continue;
      net::Packet out;
      REQUIRE(net::parse_packet(std::span<const std::byte>(buf.data(), static_cast<std::size_t>(n)), &out) ==
              net::ParseError::kNone);
      // A metadata node probes --switch with SYNC every 10 ms (switch-crash
      // recovery); a test playing the switch that does not answer them
      // passes them over.
      if (out.op == net::Op::kSync && skip_sync_) continue;
      if (from_port != nullptr) *from_port = ntohs(from.sin_port);
      return out;
    }
  }

  // Whether receive() returns SYNC probes (a test answering them).
  void keep_sync(bool keep) { skip_sync_ = !keep; }

 private:
  int fd_ = -1;
  std::uint16_t port_ = 0;
  bool skip_sync_ = true;
};

}  // namespace forein::testing

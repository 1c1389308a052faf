// A UDP client for the network tests: requests to forein-kv-server on
// loopback, each retried by SEQ until its reply arrives (deadlines, no
// sleeps), and the server's STATS counters.
#pragma once

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "protocol/packet.h"

namespace forein::testing {

class UdpClient {
 public:
  // addr: IPv4, host byte order (default loopback).
  explicit UdpClient(std::uint16_t port, std::uint32_t addr = INADDR_LOOPBACK) {
    fd_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd_ >= 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(addr);
    REQUIRE(::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  }
  ~UdpClient() { ::close(fd_); }
  UdpClient(const UdpClient&) = delete;
  UdpClient& operator=(const UdpClient&) = delete;

  void send_raw(const std::vector<std::byte>& d) {
    // ECONNREFUSED from an earlier ICMP is harmless; the datagram is resent below.
    if (::send(fd_, d.data(), d.size(), 0) < 0 && errno == ECONNREFUSED) {
      (void)::send(fd_, d.data(), d.size(), 0);
    }
  }

  // Sends p (with a fresh seq) and returns the reply with that seq,
  // retrying on timeout.
  net::Packet call(net::Packet p) {
    using Clock = std::chrono::steady_clock;
    p.seq = ++seq_;
    const std::vector<std::byte> wire = net::encode_packet(p);
    std::vector<std::byte> buf(net::kMaxDatagram + 1);
    for (int attempt = 0; attempt < 20; ++attempt) {
      if (attempt > 0) ++resends_;
      send_raw(wire);
      const auto deadline = Clock::now() + std::chrono::milliseconds(500);
      for (;;) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        if (left.count() <= 0) break;
        pollfd pf{fd_, POLLIN, 0};
        if (::poll(&pf, 1, static_cast<int>(left.count())) <= 0) break;
        const ssize_t n = ::recv(fd_, buf.data(), buf.size(), 0);
        if (n <= 0) continue;
        net::Packet reply;
        if (net::parse_packet(std::span<const std::byte>(buf.data(), static_cast<std::size_t>(n)),
                              &reply) != net::ParseError::kNone) {
          FAIL("the server sent a malformed reply");
        }
        if (reply.seq == p.seq) return reply;
      }
    }
    FAIL("no reply to seq " << p.seq);
    return {};
  }

  // Requests sent again because no reply came in time, over all calls.
  int resends() const { return resends_; }

 private:
  int fd_ = -1;
  std::uint64_t seq_ = 0;
  int resends_ = 0;
};

inline net::Packet request(net::Op op, std::string key, std::string value = {},
                           std::uint32_t count = 0) {
  net::Packet p;
  p.op = op;
  p.key = std::move(key);
  p.value = std::move(value);
  p.count = count;
  return p;
}

// The server's counters (the STATS reply's JSON object).
inline std::string server_stats(UdpClient& udp) {
  const net::Packet r = udp.call(request(net::Op::kStats, ""));
  REQUIRE(r.op == net::Op::kReply);
  REQUIRE(r.status == net::Status::kOk);
  REQUIRE(r.value.starts_with("{"));
  REQUIRE(r.value.ends_with("}"));
  return r.value;
}

}  // namespace forein::testing

#include "server_stats.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <span>
#include <vector>

#include "common/json.h"
#include "protocol/packet.h"

namespace forein::net::swgen {

ServerStats::ServerStats(const std::string& host_port) {
  const std::size_t colon = host_port.rfind(':');
  const std::string host = host_port.substr(0, colon), port = host_port.substr(colon + 1);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* res = nullptr;
  if (::getaddrinfo(host.c_str(), port.c_str(), &hints, &res) != 0 || res == nullptr) {
    std::fprintf(stderr, "forein-switch-gen: --server-stats %s: cannot resolve\n", host_port.c_str());
    return;
  }
  fd_ = ::socket(res->ai_family, SOCK_DGRAM, 0);
  if (fd_ >= 0 && ::connect(fd_, res->ai_addr, res->ai_addrlen) != 0) {
    ::close(fd_);
    fd_ = -1;
  }
  ::freeaddrinfo(res);
  if (fd_ < 0) std::fprintf(stderr, "forein-switch-gen: --server-stats %s: no socket\n", host_port.c_str());
  seq_ = static_cast<std::uint64_t>(::getpid()) << 32;
}

ServerStats::~ServerStats() {
  if (fd_ >= 0) ::close(fd_);
}

std::optional<std::string> ServerStats::query() {
  if (fd_ < 0) return std::nullopt;
  std::vector<std::byte> buf(forein::net::kMaxDatagram);
  for (int attempt = 0; attempt < 5; ++attempt) {
    forein::net::Packet req;
    req.op = forein::net::Op::kStats;
    req.seq = ++seq_;
    const std::vector<std::byte> datagram = forein::net::encode_packet(req);
    if (::send(fd_, datagram.data(), datagram.size(), 0) < 0) continue;
    pollfd p{fd_, POLLIN, 0};
    while (::poll(&p, 1, 200) > 0) {  // a late reply of an earlier try is skipped
      const ssize_t n = ::recv(fd_, buf.data(), buf.size(), 0);
      if (n <= 0) break;
      forein::net::Packet reply;
      if (forein::net::parse_packet(std::span<const std::byte>(buf.data(), static_cast<std::size_t>(n)), &reply) ==
              forein::net::ParseError::kNone &&
          reply.op == forein::net::Op::kReply && reply.seq == req.seq && reply.status == forein::net::Status::kOk) {
        return reply.value;
      }
    }
  }
  return std::nullopt;
}

double json_field(const std::string& json, const char* name) {
  const Json j = Json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return -1;
  const auto at = j.find(name);
  if (at == j.end() || !at->is_number()) return -1;
  return at->get<double>();
}

double json_field(const std::string& json, const char* object, const char* name) {
  const Json j = Json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return -1;
  const auto in = j.find(object);
  if (in == j.end() || !in->is_object()) return -1;
  const auto at = in->find(name);
  if (at == in->end() || !at->is_number()) return -1;
  return at->get<double>();
}

}  // namespace forein::net::swgen

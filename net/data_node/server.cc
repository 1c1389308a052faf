#include "data_node/server.h"

#include "common/udp_listen.h"
#include "common/udp_serve.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace forein::net::data_node {

namespace {

constexpr std::size_t kReceiveBuffer = 65536;

std::string errno_text(int err) { return std::strerror(err); }

}  // namespace

Server::Server(const Options& options) : options_(options) {
  const NodeId node{options_.node, options_.nodes};
  preloaded_ = preload(log_, node, options_.keys, options_.record_bytes);
  handler_ = std::make_unique<Handler>(log_, node, stats_, [this] {
    Json more = Json::object();
    more["preloaded"] = preloaded_;
    more["threads"] = options_.threads;
    more["port"] = port_.load();
    return more;
  });
}

Server::~Server() {
  stop();
  for (int fd : sockets_) ::close(fd);
  for (int fd : stop_pipe_) {
    if (fd >= 0) ::close(fd);
  }
}

std::uint16_t Server::bind() {
  port_.store(listen_udp(options_.listen_host, options_.listen_port, options_.threads, &sockets_));
  if (::pipe2(stop_pipe_, O_CLOEXEC) != 0) throw std::runtime_error("pipe: " + errno_text(errno));
  return port_.load();
}

void Server::start() {
  if (started_) return;
  started_ = true;
  for (int fd : sockets_) workers_.emplace_back([this, fd] { worker(fd); });
}

void Server::stop() {
  if (!started_ || stopping_.exchange(true)) return;
  const char byte = 's';
  // The pipe stays readable: every worker's poll() sees it.
  while (::write(stop_pipe_[1], &byte, 1) < 0 && errno == EINTR) {
  }
  for (auto& t : workers_) t.join();
  workers_.clear();
}

void Server::worker(int fd) {
  serve_udp(
      fd, stop_pipe_[0], stopping_, kReceiveBuffer,
      [&](std::span<const std::byte> datagram, bool oversized) -> std::optional<std::vector<std::byte>> {
        if (oversized) {
          stats_.count(Counter::kDatagrams);
          stats_.count_drop(DropReason::kOversized);
          return std::nullopt;
        }
        return handler_->serve(datagram);
      },
      [&] { stats_.count_drop(DropReason::kSendFailed); });
}

}  // namespace forein::net::data_node

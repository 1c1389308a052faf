// The UDP servers' worker loop (forein-kv-server, forein-data-node): block
// in poll() on the socket and a stop pipe (no busy polling), drain what is
// queued, hand each datagram to the server and send back what it answers.
#pragma once

#include <poll.h>
#include <sys/socket.h>

#include <atomic>
#include <concepts>
#include <cerrno>
#include <cstddef>
#include <optional>
#include <span>
#include <vector>

namespace forein::net {

// What a server does with one datagram: the reply to send to its sender,
// or nullopt (dropped, counted by the server). A datagram longer than the
// buffer arrives with oversized set and its first bytes only.
template <typename Serve>
concept DatagramServer = requires(Serve serve, std::span<const std::byte> datagram, bool oversized) {
  { serve(datagram, oversized) } -> std::same_as<std::optional<std::vector<std::byte>>>;
};

// Runs until stopping is set or stop_fd becomes readable; a reply the
// kernel refuses calls send_failed().
template <DatagramServer Serve, typename SendFailed>
void serve_udp(int fd, int stop_fd, const std::atomic<bool>& stopping, std::size_t buffer_bytes, Serve&& serve,
               SendFailed&& send_failed) {
  std::vector<std::byte> buf(buffer_bytes);
  pollfd fds[2] = {{fd, POLLIN, 0}, {stop_fd, POLLIN, 0}};
  while (!stopping.load(std::memory_order_relaxed)) {
    const int r = ::poll(fds, 2, -1);
    if (r < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[1].revents != 0) break;
    // Drain what is queued, then block again.
    while (!stopping.load(std::memory_order_relaxed)) {
      sockaddr_storage from{};
      socklen_t from_len = sizeof from;
      const ssize_t n = ::recvfrom(fd, buf.data(), buf.size(), MSG_DONTWAIT | MSG_TRUNC,
                                   reinterpret_cast<sockaddr*>(&from), &from_len);
      if (n < 0) {
        if (errno == EINTR) continue;
        break;  // EAGAIN: drained (or a transient error: poll again)
      }
      const bool oversized = static_cast<std::size_t>(n) > buf.size();
      const std::size_t got = oversized ? buf.size() : static_cast<std::size_t>(n);
      const std::optional<std::vector<std::byte>> out = serve(std::span<const std::byte>(buf.data(), got), oversized);
      if (!out) continue;
      if (::sendto(fd, out->data(), out->size(), 0, reinterpret_cast<const sockaddr*>(&from), from_len) < 0) {
        send_failed();
      }
    }
  }
}

}  // namespace forein::net

#include "data_node/server.h"

#include "common/udp_address.h"
#include "common/udp_listen.h"
#include "common/cli.h"
#include "common/udp_serve.h"
#include "protocol/secondary_index.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <time.h>

#include <bit>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <queue>
#include <stdexcept>
#include <unordered_map>
#include <utility>

namespace forein::net::data_node {

namespace {

constexpr std::size_t kReceiveBuffer = 65536;

std::string errno_text(int err) { return std::strerror(err); }

using Clock = std::chrono::steady_clock;

// A primary's worker keeps at most this many writes waiting for ACKs;
// more get SERVER_ERROR at once (counted replicate_backlog).
constexpr std::size_t kMaxPendingWrites = 65536;
// A LOG_REPLICATE's seq: the worker's write number << kBackupBits | the
// backup's index, so an ACK names both.
constexpr unsigned kBackupBits = 4;
static_assert((std::size_t{1} << kBackupBits) >= kMaxBackups);

Role role_of(const Options& o) {
  if (o.backup) return Role::kBackup;
  return o.backups.empty() ? Role::kAlone : Role::kPrimary;
}

void send_to(int fd, const std::vector<std::byte>& bytes, const sockaddr_storage& to, socklen_t len,
             DataNodeStats& stats) {
  if (::sendto(fd, bytes.data(), bytes.size(), 0, reinterpret_cast<const sockaddr*>(&to), len) < 0) {
    stats.count_drop(DropReason::kSendFailed);
  }
}

}  // namespace

Server::Server(const Options& options)
    : options_(options),
      log_(DataLog::kMaxLogId, options.secondary_index ? LogMode::kSecondaryIndex : LogMode::kPerSlot) {
  if (options_.secondary_index && options_.secondary_keys == 0) {
    options_.secondary_keys = default_secondary_keys(options_.keys);  // parse_options sets it; a test may not
  }
  const NodeId node{options_.node, options_.nodes};
  preloaded_ = options_.secondary_index
                   ? preload_secondary_index(log_, options_.keys, options_.record_bytes, options_.secondary_keys)
                   : preload(log_, node, options_.keys, options_.record_bytes);
  handler_ = std::make_unique<Handler>(log_, node, stats_, [this] {
    Json more = Json::object();
    more["preloaded"] = preloaded_;
    more["threads"] = options_.threads;
    more["port"] = port_.load();
    if (!options_.backups.empty()) {
      Json names = Json::array();
      for (const std::string& b : options_.backups) names.push_back(b);
      more["backups"] = names;
      more["acks_needed"] = options_.acks;
      more["replicate_timeout_us"] = options_.replicate_timeout_us;
    }
    if (options_.secondary_index) more["secondary_keys"] = options_.secondary_keys;
    return more;
  }, role_of(options_));
}

Server::~Server() {
  stop();
  for (int fd : sockets_) ::close(fd);
  for (int fd : backup_sockets_) ::close(fd);
  for (int fd : stop_pipe_) {
    if (fd >= 0) ::close(fd);
  }
}

std::uint16_t Server::bind() {
  port_.store(listen_udp(options_.listen_host, options_.listen_port, options_.threads, &sockets_));
  if (::pipe2(stop_pipe_, O_CLOEXEC) != 0) throw std::runtime_error("pipe: " + errno_text(errno));
  for (const std::string& b : options_.backups) {
    std::string host;
    std::uint16_t port = 0;
    if (!cli::parse_host_port(b, 1, &host, &port)) throw std::runtime_error("--backups: bad address " + b);
    UdpAddress address;
    try {
      address = resolve_udp(host, port, AF_UNSPEC);
    } catch (const std::runtime_error& e) {
      throw std::runtime_error(std::string("--backups: ") + e.what());
    }
    Peer peer;
    std::memcpy(&peer.addr, &address.storage, address.length);
    peer.len = address.length;
    peer.name = b;
    if (!backups_.empty() && peer.addr.ss_family != backups_.front().addr.ss_family) {
      throw std::runtime_error("--backups: mixes IPv4 and IPv6 addresses");
    }
    backups_.push_back(peer);
  }
  if (!backups_.empty()) {
    for (std::size_t i = 0; i < sockets_.size(); ++i) {
      const int fd = ::socket(backups_.front().addr.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
      if (fd < 0) throw std::runtime_error("backup socket: " + errno_text(errno));
      backup_sockets_.push_back(fd);
    }
  }
  return port_.load();
}

void Server::start() {
  if (started_) return;
  started_ = true;
  for (std::size_t i = 0; i < sockets_.size(); ++i) {
    const int fd = sockets_[i];
    if (backups_.empty()) {
      workers_.emplace_back([this, fd] { worker(fd); });
    } else {
      const int backup_fd = backup_sockets_[i];
      workers_.emplace_back([this, fd, backup_fd] { primary_worker(fd, backup_fd); });
    }
  }
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

// One worker of a primary: its client socket (SO_REUSEPORT), its own
// backup socket and its pending writes; nothing here is shared with the
// other workers but the log and the counters (both thread-safe).
//
// The order is the paper's (section V-D: "after receiving 1 ACK from the
// backup replicas, it installs its local log and replies to the client"),
// with one refinement: the entry's log id and timestamp are taken when it
// is replicated (reserve), since the backups store the entry at that id
// and timestamp and the timestamp orders the key's writes at the switch.
// The reserved entry is not readable (LOG_READ: NOT_FOUND, LOG_FETCH: skipped)
// until --acks ACKs are in; then it is committed and the client answered.
void Server::primary_worker(int fd, int backup_fd) {
  struct Pending {
    sockaddr_storage from{};
    socklen_t from_len = 0;
    Packet reply;      // the client's OK reply (location, visibility header)
    Packet replicate;  // the LOG_REPLICATE, seq set per backup
    std::uint32_t log_id = 0;
    std::uint32_t acked = 0;  // a bit per backup
    unsigned sends = 0;       // tries so far
    Clock::time_point deadline;
  };
  const std::size_t nbackups = backups_.size();
  const unsigned needed = options_.acks;
  const auto first_wait = std::chrono::microseconds(options_.replicate_timeout_us);
  std::unordered_map<std::uint64_t, Pending> pending;
  // (deadline, write number), earliest first; stale ones (answered, or
  // resent with a later deadline) are skipped when they come up.
  using Timer = std::pair<Clock::time_point, std::uint64_t>;
  std::priority_queue<Timer, std::vector<Timer>, std::greater<>> timers;
  std::uint64_t next_write = 1;
  std::vector<std::byte> buf(kReceiveBuffer);
  DataNodeStats& stats = stats_;

  const auto reply_to_client = [&](const Pending& p, const Packet& reply) {
    stats.count_reply(reply.status);
    const std::optional<std::vector<std::byte>> out = handler_->encode_reply(reply);
    if (out) send_to(fd, *out, p.from, p.from_len, stats);
  };
  const auto send_replicate = [&](std::uint64_t n, Pending& p, bool resend) {
    for (std::size_t i = 0; i < nbackups; ++i) {
      if ((p.acked & (1u << i)) != 0) continue;
      p.replicate.seq = (n << kBackupBits) | i;
      const std::optional<std::vector<std::byte>> out = handler_->encode_reply(p.replicate);
      if (!out) continue;
      send_to(backup_fd, *out, backups_[i].addr, backups_[i].len, stats);
      stats.count(Counter::kReplicateSent);
      if (resend) stats.count(Counter::kReplicateResent);
    }
    ++p.sends;
    p.deadline = Clock::now() + first_wait * (1u << (p.sends - 1));
    timers.emplace(p.deadline, n);
  };
  const auto client_datagram = [&](std::span<const std::byte> datagram, bool oversized, const sockaddr_storage& from,
                                   socklen_t from_len) {
    if (oversized) {
      stats.count(Counter::kDatagrams);
      stats.count_drop(DropReason::kOversized);
      return;
    }
    std::optional<Packet> request = handler_->parse_request(datagram);
    if (!request) return;
    if (request->op != Op::kLogAppend) {
      const Packet reply = handler_->handle(*request);
      const std::optional<std::vector<std::byte>> out = handler_->encode_reply(reply);
      if (out) send_to(fd, *out, from, from_len, stats);
      return;
    }
    Pending p;
    p.from = from;
    p.from_len = from_len;
    if (pending.size() >= kMaxPendingWrites) {
      stats.count(Counter::kRequests);
      stats.count(Counter::kReplicateBacklog);
      Packet e;
      e.op = Op::kError;
      e.status = Status::kServerError;
      e.seq = request->seq;
      e.key = request->key;
      e.value = "replication backlog full: " + std::to_string(kMaxPendingWrites) + " writes wait for backup ACKs";
      reply_to_client(p, e);
      return;
    }
    std::optional<Packet> replicate = handler_->begin_append(*request, &p.reply);
    if (!replicate) {
      reply_to_client(p, p.reply);
      return;
    }
    p.log_id = replicate->visibility->aux;
    p.replicate = std::move(*replicate);
    const std::uint64_t n = next_write++;
    Pending& at = pending.emplace(n, std::move(p)).first->second;
    send_replicate(n, at, false);
  };
  const auto backup_datagram = [&](std::span<const std::byte> datagram, bool oversized) {
    Packet ack;
    if (oversized || parse_packet(datagram, &ack) != ParseError::kNone ||
        (ack.op != Op::kReply && ack.op != Op::kError)) {
      stats.count(Counter::kReplicateErrors);
      return;
    }
    const std::uint64_t n = ack.seq >> kBackupBits;
    const std::size_t i = ack.seq & ((1u << kBackupBits) - 1);
    const auto it = pending.find(n);
    if (ack.op == Op::kError || ack.status != Status::kOk) {
      stats.count(Counter::kReplicateErrors);  // resent on its timeout; given up after the last
      return;
    }
    if (it == pending.end() || i >= nbackups || (it->second.acked & (1u << i)) != 0) {
      stats.count(Counter::kAcksLate);
      return;
    }
    Pending& p = it->second;
    p.acked |= 1u << i;
    stats.count(Counter::kAcks);
    if (static_cast<unsigned>(std::popcount(p.acked)) < needed) return;
    // The needed ACKs are in: install the local entry, then answer.
    handler_->commit_append(p.log_id);
    reply_to_client(p, p.reply);
    pending.erase(it);
  };
  const auto expire = [&](Clock::time_point now) {
    while (!timers.empty() && timers.top().first <= now) {
      const auto [deadline, n] = timers.top();
      timers.pop();
      const auto it = pending.find(n);
      if (it == pending.end() || it->second.deadline != deadline) continue;
      Pending& p = it->second;
      if (p.sends < kReplicateSends) {
        send_replicate(n, p, true);
        continue;
      }
      // Given up: the entry is committed locally all the same (its id is
      // taken; a later fetch must not stall on it) and the client told
      // SERVER_ERROR, an outcome it cannot know (as a lost reply); a backup
      // that missed it has a gap at this id.
      stats.count(Counter::kReplicateGaveUp);
      handler_->commit_append(p.log_id);
      Packet e = p.reply;
      e.op = Op::kError;
      e.status = Status::kServerError;
      e.visibility.reset();
      e.value = "replication: " + std::to_string(std::popcount(p.acked)) + " of the " + std::to_string(needed) +
                " backup ACKs needed after " + std::to_string(p.sends) + " sends of LOG_REPLICATE";
      reply_to_client(p, e);
      pending.erase(it);
    }
  };

  pollfd fds[3] = {{fd, POLLIN, 0}, {backup_fd, POLLIN, 0}, {stop_pipe_[0], POLLIN, 0}};
  while (!stopping_.load(std::memory_order_relaxed)) {
    timespec wait{};
    timespec* wait_at = nullptr;
    if (!timers.empty()) {
      const auto left = std::max<Clock::duration>(timers.top().first - Clock::now(), Clock::duration::zero());
      const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
      wait.tv_sec = static_cast<time_t>(ns / 1000000000);
      wait.tv_nsec = static_cast<long>(ns % 1000000000);
      wait_at = &wait;
    }
    const int r = ::ppoll(fds, 3, wait_at, nullptr);
    if (r < 0 && errno != EINTR) break;
    if (r > 0 && fds[2].revents != 0) break;
    // Drain both sockets (ACKs first: they free pending writes), then the timers.
    for (int which = 1; which >= 0; --which) {
      const int sock = which == 1 ? backup_fd : fd;
      while (!stopping_.load(std::memory_order_relaxed)) {
        sockaddr_storage from{};
        socklen_t from_len = sizeof from;
        const ssize_t n = ::recvfrom(sock, buf.data(), buf.size(), MSG_DONTWAIT | MSG_TRUNC,
                                     reinterpret_cast<sockaddr*>(&from), &from_len);
        if (n < 0) {
          if (errno == EINTR) continue;
          break;
        }
        const bool oversized = static_cast<std::size_t>(n) > buf.size();
        const std::span<const std::byte> got(buf.data(), oversized ? buf.size() : static_cast<std::size_t>(n));
        if (which == 1) {
          backup_datagram(got, oversized);
        } else {
          client_datagram(got, oversized, from, from_len);
        }
      }
    }
    expire(Clock::now());
  }
}

}  // namespace forein::net::data_node

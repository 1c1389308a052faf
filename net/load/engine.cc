#include "load/engine.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "forein/dpa/store.h"
#include "forein/dpa/types.h"
#include "load/history.h"
#include "load/ordered.h"
#include "load/sidx_ops.h"
#include "load/verify.h"
#include "load/workload.h"
#include "protocol/dataset.h"
#include "protocol/packet.h"
#include "protocol/secondary_index.h"

namespace forein::net::load {

namespace {

using Clock = std::chrono::steady_clock;

// Connected to HOST:PORT; with route_ports > 0 (--route-by-key) not
// connected: send(d, i) goes to PORT + i.
class Socket {
 public:
  Socket(const std::string& host, std::uint16_t port, unsigned route_ports) : port_(port) {
    addrinfo hints{};
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_DGRAM;
    addrinfo* res = nullptr;
    const std::string service = std::to_string(port);
    if (int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &res); rc != 0) {
      throw std::runtime_error("cannot resolve " + host + ": " + gai_strerror(rc));
    }
    fd_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd_ < 0) {
      freeaddrinfo(res);
      throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
    }
    std::memcpy(&addr_, res->ai_addr, sizeof addr_);
    const int rc = route_ports > 0 ? 0 : ::connect(fd_, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    if (rc != 0) throw std::runtime_error(std::string("connect: ") + std::strerror(errno));
    routed_ = route_ports > 0;
    int buf = 4 << 20;
    (void)::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
    (void)::setsockopt(fd_, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
  }
  ~Socket() {
    if (fd_ >= 0) ::close(fd_);
  }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  int fd() const { return fd_; }

  ssize_t send(const std::vector<std::byte>& datagram, unsigned port_offset) {
    if (!routed_) return ::send(fd_, datagram.data(), datagram.size(), 0);
    sockaddr_in to = addr_;
    to.sin_port = htons(static_cast<std::uint16_t>(port_ + port_offset));
    return ::sendto(fd_, datagram.data(), datagram.size(), 0, reinterpret_cast<const sockaddr*>(&to), sizeof to);
  }

 private:
  int fd_ = -1;
  std::uint16_t port_ = 0;
  bool routed_ = false;
  sockaddr_in addr_{};
};

struct Slot {
  bool active = false;
  Operation op;
  bool rmw_write = false;  // kRmw: the PUT step
  std::uint64_t seq = 0;
  std::vector<std::byte> datagram;
  Clock::time_point started;   // the operation's start (latency)
  Clock::time_point deadline;  // the current attempt's
  std::uint32_t attempts = 0;
  std::uint32_t resends = 0;  // over all the operation's requests (--history)
  unsigned port_offset = 0;  // --route-by-key: the key's port
  bool is_read = false;
  Verifier::Ticket read_ticket = 0;
  bool is_write = false;
  Verifier::WriteId write_id = 0;
  // write-only / write-heavy: the ordered operation's state machine.
  std::optional<OrderedWrite> ordered_write;
  std::optional<OrderedRead> ordered_read;
  // secondary-index: the write's or read's state machine (load/sidx_ops.h).
  std::optional<SidxWrite> sidx_write;
  std::optional<SidxRead> sidx_read;

  bool ordered() const { return ordered_write || ordered_read || sidx_write || sidx_read; }
  bool writes() const { return ordered_write || sidx_write; }
};

class Engine {
 public:
  Engine(const LoadOptions& o, const HintSource* hints)
      : o_(o),
        hints_(hints),
        socket_(o.target_host, o.target_port, o.route_by_key),
        gen_(o.workload, o.dist, o.keys, o.theta, o.seed),
        verifier_(o.keys),
        ordered_(is_ordered(o.workload)),
        sidx_(o.workload == Workload::kSecondaryIndex),
        slots_(o.outstanding),
        timeout_(std::chrono::milliseconds(o.timeout_ms)) {
    report_.options = o;
    if (sidx_) {
      // Reads draw secondary keys from a distribution of their own (the
      // same kind, over S keys), with a stream of its own.
      secondary_gen_.emplace(Workload::kC, o.dist, o.secondary_keys, o.theta, o.seed ^ 0x5EC0'DA27'1DE8'0000ull);
    }
    if (!o.history.empty()) {
      std::string header = "forein-load history 1 keys=" + std::to_string(o.keys) + " workload=" +
                           to_string(o.workload) + " dist=" + to_string(o.dist) + " seed=" + std::to_string(o.seed) +
                           " outstanding=" + std::to_string(o.outstanding);
      if (sidx_) {
        header += " secondary_keys=" + std::to_string(o.secondary_keys) +
                  " sidx_read_count=" + std::to_string(o.sidx_read_count);
      }
      history_.emplace(o.history, header);
    }
  }

  RunReport run() {
    const Clock::time_point start = Clock::now();
    end_ = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o_.seconds));
    Clock::time_point last_answer = start;
    for (std::size_t i = 0; i < slots_.size(); ++i) start_operation(i, start);
    std::vector<std::byte> buf(kMaxDatagram + 1);
    while (active_ > 0) {
      Clock::time_point now = Clock::now();
      // Sleep until a reply or the earliest deadline.
      Clock::time_point wake = Clock::time_point::max();
      for (const Slot& s : slots_) {
        if (s.active && s.deadline < wake) wake = s.deadline;
      }
      if (wake > now) {
        const auto wait = std::chrono::duration_cast<std::chrono::nanoseconds>(wake - now);
        timespec ts{};
        ts.tv_sec = static_cast<time_t>(wait.count() / 1'000'000'000);
        ts.tv_nsec = static_cast<long>(wait.count() % 1'000'000'000);
        pollfd p{socket_.fd(), POLLIN, 0};
        const int rc = ::ppoll(&p, 1, &ts, nullptr);
        if (rc < 0 && errno != EINTR) throw std::runtime_error(std::string("poll: ") + std::strerror(errno));
      }
      for (;;) {
        const ssize_t n = ::recv(socket_.fd(), buf.data(), buf.size(), 0);
        if (n < 0) {
          if (errno == EAGAIN || errno == EWOULDBLOCK) break;
          if (errno == EINTR) continue;
          // Nobody listening yet, or no way there now (a switch or its
          // device restarting): the timeout resends.
          if (errno == ECONNREFUSED || errno == EHOSTUNREACH || errno == ENETUNREACH || errno == EHOSTDOWN ||
              errno == ENETDOWN) {
            continue;
          }
          throw std::runtime_error(std::string("recv: ") + std::strerror(errno));
        }
        now = Clock::now();
        if (handle_reply(std::span<const std::byte>(buf.data(), static_cast<std::size_t>(n)), now)) {
          last_answer = now;
        }
      }
      now = Clock::now();
      for (std::size_t i = 0; i < slots_.size(); ++i) {
        Slot& s = slots_[i];
        if (!s.active || s.deadline > now) continue;
        if (s.attempts <= o_.retries) {
          ++report_.retries;
          ++s.resends;
          if (s.is_write) verifier_.write_resent(s.write_id);
          send_attempt(s, now);
        } else {
          ++report_.timeouts;
          report_.timeout_key_min = std::min(report_.timeout_key_min, s.op.key);
          report_.timeout_key_max = std::max(report_.timeout_key_max, s.op.key);
          if (s.is_read) verifier_.end_read(s.read_ticket);
          if (s.is_write) verifier_.write_failed(s.write_id);
          record_history(i, now, HistoryOp::Outcome::kFailed);
          finish(i, now, /*completed=*/false);
        }
      }
    }
    report_.elapsed_s = std::chrono::duration<double>(last_answer - start).count();
    if (history_) history_->close();
    if (hints_ != nullptr) {
      report_.agent_fetches = hints_->fetches();
      report_.agent_errors = hints_->errors();
    }
    return report_;
  }

 private:
  void start_operation(std::size_t i, Clock::time_point now) {
    Slot& s = slots_[i];
    if (now >= end_) return;
    s = Slot{};
    s.active = true;
    s.op = gen_.next();
    s.started = now;
    ++active_;
    issue(s, now);
  }

  // Builds and sends the slot's current request.
  void issue(Slot& s, Clock::time_point now) {
    if (ordered_) {
      issue_ordered(s, now);
      return;
    }
    Packet p;
    p.key = dataset_key(s.op.key);
    s.is_read = s.is_write = false;
    switch (s.op.kind) {
      case OpKind::kRead:
        p.op = Op::kGet;
        break;
      case OpKind::kScan:
        p.op = Op::kScan;
        p.count = s.op.scan_len;
        break;
      case OpKind::kRmw:
        p.op = s.rmw_write ? Op::kPut : Op::kGet;
        break;
      case OpKind::kUpdate:
      case OpKind::kInsert:
        p.op = Op::kPut;
        break;
      case OpKind::kDelete:
        p.op = Op::kDelete;
        break;
      case OpKind::kWrite:  // only in the ordered workloads (issue_ordered)
        p.op = Op::kPut;
        break;
    }
    if (p.op == Op::kPut) {
      const std::uint32_t version = next_version_++;
      p.value = dataset_value(s.op.key, version);
      if (o_.verify) {
        s.is_write = true;
        s.write_id = verifier_.begin_write(s.op.key, version);
      }
    } else if (p.op == Op::kDelete) {
      if (o_.verify) {
        s.is_write = true;
        s.write_id = verifier_.begin_write(s.op.key, Verifier::kAbsent);
      }
    } else if (o_.verify) {
      s.is_read = true;
      s.read_ticket = verifier_.begin_read();
    }
    if (hints_ != nullptr) {
      p.hints = hints_->hint(p.key);
      if (p.hints) ++report_.hinted;
    }
    // DPA-Store's clients pick the key's traverser thread by its port.
    if (o_.route_by_key != 0) {
      s.port_offset =
          static_cast<unsigned>(offload::dpa::traverser_of(s.op.key, offload::dpa::kTraverserThreads) % o_.route_by_key);
    }
    send_new(s, p, now);
  }

  // Switch-delta's write or read: its first request (LOG_APPEND or
  // META_GET); handle_ordered sends the next ones.
  void issue_ordered(Slot& s, Clock::time_point now) {
    s.is_read = s.is_write = false;
    Packet p;
    if (sidx_ && s.op.kind == OpKind::kWrite) {
      const std::uint32_t version = next_version_++;
      s.sidx_write.emplace(s.op.key, version, o_.secondary_keys, o_.record_bytes);
      p = s.sidx_write->start();
      if (o_.verify) {
        s.is_write = true;
        s.write_id = verifier_.begin_write(s.op.key, version);
      }
    } else if (sidx_) {
      s.op.key = secondary_gen_->draw_key();  // a secondary index j
      s.sidx_read.emplace(s.op.key, o_.sidx_read_count);
      p = s.sidx_read->start();
      if (o_.verify) {
        s.is_read = true;
        s.read_ticket = verifier_.begin_read();
      }
    } else if (s.op.kind == OpKind::kWrite) {
      const std::uint32_t version = next_version_++;
      s.ordered_write.emplace(s.op.key, version, o_.record_bytes);
      p = s.ordered_write->start();
      if (o_.verify) {
        s.is_write = true;
        s.write_id = verifier_.begin_write(s.op.key, version);
      }
    } else {
      s.ordered_read.emplace(s.op.key);
      p = s.ordered_read->start();
      if (o_.verify) {
        s.is_read = true;
        s.read_ticket = verifier_.begin_read();
      }
    }
    send_new(s, p, now);
  }

  // A new request (new SEQ) for the slot: its first attempt.
  void send_new(Slot& s, Packet& p, Clock::time_point now) {
    p.seq = next_seq_++;
    s.seq = p.seq;
    s.datagram = encode_packet(p);
    s.attempts = 0;
    by_seq_[s.seq] = static_cast<std::size_t>(&s - slots_.data());
    ++report_.requests;
    send_attempt(s, now);
  }

  void send_attempt(Slot& s, Clock::time_point now) {
    ++s.attempts;
    s.deadline = now + timeout_;
    const ssize_t n = socket_.send(s.datagram, s.port_offset);
    if (n < 0) ++report_.send_failures;  // EAGAIN, ECONNREFUSED ...: the timeout resends
  }

  void finish(std::size_t i, Clock::time_point now, bool completed) {
    Slot& s = slots_[i];
    by_seq_.erase(s.seq);
    if (completed) {
      ++report_.ops;
      ++report_.per_op[static_cast<std::size_t>(s.op.kind)];
      report_.latency.record(static_cast<std::uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(now - s.started).count()));
    }
    s.active = false;
    --active_;
    start_operation(i, now);
  }

  // True if the datagram answered a request this client waits for.
  bool handle_reply(std::span<const std::byte> d, Clock::time_point now) {
    Packet r;
    if (parse_packet(d, &r) != ParseError::kNone) {
      ++report_.errors;
      return false;
    }
    const auto it = by_seq_.find(r.seq);
    if (it == by_seq_.end()) {
      ++report_.late_replies;
      return false;
    }
    const std::size_t i = it->second;
    Slot& s = slots_[i];
    if (s.ordered()) {
      handle_ordered(i, r, now);
      return true;
    }
    bool ok = r.op == Op::kReply && (r.status == Status::kOk || r.status == Status::kNotFound);
    const Op sent = static_cast<Op>(static_cast<std::uint8_t>(s.datagram[3]));
    if (ok && r.status == Status::kNotFound && sent == Op::kPut) ok = false;
    std::vector<ScanEntry> entries;
    if (ok && sent == Op::kScan && r.status == Status::kOk) {
      auto decoded = decode_scan_entries(r.value);
      if (!decoded || decoded->size() != r.count) {
        ok = false;
      } else {
        entries = std::move(*decoded);
      }
    }
    if (!ok) ++report_.errors;
    if (s.is_write) {
      // Whatever the answer, the write may have landed: an ack is only an
      // ack when it says so.
      if (ok) {
        verifier_.write_acked(s.write_id);
      } else {
        verifier_.write_failed(s.write_id);
      }
    }
    if (s.is_read) {
      if (ok) {
        ++report_.verified;
        bool right = true;
        std::string why;
        if (sent == Op::kGet) {
          std::optional<std::string> value;
          if (r.status == Status::kOk) value = r.value;
          right = verifier_.check_get(s.op.key, s.read_ticket, value);
          if (!right) why = "GET key " + std::to_string(s.op.key) + (value ? " value " + *value : " not found");
        } else {
          // SCAN answered not found: no entries at all.
          right = verifier_.check_scan(s.op.key, s.op.scan_len, s.read_ticket, entries, r.more, &why);
          if (!right) why = "SCAN from " + std::to_string(s.op.key) + ": " + why;
        }
        if (!right) {
          ++report_.wrong;
          if (report_.wrong <= 10) std::fprintf(stderr, "forein-load: wrong answer: %s\n", why.c_str());
        }
      }
      verifier_.end_read(s.read_ticket);
    }
    if (sent == Op::kGet && r.status == Status::kNotFound) ++report_.not_found;
    if (ok && s.op.kind == OpKind::kRmw && !s.rmw_write) {
      by_seq_.erase(s.seq);
      s.rmw_write = true;
      issue(s, now);
      return true;
    }
    finish(i, now, /*completed=*/true);
    return true;
  }

  // The reply to an ordered operation's current request: its next request,
  // or its end (committed, a record, an error).
  void handle_ordered(std::size_t i, const Packet& r, Clock::time_point now) {
    Slot& s = slots_[i];
    Step step = s.ordered_write ? s.ordered_write->on_reply(r)
                : s.ordered_read ? s.ordered_read->on_reply(r)
                : s.sidx_write   ? s.sidx_write->on_reply(r)
                                 : s.sidx_read->on_reply(r);
    if (s.sidx_read) {
      while (auto looked = s.sidx_read->take_looked()) check_looked(s, *looked);
    }
    switch (step.kind) {
      case Step::Kind::kRetry:
        ++report_.read_retries;
        [[fallthrough]];
      case Step::Kind::kSend:
        by_seq_.erase(s.seq);
        send_new(s, step.request, now);
        return;
      case Step::Kind::kFailed:
        ++report_.errors;
        if (++printed_errors_ <= 10) {
          std::fprintf(stderr, "forein-load: error: key %llu: %s\n", static_cast<unsigned long long>(s.op.key),
                       step.why.c_str());
        }
        if (s.is_write) verifier_.write_failed(s.write_id);  // it may still land
        if (s.is_read) verifier_.end_read(s.read_ticket);
        record_history(i, now, HistoryOp::Outcome::kFailed);
        break;
      case Step::Kind::kDone: {
        const auto ns = static_cast<std::uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(now - s.started).count());
        if (s.writes()) {
          const bool one_rtt = s.ordered_write ? s.ordered_write->one_rtt() : s.sidx_write->one_rtt();
          ++(one_rtt ? report_.writes_one_rtt : report_.writes_two_phase);
          report_.write_latency.record(ns);
          if (s.is_write) verifier_.write_acked(s.write_id);
        } else if (s.sidx_read) {
          // Each record was checked as it came (check_looked).
          const SidxRead& rd = *s.sidx_read;
          report_.sidx_keys_listed += rd.listed_entries();
          report_.sidx_keys_kept += rd.kept().size();
          report_.sidx_keys_dropped += rd.dropped();
          report_.not_found += rd.not_found();
          if (rd.truncated()) ++report_.sidx_reads_truncated;
          report_.read_latency.record(ns);
          if (s.is_read) verifier_.end_read(s.read_ticket);
        } else {
          if (s.ordered_read->from_switch()) ++report_.reads_from_switch;
          report_.read_latency.record(ns);
          if (s.is_read) {
            ++report_.verified;
            std::string why;
            if (!verifier_.check_record(s.op.key, s.read_ticket, s.ordered_read->record(), &why)) {
              ++report_.wrong;
              if (report_.wrong <= 10) std::fprintf(stderr, "forein-load: wrong answer: %s\n", why.c_str());
            }
            verifier_.end_read(s.read_ticket);
          }
        }
        record_history(i, now, HistoryOp::Outcome::kOk);
        break;
      }
    }
    finish(i, now, /*completed=*/true);
  }

  // --verify, secondary-index: a record a multi-read returned for a listed
  // primary key, kept or not, must be a record of that key in a state the
  // key may hold (the ordered reads' rule, from the read's start), naming
  // the secondary key its version names.
  void check_looked(Slot& s, const SidxRead::Looked& looked) {
    if (!s.is_read) return;
    ++report_.verified;
    std::string why;
    bool right = verifier_.check_record(looked.index, s.read_ticket, looked.payload, &why);
    if (right) {
      const auto version = record_version(looked.payload, looked.index);
      if (looked.secondary != secondary_key_of(looked.index, *version, o_.secondary_keys)) {
        right = false;
        why = "key " + std::to_string(looked.index) + " version " + std::to_string(*version) +
              ": the record names another secondary key than its version's";
      }
    }
    if (!right) {
      ++report_.wrong;
      if (report_.wrong <= 10) {
        std::fprintf(stderr, "forein-load: wrong answer: secondary key %llu: %s\n",
                     static_cast<unsigned long long>(s.op.key), why.c_str());
      }
    }
  }

  // --history: the ordered operation in slot i ends (its record is read
  // from the slot's state machine, so this comes before finish()).
  void record_history(std::size_t i, Clock::time_point now, HistoryOp::Outcome outcome) {
    const Slot& s = slots_[i];
    if (!history_ || !s.ordered()) return;
    HistoryOp h;
    h.slot = static_cast<std::uint32_t>(i);
    h.write = s.writes();
    h.key = s.op.key;
    h.sidx = s.sidx_write || s.sidx_read;
    if (s.sidx_write) {
      h.version = s.sidx_write->version();
      h.secondary = s.sidx_write->secondary_index();
    } else if (s.sidx_read) {
      if (outcome == HistoryOp::Outcome::kOk) {
        h.truncated = s.sidx_read->truncated();
        for (const SidxRead::Member& m : s.sidx_read->kept()) h.members.push_back(SidxMember{m.index, m.version});
      }
    } else if (h.write) {
      h.version = s.ordered_write->version();
    } else if (outcome == HistoryOp::Outcome::kOk) {
      const auto v = record_version(s.ordered_read->record(), s.op.key);
      h.version = v ? static_cast<std::int64_t>(*v) : HistoryOp::kBadRecord;
    }
    // steady_clock is CLOCK_MONOTONIC (libstdc++ on Linux).
    h.invoke_ns = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(s.started.time_since_epoch()).count());
    h.response_ns = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count());
    h.outcome = outcome;
    h.resends = s.resends;
    history_->add(h);
  }

  const LoadOptions& o_;
  const HintSource* hints_;
  Socket socket_;
  WorkloadGenerator gen_;
  Verifier verifier_;
  bool ordered_;
  bool sidx_;
  std::optional<WorkloadGenerator> secondary_gen_;  // secondary-index: reads' secondary keys
  std::vector<Slot> slots_;
  std::unordered_map<std::uint64_t, std::size_t> by_seq_;
  Clock::duration timeout_;
  Clock::time_point end_;
  std::size_t active_ = 0;
  std::uint64_t next_seq_ = 1;
  std::uint32_t next_version_ = 1;
  std::uint64_t printed_errors_ = 0;
  RunReport report_;
  std::optional<HistoryWriter> history_;
};

}  // namespace

RunReport run_load(const LoadOptions& options, const HintSource* hints) {
  Engine engine(options, hints);
  return engine.run();
}

}  // namespace forein::net::load

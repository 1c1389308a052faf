#include "load/remote_read.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "load/verify.h"
#include "load/workload.h"
#include "protocol/dataset.h"
#include "protocol/packet.h"
#include "remote/walk.h"

namespace forein::net::load {

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kReceiveBuffer = 65536;

std::uint64_t ns_between(Clock::time_point a, Clock::time_point b) {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count());
}

// One connected UDP socket: a request, then its reply (matched by SEQ),
// resent after each timeout up to `retries` times.
class Link {
 public:
  Link(const LoadOptions& o, std::uint64_t seq_base) : o_(o), seq_(seq_base), buf_(kReceiveBuffer) {
    addrinfo hints{};
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_DGRAM;
    addrinfo* res = nullptr;
    if (int rc = getaddrinfo(o.target_host.c_str(), std::to_string(o.target_port).c_str(), &hints, &res); rc != 0) {
      throw std::runtime_error("cannot resolve " + o.target_host + ": " + gai_strerror(rc));
    }
    fd_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    const int rc = fd_ < 0 ? -1 : ::connect(fd_, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    if (rc != 0) throw std::runtime_error(std::string("socket/connect: ") + std::strerror(errno));
  }
  ~Link() {
    if (fd_ >= 0) ::close(fd_);
  }
  Link(const Link&) = delete;
  Link& operator=(const Link&) = delete;

  // The reply, or nullopt after every attempt timed out.
  std::optional<Packet> call(Packet& request, RunReport& r) {
    request.seq = ++seq_;
    const std::vector<std::byte> datagram = encode_packet(request);
    for (std::uint32_t attempt = 0; attempt <= o_.retries; ++attempt) {
      if (attempt > 0) ++r.retries;
      if (::send(fd_, datagram.data(), datagram.size(), 0) < 0) ++r.send_failures;
      const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(o_.timeout_ms);
      for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
        if (left < 0) break;
        pollfd p{fd_, POLLIN, 0};
        const int n = ::poll(&p, 1, static_cast<int>(left) + 1);
        if (n <= 0) {
          if (n < 0 && errno == EINTR) continue;
          if (n == 0) break;
          continue;
        }
        const ssize_t got = ::recv(fd_, buf_.data(), buf_.size(), 0);
        if (got < 0) continue;
        Packet reply;
        if (parse_packet(std::span<const std::byte>(buf_.data(), static_cast<std::size_t>(got)), &reply) !=
            ParseError::kNone) {
          ++r.errors;
          continue;
        }
        if (reply.seq != request.seq) {
          ++r.late_replies;
          continue;
        }
        return reply;
      }
    }
    return std::nullopt;
  }

 private:
  const LoadOptions& o_;
  int fd_ = -1;
  std::uint64_t seq_;
  std::vector<std::byte> buf_;
};

// What the threads share: the verifier (under its lock) and the write versions.
struct Shared {
  explicit Shared(std::uint64_t keys) : verifier(keys) {}
  std::mutex mu;
  Verifier verifier;
  std::atomic<std::uint32_t> next_version{0};
};

// One thread's walks.
class Client {
 public:
  Client(const LoadOptions& o, unsigned index, const WorkloadGenerator& workload, Shared& shared)
      : o_(o),
        link_(o, std::uint64_t{index} << 48),
        gen_(workload, o.seed + 0x9E3779B97F4A7C15ull * (index + 1)),
        shared_(shared) {
    for (std::uint32_t s = 0; s < o.shards; ++s) {
      walkers_.emplace_back(
          [this](remote::Address a, std::size_t len, std::byte* out) { return read_for_walk(a, len, out); });
    }
  }

  // Opens every shard's walker (its header READ); false if one does not answer.
  bool open() {
    for (std::uint32_t s = 0; s < o_.shards; ++s) {
      key_ = dataset_key(shard_first(s, o_.shards, o_.keys));
      if (!walkers_[s].open()) return false;
    }
    // The header READs are set-up, not load.
    report_ = RunReport{};
    report_.remote_height = walkers_[0].header().height;
    return true;
  }

  void run(Clock::time_point end) {
    while (Clock::now() < end) {
      const Operation op = gen_.next();
      const Clock::time_point t0 = Clock::now();
      const bool answered = op.kind == OpKind::kUpdate ? update(op.key) : lookup(op.key);
      if (!answered) {
        ++report_.timeouts;
        report_.timeout_key_min = std::min(report_.timeout_key_min, op.key);
        report_.timeout_key_max = std::max(report_.timeout_key_max, op.key);
        continue;
      }
      ++report_.ops;
      ++report_.per_op[static_cast<std::size_t>(op.kind)];
      report_.latency.record(ns_between(t0, Clock::now()));
    }
  }

  RunReport& report() { return report_; }

 private:
  // One READ over the network; *got is the reply's header (a start READ's
  // address may have been rewritten on the way).
  bool read_remote(ReadHeader want, std::byte* out, ReadHeader* got) {
    Packet request;
    request.op = Op::kRead;
    request.key = key_;
    request.value = encode_read_header(want);
    ++report_.reads;
    ++report_.requests;
    const std::optional<Packet> reply = link_.call(request, report_);
    if (!reply) {
      ++report_.read_failures;
      return false;
    }
    const std::optional<ReadHeader> h = decode_read_header(reply->value);
    const bool well_formed = reply->op == Op::kReply && reply->status == Status::kOk && h &&
                             h->length == want.length && reply->value.size() == kReadHeaderBytes + want.length &&
                             ((want.flags & kReadStart) != 0 || h->address == want.address);
    if (!well_formed) {
      // BAD_ADDRESS (a garbage address: the walk checks before it READs,
      // so only a stale or foreign rewrite gets here) or a broken reply.
      ++report_.read_failures;
      if (reply->op != Op::kError) ++report_.errors;
      return false;
    }
    std::memcpy(out, reply->value.data() + kReadHeaderBytes, want.length);
    *got = *h;
    return true;
  }

  // The walk's ReadFn: the start READ's node is already here.
  bool read_for_walk(remote::Address a, std::size_t len, std::byte* out) {
    if (prefetched_ && a == prefetched_at_ && len <= prefetched_.value().size()) {
      std::memcpy(out, prefetched_->data(), len);
      prefetched_.reset();
      return true;
    }
    prefetched_.reset();
    ReadHeader got;
    return read_remote(ReadHeader{a, static_cast<std::uint32_t>(len), 0}, out, &got);
  }

  std::uint32_t shard_of_index(std::uint64_t key) const {
    return o_.shards > 1 ? shard_of(dataset_key(key), o_.shards, o_.keys) : 0;
  }

  bool lookup(std::uint64_t key) {
    remote::Walker& w = walkers_[shard_of_index(key)];
    key_ = dataset_key(key);
    Verifier::Ticket ticket = 0;
    if (o_.verify) {
      std::lock_guard lock(shared_.mu);
      ticket = shared_.verifier.begin_read();
    }
    remote::Address start = 0;
    bool rewritten = false;
    if (w.is_open() || w.open()) {
      // The start READ: the root, unless a switch names a deeper node.
      const std::uint32_t node_bytes = w.header().geometry.node_bytes;
      std::vector<std::byte> node(node_bytes);
      ReadHeader got;
      ++report_.start_reads;
      if (read_remote(ReadHeader{w.header().root, node_bytes, kReadStart}, node.data(), &got)) {
        rewritten = (got.flags & kReadRewritten) != 0;
        if (rewritten) ++report_.rewritten;
        start = got.address;
        prefetched_at_ = got.address;
        prefetched_ = std::move(node);
      }
    }
    const remote::LookupResult res = w.lookup(key, start);  // key i's word is i (protocol/dataset.h)
    prefetched_.reset();
    report_.fallbacks += res.counters.fallbacks;
    report_.walk_restarts += res.counters.restarts;
    report_.torn_reads += res.counters.odd_versions + res.counters.bad_checksums;
    if (rewritten && res.hint_taken) ++report_.hint_hits;
    const bool answered = res.status != remote::LookupStatus::kGaveUp;
    if (!answered) ++report_.gave_up;
    if (res.status == remote::LookupStatus::kNotFound) ++report_.not_found;
    if (o_.verify) {
      std::lock_guard lock(shared_.mu);
      if (answered) {
        ++report_.verified;
        bool ok = true;
        if (res.status == remote::LookupStatus::kFound) {
          const std::string head = dataset_long_value_head(res.value);
          ok = !head.empty() && shared_.verifier.check_get(key, ticket, head);
        } else {
          ok = shared_.verifier.check_get(key, ticket, std::nullopt);
        }
        if (!ok) ++report_.wrong;
      }
      shared_.verifier.end_read(ticket);
    }
    return answered;
  }

  bool update(std::uint64_t key) {
    remote::Walker& w = walkers_[shard_of_index(key)];
    const std::uint32_t version = shared_.next_version.fetch_add(1, std::memory_order_relaxed) + 1;
    Verifier::WriteId id = 0;
    if (o_.verify) {
      std::lock_guard lock(shared_.mu);
      id = shared_.verifier.begin_write(key, version);
    }
    Packet request;
    request.op = Op::kPut;
    request.key = dataset_key(key);
    request.value = dataset_long_value(key, version, w.is_open() ? w.header().max_value_bytes : 16);
    const std::uint64_t resends = report_.retries;
    const std::optional<Packet> reply = link_.call(request, report_);
    const bool ok = reply && reply->op == Op::kReply && reply->status == Status::kOk;
    if (reply && !ok) ++report_.errors;
    if (o_.verify) {
      std::lock_guard lock(shared_.mu);
      if (report_.retries != resends) shared_.verifier.write_resent(id);
      if (ok) {
        shared_.verifier.write_acked(id);
      } else {
        shared_.verifier.write_failed(id);
      }
    }
    ++report_.requests;
    return reply.has_value();
  }

  const LoadOptions& o_;
  Link link_;
  WorkloadGenerator gen_;
  Shared& shared_;
  std::vector<remote::Walker> walkers_;
  std::string key_;  // the current READs' key (the switch routes and rewrites by it)
  std::optional<std::vector<std::byte>> prefetched_;
  remote::Address prefetched_at_ = 0;
  RunReport report_;
};

void add(RunReport& to, const RunReport& r) {
  to.ops += r.ops;
  for (std::size_t k = 0; k < kOpKinds; ++k) to.per_op[k] += r.per_op[k];
  to.requests += r.requests;
  to.retries += r.retries;
  to.timeouts += r.timeouts;
  to.timeout_key_min = std::min(to.timeout_key_min, r.timeout_key_min);
  to.timeout_key_max = std::max(to.timeout_key_max, r.timeout_key_max);
  to.errors += r.errors;
  to.not_found += r.not_found;
  to.late_replies += r.late_replies;
  to.send_failures += r.send_failures;
  to.wrong += r.wrong;
  to.verified += r.verified;
  to.latency.merge(r.latency);
  to.reads += r.reads;
  to.start_reads += r.start_reads;
  to.rewritten += r.rewritten;
  to.hint_hits += r.hint_hits;
  to.fallbacks += r.fallbacks;
  to.walk_restarts += r.walk_restarts;
  to.torn_reads += r.torn_reads;
  to.read_failures += r.read_failures;
  to.gave_up += r.gave_up;
  to.remote_height = std::max(to.remote_height, r.remote_height);
}

}  // namespace

RunReport run_remote_read(const LoadOptions& options) {
  const WorkloadGenerator workload(options.workload, options.dist, options.keys, options.theta, options.seed);
  Shared shared(options.keys);
  std::vector<std::unique_ptr<Client>> clients;
  for (unsigned i = 0; i < options.outstanding; ++i) {
    clients.push_back(std::make_unique<Client>(options, i, workload, shared));
  }
  // Every walker reads its shard's header before the clock starts.
  for (auto& c : clients) {
    if (!c->open()) {
      throw std::runtime_error("no memory node answered the header READ at " + options.target_host + ":" +
                               std::to_string(options.target_port) + " (is forein-mem-server running there?)");
    }
  }
  const Clock::time_point start = Clock::now();
  const Clock::time_point end = start + std::chrono::duration_cast<Clock::duration>(
                                            std::chrono::duration<double>(options.seconds));
  std::vector<std::thread> threads;
  for (auto& c : clients) threads.emplace_back([&c, end] { c->run(end); });
  for (auto& t : threads) t.join();
  RunReport report;
  report.options = options;
  report.elapsed_s = std::chrono::duration<double>(Clock::now() - start).count();
  for (auto& c : clients) {
    add(report, c->report());
  }
  return report;
}

}  // namespace forein::net::load

// forein-data-node's replication (paper 002, section V-D; docs/network.md,
// "forein-data-node", "Replication"): DataLog's reserve/commit and install,
// the backup's LOG_REPLICATE handling, the options, and the real program:
// a primary with backups played by this test (what it sends, when it
// answers the client: never before the N-th ACK; resends; giving up), and
// a primary with two real backups on loopback (the three logs equal; a
// SIGSTOPped backup with --acks 1 and --acks 2). Concurrent: several
// clients write to a multi-threaded primary (also under TSan).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "child_process.h"
#include "data_node/handler.h"
#include "data_node/log.h"
#include "data_node/options.h"
#include "data_node/stats.h"
#include "protocol/dataset.h"
#include "protocol/packet.h"
#include "protocol/visibility.h"
#include "udp_client.h"

namespace {

using namespace forein::net;
using namespace forein::net::data_node;
using forein::testing::ChildProcess;
using forein::testing::json_number;
using Udp = forein::testing::UdpClient;
using Clock = std::chrono::steady_clock;

Packet append_request(const std::string& key, const std::string& record, std::uint64_t seq = 1) {
  Packet p;
  p.op = Op::kLogAppend;
  p.seq = seq;
  p.key = key;
  p.value = record;
  const SlotKey sk = slot_key(key);
  p.visibility = VisibilityHeader{sk.slot, VisState::kNone, sk.fingerprint, 0, 0};
  return p;
}

Packet read_request(const std::string& key, const std::string& location) {
  Packet p;
  p.op = Op::kLogRead;
  p.key = key;
  p.value = location;
  return p;
}

Packet fetch_request(std::uint32_t first, std::uint32_t count) {
  Packet p;
  p.op = Op::kLogFetch;
  p.value = std::string(4, '\0');
  for (int b = 0; b < 4; ++b) p.value[static_cast<std::size_t>(b)] = static_cast<char>(first >> (24 - 8 * b));
  p.count = count;
  return p;
}

// A UDP socket on 127.0.0.1 (a free port): a fake backup, or a client that
// sends once and waits for one datagram with a deadline (no resends: the
// test decides what happens when).
class Socket {
 public:
  Socket() {
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
  ~Socket() { ::close(fd_); }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  std::uint16_t port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

  void send_to(std::uint16_t port, const std::vector<std::byte>& d) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::sendto(fd_, d.data(), d.size(), 0, reinterpret_cast<sockaddr*>(&a), sizeof a) ==
            static_cast<ssize_t>(d.size()));
  }
  void send_to(std::uint16_t port, const Packet& p) { send_to(port, encode_packet(p)); }
  // Answers the last datagram's sender.
  void reply(const Packet& p) {
    const std::vector<std::byte> d = encode_packet(p);
    REQUIRE(::sendto(fd_, d.data(), d.size(), 0, reinterpret_cast<sockaddr*>(&last_from_), last_len_) ==
            static_cast<ssize_t>(d.size()));
  }

  // The next datagram (parsed) within `wait`, or nullopt.
  std::optional<Packet> receive(std::chrono::milliseconds wait) {
    const auto deadline = Clock::now() + wait;
    std::vector<std::byte> buf(kMaxDatagram + 1);
    for (;;) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) return std::nullopt;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      last_len_ = sizeof last_from_;
      const ssize_t n = ::recvfrom(fd_, buf.data(), buf.size(), MSG_DONTWAIT,
                                   reinterpret_cast<sockaddr*>(&last_from_), &last_len_);
      if (n <= 0) continue;
      Packet got;
      REQUIRE(parse_packet(std::span<const std::byte>(buf.data(), static_cast<std::size_t>(n)), &got) ==
              ParseError::kNone);
      return got;
    }
  }

 private:
  int fd_ = -1;
  std::uint16_t port_ = 0;
  sockaddr_storage last_from_{};
  socklen_t last_len_ = 0;
};

Packet ack_of(const Packet& replicate) {
  Packet a;
  a.op = Op::kReply;
  a.status = Status::kOk;
  a.seq = replicate.seq;
  a.key = replicate.key;
  return a;
}

// The first data set index at or after `from` whose slot `node` owns.
std::uint64_t owned_index(NodeId node, std::uint64_t from = 0) {
  for (std::uint64_t i = from;; ++i) {
    if (node.owns(slot_key(dataset_key(i)).slot)) return i;
  }
}

std::unique_ptr<ChildProcess> spawn_node(std::vector<std::string> args) {
  return std::make_unique<ChildProcess>(FOREIN_DATA_NODE_BIN, std::move(args), /*capture_stderr=*/true);
}

struct Entry {
  std::uint32_t id = 0;
  std::uint32_t ts = 0;
  std::string key;
  std::string record;
  bool operator==(const Entry&) const = default;
};

// Every entry of a running data node: LOG_FETCH pages, then LOG_READ each.
std::vector<Entry> dump(Udp& udp) {
  std::vector<Entry> out;
  std::uint32_t next = 1;
  for (;;) {
    const Packet r = udp.call(fetch_request(next, 256));
    REQUIRE(r.status == Status::kOk);
    const auto entries = decode_scan_entries(r.value);
    REQUIRE(entries);
    for (const ScanEntry& e : *entries) {
      const auto s = decode_stamped(e.value);
      REQUIRE(s);
      out.push_back({s->location.log_id, s->ts, e.key, {}});
      next = s->location.log_id + 1;
    }
    if (!r.more) break;
  }
  for (Entry& e : out) {
    const Packet r = udp.call(read_request(e.key, encode_location({0, e.id})));
    REQUIRE(r.status == Status::kOk);
    e.record = r.value;
  }
  return out;
}

// Polls STATS until `name` reaches `want` (or, at_most, falls to it).
bool stat_reaches(Udp& udp, const std::string& name, long long want, bool at_most = false) {
  return forein::testing::eventually([&] {
    const long long v = json_number(forein::testing::server_stats(udp), name);
    return at_most ? v <= want : v >= want;
  });
}

}  // namespace

TEST_CASE("replication: reserve hides an entry until commit", "[net][data_node][replication]") {
  DataLog log;
  DataLog::Appended a, b;
  REQUIRE(log.reserve(7, "k1", "r1", &a) == DataLog::AppendError::kNone);
  REQUIRE(log.append(7, "k2", "r2", &b) == DataLog::AppendError::kNone);
  CHECK(a.log_id == 1);
  CHECK(a.ts == 1);
  CHECK(b.log_id == 2);
  CHECK(b.ts == 2);  // the reserved entry took its slot's timestamp
  std::string record;
  CHECK(log.read(1, "k1", &record) == DataLog::ReadResult::kNotFound);
  CHECK(!log.entry(1));
  bool more = true;
  auto got = log.fetch(1, 10, 0, 1 << 20, &more);
  REQUIRE(got.size() == 1);  // the pending entry is skipped
  CHECK(got[0].log_id == 2);
  CHECK(!more);
  log.commit(1);
  CHECK(log.read(1, "k1", &record) == DataLog::ReadResult::kOk);
  CHECK(record == "r1");
  got = log.fetch(1, 10, 0, 1 << 20, &more);
  CHECK(got.size() == 2);
  log.commit(99);  // no such id: nothing happens
  CHECK(log.entries() == 2);
}

TEST_CASE("replication: install in any order, duplicates, conflicts, gaps", "[net][data_node][replication]") {
  DataLog log(100);
  using R = DataLog::InstallResult;
  CHECK(log.install(3, 5, 9, "c", "rc") == R::kInstalled);
  CHECK(log.entries() == 3);
  CHECK(log.gaps() == 2);
  CHECK(log.slot_ts(9) == 5);
  std::string record;
  CHECK(log.read(1, "a", &record) == DataLog::ReadResult::kNotFound);  // a gap
  CHECK(log.read(3, "c", &record) == DataLog::ReadResult::kOk);
  bool more = true;
  auto got = log.fetch(1, 10, 0, 1 << 20, &more);
  REQUIRE(got.size() == 1);
  CHECK(got[0].log_id == 3);
  CHECK(got[0].ts == 5);
  CHECK(log.install(1, 2, 9, "a", "ra") == R::kInstalled);  // fills a gap; the counter stays 5
  CHECK(log.slot_ts(9) == 5);
  CHECK(log.gaps() == 1);
  CHECK(log.install(1, 2, 9, "a", "ra") == R::kDuplicate);
  CHECK(log.install(1, 2, 9, "a", "rX") == R::kConflict);
  CHECK(log.install(1, 3, 9, "a", "ra") == R::kConflict);
  CHECK(log.install(1, 2, 9, "b", "ra") == R::kConflict);
  CHECK(log.install(101, 1, 9, "z", "") == R::kFull);
  CHECK(log.install(2, 4, 1, "b", "rb") == R::kInstalled);
  CHECK(log.gaps() == 0);
  got = log.fetch(0, 10, 0, 1 << 20, &more);
  REQUIRE(got.size() == 3);
  for (std::uint32_t i = 0; i < 3; ++i) CHECK(got[i].log_id == i + 1);
  const auto e = log.entry(2);
  REQUIRE(e);
  CHECK(e->key == "b");
  CHECK(e->record == "rb");
  CHECK(e->ts == 4);
  // A far-away id is refused (the index does not grow by gigabytes).
  DataLog big;
  CHECK(big.install(DataLog::kMaxInstallAhead + 1, 1, 0, "x", "") == R::kTooFarAhead);
  CHECK(big.install(DataLog::kMaxInstallAhead, 1, 0, "x", "") == R::kInstalled);
  CHECK(big.gaps() == DataLog::kMaxInstallAhead - 1);
}

TEST_CASE("replication: a backup installs LOG_REPLICATE, refuses LOG_APPEND and bad replicas",
          "[net][data_node][replication]") {
  const NodeId id{0, 2};
  DataLog log;
  DataNodeStats stats;
  Handler backup(log, id, stats, {}, Role::kBackup);
  const std::uint64_t i = owned_index(id);
  const std::string key = dataset_key(i);
  Packet r = backup.handle(log_replicate_request(9, 4, 7, key, "rec"));
  CHECK(r.op == Op::kReply);
  CHECK(r.status == Status::kOk);
  CHECK(r.seq == 9);
  CHECK(log.entry(4)->record == "rec");
  CHECK(log.entry(4)->ts == 7);
  r = backup.handle(log_replicate_request(10, 4, 7, key, "rec"));  // a resend
  CHECK(r.status == Status::kOk);
  CHECK(stats.get(Counter::kInstallDuplicates) == 1);

  r = backup.handle(append_request(key, "x"));
  REQUIRE(r.op == Op::kError);
  CHECK(r.status == Status::kBadRequest);
  CHECK(r.value.find("backup") != std::string::npos);
  CHECK(stats.get(Counter::kBackupRefused) == 1);

  std::vector<Packet> bad;
  bad.push_back(log_replicate_request(1, 4, 7, key, "other"));  // conflict
  bad.push_back(log_replicate_request(1, 0, 7, key, "r"));      // id 0
  bad.push_back(log_replicate_request(1, 5, 0, key, "r"));      // ts 0
  bad.push_back(log_replicate_request(1, 5 + DataLog::kMaxInstallAhead, 1, key, "r"));
  bad.push_back(log_replicate_request(1, 5, 1, dataset_key(owned_index({1, 2})), "r"));  // not owned
  bad.push_back(log_replicate_request(1, 5, 1, key, std::string(kMaxRecordBytes + 1, 'r')));
  Packet p = log_replicate_request(1, 5, 1, key, "r");
  p.visibility->fingerprint ^= 1;
  bad.push_back(p);
  p = log_replicate_request(1, 5, 1, key, "r");
  p.visibility.reset();
  bad.push_back(p);
  p = log_replicate_request(1, 5, 1, key, "r");
  p.visibility->state = VisState::kStored;
  bad.push_back(p);
  for (const Packet& b : bad) {
    r = backup.handle(b);
    INFO(r.value);
    CHECK(r.op == Op::kError);
    CHECK(r.status == Status::kBadRequest);
  }
  CHECK(stats.get(Counter::kReplicateRefused) == bad.size());
  CHECK(log.entries() == 4);
  CHECK(log.entry(4)->record == "rec");

  // A node that is not a backup refuses LOG_REPLICATE.
  DataLog log2;
  DataNodeStats stats2;
  Handler alone(log2, id, stats2);
  r = alone.handle(log_replicate_request(1, 1, 1, key, "r"));
  CHECK(r.status == Status::kBadRequest);
  CHECK(r.value.find("not a backup") != std::string::npos);
  CHECK(log2.entries() == 0);
}

TEST_CASE("replication: options", "[net][data_node][replication]") {
  const auto parse = [](std::vector<std::string> args, Options* o, std::string* error) {
    args.insert(args.begin(), "forein-data-node");
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    bool help = false;
    return parse_options(static_cast<int>(argv.size()), argv.data(), o, error, &help);
  };
  Options o;
  std::string error;
  REQUIRE(parse({}, &o, &error));
  CHECK(o.backups.empty());
  CHECK(o.acks == 1);
  CHECK(!o.backup);
  o = Options{};
  REQUIRE(parse({"--backups", "127.0.0.1:9001,h2:9002", "--acks", "2", "--replicate-timeout-us", "500"}, &o, &error));
  CHECK(o.backups == std::vector<std::string>{"127.0.0.1:9001", "h2:9002"});
  CHECK(o.acks == 2);
  CHECK(o.replicate_timeout_us == 500);
  o = Options{};
  REQUIRE(parse({"--backup", "--keys", "10"}, &o, &error));
  CHECK(o.backup);
  for (const std::vector<std::string>& bad : std::vector<std::vector<std::string>>{
           {"--backups", "h:1", "--acks", "2"},
           {"--backups", "h:1,h:2", "--acks", "0"},
           {"--acks", "1"},
           {"--backups", "h"},
           {"--backups", "h:1,"},
           {"--backups", "h:0"},
           {"--backups", "1:1,2:2,3:3,4:4,5:5,6:6,7:7,8:8,9:9"},
           {"--backup", "--backups", "h:1"},
           {"--replicate-timeout-us", "1000"},
           {"--backups", "h:1", "--replicate-timeout-us", "99"}}) {
    o = Options{};
    error.clear();
    INFO(bad.front() << " " << (bad.size() > 1 ? bad[1] : ""));
    CHECK(!parse(bad, &o, &error));
    CHECK(!error.empty());
  }
}

TEST_CASE("replication program: the reply waits for the N-th ACK; resends; giving up",
          "[net][data_node][replication]") {
  Socket b1, b2, client;
  const auto primary = spawn_node({"--backups", b1.address() + "," + b2.address(), "--acks", "2",
                                   "--replicate-timeout-us", "2000000"});
  const int port = forein::testing::ready_port(*primary);
  REQUIRE(port != 0);
  Udp udp(static_cast<std::uint16_t>(port));
  const auto p16 = static_cast<std::uint16_t>(port);

  const std::string key = dataset_key(3);
  client.send_to(p16, append_request(key, "v1", 77));
  const auto r1 = b1.receive(std::chrono::seconds(30));
  const auto r2 = b2.receive(std::chrono::seconds(30));
  REQUIRE(r1);
  REQUIRE(r2);
  for (const Packet* r : {&*r1, &*r2}) {
    CHECK(r->op == Op::kLogReplicate);
    CHECK(r->key == key);
    CHECK(r->value == "v1");
    REQUIRE(r->visibility);
    CHECK(r->visibility->slot == slot_key(key).slot);
    CHECK(r->visibility->fingerprint == slot_key(key).fingerprint);
    CHECK(r->visibility->ts == 1);
    CHECK(r->visibility->aux == 1);  // the log id
  }
  CHECK(r1->seq != r2->seq);
  // No ACK yet: the entry is not readable and the client has no reply.
  CHECK(udp.call(read_request(key, encode_location({0, 1}))).status == Status::kNotFound);
  b1.reply(ack_of(*r1));
  b1.reply(ack_of(*r1));  // a repeated ACK counts once
  // Still one ACK of two: not readable, no reply (the read is served after
  // the ACKs queued before it).
  CHECK(udp.call(read_request(key, encode_location({0, 1}))).status == Status::kNotFound);
  CHECK(!client.receive(std::chrono::milliseconds(200)));
  b2.reply(ack_of(*r2));
  const auto reply = client.receive(std::chrono::seconds(30));
  REQUIRE(reply);
  CHECK(reply->seq == 77);
  CHECK(reply->op == Op::kReply);
  CHECK(reply->status == Status::kOk);
  CHECK(decode_location(reply->value) == LogLocation{0, 1});
  REQUIRE(reply->visibility);
  CHECK(reply->visibility->ts == 1);
  const Packet back = udp.call(read_request(key, encode_location({0, 1})));
  CHECK(back.status == Status::kOk);
  CHECK(back.value == "v1");
  std::string stats = forein::testing::server_stats(udp);
  INFO(stats);
  CHECK(json_number(stats, "acks") == 2);
  CHECK(json_number(stats, "acks_late") == 1);
  CHECK(json_number(stats, "appends") == 1);
  // Garbage on the backup socket's port is counted, not fatal.
  b1.reply(Packet{});  // a GET from a backup: not an ACK
  CHECK(stat_reaches(udp, "replicate_errors", 1));
  forein::testing::stop_json(*primary);
}

TEST_CASE("replication program: unanswered LOG_REPLICATE is resent, then the write fails",
          "[net][data_node][replication]") {
  Socket b1, b2, client;
  // 1 ms, doubling: 8 sends over 255 ms.
  const auto primary = spawn_node({"--backups", b1.address() + "," + b2.address(), "--acks", "1",
                                   "--replicate-timeout-us", "1000"});
  const int port = forein::testing::ready_port(*primary);
  REQUIRE(port != 0);
  Udp udp(static_cast<std::uint16_t>(port));
  const std::string key = dataset_key(5);
  client.send_to(static_cast<std::uint16_t>(port), append_request(key, "v", 5));
  std::vector<Packet> got;
  while (const auto r = b1.receive(std::chrono::seconds(5))) {
    got.push_back(*r);
    if (got.size() == kReplicateSends) break;
  }
  REQUIRE(got.size() == kReplicateSends);
  for (const Packet& r : got) {
    CHECK(r.key == key);
    CHECK(r.visibility == got.front().visibility);  // the same id and timestamp every time
  }
  const auto reply = client.receive(std::chrono::seconds(30));
  REQUIRE(reply);
  CHECK(reply->seq == 5);
  CHECK(reply->op == Op::kError);
  CHECK(reply->status == Status::kServerError);
  CHECK(reply->value.find("replication") != std::string::npos);
  // Given up: committed locally all the same (its id is taken).
  CHECK(udp.call(read_request(key, encode_location({0, 1}))).status == Status::kOk);
  const std::string exit_line = forein::testing::stop_json(*primary);
  INFO(exit_line);
  CHECK(json_number(exit_line, "replicate_gave_up") == 1);
  CHECK(json_number(exit_line, "replicate_sent") == 2 * static_cast<long long>(kReplicateSends));
  CHECK(json_number(exit_line, "replicate_resent") == 2 * static_cast<long long>(kReplicateSends - 1));
  CHECK(json_number(exit_line, "server_error") == 1);
}

namespace {

struct Replicated {
  std::unique_ptr<ChildProcess> backup[2];
  std::unique_ptr<ChildProcess> primary;
  int backup_port[2] = {0, 0};
  int port = 0;

  Replicated(unsigned acks, const std::string& timeout_us, unsigned threads = 1) {
    for (int b = 0; b < 2; ++b) {
      backup[b] = spawn_node({"--backup", "--node", "0/2", "--keys", "500"});
      backup_port[b] = forein::testing::ready_port(*backup[b]);
      REQUIRE(backup_port[b] != 0);
    }
    primary = spawn_node({"--node", "0/2", "--keys", "500", "--threads", std::to_string(threads), "--backups",
                          "127.0.0.1:" + std::to_string(backup_port[0]) + ",127.0.0.1:" +
                              std::to_string(backup_port[1]),
                          "--acks", std::to_string(acks), "--replicate-timeout-us", timeout_us});
    port = forein::testing::ready_port(*primary);
    REQUIRE(port != 0);
  }
};

}  // namespace

TEST_CASE("replication program: a primary and two backups hold the same log", "[net][data_node][replication]") {
  const NodeId id{0, 2};
  Replicated r(1, "20000", 2);
  // Four clients write at once (the primary's two workers pipeline them).
  constexpr int kClients = 4;
  constexpr int kWrites = 150;
  std::vector<std::thread> clients;
  std::atomic<int> ok{0};
  for (int c = 0; c < kClients; ++c) {
    // No Catch2 macros in these threads (Catch2 is not thread-safe): plain
    // sockets, results counted.
    clients.emplace_back([&, c] {
      const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
      if (fd < 0) return;
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_port = htons(static_cast<std::uint16_t>(r.port));
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        ::close(fd);
        return;
      }
      std::vector<std::byte> buf(kMaxDatagram + 1);
      std::uint64_t i = static_cast<std::uint64_t>(c) * 1000;
      for (int w = 0; w < kWrites; ++w) {
        i = owned_index(id, i + 1);
        const std::uint64_t seq = static_cast<std::uint64_t>(c) << 32 | static_cast<std::uint64_t>(w);
        const std::vector<std::byte> wire = encode_packet(append_request(dataset_key(i), dataset_record(i, 1), seq));
        bool answered = false;
        // Resent every 500 ms, 20 times at most (the write is idempotent
        // only in that a resend appends again: counted, never expected).
        for (int attempt = 0; attempt < 20 && !answered; ++attempt) {
          (void)::send(fd, wire.data(), wire.size(), 0);
          pollfd pf{fd, POLLIN, 0};
          while (!answered && ::poll(&pf, 1, 500) > 0) {
            const ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
            Packet reply;
            if (n <= 0 || parse_packet(std::span<const std::byte>(buf.data(), static_cast<std::size_t>(n)), &reply) !=
                              ParseError::kNone || reply.seq != seq) {
              continue;
            }
            answered = true;
            if (reply.op == Op::kReply && reply.status == Status::kOk) ok.fetch_add(1);
          }
        }
      }
      ::close(fd);
    });
  }
  for (auto& t : clients) t.join();
  CHECK(ok.load() == kClients * kWrites);
  Udp p(static_cast<std::uint16_t>(r.port));
  const std::vector<Entry> primary_log = dump(p);
  // The backups' last entries may still be arriving (--acks 1): wait until
  // each has as many.
  for (int b = 0; b < 2; ++b) {
    Udp udp(static_cast<std::uint16_t>(r.backup_port[b]));
    CHECK(stat_reaches(udp, "log_entries", static_cast<long long>(primary_log.size())));
    CHECK(stat_reaches(udp, "log_gaps", 0, /*at_most=*/true));
    const std::vector<Entry> backup_log = dump(udp);
    CHECK(backup_log.size() == primary_log.size());
    CHECK(backup_log == primary_log);
    // A backup refuses client writes.
    const Packet refused = udp.call(append_request(dataset_key(owned_index(id)), "x"));
    CHECK(refused.op == Op::kError);
    CHECK(refused.status == Status::kBadRequest);
    CHECK(refused.value.find("backup") != std::string::npos);
  }
  const std::string exit_line = forein::testing::stop_json(*r.primary);
  INFO(exit_line);
  CHECK(json_number(exit_line, "appends") >= kClients * kWrites);
  CHECK(json_number(exit_line, "replicate_gave_up") == 0);
}

TEST_CASE("replication program: a stopped backup: --acks 1 goes on, --acks 2 waits for it",
          "[net][data_node][replication]") {
  const NodeId id{0, 2};
  const std::string key = dataset_key(owned_index(id));
  SECTION("--acks 1") {
    Replicated r(1, "20000");
    r.backup[1]->stop_all_threads();
    Udp udp(static_cast<std::uint16_t>(r.port));
    for (int w = 0; w < 20; ++w) {
      const Packet reply = udp.call(append_request(key, "a" + std::to_string(w)));
      REQUIRE(reply.status == Status::kOk);
    }
    r.backup[1]->signal(SIGCONT);
    Udp b1(static_cast<std::uint16_t>(r.backup_port[1]));
    CHECK(stat_reaches(b1, "installed", 20));
    CHECK(dump(b1) == dump(udp));
  }
  SECTION("--acks 2") {
    // 100 ms, doubling: a write is given up after 25.5 s.
    Replicated r(2, "100000");
    r.backup[1]->stop_all_threads();
    Socket client;
    client.send_to(static_cast<std::uint16_t>(r.port), append_request(key, "b", 42));
    Udp b0(static_cast<std::uint16_t>(r.backup_port[0]));
    Udp udp(static_cast<std::uint16_t>(r.port));
    // The running backup has it; the primary has its ACK, and no reply went out.
    CHECK(stat_reaches(b0, "installed", 1));
    CHECK(stat_reaches(udp, "acks", 1));
    CHECK(!client.receive(std::chrono::milliseconds(300)));
    std::string stats = forein::testing::server_stats(udp);
    CHECK(json_number(stats, "appends") == 0);
    r.backup[1]->signal(SIGCONT);
    const auto reply = client.receive(std::chrono::seconds(30));
    REQUIRE(reply);
    CHECK(reply->seq == 42);
    CHECK(reply->status == Status::kOk);
    stats = forein::testing::server_stats(udp);
    CHECK(json_number(stats, "acks") == 2);
    CHECK(json_number(stats, "appends") == 1);
  }
}

TEST_CASE("replication program: garbage and bad LOG_REPLICATE at a backup", "[net][data_node][replication]") {
  const auto backup = spawn_node({"--backup", "--node", "0/2"});
  const int port = forein::testing::ready_port(*backup);
  REQUIRE(port != 0);
  Udp udp(static_cast<std::uint16_t>(port));
  const NodeId id{0, 2};
  const std::string key = dataset_key(owned_index(id));
  REQUIRE(udp.call(log_replicate_request(0, 1, 1, key, "r")).status == Status::kOk);
  const unsigned seed = std::random_device{}();
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  const std::vector<std::byte> good = encode_packet(log_replicate_request(1, 2, 2, key, "r2"));
  long long refused = 0;
  for (int i = 0; i < 2000; ++i) {
    std::vector<std::byte> d = good;
    switch (i % 3) {
      case 0:  // truncated
        d.resize(rng() % good.size());
        break;
      case 1:  // bytes flipped in the header and the visibility header
        d[rng() % d.size()] ^= static_cast<std::byte>(1 + rng() % 255);
        break;
      default:  // random
        d.resize(rng() % 100);
        for (auto& b : d) b = static_cast<std::byte>(rng());
        break;
    }
    udp.send_raw(d);
  }
  // Refused with a message, the log unchanged.
  Packet bad = log_replicate_request(0, 1, 1, key, "other");
  Packet r = udp.call(bad);
  CHECK(r.status == Status::kBadRequest);
  CHECK(r.value.find("LOG_REPLICATE") != std::string::npos);
  bad = log_replicate_request(0, 3, 3, key, "r");
  bad.visibility->fingerprint ^= 0x10;
  r = udp.call(bad);
  CHECK(r.status == Status::kBadRequest);
  refused += 2;
  // Still serving, the first entry intact.
  r = udp.call(read_request(key, encode_location({0, 1})));
  CHECK(r.status == Status::kOk);
  CHECK(r.value == "r");
  const std::string exit_line = forein::testing::stop_json(*backup);
  INFO(exit_line);
  CHECK(json_number(exit_line, "replicate_refused") >= refused);
  CHECK(json_number(exit_line, "datagrams") > 2000);
  // Every entry installed is one the flipped or truncated copies could make.
  CHECK(json_number(exit_line, "installed") >= 1);
}

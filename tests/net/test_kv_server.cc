// forein-kv-server end to end: the real program as a child process on a
// free port, real UDP datagrams on loopback. Thousands of random and
// truncated datagrams interleaved with valid requests checked against the
// data set and a std::map model; GETs with correct, stale and garbage hint
// trailers; STATS counters; SIGTERM and the exit line. Synchronization is
// by lines and replies with deadlines; requests are retried by seq.
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "forein/tree.h"
#include "kv_server/dpa_handler.h"
#include "protocol/dataset.h"
#include "child_process.h"
#include "protocol/packet.h"
#include "support/seed.h"
#include "udp_client.h"

namespace {

using namespace forein::net;
using Clock = std::chrono::steady_clock;

using forein::testing::ChildProcess;
using forein::testing::json_number;
using Udp = forein::testing::UdpClient;
using forein::testing::request;

// forein-kv-server as a child process, stderr captured.
std::unique_ptr<ChildProcess> spawn_server(std::vector<std::string> args) {
  return std::make_unique<ChildProcess>(FOREIN_KV_SERVER_BIN, std::move(args), /*capture_stderr=*/true);
}

std::unique_ptr<ChildProcess> start_server(std::vector<std::string> extra, std::uint16_t* port) {
  extra.insert(extra.begin(), {"--listen", "127.0.0.1:0"});
  auto child = spawn_server(extra);
  *port = static_cast<std::uint16_t>(forein::testing::ready_port(*child, std::chrono::seconds(60)));
  REQUIRE(*port != 0);
  return child;
}

std::string stats(Udp& udp) { return forein::testing::server_stats(udp); }

void check_get(Udp& udp, const std::string& key, const std::optional<std::string>& want,
               std::optional<forein::StartHints> hints = std::nullopt) {
  Packet p = request(Op::kGet, key);
  p.hints = hints;
  const Packet r = udp.call(p);
  REQUIRE(r.op == Op::kReply);
  if (want) {
    REQUIRE(r.status == Status::kOk);
    REQUIRE(r.value == *want);
  } else {
    REQUIRE(r.status == Status::kNotFound);
  }
}

// A loopback UDP socket holding a port (no SO_REUSEPORT), closed on scope
// exit, also when a check fails.
struct HeldPort {
  int fd = -1;
  std::uint16_t port = 0;
  HeldPort() {
    fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd >= 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    socklen_t len = sizeof a;
    REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
    port = ntohs(a.sin_port);
  }
  ~HeldPort() { ::close(fd); }
  HeldPort(const HeldPort&) = delete;
  HeldPort& operator=(const HeldPort&) = delete;
};

// The tree the server builds from --keys N (same bulk load, same page ids)
// gives the correct leaf hints.
std::unique_ptr<forein::Tree> local_tree(std::uint64_t n) {
  auto tree = forein::Tree::create(std::make_unique<forein::MemoryPageStore>());
  std::vector<std::pair<std::string, std::string>> rows;
  for (std::uint64_t i = 0; i < n; ++i) rows.emplace_back(dataset_key(i), dataset_value(i));
  tree->bulk_load(rows);
  return tree;
}

}  // namespace

TEST_CASE("kv server: hints, fuzzing, model, stats and exit line", "[net][kv_server]") {
  constexpr std::uint64_t kKeys = 20000;
  std::uint16_t port = 0;
  const std::unique_ptr<ChildProcess> owner = start_server({"--keys", std::to_string(kKeys), "--threads", "2",
                               "--refresh-ms", "20", "--backend", "switch_lpm"},
                              &port);
  ChildProcess& server = *owner;
  Udp udp(port);
  std::mt19937_64 rng(7);

  // Hints first, while the server's tree is exactly the bulk-loaded one.
  {
    auto tree = local_tree(kKeys);
    const std::string before = stats(udp);
    constexpr int kEach = 300;
    for (int i = 0; i < kEach; ++i) {
      const std::uint64_t k = rng() % kKeys;
      check_get(udp, dataset_key(k), dataset_value(k),
                forein::StartHints{tree->leaf_for(dataset_key(k)), {}});
    }
    const std::string correct = stats(udp);
    CHECK(json_number(correct, "hint_hits") - json_number(before, "hint_hits") >= kEach);
    // Stale: a live leaf to the right of the key (the key is below its lo).
    for (int i = 0; i < kEach; ++i) {
      const std::uint64_t k = rng() % (kKeys / 2);
      check_get(udp, dataset_key(k), dataset_value(k),
                forein::StartHints{tree->leaf_for(dataset_key(kKeys - 1)), {}});
    }
    // Garbage: random pages and levels; a correct secondary behind garbage.
    for (int i = 0; i < kEach; ++i) {
      const std::uint64_t k = rng() % kKeys;
      const forein::Hint junk{static_cast<forein::PageId>(rng() % 100000 + 1),
                              static_cast<std::uint16_t>(rng() % 5), 0};
      check_get(udp, dataset_key(k), dataset_value(k), forein::StartHints{junk, {}});
      check_get(udp, dataset_key(k), dataset_value(k),
                forein::StartHints{tree->leaf_for(dataset_key(kKeys - 1)),
                                   tree->leaf_for(dataset_key(k))});
    }
    // A hinted miss is still a miss.
    check_get(udp, dataset_key(kKeys + 5), std::nullopt,
              forein::StartHints{tree->leaf_for(dataset_key(kKeys - 1)), {}});
    const std::string after = stats(udp);
    CHECK(json_number(after, "hinted") - json_number(before, "hinted") >= 4 * kEach + 1);
    CHECK(json_number(after, "fallbacks") - json_number(correct, "fallbacks") >= kEach);
    CHECK(json_number(after, "secondary_hits") - json_number(correct, "secondary_hits") >= kEach / 2);
  }

  // Fuzzing interleaved with a model. Keys: part of the data set plus
  // byte-string keys of other lengths.
  std::map<std::string, std::string> model;
  for (std::uint64_t i = 0; i < kKeys; ++i) model[dataset_key(i)] = dataset_value(i);
  const auto random_key = [&] {
    switch (rng() % 3) {
      case 0: return dataset_key(rng() % (kKeys + 100));
      case 1: return std::string("user:") + std::to_string(rng() % 500);
      default: {
        std::string k(rng() % 40, '\0');
        for (auto& c : k) c = static_cast<char>(rng() % 4);  // few distinct bytes: collisions
        return k;
      }
    }
  };
  const auto random_valid_wire = [&] {
    Packet p = request(static_cast<Op>(1 + rng() % 4), random_key(), "x", 5);
    p.seq = rng();
    if (rng() % 2) p.hints = forein::StartHints{{static_cast<forein::PageId>(rng()), 0, 0}, {}};
    return encode_packet(p);
  };
  std::uint64_t garbage = 0, not_requests = 0;
  for (int round = 0; round < 120; ++round) {
    // 40 datagrams that are certainly invalid.
    for (int j = 0; j < 40; ++j, ++garbage) {
      std::vector<std::byte> d;
      switch (rng() % 6) {
        case 0: {  // random bytes (0xF0E1 magic + version 1 by chance: 2^-24)
          d.resize(rng() % 200);
          for (auto& b : d) b = static_cast<std::byte>(rng());
          if (d.size() >= 3 && d[0] == std::byte{0xF0} && d[1] == std::byte{0xE1}) d[0] = std::byte{0};
          break;
        }
        case 1: {  // truncated
          d = random_valid_wire();
          d.resize(rng() % d.size());
          break;
        }
        case 2: {  // one byte too many
          d = random_valid_wire();
          d.push_back(std::byte{0});
          break;
        }
        case 3: {  // bad magic
          d = random_valid_wire();
          d[rng() % 2] ^= static_cast<std::byte>(1u << (rng() % 8));
          break;
        }
        case 4: {  // unknown version / unknown flag bit
          d = random_valid_wire();
          if (rng() % 2) {
            d[2] = static_cast<std::byte>(2 + rng() % 200);
          } else {
            d[4] |= std::byte{0x80};
          }
          break;
        }
        default: {  // key length that does not add up
          d = random_valid_wire();
          d[7] ^= static_cast<std::byte>(1 + rng() % 255);
          break;
        }
      }
      udp.send_raw(d);
    }
    // A well-formed REPLY sent to the server: dropped, not answered.
    if (round % 10 == 0) {
      Packet r = request(Op::kReply, "k");
      r.seq = rng();
      udp.send_raw(encode_packet(r));
      ++not_requests;
    }
    // Valid requests, checked against the model.
    for (int j = 0; j < 10; ++j) {
      const std::string key = random_key();
      const auto it = model.find(key);
      switch (rng() % 4) {
        case 0: {
          check_get(udp, key, it == model.end() ? std::nullopt : std::optional(it->second));
          break;
        }
        case 1: {
          const std::string value = "val-" + std::to_string(rng() % 100000);
          const Packet r = udp.call(request(Op::kPut, key, value));
          REQUIRE(r.op == Op::kReply);
          REQUIRE(r.status == Status::kOk);
          model[key] = value;
          break;
        }
        case 2: {
          const Packet r = udp.call(request(Op::kDelete, key));
          REQUIRE(r.op == Op::kReply);
          REQUIRE(r.status == (it == model.end() ? Status::kNotFound : Status::kOk));
          model.erase(key);
          break;
        }
        default: {
          const std::uint32_t count = 1 + rng() % 30;
          const Packet r = udp.call(request(Op::kScan, key, "", count));
          REQUIRE(r.op == Op::kReply);
          REQUIRE(r.status == Status::kOk);
          const auto entries = decode_scan_entries(r.value);
          REQUIRE(entries.has_value());
          REQUIRE(entries->size() == r.count);
          REQUIRE_FALSE(r.more);
          auto m = model.lower_bound(key);
          for (const auto& e : *entries) {
            REQUIRE(m != model.end());
            REQUIRE(e.key == m->first);
            REQUIRE(e.value == m->second);
            ++m;
          }
          REQUIRE((entries->size() == count || m == model.end()));
          break;
        }
      }
    }
  }
  // Requests it cannot serve: an ERROR with a status, and it keeps serving.
  {
    const Packet r = udp.call(request(Op::kPut, std::string(900, 'k'), "v"));
    CHECK(r.op == Op::kError);
    CHECK(r.status == Status::kBadRequest);
    const Packet r2 = udp.call(request(Op::kPut, "k", std::string(5000, 'v')));
    CHECK(r2.op == Op::kError);
    CHECK(r2.status == Status::kBadRequest);
  }
  // A scan over everything fills one datagram and says there is more.
  {
    const Packet r = udp.call(request(Op::kScan, "", "", 0));
    REQUIRE(r.op == Op::kReply);
    const auto entries = decode_scan_entries(r.value);
    REQUIRE(entries.has_value());
    CHECK(r.more);
    CHECK(encoded_size(r) <= kMaxDatagram);
    CHECK(entries->size() > 100);
    auto m = model.begin();
    for (const auto& e : *entries) {
      REQUIRE(e.key == m->first);
      REQUIRE(e.value == m->second);
      ++m;
    }
  }
  // The whole model, by GET.
  for (const auto& [k, v] : model) {
    if (rng() % 20 == 0) check_get(udp, k, v);
  }

  const std::string s = stats(udp);
  INFO(s);
  // Every invalid datagram counted (loopback may in theory lose a few).
  const long long drops = json_number(s, "drops");
  CHECK(drops <= static_cast<long long>(garbage + not_requests));
  CHECK(drops >= static_cast<long long>((garbage + not_requests) * 95 / 100));
  for (const char* reason : {"truncated", "bad_magic", "unknown_version", "unknown_flags",
                             "trailing_bytes", "not_request"}) {
    INFO(reason);
    CHECK(json_number(s, reason) > 0);
  }
  CHECK(json_number(s, "get") > 0);
  CHECK(json_number(s, "put") > 0);
  CHECK(json_number(s, "delete") > 0);
  CHECK(json_number(s, "scan") > 0);
  CHECK(json_number(s, "bad_request") >= 2);

  server.signal(SIGTERM);
  const auto exit_line = server.read_line(std::chrono::seconds(30));
  REQUIRE(exit_line.has_value());
  INFO(*exit_line);
  CHECK(exit_line->starts_with("{"));
  CHECK(exit_line->ends_with("}"));
  CHECK(json_number(*exit_line, "drops") >= drops);
  CHECK(json_number(*exit_line, "hint_hits") >= 300);
  CHECK(json_number(*exit_line, "keys") == static_cast<long long>(model.size()));
  CHECK_FALSE(server.read_line(std::chrono::seconds(30)).has_value());  // EOF
  CHECK(server.wait_exit() == 0);
}

TEST_CASE("kv server: data file, byte-string keys, backend none, SIGINT", "[net][kv_server]") {
  char path[] = "/tmp/forein-kv-data-XXXXXX";
  const int fd = ::mkstemp(path);
  REQUIRE(fd >= 0);
  ::close(fd);
  struct Unlink {
    const char* p;
    ~Unlink() { ::unlink(p); }
  } unlink_guard{path};
  {
    std::ofstream f(path);
    f << "# comment\n\n"
      << "ff00\tlast\n"
      << "\tempty key\n"
      << "61\tvalue with\ttab\n"
      << "0000000000000001\tone\n";
  }
  std::uint16_t port = 0;
  const std::unique_ptr<ChildProcess> owner = start_server({"--data", path, "--backend", "none", "--threads", "1"}, &port);
  ChildProcess& server = *owner;
  Udp udp(port);
  check_get(udp, std::string("\xff\x00", 2), std::string("last"));
  check_get(udp, "", std::string("empty key"));
  check_get(udp, "a", std::string("value with\ttab"));
  check_get(udp, dataset_key(1), std::string("one"));
  check_get(udp, "b", std::nullopt);
  const Packet r = udp.call(request(Op::kScan, "", "", 10));
  const auto entries = decode_scan_entries(r.value);
  REQUIRE(entries.has_value());
  REQUIRE(entries->size() == 4);
  CHECK((*entries)[0].key.empty());
  CHECK((*entries)[3].value == "last");
  CHECK(json_number(stats(udp), "keys") == 4);
  server.signal(SIGINT);
  const auto exit_line = server.read_line(std::chrono::seconds(30));
  REQUIRE(exit_line.has_value());
  CHECK(exit_line->find("\"backend\":\"none\"") != std::string::npos);
  CHECK(server.wait_exit() == 0);
}

TEST_CASE("kv server: bad flags, unknown backend, port in use exit 2", "[net][kv_server]") {
  {
    const auto owned = spawn_server({"--keys", "10"});  // no --listen
    ChildProcess& c = *owned;
    CHECK(c.read_stderr(std::chrono::seconds(30)).find("--listen") != std::string::npos);
    CHECK(c.wait_exit() == 2);
  }
  {
    const auto owned = spawn_server({"--listen", "127.0.0.1:0", "--keys", "10", "--backend", "nosuch"});
    ChildProcess& c = *owned;
    const std::string err = c.read_stderr(std::chrono::seconds(30));
    CHECK(err.find("nosuch") != std::string::npos);
    CHECK(err.find("switch_lpm") != std::string::npos);
    CHECK(c.wait_exit() == 2);
  }
  {
    const auto owned = spawn_server({"--listen", "127.0.0.1:0", "--keys", "10", "--threads", "0"});
    ChildProcess& c = *owned;
    CHECK(c.wait_exit() == 2);
  }
  for (const char* shard : {"3/3", "1", "a/2", "0/0", "0/65", "1/"}) {
    const auto owned = spawn_server({"--listen", "127.0.0.1:0", "--keys", "10", "--shard", shard});
    ChildProcess& c = *owned;
    INFO("--shard " << shard);
    CHECK(c.read_stderr(std::chrono::seconds(30)).find("--shard") != std::string::npos);
    CHECK(c.wait_exit() == 2);
  }
  {
    // Shards split the generated data set: not a data file.
    const auto owned = spawn_server({"--listen", "127.0.0.1:0", "--data", "/dev/null", "--shard", "0/2"});
    ChildProcess& c = *owned;
    CHECK(c.read_stderr(std::chrono::seconds(30)).find("--shard needs --keys") != std::string::npos);
    CHECK(c.wait_exit() == 2);
  }
  {
    // A socket without SO_REUSEPORT holds the port.
    const HeldPort held;
    const auto owned = spawn_server({"--listen", "127.0.0.1:" + std::to_string(held.port), "--keys", "10"});
    ChildProcess& c = *owned;
    const std::string err = c.read_stderr(std::chrono::seconds(30));
    CHECK(err.find("in use") != std::string::npos);
    CHECK(c.wait_exit() == 2);
  }
}

TEST_CASE("kv server: --shard I/K owns its part of the data set", "[net][kv_server]") {
  // 300 keys over 3 shards: shard 1 holds 100 .. 199, the last shard also
  // every key above the data set.
  std::uint16_t port = 0;
  const auto middle = start_server({"--keys", "300", "--shard", "1/3", "--threads", "1"}, &port);
  Udp udp(port);
  check_get(udp, dataset_key(100), dataset_value(100));
  check_get(udp, dataset_key(199), dataset_value(199));
  for (const std::uint64_t k : {std::uint64_t{99}, std::uint64_t{200}, std::uint64_t{1000}}) {
    const Packet r = udp.call(request(Op::kGet, dataset_key(k)));
    INFO("key " << k);
    CHECK(r.op == Op::kError);
    CHECK(r.status == Status::kBadRequest);
    CHECK(r.value.find("not owned by this server (shard 1/3)") != std::string::npos);
  }
  // A scan ends at the shard's end and says more follows.
  const Packet scan = udp.call(request(Op::kScan, dataset_key(197), "", 10));
  REQUIRE(scan.op == Op::kReply);
  CHECK(scan.count == 3);
  CHECK(scan.more);
  const std::string s = stats(udp);
  CHECK(json_number(s, "shard") == 1);
  CHECK(json_number(s, "shards") == 3);
  CHECK(json_number(s, "keys") == 100);

  std::uint16_t last_port = 0;
  const auto last = start_server({"--keys", "300", "--shard", "2/3", "--threads", "1"}, &last_port);
  Udp last_udp(last_port);
  check_get(last_udp, dataset_key(299), dataset_value(299));
  const Packet put = last_udp.call(request(Op::kPut, dataset_key(5000), "new"));
  CHECK(put.status == Status::kOk);
  check_get(last_udp, dataset_key(5000), std::string("new"));
  // The last shard's scan runs to the end of the data: no more.
  const Packet tail = last_udp.call(request(Op::kScan, dataset_key(298), "", 10));
  CHECK(tail.count == 3);
  CHECK_FALSE(tail.more);
}

TEST_CASE("kv server --engine honeycomb: GET/SCAN by the accelerator model, writes by the CPU",
          "[net][kv_server][honeycomb]") {
  const std::uint64_t n = 20000;
  std::uint16_t port = 0;
  const std::unique_ptr<ChildProcess> owner =
      start_server({"--keys", std::to_string(n), "--engine", "honeycomb"}, &port);
  ChildProcess& server = *owner;
  Udp udp(port);
  std::map<std::string, std::string> model;
  for (std::uint64_t i = 0; i < n; ++i) model[dataset_key(i)] = dataset_value(i);
  const std::uint64_t seed = forein::testing::test_seed("kv server honeycomb");
  std::mt19937_64 rng(seed);
  for (int op = 0; op < 3000; ++op) {
    const std::string key = dataset_key(rng() % (n + n / 4));  // some absent
    switch (rng() % 4) {
      case 0: {
        const std::string v = "v" + std::to_string(rng() % 1000);
        const Packet r = udp.call(request(Op::kPut, key, v));
        REQUIRE(r.op == Op::kReply);
        model[key] = v;
        break;
      }
      case 1: {
        const Packet r = udp.call(request(Op::kDelete, key));
        REQUIRE(r.op == Op::kReply);
        CHECK((r.status == Status::kOk) == (model.erase(key) == 1));
        break;
      }
      case 2: {
        const auto it = model.find(key);
        check_get(udp, key, it == model.end() ? std::nullopt : std::optional<std::string>(it->second));
        break;
      }
      default: {
        const std::uint32_t count = 1 + static_cast<std::uint32_t>(rng() % 20);
        const Packet r = udp.call(request(Op::kScan, key, "", count));
        REQUIRE(r.op == Op::kReply);
        const auto entries = decode_scan_entries(r.value);
        REQUIRE(entries.has_value());
        auto it = model.lower_bound(key);
        std::size_t i = 0;
        for (; i < count && it != model.end(); ++i, ++it) {
          REQUIRE(i < entries->size());
          CHECK((*entries)[i].key == it->first);
          CHECK((*entries)[i].value == it->second);
        }
        CHECK(entries->size() == i);
        break;
      }
    }
  }
  // Keys Honeycomb cannot hold are refused, not crashed on.
  const Packet empty = udp.call(request(Op::kPut, "", "x"));
  CHECK(empty.op == Op::kError);
  CHECK(empty.status == Status::kBadRequest);
  const std::string s = stats(udp);
  CHECK(s.find("\"engine\":\"honeycomb\"") != std::string::npos);
  CHECK(json_number(s, "nic_requests") > 0);
  CHECK(json_number(s, "pcie_bytes") > 0);
  server.signal(SIGINT);
  CHECK(server.wait_exit() == 0);

  for (const std::vector<std::string>& refused :
       {std::vector<std::string>{"--backend", "fattree"}, {"--shard", "0/2"}, {"--agent", "127.0.0.1:1"}}) {
    std::vector<std::string> args = {"--listen", "127.0.0.1:0", "--keys", "10", "--engine", "honeycomb"};
    args.insert(args.end(), refused.begin(), refused.end());
    const auto owned = spawn_server(args);
    ChildProcess& c = *owned;
    INFO(refused[0]);
    CHECK(c.read_stderr(std::chrono::seconds(30)).find("--engine honeycomb") != std::string::npos);
    CHECK(c.wait_exit() == 2);
  }
  const auto bad = spawn_server({"--listen", "127.0.0.1:0", "--keys", "10", "--engine", "masstree"});
  CHECK(bad->read_stderr(std::chrono::seconds(30)).find("forein, honeycomb or dpa") != std::string::npos);
  CHECK(bad->wait_exit() == 2);
}

// --honeycomb-reads cpu: GET and SCAN by the store's CPU read path
// (Store::get/scan) instead of the accelerator model. Two servers on the
// same data set and the same writes (PUTs and DELETEs: log blocks, merges
// and removed keys for the readers to see): every GET and SCAN answered
// alike, byte for byte; STATS says which reader ran, and the accelerator
// model of the cpu server saw no reads.
TEST_CASE("kv server --engine honeycomb --honeycomb-reads cpu: answers equal the accelerator's",
          "[net][kv_server][honeycomb]") {
  const std::uint64_t n = 5000;
  std::uint16_t accel_port = 0, cpu_port = 0;
  const std::unique_ptr<ChildProcess> accel_owner =
      start_server({"--keys", std::to_string(n), "--engine", "honeycomb", "--threads", "1"}, &accel_port);
  const std::unique_ptr<ChildProcess> cpu_owner = start_server(
      {"--keys", std::to_string(n), "--engine", "honeycomb", "--honeycomb-reads", "cpu", "--threads", "1"},
      &cpu_port);
  Udp accel(accel_port), cpu(cpu_port);
  const std::uint64_t seed = forein::testing::test_seed("kv server honeycomb cpu reads");
  std::mt19937_64 rng(seed);
  // The same writes on both.
  for (int i = 0; i < 1500; ++i) {
    const std::string key = dataset_key(rng() % (n + n / 4));
    const Packet w = rng() % 3 == 0 ? request(Op::kDelete, key)
                                    : request(Op::kPut, key, "w" + std::to_string(rng() % 100000));
    const Packet a = accel.call(w), c = cpu.call(w);
    REQUIRE(a.op == Op::kReply);
    CHECK(a.status == c.status);
  }
  int scans = 0, found = 0, missing = 0;
  for (int op = 0; op < 3000; ++op) {
    std::string key = dataset_key(rng() % (n + n / 4));
    if (rng() % 16 == 0) key = std::string(1 + rng() % 12, static_cast<char>(rng()));  // other lengths
    Packet q = request(Op::kGet, key);
    if (rng() % 2 == 0) {
      const std::uint32_t counts[] = {0, 1, 3, 8, 24, 100};
      q = request(Op::kScan, key, "", counts[rng() % 6]);
      ++scans;
    }
    const Packet a = accel.call(q), c = cpu.call(q);
    INFO("seed " << seed << " op " << op << " scan " << (q.op == Op::kScan) << " count " << q.count);
    REQUIRE(a.op == Op::kReply);
    CHECK(c.op == a.op);
    CHECK(c.status == a.status);
    CHECK(c.more == a.more);
    CHECK(c.count == a.count);
    CHECK(c.key == a.key);
    CHECK(c.value == a.value);
    if (q.op == Op::kGet) (a.status == Status::kOk ? found : missing)++;
  }
  CHECK(scans > 1000);
  CHECK(found > 300);
  CHECK(missing > 100);
  const std::string sa = stats(accel), sc = stats(cpu);
  INFO(sa);
  INFO(sc);
  CHECK(sa.find("\"reads\":\"accelerator\"") != std::string::npos);
  CHECK(sc.find("\"reads\":\"cpu\"") != std::string::npos);
  CHECK(json_number(sa, "nic_requests") >= 3000);
  CHECK(json_number(sc, "nic_requests") == 0);
  CHECK(json_number(sa, "scan") == json_number(sc, "scan"));
  accel_owner->signal(SIGTERM);
  cpu_owner->signal(SIGTERM);
  CHECK(accel_owner->wait_exit() == 0);
  CHECK(cpu_owner->wait_exit() == 0);

  // The flag's errors: another engine (even naming the default), a reader
  // that is not one.
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"--honeycomb-reads", "cpu"},
        {"--engine", "forein", "--honeycomb-reads", "accelerator"},
        {"--engine", "dpa", "--honeycomb-reads", "cpu"},
        {"--engine", "honeycomb", "--honeycomb-reads", "gpu"},
        {"--engine", "honeycomb", "--honeycomb-reads", ""}}) {
    std::vector<std::string> args = {"--listen", "127.0.0.1:0", "--keys", "10"};
    args.insert(args.end(), bad.begin(), bad.end());
    const auto owned = spawn_server(args);
    INFO(bad[bad.size() - 1]);
    CHECK(owned->read_stderr(std::chrono::seconds(30)).find("--honeycomb-reads") != std::string::npos);
    CHECK(owned->wait_exit() == 2);
  }
}

namespace {

// A value DPA-Store holds: the data set's form or 0..7 random bytes.
std::string random_dpa_value(std::mt19937_64& rng, std::uint64_t key) {
  if (rng() % 2 == 0) return dataset_value(key, static_cast<std::uint32_t>(1 + rng() % 1000));
  std::string v(rng() % 8, '\0');
  for (char& c : v) c = static_cast<char>(rng());
  return v;
}

}  // namespace

TEST_CASE("kv server --engine dpa: value encoding round-trips", "[net][kv_server][dpa]") {
  using forein::net::kv::decode_dpa_value;
  using forein::net::kv::encode_dpa_value;
  std::mt19937_64 rng(forein::testing::test_seed("kv server dpa encoding"));
  for (int i = 0; i < 20000; ++i) {
    const std::uint64_t key = rng();
    const std::string v = i % 3 == 0 ? dataset_value(key, static_cast<std::uint32_t>(rng() % 5))
                                     : random_dpa_value(rng, key);
    const auto stored = encode_dpa_value(v);
    REQUIRE(stored.has_value());
    REQUIRE(decode_dpa_value(*stored) == v);
  }
  for (const std::string& bad : {std::string("12345678"), std::string("v0123456789ABCDE"), std::string("w0123456789abcde"),
                                std::string("v0123456789abcdef"), std::string("v0123456789abcd"),
                                std::string(40, 'x')}) {
    INFO(bad);
    CHECK_FALSE(encode_dpa_value(bad).has_value());
  }
}

TEST_CASE("kv server --engine dpa: DPA-Store's store, one port per traverser thread",
          "[net][kv_server][dpa]") {
  using forein::net::kv::dpa_port_index;
  const std::uint64_t n = 20000;
  const unsigned threads = 3;
  std::uint16_t base = 0;
  const std::unique_ptr<ChildProcess> owner =
      start_server({"--keys", std::to_string(n), "--engine", "dpa", "--threads", std::to_string(threads)}, &base);
  ChildProcess& server = *owner;
  std::vector<std::unique_ptr<Udp>> udp;
  for (unsigned i = 0; i < threads; ++i) udp.push_back(std::make_unique<Udp>(static_cast<std::uint16_t>(base + i)));
  const auto port_of = [&](std::uint64_t key) -> Udp& { return *udp[dpa_port_index(key, threads)]; };

  // Before any write: the bulk load's keys.
  const std::string s0 = stats(*udp[0]);
  CHECK(s0.find("\"engine\":\"dpa\"") != std::string::npos);
  CHECK(json_number(s0, "keys") == static_cast<long long>(n));
  CHECK(json_number(s0, "loaded_keys") == static_cast<long long>(n));
  CHECK(json_number(s0, "leaves") >= 1);
  CHECK(json_number(s0, "depth") >= 1);
  CHECK(json_number(s0, "dpa_bytes") > 0);
  CHECK(json_number(s0, "dpa_bytes") <= json_number(s0, "dpa_capacity"));
  CHECK(json_number(s0, "misrouted") == 0);
  std::string ports = "\"ports\":[";
  for (unsigned i = 0; i < threads; ++i) ports += (i ? "," : "") + std::to_string(base + i);
  CHECK(s0.find(ports + "]") != std::string::npos);

  std::map<std::string, std::string> model;
  for (std::uint64_t i = 0; i < n; ++i) model[dataset_key(i)] = dataset_value(i);
  const std::uint64_t seed = forein::testing::test_seed("kv server dpa");
  std::mt19937_64 rng(seed);
  std::uint64_t counted[4] = {0, 0, 0, 0};  // GET, SCAN, PUT, DELETE served by the store
  for (int op = 0; op < 4000; ++op) {
    const std::uint64_t k = rng() % (n + n / 4);  // some absent
    const std::string key = dataset_key(k);
    Udp& to = port_of(k);
    switch (rng() % 4) {
      case 0: {
        const std::string v = random_dpa_value(rng, k);
        const Packet r = to.call(request(Op::kPut, key, v));
        REQUIRE(r.op == Op::kReply);
        REQUIRE(r.status == Status::kOk);
        model[key] = v;
        ++counted[2];
        break;
      }
      case 1: {
        const Packet r = to.call(request(Op::kDelete, key));
        REQUIRE(r.op == Op::kReply);
        CHECK((r.status == Status::kOk) == (model.erase(key) == 1));
        ++counted[3];
        break;
      }
      case 2: {
        const auto it = model.find(key);
        check_get(to, key, it == model.end() ? std::nullopt : std::optional<std::string>(it->second));
        ++counted[0];
        break;
      }
      default: {
        // Across DPA-Store's 64-pair responses; now and then no limit (a
        // full datagram).
        const std::uint32_t count = rng() % 50 == 0 ? 0 : 1 + static_cast<std::uint32_t>(rng() % 200);
        const Packet r = to.call(request(Op::kScan, key, "", count));
        REQUIRE(r.op == Op::kReply);
        const auto entries = decode_scan_entries(r.value);
        REQUIRE(entries.has_value());
        REQUIRE(entries->size() == r.count);
        auto it = model.lower_bound(key);
        std::size_t i = 0;
        for (; (count == 0 || i < count) && it != model.end() && i < entries->size(); ++i, ++it) {
          REQUIRE((*entries)[i].key == it->first);
          REQUIRE((*entries)[i].value == it->second);
        }
        CHECK(entries->size() == i);
        if (count != 0) {
          CHECK(i == std::min<std::size_t>(count, static_cast<std::size_t>(std::distance(model.lower_bound(key), model.end()))));
          CHECK_FALSE(r.more);
        } else {
          CHECK(r.more == (it != model.end()));  // a datagram's worth, more to come
          if (r.more) CHECK(i > 64);
        }
        ++counted[1];
        break;
      }
    }
  }

  // Keys are 8 bytes, values 64-bit: anything else refused with the limit.
  for (const std::string& key : {std::string(), std::string(7, 'k'), std::string(9, 'k')}) {
    for (const Op op : {Op::kGet, Op::kPut, Op::kDelete, Op::kScan}) {
      const Packet r = udp[0]->call(request(op, key, "v", 5));
      CHECK(r.op == Op::kError);
      CHECK(r.status == Status::kBadRequest);
      CHECK(r.value.find("8 bytes") != std::string::npos);
    }
  }
  const std::string target = dataset_key(7);
  for (const std::string& value : {std::string("12345678"), std::string("V0123456789abcde"),
                                  std::string("v0123456789ABCDE"), std::string("v0123456789abcdef0"),
                                  std::string(100, 'x')}) {
    INFO(value);
    const Packet r = port_of(7).call(request(Op::kPut, target, value));
    CHECK(r.op == Op::kError);
    CHECK(r.status == Status::kBadRequest);
    CHECK(r.value.find("64-bit") != std::string::npos);
  }
  {
    const auto it = model.find(target);
    check_get(port_of(7), target, it == model.end() ? std::nullopt : std::optional<std::string>(it->second));
    ++counted[0];
  }

  // Every thread serves any request; one sent to another port counts.
  const std::string s1 = stats(*udp[0]);
  const long long misrouted_before = json_number(s1, "misrouted");
  int wrong_port = 0;
  for (std::uint64_t k = 0; k < 60; ++k) {
    Udp& other = *udp[(dpa_port_index(k, threads) + 1 + k % (threads - 1)) % threads];
    const auto it = model.find(dataset_key(k));
    check_get(other, dataset_key(k), it == model.end() ? std::nullopt : std::optional<std::string>(it->second));
    ++wrong_port;
    ++counted[0];
  }
  const std::string s2 = stats(*udp[threads - 1]);  // STATS on any port
  CHECK(json_number(s2, "misrouted") >= misrouted_before + wrong_port);
  CHECK(json_number(s2, "loaded_keys") == static_cast<long long>(n));
  CHECK(json_number(s2, "hot_lookups") >= json_number(s2, "hot_hits"));
  CHECK(json_number(s2, "range_calls") >= static_cast<long long>(counted[1]));
  // Patches and stitches: every patch is either an UPDATE-only one or a
  // merge; none found DPA memory full; reclamation never runs ahead.
  CHECK(json_number(s2, "update_only_patches") <= json_number(s2, "patches"));
  CHECK(json_number(s2, "failed_patches") == 0);
  CHECK(json_number(s2, "reset_stitches") <= json_number(s2, "update_only_patches"));
  CHECK(json_number(s2, "reclaimed_nodes") <= json_number(s2, "retired_nodes"));
  CHECK(json_number(s2, "stitcher_lines") >= json_number(s2, "reset_stitches"));
  // The model's figures per op kind, from the summed OpCosts: the GETs first.
  const std::size_t model_at = s2.find("\"model\":{\"get\":{\"ops\":");
  REQUIRE(model_at != std::string::npos);
  const std::string m = s2.substr(model_at);
  CHECK(json_number(m, "ops") >= static_cast<long long>(counted[0]));  // resends are served again
  CHECK(json_number(m, "latency_ns") > 0);
  CHECK(json_number(m, "mops") >= 0);
  for (const char* kind : {"\"scan\":{\"ops\":", "\"put\":{\"ops\":", "\"delete\":{\"ops\":"}) {
    INFO(kind);
    const std::size_t at = m.find(kind);
    REQUIRE(at != std::string::npos);
    CHECK(json_number(m.substr(at), "ops") > 0);
    CHECK(json_number(m.substr(at), "latency_ns") > 0);
  }
  CHECK(m.find("\"bottleneck\":\"") != std::string::npos);

  server.signal(SIGINT);
  const auto exit_line = server.read_line(std::chrono::seconds(60));
  REQUIRE(exit_line.has_value());
  CHECK(exit_line->find("\"engine\":\"dpa\"") != std::string::npos);
  CHECK(exit_line->find("\"dpa\":{") != std::string::npos);
  CHECK(server.wait_exit() == 0);
}

TEST_CASE("kv server --engine dpa: refused flags, bad data, ports in use exit 2", "[net][kv_server][dpa]") {
  for (const std::vector<std::string>& refused :
       {std::vector<std::string>{"--backend", "fattree"}, {"--shard", "0/2"}, {"--agent", "127.0.0.1:1"},
        {"--memif", "/tmp/forein-no-such.sock"}, {"--mode", "metadata"}}) {
    std::vector<std::string> args = {"--listen", "127.0.0.1:0", "--keys", "10", "--engine", "dpa"};
    args.insert(args.end(), refused.begin(), refused.end());
    const auto owned = spawn_server(args);
    ChildProcess& c = *owned;
    const std::string flag = refused[0] == "--mode" ? "--mode metadata" : refused[0];
    INFO(flag);
    const std::string err = c.read_stderr(std::chrono::seconds(30));
    CHECK(err.find(flag + " is not supported with --engine dpa") != std::string::npos);
    CHECK(c.wait_exit() == 2);
  }
  {
    // A data file row DPA-Store cannot hold: a 7-byte key.
    forein::testing::TempDir dir;
    const std::string path = dir.path + "/rows.tsv";
    {
      std::ofstream f(path);
      f << "0000000000000001\tone\n"
        << "00000000000002\ttwo\n";
    }
    const auto owned = spawn_server({"--listen", "127.0.0.1:0", "--data", path, "--engine", "dpa"});
    ChildProcess& c = *owned;
    CHECK(c.read_stderr(std::chrono::seconds(30)).find("8 bytes") != std::string::npos);
    CHECK(c.wait_exit() == 2);
  }
  {
    // PORT..PORT+1 with PORT+1 taken: named, exit 2.
    HeldPort held;
    const auto owned = spawn_server({"--listen", "127.0.0.1:" + std::to_string(held.port - 1), "--keys", "10",
                                     "--engine", "dpa", "--threads", "2"});
    ChildProcess& c = *owned;
    const std::string err = c.read_stderr(std::chrono::seconds(30));
    INFO(err);
    CHECK(err.find("cannot listen on 127.0.0.1:") != std::string::npos);
    CHECK(err.find("in use") != std::string::npos);
    CHECK(c.wait_exit() == 2);
  }
  {
    const auto owned =
        spawn_server({"--listen", "127.0.0.1:65535", "--keys", "10", "--engine", "dpa", "--threads", "2"});
    ChildProcess& c = *owned;
    CHECK(c.read_stderr(std::chrono::seconds(30)).find("65535") != std::string::npos);
    CHECK(c.wait_exit() == 2);
  }
}

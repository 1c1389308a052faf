// The remote-read path end to end on loopback (docs/remote-read.md, issue
// 42), the real programs as child processes, no switch:
//   - forein-mem-server --keys 20000 and forein-load --remote-read --verify
//     --workload b: wrong 0, every lookup a start READ of the root and
//     height + 1 READs in all (the updates are PUTs, no READs);
//   - malformed READs over real UDP (every reason, and datagrams that do
//     not parse) are answered or dropped and counted in STATS, and a
//     correct READ afterwards still works; the SIGTERM line has the counts;
//   - a memory node killed (SIGKILL) mid-run of forein-load --remote-read
//     --workload c --verify and restarted on the same port: the load's
//     READs time out and are retried, none is answered wrongly, and the
//     restarted node serves the load's later READs.
// No sleeps as synchronization: `ready` lines, replies, and counters
// polled with deadlines; children are killed if a check fails.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "child_process.h"
#include "protocol/dataset.h"
#include "protocol/packet.h"
#include "remote/node_layout.h"
#include "remote/region.h"
#include "udp_client.h"

namespace {

using forein::net::dataset_key;
using forein::net::encode_read_header;
using forein::net::Op;
using forein::net::Packet;
using forein::net::ReadHeader;
using forein::net::Status;
using forein::testing::ChildProcess;
using forein::testing::eventually;
using forein::testing::json_number;
using forein::testing::ready_port;
using forein::testing::UdpClient;
namespace rr = forein::net::remote;

constexpr const char* kKeys = "20000";

// The number after "name": as a double (json_number reads whole numbers); NaN if absent.
double json_double(const std::string& json, const std::string& name) {
  const std::string needle = "\"" + name + "\":";
  const std::size_t at = json.find(needle);
  if (at == std::string::npos) return std::strtod("nan", nullptr);
  return std::strtod(json.c_str() + at + needle.size(), nullptr);
}

// The object after "name": (flat enough for json_number).
std::string json_object(const std::string& json, const std::string& name) {
  const std::size_t at = json.find("\"" + name + "\":{");
  if (at == std::string::npos) return {};
  return json.substr(at, json.find('}', at) - at + 1);
}

Packet read_request(std::uint64_t address, std::uint32_t length, std::uint16_t flags = 0,
                    std::uint64_t key = 1) {
  return forein::testing::request(Op::kRead, dataset_key(key), encode_read_header(ReadHeader{address, length, flags}));
}

std::unique_ptr<ChildProcess> start_mem_server(const std::string& port) {
  return std::make_unique<ChildProcess>(
      FOREIN_MEM_SERVER_BIN,
      std::vector<std::string>{"--listen", "127.0.0.1:" + port, "--keys", kKeys, "--threads", "2"});
}

std::unique_ptr<ChildProcess> start_load(int port, const std::string& workload, const std::string& seconds,
                                         const std::string& timeout_ms, const std::string& retries) {
  return std::make_unique<ChildProcess>(
      FOREIN_LOAD_BIN,
      std::vector<std::string>{"--target", "127.0.0.1:" + std::to_string(port), "--remote-read", "--keys", kKeys,
                               "--workload", workload, "--dist", "uniform", "--seconds", seconds, "--outstanding",
                               "4", "--timeout-ms", timeout_ms, "--retries", retries, "--verify", "--seed", "5"});
}

}  // namespace

TEST_CASE("remote reads on loopback: forein-load --remote-read --verify against forein-mem-server",
          "[e2e][remote-read]") {
  auto mem = start_mem_server("0");
  const int port = ready_port(*mem);
  REQUIRE(port > 0);
  UdpClient udp(static_cast<std::uint16_t>(port));
  const std::string before = forein::testing::server_stats(udp);
  INFO(before);
  const long long height = json_number(before, "height");
  CHECK(json_number(before, "keys") == 20000);
  CHECK(json_number(before, "fanout") == 16);
  CHECK(height == 4);  // 20000 keys in 16-branch nodes

  auto load = start_load(port, "b", "1.5", "500", "5");
  const std::string json = forein::testing::exit_json(*load);
  INFO(json);
  CHECK(json.find("\"mode\":\"remote-read\"") != std::string::npos);
  CHECK(json_number(json, "wrong") == 0);
  CHECK(json_number(json, "errors") == 0);
  // Every PUT answered; a lookup may give up (no answer, never a wrong
  // one) only if it kept finding its leaf mid-rewrite: a rare few.
  CHECK(json_number(json, "timeouts") == json_number(json, "gave_up"));
  CHECK(json_number(json, "gave_up") * 1000 <= json_number(json, "ops"));
  CHECK(json_number(json, "verified") > 100);
  CHECK(json_number(json, "updates") > 0);
  CHECK(json_number(json, "height") == height);
  CHECK(json_number(json, "rewritten") == 0);  // no switch
  CHECK(json_number(json, "hint_hits") == 0);
  CHECK(json_number(json, "fallbacks") == 0);
  const long long ops = json_number(json, "ops");
  const long long updates = json_number(json, "updates");
  const long long start_reads = json_number(json, "start_reads");
  CHECK(start_reads > 0);
  CHECK(start_reads == ops - updates + json_number(json, "gave_up"));  // one per lookup
  // A lookup: the root (the start READ), height - 1 nodes below it, the
  // record: height + 1 READs; the updates (5%) are PUTs.
  const double per_op = json_double(json, "reads_per_op");
  const double per_lookup = static_cast<double>(height + 1);
  CHECK(per_op <= per_lookup + 0.05);
  CHECK(per_op >= per_lookup * static_cast<double>(ops - updates) / static_cast<double>(ops) - 0.05);

  // The memory node saw them: every READ, the start READs, the PUTs.
  const std::string after = forein::testing::server_stats(udp);
  INFO(after);
  CHECK(json_number(after, "start_reads") >= start_reads);
  CHECK(json_number(after, "reads") >= json_number(json, "read_requests"));
  CHECK(json_number(json_object(after, "writer"), "updates") == updates);
  CHECK(json_number(after, "bad_reads") == 0);
  CHECK(json_number(after, "failed_puts") == 0);

  // Malformed READs over UDP: each answered with its error and counted by
  // reason; datagrams that do not parse are dropped and counted.
  const long long region = json_number(after, "region_bytes");
  REQUIRE(region > 0);
  const auto size = static_cast<std::uint64_t>(region);
  struct Bad {
    Packet request;
    Status status;
    const char* reason;
  };
  std::vector<Bad> bad = {
      {read_request(size, 8), Status::kBadAddress, "out_of_range"},
      {read_request(std::uint64_t{1} << 62, 296, forein::net::kReadStart), Status::kBadAddress, "out_of_range"},
      {read_request(size - 8, 296), Status::kBadAddress, "past_end"},
      {read_request(64, 40000), Status::kBadAddress, "too_long"},
      {read_request(64, 8, 0x40), Status::kBadRequest, "bad_header"},
      {forein::testing::request(Op::kRead, dataset_key(1), "short"), Status::kBadRequest, "bad_header"},
  };
  {
    std::string reserved = encode_read_header(ReadHeader{64, 8, 0});
    reserved[15] = 1;
    bad.push_back({forein::testing::request(Op::kRead, dataset_key(1), reserved), Status::kBadRequest, "bad_header"});
  }
  for (const Bad& b : bad) {
    INFO(b.reason);
    const Packet r = udp.call(b.request);
    CHECK(r.op == Op::kError);
    CHECK(r.status == b.status);
  }
  const std::vector<std::byte> good = forein::net::encode_packet(read_request(64, 8));
  for (std::size_t n = 1; n < 6; ++n) udp.send_raw(std::vector<std::byte>(good.begin(), good.begin() + n * 4));
  {
    // A correct READ after them still works (the drops are polled below:
    // a reply is not promised to follow the datagrams before it).
    const Packet r = udp.call(read_request(0, rr::kRegionHeaderBytes));
    REQUIRE(r.op == Op::kReply);
    REQUIRE(r.value.size() == forein::net::kReadHeaderBytes + rr::kRegionHeaderBytes);
    rr::RegionHeader h;
    const auto* p = reinterpret_cast<const std::byte*>(r.value.data()) + forein::net::kReadHeaderBytes;
    CHECK(rr::check_header(std::span(p, rr::kRegionHeaderBytes), &h) == rr::Check::kOk);
    CHECK(h.height == static_cast<std::uint32_t>(height));
  }
  std::string stats;
  CHECK(eventually([&] {
    stats = forein::testing::server_stats(udp);
    return json_number(stats, "drops") >= 5;
  }));
  INFO(stats);
  const std::string by = json_object(stats, "bad_reads_by_reason");
  CHECK(json_number(stats, "bad_reads") == 7);
  CHECK(json_number(by, "out_of_range") == 2);
  CHECK(json_number(by, "past_end") == 1);
  CHECK(json_number(by, "too_long") == 1);
  CHECK(json_number(by, "bad_header") == 3);
  CHECK(json_number(json_object(stats, "drops_by_reason"), "truncated") == 5);

  // SIGTERM: the counters as one JSON line, exit 0.
  const std::string last = forein::testing::stop_json(*mem);
  CHECK(json_number(last, "bad_reads") == 7);
  CHECK(json_number(last, "drops") == 5);
  CHECK(json_number(last, "reads") > 0);
}

TEST_CASE("remote reads on loopback: a memory node killed and restarted mid-run", "[e2e][remote-read]") {
  auto mem = start_mem_server("0");
  const int port = ready_port(*mem);
  REQUIRE(port > 0);
  // Read-only (YCSB C): the restarted node rebuilds the same tree from the
  // data set, so nothing a reader could see is lost; the addresses are the
  // same, so the load's walkers keep their header.
  auto load = start_load(port, "c", "6", "100", "2");
  {
    UdpClient udp(static_cast<std::uint16_t>(port));
    REQUIRE(eventually([&] { return json_number(forein::testing::server_stats(udp), "reads") > 2000; }));
  }
  mem->kill_now();
  mem = start_mem_server(std::to_string(port));
  REQUIRE(ready_port(*mem) == port);
  // The load's READs reach the new node (its counters start at 0).
  UdpClient udp(static_cast<std::uint16_t>(port));
  CHECK(eventually([&] { return json_number(forein::testing::server_stats(udp), "reads") > 1000; },
                   std::chrono::seconds(20)));
  const std::string json = forein::testing::exit_json(*load);
  INFO(json);
  CHECK(json_number(json, "wrong") == 0);
  CHECK(json_number(json, "errors") == 0);
  CHECK(json_number(json, "verified") > 1000);
  CHECK(json_number(json, "retries") > 0);  // READs in flight when it died were resent
  CHECK(json_number(json, "read_requests") > 0);
  const std::string stats = forein::testing::server_stats(udp);
  INFO(stats);
  CHECK(json_number(stats, "start_reads") > 0);
  CHECK(json_number(stats, "bad_reads") == 0);
  const std::string last = forein::testing::stop_json(*mem);
  CHECK(json_number(last, "reads") > 1000);
}

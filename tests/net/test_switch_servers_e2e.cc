// Several servers behind forein-switch (docs/network.md, "Several
// servers"): three forein-kv-server --shard I/3 on the switch's server
// side, the switch routing each request by its key and hinting it from
// that server's image; forein-load --verify sees one service. Then the
// faults: a server killed mid-run (its range times out, the others keep
// serving, restarted it serves again) and the switch killed mid-run and
// restarted (the client's retries recover, hints come back once the
// servers' mirrors re-push their images). Needs root and /dev/net/tun; no
// sleeps as synchronization (conditions polled with deadlines); children
// are killed if a check fails.
#include <csignal>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "child_process.h"
#include "protocol/dataset.h"
#include "protocol/packet.h"
#include "tap_switch.h"
#include "udp_client.h"

namespace {

using forein::net::dataset_key;
using forein::net::dataset_value;
using forein::net::Op;
using forein::net::shard_first;
using forein::net::Status;
using forein::testing::ChildProcess;
using forein::testing::eventually;
using forein::testing::json_number;
using forein::testing::ready_port;
using forein::testing::TapNets;
using forein::testing::UdpClient;

constexpr std::uint64_t kKeys = 30000;
constexpr int kServers = 3;

// The switch, its three servers and the ports they use.
class Testbed {
 public:
  Testbed(const std::string& backend, int variant) : backend_(backend), nets_("srv", variant) {
    service_port_ = forein::testing::free_udp_port();
    for (int i = 0; i < kServers; ++i) ports_.push_back(forein::testing::free_udp_port());
    start_switch(0);
    for (int i = 0; i < kServers; ++i) start_server(i);
  }

  // Starts (or restarts) the switch; agent_port 0 picks a free one.
  void start_switch(int agent_port) {
    std::string servers;
    for (std::uint16_t p : ports_) servers += (servers.empty() ? "" : ",") + std::to_string(p);
    switch_ = std::make_unique<ChildProcess>(
        FOREIN_SWITCH_BIN,
        std::vector<std::string>{"--agent-listen", "127.0.0.1:" + std::to_string(agent_port), "--client-iface",
                                 nets_.client_iface, "--server-iface", nets_.server_iface, "--client-net",
                                 nets_.client_net, "--server-net", nets_.server_net, "--servers", servers, "--keys",
                                 std::to_string(kKeys), "--service-port", std::to_string(service_port_)});
    agent_port_ = ready_port(*switch_);
    REQUIRE(agent_port_ > 0);
  }

  void start_server(int i) {
    if (servers_.size() <= static_cast<std::size_t>(i)) servers_.resize(static_cast<std::size_t>(i) + 1);
    auto& s = servers_[static_cast<std::size_t>(i)];
    s = std::make_unique<ChildProcess>(
        FOREIN_KV_SERVER_BIN,
        std::vector<std::string>{"--listen", nets_.server_net + ".1:" + std::to_string(ports_[static_cast<std::size_t>(i)]),
                                 "--keys", std::to_string(kKeys), "--shard",
                                 std::to_string(i) + "/" + std::to_string(kServers), "--backend", backend_, "--agent",
                                 "127.0.0.1:" + std::to_string(agent_port_), "--threads", "1", "--refresh-ms", "50"});
    REQUIRE(ready_port(*s) == ports_[static_cast<std::size_t>(i)]);
  }

  // A client of server i directly (on the server side's .1, not through the switch).
  std::unique_ptr<UdpClient> direct(int i) const {
    return std::make_unique<UdpClient>(ports_[static_cast<std::size_t>(i)], TapNets::addr(nets_.server_net, 1));
  }
  std::unique_ptr<UdpClient> via_switch() const {
    return std::make_unique<UdpClient>(service_port_, TapNets::addr(nets_.client_net, 2));
  }
  std::string target() const { return nets_.client_net + ".2:" + std::to_string(service_port_); }

  long long server_counter(int i, const std::string& name) const {
    auto c = direct(i);
    return json_number(forein::testing::server_stats(*c), name);
  }
  long long total(const std::string& name) const {
    long long t = 0;
    for (int i = 0; i < kServers; ++i) t += server_counter(i, name);
    return t;
  }

  ChildProcess& sw() { return *switch_; }
  ChildProcess& server(int i) { return *servers_[static_cast<std::size_t>(i)]; }
  std::uint16_t port(int i) const { return ports_[static_cast<std::size_t>(i)]; }
  int agent_port() const { return agent_port_; }

 private:
  std::string backend_;
  TapNets nets_;
  std::uint16_t service_port_ = 0;
  std::vector<std::uint16_t> ports_;
  int agent_port_ = 0;
  std::unique_ptr<ChildProcess> switch_;
  std::vector<std::unique_ptr<ChildProcess>> servers_;
};

std::unique_ptr<ChildProcess> start_load(const Testbed& bed, const std::string& workload, double seconds,
                                         const std::string& timeout_ms, const std::string& retries) {
  return std::make_unique<ChildProcess>(
      FOREIN_LOAD_BIN,
      std::vector<std::string>{"--target", bed.target(), "--keys", std::to_string(kKeys), "--workload", workload,
                               "--dist", "uniform", "--seconds", std::to_string(seconds), "--outstanding", "16",
                               "--timeout-ms", timeout_ms, "--retries", retries, "--verify", "--seed", "11"});
}

// The number after "port":P,"requests": in the switch's servers array.
long long routed_to(const std::string& counters, std::uint16_t port) {
  return json_number(counters, "port\":" + std::to_string(port) + ",\"requests");
}

}  // namespace

TEST_CASE("forein-switch with three servers: every key answered by its owner", "[e2e][switch]") {
  if (!forein::testing::can_make_taps()) {
    WARN("forein-switch: skipped: " << forein::testing::no_taps_reason());
    return;
  }
  for (const std::string backend : {"switch_lpm", "fattree"}) {
    SECTION(backend) {
      Testbed bed(backend, backend == "fattree" ? 1 : 0);

      // 1. One service: a verified mixed load through the switch.
      auto load = start_load(bed, "b", 2, "500", "5");
      const std::string json = forein::testing::exit_json(*load);
      CHECK(json_number(json, "wrong") == 0);
      CHECK(json_number(json, "errors") == 0);
      CHECK(json_number(json, "timeouts") == 0);
      CHECK(json_number(json, "verified") > 1000);

      // 2. Each server saw its share, hinted from its own image, and holds
      // exactly its shard.
      for (int i = 0; i < kServers; ++i) {
        auto c = bed.direct(i);
        const std::string stats = forein::testing::server_stats(*c);
        INFO("server " << i << ": " << stats);
        CHECK(json_number(stats, "shard") == i);
        CHECK(json_number(stats, "keys") ==
              static_cast<long long>(shard_first(static_cast<std::uint32_t>(i) + 1, kServers, kKeys) -
                                     shard_first(static_cast<std::uint32_t>(i), kServers, kKeys)));
        CHECK(json_number(stats, "get") > 100);
        CHECK(json_number(stats, "hint_hits") > 0);
      }

      // 3. Keys at every boundary, through the switch; each server refuses
      // its neighbour's keys when asked directly.
      auto via = bed.via_switch();
      for (std::uint32_t i = 0; i < kServers; ++i) {
        for (const std::uint64_t k : {shard_first(i, kServers, kKeys), shard_first(i + 1, kServers, kKeys) - 1}) {
          const forein::net::Packet r = via->call(forein::testing::request(Op::kGet, dataset_key(k)));
          INFO("key " << k);
          CHECK(r.op == Op::kReply);
          CHECK(r.status == Status::kOk);
          CHECK(r.value == dataset_value(k));
        }
        auto direct = bed.direct(static_cast<int>(i));
        const std::uint64_t other = shard_first((i + 1) % kServers, kServers, kKeys);
        const forein::net::Packet r = direct->call(forein::testing::request(Op::kGet, dataset_key(other)));
        CHECK(r.op == Op::kError);
        CHECK(r.status == Status::kBadRequest);
        CHECK(r.value.find("not owned") != std::string::npos);
      }

      // 4. A fragmented reply (800 entries, within server 0's shard) comes
      // back from the service port with a checksum the client accepts.
      const forein::net::Packet big = via->call(forein::testing::request(Op::kScan, dataset_key(0), "", 800));
      REQUIRE(big.op == Op::kReply);
      CHECK(big.count == 800);

      // A scan stops at its server's range end and says more follows.
      const std::uint64_t edge = shard_first(1, kServers, kKeys);
      const forein::net::Packet scan = via->call(forein::testing::request(Op::kScan, dataset_key(edge - 2), "", 10));
      REQUIRE(scan.op == Op::kReply);
      CHECK(scan.count == 2);
      CHECK(scan.more);

      // 5. The switch's exit line counts requests per server.
      const std::string counters = forein::testing::stop_json(bed.sw());
      for (int i = 0; i < kServers; ++i) CHECK(routed_to(counters, bed.port(i)) > 100);
      for (int i = 0; i < kServers; ++i) {
        bed.server(i).signal(SIGTERM);
        CHECK(bed.server(i).wait_exit() == 0);
      }
    }
  }
}

TEST_CASE("forein-switch with three servers: a server and the switch killed mid-run", "[e2e][switch]") {
  if (!forein::testing::can_make_taps()) {
    WARN("forein-switch: skipped: " << forein::testing::no_taps_reason());
    return;
  }
  Testbed bed("switch_lpm", 2);

  SECTION("a server killed and restarted") {
    // Read-only: a restarted server has lost nothing a reader could see
    // (the servers keep their data in memory, so writes would be lost).
    // One retry: a third of the requests stall on the dead server for two
    // timeouts each. The timeout is long enough that a live server on
    // this busy 2-core machine is not taken for a dead one.
    auto load = start_load(bed, "c", 10, "250", "1");
    REQUIRE(eventually([&] { return bed.server_counter(1, "get") > 500; }));
    bed.server(1).kill_now();
    // The other two keep serving while server 1 is down.
    const long long before0 = bed.server_counter(0, "get"), before2 = bed.server_counter(2, "get");
    CHECK(eventually([&] {
      return bed.server_counter(0, "get") > before0 + 50 && bed.server_counter(2, "get") > before2 + 50;
    }));
    bed.start_server(1);
    CHECK(eventually([&] { return bed.server_counter(1, "get") > 100; }));
    const std::string json = forein::testing::exit_json(*load);
    CHECK(json_number(json, "wrong") == 0);
    CHECK(json_number(json, "errors") == 0);
    CHECK(json_number(json, "timeouts") > 0);
    // Only server 1's range timed out.
    CHECK(json_number(json, "timeout_key_min") >= static_cast<long long>(shard_first(1, kServers, kKeys)));
    CHECK(json_number(json, "timeout_key_max") < static_cast<long long>(shard_first(2, kServers, kKeys)));
  }

  SECTION("the switch killed and restarted") {
    auto load = start_load(bed, "c", 8, "100", "3");
    REQUIRE(eventually([&] { return bed.total("hint_hits") > 1000; }));
    const int agent_port = bed.agent_port();
    bed.sw().kill_now();
    bed.start_switch(agent_port);
    // The new switch's agent starts empty: hints come back once the
    // servers' mirrors have re-published their images to it.
    const long long hinted = bed.total("hinted");
    CHECK(eventually([&] { return bed.total("hinted") > hinted + 500; }));
    const std::string json = forein::testing::exit_json(*load);
    CHECK(json_number(json, "wrong") == 0);
    CHECK(json_number(json, "errors") == 0);
  }

  // Both ways, every key is served again afterwards.
  auto via = bed.via_switch();
  for (std::uint32_t i = 0; i < kServers; ++i) {
    const std::uint64_t k = shard_first(i, kServers, kKeys) + 7;
    const forein::net::Packet r = via->call(forein::testing::request(Op::kGet, dataset_key(k)));
    CHECK(r.status == Status::kOk);
    CHECK(r.value == dataset_value(k));
  }
}

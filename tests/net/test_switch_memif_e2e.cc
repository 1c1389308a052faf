// forein-switch on memif ports (docs/network.md, "forein-switch" and
// "forein-switch-gen"): the switch serves two memif sockets, forein-kv-server
// mirrors its offload image to the switch's in-process agent, and
// forein-switch-gen joins both sockets: garbage frames into both ports, then
// GETs that must all come back out of the server side, valid and hinted;
// the generator as the server's client, GETs and SCANs (--scan) checked.
// memif needs no root. No sleeps as synchronization: the generator's
// probes (frames through the switch) prove the garbage before them was
// handled; children are killed on failure.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "child_process.h"
#include "protocol/dataset.h"
#include "tap_switch.h"
#include "udp_client.h"

namespace {

using forein::testing::ChildProcess;
using forein::testing::json_object;
using forein::testing::TempDir;
using forein::testing::json_number;
using forein::testing::last_line;
using forein::testing::ready_port;

// A socket file nobody listens on, as a switch killed with SIGKILL leaves.
void make_stale_socket(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_SEQPACKET, 0);
  REQUIRE(fd >= 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  REQUIRE(::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0);
  ::close(fd);
}

std::string gen_json(ChildProcess& gen) {
  const std::string out = gen.read_all();
  INFO(out);
  CHECK(gen.wait_exit() == 0);
  return last_line(out);
}

}  // namespace

TEST_CASE("forein-switch on memif: GETs from forein-switch-gen hinted; garbage counted", "[e2e][switch][memif]") {
  for (const std::string backend : {"switch_lpm", "fattree"}) {
    SECTION(backend) {
      TempDir dir;
      const std::string client_sock = dir.path + "/client.sock", server_sock = dir.path + "/server.sock";
      make_stale_socket(client_sock);  // the switch must replace it
      ChildProcess sw(FOREIN_SWITCH_BIN, {"--agent-listen", "127.0.0.1:0", "--client-port", "memif:" + client_sock,
                                          "--server-port", "memif:" + server_sock});
      const int agent_port = ready_port(sw);
      REQUIRE(agent_port > 0);
      const std::string keys = "2000";
      ChildProcess server(FOREIN_KV_SERVER_BIN,
                          {"--listen", "127.0.0.1:0", "--keys", keys, "--backend", backend, "--agent",
                           "127.0.0.1:" + std::to_string(agent_port), "--threads", "1", "--refresh-ms", "50"});
      REQUIRE(ready_port(server) > 0);

      // 1. Garbage into both ports, then probes until the switch hints
      // (it holds the image), then 5000 GETs over the 2000 keys.
      const int kGarbage = 7, kGets = 5000;
      ChildProcess gen(FOREIN_SWITCH_GEN_BIN,
                       {"--client-socket", client_sock, "--server-socket", server_sock, "--keys", keys, "--dist",
                        "zipf", "--count", std::to_string(kGets), "--wait-hints", "--probe-timeout-ms", "60000",
                        "--garbage", std::to_string(kGarbage), "--switch-pid", std::to_string(sw.pid())});
      const std::string json = gen_json(gen);
      INFO(json);
      REQUIRE(json.starts_with("{"));
      CHECK(json_number(json, "sent") == kGets);
      CHECK(json_number(json, "received") == kGets);
      CHECK(json_number(json, "valid") == kGets);
      CHECK(json_number(json, "hinted") == kGets);  // every key is in the image
      CHECK(json_number(json, "lost") == 0);
      const long long probes = 64 * json_number(json, "probe_rounds");

      // 2. A second generator on the same sockets: the switch takes the
      // memif peer back after the first one left.
      ChildProcess again(FOREIN_SWITCH_GEN_BIN, {"--client-socket", client_sock, "--server-socket", server_sock,
                                                 "--keys", keys, "--count", "1000", "--seed", "9"});
      const std::string json2 = gen_json(again);
      INFO(json2);
      CHECK(json_number(json2, "received") == 1000);
      CHECK(json_number(json2, "valid") == 1000);
      const long long probes2 = 64 * json_number(json2, "probe_rounds");

      // 3. The switch's exit line: the garbage counted, nothing else lost.
      const std::string counters = forein::testing::stop_json(sw);
      const std::string client = json_object(counters, "client");
      const std::string srv = json_object(counters, "server");
      CHECK(json_number(client, "malformed") == kGarbage);       // wrong protocol version
      CHECK(json_number(client, "dropped") == 2 * kGarbage);     // random bytes, truncated IPv4
      CHECK(json_number(client, "not_ipv4") == kGarbage);
      CHECK(json_number(client, "bad_ip") == kGarbage);
      CHECK(json_number(srv, "dropped") == 2 * kGarbage);
      CHECK(json_number(client, "forwarded") == kGets + 1000 + probes + probes2);
      CHECK(json_number(client, "hinted") >= kGets);
      CHECK(json_number(srv, "forwarded") == 0);
      CHECK(!std::filesystem::exists(client_sock));  // the switch removed its sockets
      server.signal(SIGTERM);
      CHECK(server.wait_exit() == 0);
    }
  }
}

TEST_CASE("forein-switch and forein-switch-gen: bad port flags exit 2", "[e2e][switch][memif]") {
  for (const std::string bad : {"memif:", "veth", "memif:relative.sock", "memif:/tmp/a,b", "memif:/tmp/x\"y",
                                "memif:/nonexistent-dir/x.sock"}) {
    ChildProcess sw(FOREIN_SWITCH_BIN, {"--client-port", bad}, true);
    INFO(bad);
    CHECK(sw.wait_exit() == 2);
  }
  ChildProcess no_sockets(FOREIN_SWITCH_GEN_BIN, {"--keys", "10"}, true);
  CHECK(no_sockets.wait_exit() == 2);
  ChildProcess bad_keys(FOREIN_SWITCH_GEN_BIN, {"--client-socket", "/tmp/a", "--server-socket", "/tmp/b", "--keys", "0"},
                        true);
  CHECK(bad_keys.wait_exit() == 2);
}

// forein-switch-gen --mode client: the generator is the switch's client,
// forein-kv-server joins the switch's server-side memif socket and answers;
// every REPLY comes back through the switch and is checked against the
// data set. The generator's probes go until the server counts them hinted
// (STATS over its kernel port), so the switch holds the image by then.
TEST_CASE("forein-switch-gen --mode client: GETs answered by forein-kv-server over memif, hinted",
          "[e2e][switch][memif]") {
  for (const std::string backend : {"switch_lpm", "fattree"}) {
    SECTION(backend) {
      TempDir dir;
      const std::string client_sock = dir.path + "/c.sock", server_sock = dir.path + "/s.sock";
      ChildProcess sw(FOREIN_SWITCH_BIN, {"--agent-listen", "127.0.0.1:0", "--client-port", "memif:" + client_sock,
                                          "--server-port", "memif:" + server_sock});
      const int agent_port = ready_port(sw);
      REQUIRE(agent_port > 0);
      const std::string keys = "20000";
      ChildProcess server(FOREIN_KV_SERVER_BIN,
                          {"--listen", "127.0.0.1:0", "--memif", server_sock, "--memif-net", "10.77.1", "--keys", keys,
                           "--backend", backend, "--agent", "127.0.0.1:" + std::to_string(agent_port), "--threads",
                           "1", "--refresh-ms", "50"});
      const int server_port = ready_port(server);
      REQUIRE(server_port > 0);
      const std::string stats_at = "127.0.0.1:" + std::to_string(server_port);

      const int kGets = 5000;
      ChildProcess gen(FOREIN_SWITCH_GEN_BIN,
                       {"--mode", "client", "--client-socket", client_sock, "--keys", keys, "--dist", "zipf",
                        "--count", std::to_string(kGets), "--window", "64", "--wait-hints", "--server-stats",
                        stats_at, "--probe-timeout-ms", "60000", "--switch-pid", std::to_string(sw.pid()),
                        "--server-pid", std::to_string(server.pid())});
      const std::string json = gen_json(gen);
      INFO(json);
      REQUIRE(json.starts_with("{"));
      CHECK(json_number(json, "sent") == kGets);
      CHECK(json_number(json, "wrong") == 0);
      // Nothing should be lost on memif; allow 1% for a loaded machine.
      CHECK(json_number(json, "replies") + json_number(json, "lost") == kGets);
      CHECK(json_number(json, "replies") >= kGets * 99 / 100);
      CHECK(json_number(json, "ok") == json_number(json, "replies"));
      CHECK(json_number(json, "probe_rounds") >= 1);
      CHECK(json.find("\"p99_us\":") != std::string::npos);
      CHECK(json.find("\"server_cpu_s\":") != std::string::npos);
      const std::string deltas = json_object(json, "server");
      CHECK(json_number(deltas, "get") >= json_number(json, "replies"));
      CHECK(json_number(deltas, "hint_hits") > 0);

      // The server's own STATS over its kernel port: hints hit, memif up.
      forein::testing::UdpClient udp(static_cast<std::uint16_t>(server_port));
      const std::string stats = forein::testing::server_stats(udp);
      INFO(stats);
      CHECK(json_number(stats, "hint_hits") > 0);
      CHECK(json_number(stats, "hinted") >= kGets);
      const std::string memif = json_object(stats, "memif");
      CHECK(json_number(memif, "replies") >= kGets);
      CHECK(memif.find("\"link\":\"up\"") != std::string::npos);
      server.signal(SIGTERM);
      exit_json(server);

      sw.signal(SIGTERM);
      const std::string counters = exit_json(sw);
      CHECK(json_number(json_object(counters, "client"), "hinted") >= kGets);
      CHECK(json_number(json_object(counters, "server"), "forwarded") >= kGets);  // the replies
    }
  }
}

TEST_CASE("forein-switch-gen --mode client: bad flags exit 2", "[e2e][switch][memif]") {
  const std::vector<std::vector<std::string>> bad = {
      {"--mode", "client"},                                                        // no socket
      {"--mode", "client", "--client-socket", "/tmp/a", "--server-socket", "/tmp/b"},  // the server's socket
      {"--mode", "client", "--client-socket", "/tmp/a", "--wait-hints"},          // hints need STATS
      {"--mode", "client", "--client-socket", "/tmp/a", "--window", "0"},
      {"--mode", "client", "--client-socket", "/tmp/a", "--garbage", "3"},
      {"--mode", "server", "--client-socket", "/tmp/a"},
      {"--mode", "client", "--client-socket", "/tmp/a", "--server-stats", "nocolon"},
      {"--mode", "client", "--client-socket", "/tmp/a", "--timeout-ms", "0"}};
  for (const auto& args : bad) {
    ChildProcess gen(FOREIN_SWITCH_GEN_BIN, args, true);
    INFO(args[args.size() - 1]);
    CHECK(gen.wait_exit() == 2);
  }
}

namespace {

// A data file (forein-kv-server --data) of the data set 0..n-1 with key
// `changed`'s value altered and key `dropped` left out: a server that
// answers wrong for the SCANs (and GETs) that reach them.
void write_wrong_data_set(const std::string& path, std::uint64_t n, std::uint64_t changed, std::uint64_t dropped) {
  std::ofstream f(path);
  for (std::uint64_t i = 0; i < n; ++i) {
    if (i == dropped) continue;
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(i));
    std::string value = forein::net::dataset_value(i);
    if (i == changed) value[1] = value[1] == '0' ? '1' : '0';
    f << hex << '\t' << value << '\n';
  }
  REQUIRE(f.good());
}

// A run of forein-switch-gen --mode client --scan N through a switch with
// --hints off to forein-kv-server --memif with `server_args`; the
// generator's JSON line.
struct ScanRun {
  std::string json, stats;
};
ScanRun scan_through_memif(const std::vector<std::string>& server_args, const std::string& keys, int scans,
                           const std::string& items) {
  TempDir dir;
  const std::string client_sock = dir.path + "/c.sock", server_sock = dir.path + "/s.sock";
  ChildProcess sw(FOREIN_SWITCH_BIN, {"--agent-listen", "127.0.0.1:0", "--client-port", "memif:" + client_sock,
                                      "--server-port", "memif:" + server_sock, "--hints", "off"});
  REQUIRE(ready_port(sw) > 0);
  std::vector<std::string> args = {"--listen", "127.0.0.1:0", "--memif", server_sock, "--threads", "1"};
  args.insert(args.end(), server_args.begin(), server_args.end());
  ChildProcess server(FOREIN_KV_SERVER_BIN, args);
  const int server_port = ready_port(server);
  REQUIRE(server_port > 0);
  ChildProcess gen(FOREIN_SWITCH_GEN_BIN,
                   {"--mode", "client", "--client-socket", client_sock, "--keys", keys, "--scan", items, "--count",
                    std::to_string(scans), "--window", "16", "--seed", "3", "--server-stats",
                    "127.0.0.1:" + std::to_string(server_port), "--server-pid", std::to_string(server.pid()),
                    "--probe-timeout-ms", "60000"});
  ScanRun run;
  run.json = gen_json(gen);
  forein::testing::UdpClient udp(static_cast<std::uint16_t>(server_port));
  run.stats = forein::testing::server_stats(udp);
  server.signal(SIGTERM);
  exit_json(server);
  sw.signal(SIGTERM);
  exit_json(sw);
  return run;
}

}  // namespace

// forein-switch-gen --scan N: SCANs through the switch to forein-kv-server
// --memif, every reply checked entry by entry against the data set; for
// the engine tree and Honeycomb's store read by its accelerator model and
// by the CPU. Then the negative control: a server whose data differs from
// the data set in one value and one missing key must make the generator
// count wrong replies (and only those: the SCANs that reach them).
TEST_CASE("forein-switch-gen --mode client --scan: SCAN replies over memif checked against the data set",
          "[e2e][switch][memif]") {
  const std::string keys = "2000";
  const int kScans = 3000;
  const std::vector<std::pair<std::string, std::vector<std::string>>> servers = {
      {"forein", {"--keys", keys, "--backend", "none"}},
      {"honeycomb accelerator", {"--keys", keys, "--engine", "honeycomb"}},
      {"honeycomb cpu", {"--keys", keys, "--engine", "honeycomb", "--honeycomb-reads", "cpu"}}};
  for (const auto& [name, server_args] : servers) {
    SECTION(name) {
      const ScanRun run = scan_through_memif(server_args, keys, kScans, "8");
      INFO(run.json);
      REQUIRE(run.json.starts_with("{"));
      CHECK(run.json.find("\"op\":\"scan\"") != std::string::npos);
      CHECK(json_number(run.json, "scan") == 8);
      CHECK(json_number(run.json, "sent") == kScans);
      CHECK(json_number(run.json, "wrong") == 0);
      CHECK(json_number(run.json, "replies") + json_number(run.json, "lost") == kScans);
      CHECK(json_number(run.json, "replies") >= kScans * 99 / 100);
      CHECK(json_number(run.json, "ok") == json_number(run.json, "replies"));
      // 8 entries a reply, fewer only for the SCANs from the last 7 keys
      // (28 entries short over those 7 start keys: ~42 of 3000 uniform SCANs).
      const long long ok = json_number(run.json, "ok");
      CHECK(json_number(run.json, "entries") <= 8 * ok);
      CHECK(json_number(run.json, "entries") >= 8 * ok - ok / 10);
      CHECK(json_number(json_object(run.json, "server"), "scan") >= json_number(run.json, "replies"));
      CHECK(run.json.find("\"server_cpu_s\":") != std::string::npos);
      CHECK(json_number(json_object(run.json, "server"), "memif_busy_us") > 0);
      if (name == "honeycomb cpu") {
        INFO(run.stats);
        CHECK(run.stats.find("\"reads\":\"cpu\"") != std::string::npos);
        CHECK(json_number(run.stats, "nic_requests") == 0);
      }
    }
  }
  SECTION("negative control: a server with other data") {
    // Keys 1001 and 1501 are no probe's (the probes GET i * 2000 / 64).
    TempDir data_dir;
    const std::string data = data_dir.path + "/wrong.tsv";
    write_wrong_data_set(data, 2000, 1001, 1501);
    const ScanRun run = scan_through_memif({"--data", data, "--backend", "none"}, keys, kScans, "8");
    INFO(run.json);
    REQUIRE(run.json.starts_with("{"));
    // A SCAN of 8 from key s reaches 1001 for s in 994..1001 and misses
    // 1501 for s in 1494..1501 (it holds 1502 instead, or a short tail):
    // 16 of the 2000 start keys, ~24 of 3000 uniform SCANs.
    CHECK(json_number(run.json, "wrong") > 0);
    CHECK(json_number(run.json, "wrong") < kScans / 10);
    CHECK(json_number(run.json, "unmatched") == 0);
    CHECK(json_number(run.json, "ok") + json_number(run.json, "wrong") == json_number(run.json, "replies"));
  }
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"--scan", "0"}, {"--scan", "49"}, {"--scan", "x"}, {"--scan", "-1"}}) {
    std::vector<std::string> args = {"--mode", "client", "--client-socket", "/tmp/a"};
    args.insert(args.end(), bad.begin(), bad.end());
    ChildProcess gen(FOREIN_SWITCH_GEN_BIN, args, true);
    INFO(bad[1]);
    CHECK(gen.read_stderr(std::chrono::seconds(30)).find("--scan") != std::string::npos);
    CHECK(gen.wait_exit() == 2);
  }
  ChildProcess forward(FOREIN_SWITCH_GEN_BIN,
                       {"--client-socket", "/tmp/a", "--server-socket", "/tmp/b", "--scan", "3"}, true);
  CHECK(forward.read_stderr(std::chrono::seconds(30)).find("--scan is for --mode client") != std::string::npos);
  CHECK(forward.wait_exit() == 2);
}

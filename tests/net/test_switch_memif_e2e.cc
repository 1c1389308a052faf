// forein-switch on memif ports (docs/network.md, "forein-switch" and
// "forein-switch-gen"): the switch serves two memif sockets, forein-kv-server
// mirrors its offload image to the switch's in-process agent, and
// forein-switch-gen joins both sockets: garbage frames into both ports, then
// GETs that must all come back out of the server side, valid and hinted.
// memif needs no root. No sleeps as synchronization: the generator's
// probes (frames through the switch) prove the garbage before them was
// handled; children are killed on failure.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "child_process.h"
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

// End to end on loopback with hints from the agent's image (issue 13,
// docs/network.md "End to end on loopback"): the real forein-agent, the real
// forein-kv-server mirroring its offload device to it (--agent), and the
// real forein-load --verify --agent playing the switch's part (hint
// trailers from the image it fetches). Then the agent is killed (SIGKILL)
// in the middle of a load run and a new one started on the same port: the
// server keeps answering correctly, its mirror re-publishes the image and
// hints resume. No sleeps as synchronization: every wait polls a condition
// (the agent's image, the server's STATS counters) with a deadline; every
// child is killed if the test fails (ChildProcess).
#include <catch2/catch.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "agent_client.h"
#include "child_process.h"
#include "forein/offload/registry.h"
#include "protocol/dataset.h"
#include "udp_client.h"

namespace {

using forein::net::AgentClient;
using forein::net::FetchedImage;
using forein::testing::ChildProcess;
using forein::testing::eventually;
using forein::testing::json_number;
using forein::testing::ready_port;

std::string loopback(int port) { return "127.0.0.1:" + std::to_string(port); }

std::unique_ptr<ChildProcess> start_agent(const std::string& listen, int* port) {
  auto agent = std::make_unique<ChildProcess>(FOREIN_AGENT_BIN, std::vector<std::string>{"--listen", listen});
  *port = ready_port(*agent);
  REQUIRE(*port > 0);
  return agent;
}

// The agent holds a published image of `backend` for the server's index
// with at least one record.
bool agent_has_image(const AgentClient& probe, const std::string& backend) {
  FetchedImage image;
  if (!probe.fetch_image(forein::net::kDatasetIndexId, &image).ok()) return false;
  if (image.backend != backend) return false;
  const forein::offload::BackendInfo* info = forein::offload::find_backend(backend);
  return info != nullptr && !info->records(image.bytes).empty();
}

std::vector<std::string> load_args(int server_port, int agent_port, const char* workload,
                                   const char* seconds, bool verify = true) {
  std::vector<std::string> args = {
      "--target", loopback(server_port), "--keys", "20000", "--workload", workload, "--dist",
      "zipf", "--zipf", "0.99", "--seconds", seconds, "--outstanding", "8", "--timeout-ms", "500",
      "--retries", "5", "--seed", "11", "--agent", loopback(agent_port)};
  if (verify) args.push_back("--verify");
  return args;
}

// Waits for a forein-load --verify --agent run to end and checks what every
// run must show: exit 0, answers verified, none wrong, no error; with
// `hints`, hinted requests and image fetches. Returns its JSON line.
std::string finish_load(ChildProcess& load, bool hints = true) {
  const std::string out = load.read_all();
  INFO(out);
  CHECK(load.wait_exit() == 0);
  const std::string json = forein::testing::last_line(out);
  REQUIRE(json.starts_with("{"));
  CHECK(json_number(json, "wrong") == 0);
  CHECK(json_number(json, "errors") == 0);
  CHECK(json_number(json, "verified") > 0);
  if (hints) {
    CHECK(json_number(json, "hinted") > 0);
    CHECK(json_number(json, "agent_fetches") > 0);
  }
  return json;
}

}  // namespace

TEST_CASE("end to end: agent, kv server and load with hints; agent killed and restarted",
          "[e2e][agent][kv_server][load]") {
  for (const std::string backend : {"switch_lpm", "fattree"}) {
    SECTION(backend) {
      int agent_port = 0;
      std::unique_ptr<ChildProcess> agent = start_agent("127.0.0.1:0", &agent_port);
      ChildProcess server(FOREIN_KV_SERVER_BIN,
                          {"--listen", "127.0.0.1:0", "--keys", "20000", "--backend", backend,
                           "--agent", loopback(agent_port), "--threads", "2", "--refresh-ms", "50"});
      const int server_port = ready_port(server);
      REQUIRE(server_port > 0);
      forein::testing::UdpClient udp(static_cast<std::uint16_t>(server_port));
      const AgentClient probe(loopback(agent_port), {}, std::chrono::milliseconds(500));
      REQUIRE(eventually([&] { return agent_has_image(probe, backend); }));

      // 1. A read-only run (the server keeps the data set for run 2's
      // --verify): every answer right, requests hinted, hints hit.
      {
        ChildProcess load(FOREIN_LOAD_BIN, load_args(server_port, agent_port, "c", "2"));
        CHECK(json_number(finish_load(load), "agent_errors") == 0);
        const std::string stats = forein::testing::server_stats(udp);
        INFO(stats);
        CHECK(json_number(stats, "hinted") > 0);
        CHECK(json_number(stats, "hint_hits") > 0);
      }

      // 2. A writing run; the agent is killed while it runs and a new one
      // started on the same port.
      const std::string before = forein::testing::server_stats(udp);
      const long long requests0 = json_number(before, "requests");
      ChildProcess load(FOREIN_LOAD_BIN, load_args(server_port, agent_port, "getputdel", "12"));
      REQUIRE(eventually(
          [&] { return json_number(forein::testing::server_stats(udp), "requests") > requests0 + 2000; }));
      agent->kill_now();
      agent.reset();
      // The server keeps answering, and the client goes without hints once
      // its fetches fail: requests flow while the server's hinted count
      // stands still.
      long long last_requests = -1, last_hinted = -1;
      REQUIRE(eventually([&] {
        const std::string s = forein::testing::server_stats(udp);
        const long long requests = json_number(s, "requests");
        const long long hinted = json_number(s, "hinted");
        const bool stalled = last_requests >= 0 && requests >= last_requests + 500 && hinted == last_hinted;
        if (last_requests < 0 || requests >= last_requests + 500) {
          last_requests = requests;
          last_hinted = hinted;
        }
        return stalled;
      }));
      const std::string down = forein::testing::server_stats(udp);
      const long long hint_hits_down = json_number(down, "hint_hits");

      agent = start_agent(loopback(agent_port), &agent_port);
      // The mirror notices the new instance and re-publishes the image ...
      REQUIRE(eventually([&] { return agent_has_image(probe, backend); }));
      CHECK(json_number(finish_load(load), "agent_errors") > 0);  // it saw the agent down

      // ... and hints resume: a new client (no --verify: run 2 rewrote
      // keys it does not know of) gets them from the new agent, and the
      // server's hint hits grow again. A new run, so that how long the
      // heal took on a loaded machine does not matter.
      {
        ChildProcess resumed(FOREIN_LOAD_BIN, load_args(server_port, agent_port, "c", "1", false));
        const std::string out = resumed.read_all();
        INFO(out);
        CHECK(resumed.wait_exit() == 0);
        const std::string json = forein::testing::last_line(out);
        CHECK(json_number(json, "hinted") > 0);
        CHECK(json_number(json, "errors") == 0);
      }
      CHECK(json_number(forein::testing::server_stats(udp), "hint_hits") > hint_hits_down + 100);

      const std::string after = forein::testing::server_stats(udp);
      INFO(after);
      CHECK(json_number(after, "requests") > json_number(down, "requests"));
      CHECK(json_number(after, "heals") >= 1);
      CHECK(json_number(after, "publishes") >= 2);
      const forein::net::Packet r =
          udp.call(forein::testing::request(forein::net::Op::kGet, forein::net::dataset_key(20000 + 1000000)));
      CHECK(r.op == forein::net::Op::kReply);
      CHECK(r.status == forein::net::Status::kNotFound);

      server.signal(SIGTERM);
      const auto exit_line = server.read_line(std::chrono::seconds(30));
      REQUIRE(exit_line.has_value());
      CHECK(server.wait_exit() == 0);
    }
  }
}

TEST_CASE("forein-load --agent: an unreachable agent costs hints, never requests", "[e2e][load]") {
  ChildProcess server(FOREIN_KV_SERVER_BIN, {"--listen", "127.0.0.1:0", "--keys", "20000"});
  const int server_port = ready_port(server);
  REQUIRE(server_port > 0);
  // A port nobody listens on: an agent started and stopped.
  int dead_port = 0;
  {
    std::unique_ptr<ChildProcess> agent = start_agent("127.0.0.1:0", &dead_port);
  }
  ChildProcess load(FOREIN_LOAD_BIN, load_args(server_port, dead_port, "c", "1"));
  const std::string json = finish_load(load, /*hints=*/false);
  CHECK(json_number(json, "hinted") == 0);
  CHECK(json_number(json, "agent_fetches") == 0);
  CHECK(json_number(json, "agent_errors") > 0);
}

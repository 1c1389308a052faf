// forein-switch end to end (docs/network.md, "forein-switch"): the real
// DPDK switch with two TAP ports, the kernel-UDP forein-kv-server behind its
// server side mirroring its offload image to the switch's in-process agent,
// and forein-load --verify sending through its client side. The switch
// writes the hints: the load client has no --agent. Then malformed
// datagrams and raw frames into the client port are counted, not fatal.
// Needs root and /dev/net/tun (TAP devices); skipped without them. No
// sleeps as synchronization: a reply through the switch proves the frames
// sent before it on that port were handled; children are killed on failure.
#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "agent_client.h"
#include "child_process.h"
#include "tap_switch.h"
#include "protocol/dataset.h"
#include "protocol/packet.h"
#include "udp_client.h"

namespace {

using forein::testing::can_make_taps;
using forein::testing::ChildProcess;
using forein::testing::json_object;
using forein::testing::send_raw_frames;
using forein::testing::json_number;
using forein::testing::ready_port;

}  // namespace

TEST_CASE("forein-switch: load through the DPDK switch with hints; malformed frames counted",
          "[e2e][switch]") {
  if (!can_make_taps()) {
    WARN("forein-switch: skipped: " << forein::testing::no_taps_reason());
    return;
  }
  for (const std::string backend : {"switch_lpm", "fattree"}) {
    SECTION(backend) {
      // Per run: interface names and /24s no other run uses at the same time.
      const forein::testing::TapNets nets("sw", backend == "fattree" ? 1 : 0);
      const std::string &client_iface = nets.client_iface, &server_iface = nets.server_iface;
      const std::string &client_net = nets.client_net, &server_net = nets.server_net;
      ChildProcess sw(FOREIN_SWITCH_BIN, {"--agent-listen", "127.0.0.1:0", "--client-iface", client_iface,
                                          "--server-iface", server_iface, "--client-net", client_net,
                                          "--server-net", server_net});
      const int agent_port = ready_port(sw);
      REQUIRE(agent_port > 0);
      ChildProcess server(FOREIN_KV_SERVER_BIN,
                          {"--listen", server_net + ".1:0", "--keys", "20000", "--backend", backend, "--agent",
                           "127.0.0.1:" + std::to_string(agent_port), "--threads", "2", "--refresh-ms", "50"});
      const int server_port = ready_port(server);
      REQUIRE(server_port > 0);
      const std::string target = client_net + ".2:" + std::to_string(server_port);

      // 1. forein-load --verify through the switch; the switch hints.
      ChildProcess load(FOREIN_LOAD_BIN,
                        {"--target", target, "--keys", "20000", "--workload", "b", "--dist", "zipf", "--zipf",
                         "0.99", "--seconds", "2", "--outstanding", "8", "--timeout-ms", "500", "--retries", "5",
                         "--verify", "--seed", "7"});
      const std::string json = forein::testing::exit_json(load);
      CHECK(json_number(json, "wrong") == 0);
      CHECK(json_number(json, "errors") == 0);
      CHECK(json_number(json, "verified") > 0);
      CHECK(json_number(json, "hinted") == 0);  // the client sent none: the switch did

      in_addr server_addr{};
      REQUIRE(inet_pton(AF_INET, (server_net + ".1").c_str(), &server_addr) == 1);
      forein::testing::UdpClient direct(static_cast<std::uint16_t>(server_port), ntohl(server_addr.s_addr));
      const std::string stats = forein::testing::server_stats(direct);
      INFO(stats);
      CHECK(json_number(stats, "hinted") > 0);
      CHECK(json_number(stats, "hint_hits") > 0);

      // 2. Malformed input into the client port: protocol garbage in UDP
      // datagrams to the switch, and frames with broken IPv4 headers.
      in_addr switch_addr{};
      REQUIRE(inet_pton(AF_INET, (client_net + ".2").c_str(), &switch_addr) == 1);
      forein::testing::UdpClient via(static_cast<std::uint16_t>(server_port), ntohl(switch_addr.s_addr));
      const int kGarbage = 40, kTruncated = 10, kBadFrames = 12, kNotIp = 5;
      std::uint32_t rng = 12345;
      for (int i = 0; i < kGarbage; ++i) {
        std::vector<std::byte> d(1 + i * 7 % 300);
        for (auto& b : d) b = static_cast<std::byte>((rng = rng * 1103515245u + 12345u) >> 24);
        d[0] = std::byte{0};  // never the magic
        via.send_raw(d);
      }
      std::vector<std::byte> get = forein::net::encode_packet(
          forein::testing::request(forein::net::Op::kGet, forein::net::dataset_key(3)));
      for (int i = 0; i < kTruncated; ++i) {
        via.send_raw(std::vector<std::byte>(get.begin(), get.begin() + 1 + i * 3));
      }
      send_raw_frames(client_iface, 0x0800, 20, kBadFrames);  // IPv4 shorter than its header
      send_raw_frames(client_iface, 0x88B5, 60, kNotIp);      // a local experimental ethertype
      // And into the server port: the same broken frames from the server's side.
      send_raw_frames(server_iface, 0x0800, 20, kBadFrames);
      send_raw_frames(server_iface, 0x88B5, 60, kNotIp);
      // A request through the switch after them: its reply proves they were handled.
      const forein::net::Packet r = via.call(forein::testing::request(forein::net::Op::kGet, forein::net::dataset_key(3)));
      CHECK(r.op == forein::net::Op::kReply);
      CHECK(r.status == forein::net::Status::kOk);
      CHECK(r.value == forein::net::dataset_value(3));

      // 3. A reply larger than the TAP's MTU comes back as IP fragments: the
      // switch adjusts the first fragment's UDP checksum for the new
      // addresses, or the client's kernel drops the reassembled datagram.
      const forein::net::Packet scan =
          via.call(forein::testing::request(forein::net::Op::kScan, forein::net::dataset_key(100), "", 800));
      REQUIRE(scan.op == forein::net::Op::kReply);
      CHECK(scan.count == 800);
      const auto entries = forein::net::decode_scan_entries(scan.value);
      REQUIRE(entries.has_value());
      CHECK(entries->back().key == forein::net::dataset_key(899));
      CHECK(entries->back().value == forein::net::dataset_value(899));

      // 4. The same port counters over the in-process agent's Stats call.
      const forein::net::AgentClient agent("127.0.0.1:" + std::to_string(agent_port));
      forein::net::control::StatsReply st;
      REQUIRE(agent.stats(&st).ok());
      REQUIRE(st.ports_size() == 2);
      CHECK(st.ports(0).port() == "client");
      CHECK(st.ports(0).iface() == client_iface);
      CHECK(st.ports(0).hinted() > 0);
      CHECK(st.ports(0).malformed() == kGarbage + kTruncated);
      CHECK(st.ports(0).dropped() >= kBadFrames + kNotIp);
      CHECK(st.ports(1).port() == "server");
      CHECK(st.ports(1).forwarded() > 0);
      REQUIRE(st.ports(1).dropped_by_reason().contains("not_ipv4"));
      CHECK(st.ports(1).dropped_by_reason().at("not_ipv4") >= kNotIp);

      const std::string counters = forein::testing::stop_json(sw);
      const std::string client = json_object(counters, "client");
      CHECK(json_number(client, "hinted") > 0);
      CHECK(json_number(client, "malformed") == kGarbage + kTruncated);
      CHECK(json_number(client, "forwarded") > 0);
      CHECK(json_number(client, "dropped") >= kBadFrames + kNotIp);
      CHECK(json_number(json_object(counters, "server"), "dropped") >= kBadFrames + kNotIp);
      CHECK(json_number(counters, "hinted") > 0);
      server.signal(SIGTERM);
      CHECK(server.wait_exit() == 0);
    }
  }
}

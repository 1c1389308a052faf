// Fat-B+Tree's chain of switches (docs/network.md, "Fat-B+Tree chain"):
// three forein-switch processes as the k=4 path's core, aggregation and
// edge switch, linked by memif (each later switch joins the socket of the
// one before), the core facing the client on a TAP device and the edge the
// kernel-UDP forein-kv-server on another. The server mirrors its fattree
// image to the core's agent; the aggregation and edge switches fetch it
// from there. Each switch walks its part of the tree and hands the walk on
// in the temporary header; forein-load --verify sees one service and the
// server takes the hints. Needs root and /dev/net/tun (the TAP devices);
// no sleeps as synchronization; children are killed if a check fails.
#include <unistd.h>

#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>
#include <vector>

#include "child_process.h"
#include "protocol/dataset.h"
#include "protocol/packet.h"
#include "tap_switch.h"
#include "udp_client.h"

namespace {

using forein::testing::ChildProcess;
using forein::testing::TempDir;
using forein::testing::json_number;
using forein::testing::json_object;
using forein::testing::ready_port;
using forein::testing::TapNets;

}  // namespace

TEST_CASE("forein-switch chain: core, aggregation and edge switches hand the fattree walk on", "[e2e][switch]") {
  if (!forein::testing::can_make_taps()) {
    WARN("the chain's end switches: skipped: " << forein::testing::no_taps_reason());
    return;
  }
  TempDir dir;
  const TapNets nets("ch", 3);
  const std::string l1 = dir.path + "/core-agg.sock", l2 = dir.path + "/agg-edge.sock";
  // The memif links carry no kernel traffic: documentation networks.
  const std::string l1_net = "192.0.2", l2_net = "198.51.100";

  ChildProcess core(FOREIN_SWITCH_BIN,
                    {"--agent-listen", "127.0.0.1:0", "--stage", "core", "--client-iface", nets.client_iface,
                     "--client-net", nets.client_net, "--server-port", "memif:" + l1, "--server-net", l1_net});
  const int core_agent = ready_port(core);
  REQUIRE(core_agent > 0);
  const std::string images = "127.0.0.1:" + std::to_string(core_agent);
  ChildProcess agg(FOREIN_SWITCH_BIN,
                   {"--agent-listen", "127.0.0.1:0", "--stage", "aggregation", "--image-from", images,
                    "--client-port", "memif-client:" + l1, "--client-net", l1_net, "--server-port", "memif:" + l2,
                    "--server-net", l2_net});
  REQUIRE(ready_port(agg) > 0);
  ChildProcess edge(FOREIN_SWITCH_BIN,
                    {"--agent-listen", "127.0.0.1:0", "--stage", "edge", "--image-from", images, "--client-port",
                     "memif-client:" + l2, "--client-net", l2_net, "--server-iface", nets.server_iface,
                     "--server-net", nets.server_net});
  REQUIRE(ready_port(edge) > 0);
  // A small fat root (8 ranges) over 200,000 keys: the tree's upper
  // switch layers stay below it, in the node sets of all three switches.
  ChildProcess server(FOREIN_KV_SERVER_BIN,
                      {"--listen", nets.server_net + ".1:0", "--keys", "200000", "--backend", "fattree",
                       "--fat-root-ranges", "8", "--agent", images, "--threads", "2", "--refresh-ms", "50"});
  const int server_port = ready_port(server);
  REQUIRE(server_port > 0);

  // Once the image is everywhere, a request's walk crosses all three.
  forein::testing::UdpClient via(static_cast<std::uint16_t>(server_port), TapNets::addr(nets.client_net, 2));
  forein::testing::UdpClient direct(static_cast<std::uint16_t>(server_port), TapNets::addr(nets.server_net, 1));
  REQUIRE(forein::testing::eventually([&] {
    via.call(forein::testing::request(forein::net::Op::kGet, forein::net::dataset_key(42)));
    return json_number(forein::testing::server_stats(direct), "hint_hits") > 0;
  }));

  ChildProcess load(FOREIN_LOAD_BIN,
                    {"--target", nets.client_net + ".2:" + std::to_string(server_port), "--keys", "200000",
                     "--workload", "b", "--dist", "zipf", "--zipf", "0.99", "--seconds", "2", "--outstanding", "8",
                     "--timeout-ms", "500", "--retries", "5", "--verify", "--seed", "5"});
  const std::string json = forein::testing::exit_json(load);
  CHECK(json_number(json, "wrong") == 0);
  CHECK(json_number(json, "errors") == 0);
  CHECK(json_number(json, "verified") > 1000);

  const std::string stats = forein::testing::server_stats(direct);
  INFO(stats);
  CHECK(json_number(stats, "hinted") > 1000);
  CHECK(json_number(stats, "hint_hits") > 1000);

  // Each switch did its part: the core hinted (fat root + set 0), the
  // later switches continued the walk from the temporary header and took
  // walks to tree nodes below the one the core switch named.
  const std::string core_out = forein::testing::stop_json(core), agg_out = forein::testing::stop_json(agg), edge_out = forein::testing::stop_json(edge);
  CHECK(json_number(json_object(core_out, "client"), "hinted") > 1000);
  CHECK(json_number(json_object(agg_out, "client"), "hinted") > 1000);
  CHECK(json_number(json_object(edge_out, "client"), "hinted") > 1000);
  CHECK(core_out.find("\"stage\":\"core\"") != std::string::npos);
  CHECK(edge_out.find("\"stage\":\"edge\"") != std::string::npos);
  INFO("deeper: core " << json_number(core_out, "deeper") << ", aggregation " << json_number(agg_out, "deeper")
                        << ", edge " << json_number(edge_out, "deeper"));
  CHECK(json_number(agg_out, "deeper") + json_number(edge_out, "deeper") > 1000);
  server.signal(SIGTERM);
  CHECK(server.wait_exit() == 0);
}

// Remote reads through forein-switch (docs/remote-read.md, issue 42): the
// real DPDK switch on two TAP ports, forein-mem-server --backend fattree
// (then switch_lpm) behind its server side mirroring its offload image to
// the switch's in-process agent, and forein-load --remote-read --verify:
//   - the same load straight to the memory node (no switch: every lookup
//     starts at the root) and through the switch (it rewrites the start
//     READ's address to the node its image names): through the switch
//     rewritten > 0, hint_hits > 0 and fewer READs per lookup, wrong 0;
//   - malformed READs through the switch (out of range, past the end, too
//     long, unknown flags, short value) and READ datagrams that do not
//     parse: the memory node answers and counts each under its reason, the
//     switch counts the unparsable ones as malformed; a correct READ, and
//     a start READ the switch rewrites, work afterwards.
// Needs root and /dev/net/tun (TAP devices) and runs in a network namespace
// of its own (netns_main.cc); skipped without them. No sleeps as
// synchronization: `ready` lines, replies, counters polled with deadlines.
#include <arpa/inet.h>

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "child_process.h"
#include "protocol/dataset.h"
#include "protocol/packet.h"
#include "remote/node_layout.h"
#include "remote/region.h"
#include "tap_switch.h"
#include "udp_client.h"

namespace {

using forein::net::dataset_key;
using forein::net::decode_read_header;
using forein::net::encode_read_header;
using forein::net::kReadHeaderBytes;
using forein::net::kReadRewritten;
using forein::net::kReadStart;
using forein::net::Op;
using forein::net::Packet;
using forein::net::ReadHeader;
using forein::net::Status;
using forein::testing::ChildProcess;
using forein::testing::eventually;
using forein::testing::json_number;
using forein::testing::json_object;
using forein::testing::ready_port;
using forein::testing::TapNets;
using forein::testing::UdpClient;
namespace rr = forein::net::remote;

constexpr std::uint64_t kKeys = 20000;

double json_double(const std::string& json, const std::string& name) {
  const std::string needle = "\"" + name + "\":";
  const std::size_t at = json.find(needle);
  if (at == std::string::npos) return std::strtod("nan", nullptr);
  return std::strtod(json.c_str() + at + needle.size(), nullptr);
}

Packet read_request(std::uint64_t address, std::uint32_t length, std::uint16_t flags = 0, std::uint64_t key = 1) {
  return forein::testing::request(Op::kRead, dataset_key(key), encode_read_header(ReadHeader{address, length, flags}));
}

// forein-load --remote-read --verify (YCSB C, Zipf 0.99) at target; its JSON line, checked.
std::string remote_load(const std::string& target, const std::string& seconds) {
  ChildProcess load(FOREIN_LOAD_BIN,
                    {"--target", target, "--remote-read", "--keys", std::to_string(kKeys), "--workload", "c",
                     "--dist", "zipf", "--zipf", "0.99", "--seconds", seconds, "--outstanding", "4",
                     "--timeout-ms", "500", "--retries", "5", "--verify", "--seed", "9"});
  const std::string json = forein::testing::exit_json(load);
  INFO(json);
  CHECK(json.find("\"mode\":\"remote-read\"") != std::string::npos);
  CHECK(json_number(json, "wrong") == 0);
  CHECK(json_number(json, "errors") == 0);
  CHECK(json_number(json, "gave_up") == 0);
  CHECK(json_number(json, "verified") > 100);
  return json;
}

}  // namespace

TEST_CASE("remote reads through forein-switch: start READs rewritten, fewer READs per lookup; malformed READs "
          "counted",
          "[e2e][switch][remote-read]") {
  if (!forein::testing::can_make_taps()) {
    WARN("forein-switch: skipped: " << forein::testing::no_taps_reason());
    return;
  }
  for (const std::string backend : {"fattree", "switch_lpm"}) {
    SECTION(backend) {
      const TapNets nets("rr", backend == "fattree" ? 0 : 1);
      ChildProcess sw(FOREIN_SWITCH_BIN, {"--agent-listen", "127.0.0.1:0", "--client-iface", nets.client_iface,
                                          "--server-iface", nets.server_iface, "--client-net", nets.client_net,
                                          "--server-net", nets.server_net});
      const int agent_port = ready_port(sw);
      REQUIRE(agent_port > 0);
      ChildProcess mem(FOREIN_MEM_SERVER_BIN,
                       {"--listen", nets.server_net + ".1:0", "--keys", std::to_string(kKeys), "--backend", backend,
                        "--agent", "127.0.0.1:" + std::to_string(agent_port), "--threads", "2", "--refresh-ms",
                        "50", "--sample-rate", "1"});
      const int port = ready_port(mem);
      REQUIRE(port > 0);
      UdpClient direct(static_cast<std::uint16_t>(port), TapNets::addr(nets.server_net, 1));
      UdpClient via(static_cast<std::uint16_t>(port), TapNets::addr(nets.client_net, 2));
      const std::string info = forein::testing::server_stats(direct);
      INFO(info);
      const long long height = json_number(info, "height");
      REQUIRE(height == 4);
      const auto root = [&] {
        const Packet r = direct.call(read_request(0, rr::kRegionHeaderBytes));
        REQUIRE(r.op == Op::kReply);
        rr::RegionHeader h;
        REQUIRE(rr::check_header(std::as_bytes(std::span(r.value)).subspan(kReadHeaderBytes), &h) == rr::Check::kOk);
        return h;
      }();

      // 1. Straight to the memory node: every lookup from the root, height + 1 READs.
      const std::string plain =
          remote_load(nets.server_net + ".1:" + std::to_string(port), "1");
      INFO("plain: " << plain);
      CHECK(json_number(plain, "rewritten") == 0);
      const double plain_per_op = json_double(plain, "reads_per_op");
      CHECK(plain_per_op == Approx(static_cast<double>(height + 1)).margin(0.05));

      // 2. The switch's image: a start READ through it comes back
      // rewritten once the mirror has published (and, for switch_lpm, the
      // planner has placed hints from the sampled start READs).
      std::uint64_t probe = 0;
      CHECK(eventually(
          [&] {
            probe = (probe * 7919 + 13) % 64;  // hot keys under Zipf: the planner's picks
            const Packet r = via.call(read_request(root.root, root.geometry.node_bytes, kReadStart, probe));
            const auto h = decode_read_header(r.value);
            return r.op == Op::kReply && h && (h->flags & kReadRewritten) != 0;
          },
          std::chrono::seconds(20)));

      // 3. Through the switch: start READs rewritten, the walk goes on from
      // the node it names, fewer READs per lookup, never a wrong value.
      const std::string target = nets.client_net + ".2:" + std::to_string(port);
      const std::string hinted = remote_load(target, "1.5");
      INFO("hinted: " << hinted);
      CHECK(json_number(hinted, "rewritten") > 0);
      CHECK(json_number(hinted, "hint_hits") > 0);
      const double hinted_per_op = json_double(hinted, "reads_per_op");
      CHECK(hinted_per_op < plain_per_op - 0.5);

      // 4. Malformed READs through the switch: the memory node answers and
      // counts each by reason; a non-start READ passes the switch unchanged.
      const std::string before = forein::testing::server_stats(direct);
      const auto size = static_cast<std::uint64_t>(json_number(before, "region_bytes"));
      REQUIRE(size > 0);
      const auto count = [](const std::string& stats, const char* reason) {
        return json_number(json_object(stats, "bad_reads_by_reason"), reason);
      };
      struct Bad {
        Packet request;
        Status status;
      };
      std::string flags = encode_read_header(ReadHeader{64, 8, 0});
      flags[13] = 0x10;  // an unknown flag bit
      const std::vector<Bad> bad = {
          {read_request(size + 4096, 296), Status::kBadAddress},                                // out_of_range
          {read_request(size - 16, 296), Status::kBadAddress},                                  // past_end
          {read_request(root.root, 40000, kReadStart), Status::kBadAddress},                    // too_long
          {read_request(64, 70000), Status::kBadAddress},                                       // too_long
          {forein::testing::request(Op::kRead, dataset_key(2), flags), Status::kBadRequest},    // bad_header
          {forein::testing::request(Op::kRead, dataset_key(2), "0123456789"), Status::kBadRequest},  // bad_header
      };
      for (const Bad& b : bad) {
        const Packet r = via.call(b.request);
        CHECK(r.op == Op::kError);
        CHECK(r.status == b.status);
      }
      // READ datagrams that do not parse: the switch drops them (malformed).
      const std::vector<std::byte> good = forein::net::encode_packet(read_request(64, 8));
      const int kTruncated = 4;
      for (int i = 0; i < kTruncated; ++i) via.send_raw(std::vector<std::byte>(good.begin(), good.begin() + 3 + 5 * i));
      // Sent straight to the memory node they are dropped and counted there.
      for (int i = 0; i < kTruncated; ++i) direct.send_raw(std::vector<std::byte>(good.begin(), good.begin() + 3 + 5 * i));

      // A correct READ through the switch afterwards, and a start READ it rewrites.
      {
        const Packet r = via.call(read_request(0, rr::kRegionHeaderBytes));
        REQUIRE(r.op == Op::kReply);
        rr::RegionHeader h;
        CHECK(rr::check_header(std::as_bytes(std::span(r.value)).subspan(kReadHeaderBytes), &h) == rr::Check::kOk);
        CHECK(h.root == root.root);
      }
      {
        const Packet r = via.call(read_request(root.root, root.geometry.node_bytes, kReadStart, probe));
        REQUIRE(r.op == Op::kReply);
        const auto h = decode_read_header(r.value);
        REQUIRE(h.has_value());
        CHECK((h->flags & kReadRewritten) != 0);
        rr::NodeView v;
        CHECK(rr::check_node(std::as_bytes(std::span(r.value)).subspan(kReadHeaderBytes), root.geometry, h->address,
                             &v) == rr::Check::kOk);
        CHECK(v.lo <= probe);
      }
      std::string after;
      CHECK(eventually([&] {
        after = forein::testing::server_stats(direct);
        return json_number(after, "drops") >= json_number(before, "drops") + kTruncated;
      }));
      INFO("before: " << before);
      INFO("after: " << after);
      CHECK(json_number(after, "bad_reads") == json_number(before, "bad_reads") + 6);
      CHECK(count(after, "out_of_range") == count(before, "out_of_range") + 1);
      CHECK(count(after, "past_end") == count(before, "past_end") + 1);
      CHECK(count(after, "too_long") == count(before, "too_long") + 2);
      CHECK(count(after, "bad_header") == count(before, "bad_header") + 2);
      CHECK(json_number(json_object(after, "drops_by_reason"), "truncated") ==
            json_number(json_object(before, "drops_by_reason"), "truncated") + kTruncated);
      CHECK(json_number(after, "rewritten_reads") > 0);

      // 5. The switch's exit line: READs routed and rewritten, the
      // unparsable ones counted as malformed on the client port.
      const std::string counters = forein::testing::stop_json(sw);
      INFO(counters);
      CHECK(json_number(counters, "reads") > 0);
      CHECK(json_number(counters, "reads_rewritten") > 0);
      CHECK(json_number(json_object(counters, "client"), "malformed") == kTruncated);
      const std::string last = forein::testing::stop_json(mem);
      CHECK(json_number(last, "reads") > 0);
    }
  }
}

TEST_CASE("remote reads over memif: forein-mem-server --memif behind forein-switch's memif server side",
          "[e2e][switch][remote-read][memif]") {
  if (!forein::testing::can_make_taps()) {
    WARN("the client side is a TAP device: skipped: " << forein::testing::no_taps_reason());
    return;
  }
  const TapNets nets("rm", 2);
  const forein::testing::TempDir dir;
  const std::string socket = dir.path + "/m.sock";
  ChildProcess sw(FOREIN_SWITCH_BIN, {"--agent-listen", "127.0.0.1:0", "--client-iface", nets.client_iface,
                                      "--client-net", nets.client_net, "--server-port", "memif:" + socket,
                                      "--server-net", nets.server_net});
  const int agent_port = ready_port(sw);
  REQUIRE(agent_port > 0);
  ChildProcess mem(FOREIN_MEM_SERVER_BIN,
                   {"--listen", "127.0.0.1:0", "--memif", socket, "--memif-net", nets.server_net, "--keys",
                    std::to_string(kKeys), "--backend", "fattree", "--agent",
                    "127.0.0.1:" + std::to_string(agent_port), "--refresh-ms", "50"});
  const int port = ready_port(mem);
  REQUIRE(port > 0);
  UdpClient direct(static_cast<std::uint16_t>(port));  // kernel UDP, loopback
  UdpClient via(9000, TapNets::addr(nets.client_net, 2));
  const Packet hr = direct.call(read_request(0, rr::kRegionHeaderBytes));
  REQUIRE(hr.op == Op::kReply);
  rr::RegionHeader root;
  REQUIRE(rr::check_header(std::as_bytes(std::span(hr.value)).subspan(kReadHeaderBytes), &root) == rr::Check::kOk);

  // Through the switch and the memif link (retried until the link is up
  // and the image is in the switch): a start READ comes back rewritten,
  // its bytes a node that checks at the address the switch chose.
  std::uint64_t probe = 0;
  CHECK(eventually(
      [&] {
        probe = (probe * 7919 + 13) % 64;
        const Packet r = via.call(read_request(root.root, root.geometry.node_bytes, kReadStart, probe));
        const auto h = decode_read_header(r.value);
        if (r.op != Op::kReply || !h || (h->flags & kReadRewritten) == 0) return false;
        rr::NodeView v;
        return rr::check_node(std::as_bytes(std::span(r.value)).subspan(kReadHeaderBytes), root.geometry, h->address,
                              &v) == rr::Check::kOk &&
               v.lo <= probe;
      },
      std::chrono::seconds(20)));
  // A value record of a few hundred bytes and a READ whose reply takes
  // several frames (IPv4 fragments from the memif port).
  const Packet big = via.call(read_request(64, 8192));
  REQUIRE(big.op == Op::kReply);
  CHECK(big.value.size() == kReadHeaderBytes + 8192);
  const Packet same = direct.call(read_request(64, 8192));
  CHECK(big.value == same.value);

  // forein-load --remote-read --verify through the switch: rewritten,
  // fewer READs than a root start (height + 1), never wrong.
  const std::string hinted = remote_load(nets.client_net + ".2:9000", "1.5");
  INFO("hinted: " << hinted);
  CHECK(json_number(hinted, "rewritten") > 0);
  CHECK(json_double(hinted, "reads_per_op") < static_cast<double>(root.height + 1) - 0.5);

  // The memory node's READs came over memif: its port counted them.
  const std::string stats = forein::testing::server_stats(direct);
  INFO(stats);
  const std::string memif = json_object(stats, "memif");
  REQUIRE_FALSE(memif.empty());
  CHECK(json_number(memif, "replies") > 1000);
  CHECK(json_number(stats, "rewritten_reads") > 0);
  forein::testing::stop_json(mem);
  forein::testing::stop_json(sw);
}

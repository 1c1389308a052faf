// Switch-delta's secondary-index case study end to end (paper 002, VI-B,
// with the partial writes of III-C; docs/network.md, "Switch-delta"): one
// forein-data-node --secondary-index, forein-kv-server --mode metadata
// --secondary-index and forein-switch --backend switch_visibility on TAP
// ports; forein-load --workload secondary-index --verify --history
// through the switch. Checks on real packets: with the metadata node
// stopped, a write still commits in one round trip (the switch stores its
// partial entry), a second write of its secondary key takes phase 2, and
// a read of that secondary key carries the partial entry to the metadata
// node, which lists both keys; a verified load's history
// passes the "reads see every acknowledged write" check
// (sidx_history_check.h), and its corrupted copies (a member missing, a
// member overwritten before the read, a version never written) fail it;
// the table off, every write takes phase 2 and the history passes too.
// Needs root and /dev/net/tun; conditions are polled with deadlines (no
// sleeps as synchronization); children are killed if a check fails.
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "child_process.h"
#include "history_e2e.h"
#include "protocol/dataset.h"
#include "protocol/packet.h"
#include "protocol/secondary_index.h"
#include "protocol/visibility.h"
#include "sidx_history_check.h"
#include "tap_switch.h"
#include "udp_client.h"

namespace {

using forein::net::dataset_key;
using forein::net::Op;
using forein::net::Packet;
using forein::net::Status;
using forein::net::VisibilityHeader;
using forein::net::VisState;
using forein::testing::ChildProcess;
using forein::testing::eventually;
using forein::testing::json_number;
using forein::testing::ready_port;
using forein::testing::TapNets;
using forein::testing::UdpClient;

constexpr std::uint64_t kKeys = 20000;
constexpr std::uint64_t kSecondaryKeys = 800;  // 25 primary keys per secondary key, the paper's ratio

class Testbed {
 public:
  Testbed(bool visibility, int variant) : nets_("sx", variant) {
    service_port_ = forein::testing::free_udp_port();
    data_port_ = forein::testing::free_udp_port();
    metadata_port_ = forein::testing::free_udp_port();
    switch_ = std::make_unique<ChildProcess>(
        FOREIN_SWITCH_BIN,
        std::vector<std::string>{"--agent-listen", "127.0.0.1:0", "--client-iface", nets_.client_iface,
                                 "--server-iface", nets_.server_iface, "--client-net", nets_.client_net,
                                 "--server-net", nets_.server_net, "--backend", "switch_visibility",
                                 "--data-nodes", std::to_string(data_port_), "--metadata-nodes",
                                 std::to_string(metadata_port_), "--service-port", std::to_string(service_port_),
                                 "--visibility", visibility ? "on" : "off"});
    REQUIRE(ready_port(*switch_) > 0);
    data_node_ = std::make_unique<ChildProcess>(
        FOREIN_DATA_NODE_BIN,
        std::vector<std::string>{"--listen", server_addr(data_port_), "--node", "0/1", "--keys",
                                 std::to_string(kKeys), "--secondary-index", "--secondary-keys",
                                 std::to_string(kSecondaryKeys)});
    REQUIRE(ready_port(*data_node_) == data_port_);
    metadata_ = std::make_unique<ChildProcess>(
        FOREIN_KV_SERVER_BIN,
        std::vector<std::string>{"--mode", "metadata", "--secondary-index", "--listen", server_addr(metadata_port_),
                                 "--data-nodes", server_addr(data_port_), "--switch",
                                 nets_.server_net + ".2:" + std::to_string(service_port_), "--threads", "1",
                                 "--backend", "none"});
    REQUIRE(ready_port(*metadata_) == metadata_port_);
    // The switch serves once the metadata node has synced with it (a
    // client-side SYNC answers with the nodes still to sync).
    auto c = via_switch();
    REQUIRE(eventually([&] {
      Packet p = forein::testing::request(Op::kSync, "");
      p.visibility = VisibilityHeader{0, VisState::kNone, 0, 0, 0};
      const Packet r = c->call(p);
      return r.op == Op::kSync && r.visibility && r.visibility->ts == 1 && r.visibility->fingerprint == 0;
    }));
  }

  std::string server_addr(std::uint16_t port) const { return nets_.server_net + ".1:" + std::to_string(port); }
  std::string target() const { return nets_.client_net + ".2:" + std::to_string(service_port_); }
  std::unique_ptr<UdpClient> via_switch() const {
    return std::make_unique<UdpClient>(service_port_, TapNets::addr(nets_.client_net, 2));
  }

  ChildProcess& sw() { return *switch_; }
  ChildProcess& metadata() { return *metadata_; }

  void stop_all() {
    forein::testing::stop_json(*metadata_);
    forein::testing::stop_json(*data_node_);
  }

 private:
  TapNets nets_;
  std::uint16_t service_port_ = 0, data_port_ = 0, metadata_port_ = 0;
  std::unique_ptr<ChildProcess> switch_, data_node_, metadata_;
};

std::unique_ptr<ChildProcess> start_load(const Testbed& bed, double seconds, const std::string& history,
                                         const std::string& read_count) {
  return std::make_unique<ChildProcess>(
      FOREIN_LOAD_BIN,
      std::vector<std::string>{"--target", bed.target(), "--keys", std::to_string(kKeys), "--workload",
                               "secondary-index", "--secondary-keys", std::to_string(kSecondaryKeys),
                               "--sidx-read-count", read_count, "--dist", "zipf", "--seconds",
                               std::to_string(seconds), "--outstanding", "16", "--timeout-ms", "300", "--retries",
                               "30", "--verify", "--seed", "5", "--history", history});
}

Packet sidx_request(Op op, const std::string& key, const std::string& slot_of, std::string value = {}) {
  Packet p = forein::testing::request(op, key, std::move(value));
  const forein::net::SlotKey sk = forein::net::slot_key(slot_of);
  p.visibility = VisibilityHeader{sk.slot, VisState::kNone, sk.fingerprint, 0, 0};
  return p;
}

// The run's history passes the check; its three corruptions fail it.
void check_sidx_load_history(const std::string& path, std::uint64_t min_reads) {
  using namespace forein::testing;
  const LoadHistory h = read_history(path);
  const auto run = sidx_run_of(h.header);
  REQUIRE(run);
  CHECK(run->secondary_keys == kSecondaryKeys);
  const SidxCheck real = check_sidx_history(h.ops, *run);
  std::printf("history %s (%s): %s\n", path.c_str(), h.header.c_str(), real.summary().c_str());
  INFO(real.summary() << "\n" << real.explanation);
  CHECK(real.ok);
  CHECK(real.reads >= min_reads);
  CHECK(real.writes >= min_reads);
  CHECK(real.members > 0);
  using Corrupt = std::optional<std::string> (*)(std::vector<HistoryOp>*, const SidxRun&);
  const std::pair<const char*, Corrupt> controls[] = {
      {"missing member", corrupt_sidx_missing_member},
      {"overwritten member", corrupt_sidx_overwritten_member},
      {"unwritten version",
       +[](std::vector<HistoryOp>* ops, const SidxRun&) { return corrupt_sidx_unwritten_version(ops); }},
  };
  for (const auto& [name, corrupt] : controls) {
    auto ops = h.ops;
    const std::optional<std::string> why = corrupt(&ops, *run);
    INFO(name << " control: " << why.value_or("none found"));
    REQUIRE(why);
    const SidxCheck bad = check_sidx_history(ops, *run);
    std::printf("  negative control (%s), %s: %s\n", name, why->c_str(), bad.summary().c_str());
    CHECK_FALSE(bad.ok);
  }
}

}  // namespace

TEST_CASE("Switch-delta secondary index: partial writes in one round trip, reads see every acknowledged write",
          "[e2e][switch]") {
  if (!forein::testing::can_make_taps()) {
    WARN("forein-switch: skipped: " << forein::testing::no_taps_reason());
    return;
  }
  Testbed bed(true, 0);
  auto via = bed.via_switch();

  // 1. The metadata node stopped: a write commits in one round trip (its
  // partial entry in the secondary key's slot); a second write to the
  // same secondary key finds the slot busy and takes phase 2, its
  // META_PUT reply held until the slot clears; a read of that secondary
  // key carries the partial entry to the node. Running again, the node
  // lists both keys. Keys outside the load's (primary >= kKeys, secondary
  // >= kSecondaryKeys), so the load's history below is not touched.
  const std::string secondary = dataset_key(kSecondaryKeys + 1);
  auto append = [&](std::uint64_t i) {
    const std::string primary = dataset_key(i);
    const Packet w = via->call(sidx_request(
        Op::kLogAppend, primary, secondary,
        forein::net::encode_sidx_record(secondary, forein::net::dataset_record(i, 1))));
    REQUIRE(w.op == Op::kReply);
    REQUIRE(w.status == Status::kOk);
    REQUIRE(w.visibility);
    CHECK(w.value == forein::net::encode_sidx_entry(primary, secondary));
    return w;
  };
  bed.metadata().stop_all_threads();
  const Packet w1 = append(kKeys + 1);
  const Packet w2 = append(kKeys + 2);
  INFO("metadata node state " << bed.metadata().state() << " (T: stopped); write ts " << w1.visibility->ts << ", "
                               << w2.visibility->ts);
  CHECK(w1.visibility->state == VisState::kStored);
  CHECK(w2.visibility->state == VisState::kFallback);
  CHECK(w2.visibility->ts > w1.visibility->ts);
  Packet read = sidx_request(Op::kSidxRead, secondary, secondary);
  read.count = 10;
  read.seq = 1u << 30;  // not one of call()'s
  via->send_raw(forein::net::encode_packet(read));  // reaches the stopped node with w1's partial entry
  Packet put = sidx_request(Op::kMetaPut, dataset_key(kKeys + 2), secondary, w2.value);
  put.visibility->ts = w2.visibility->ts;
  bed.metadata().signal(SIGCONT);
  const Packet put_reply = via->call(put);
  CHECK(put_reply.op == Op::kReply);
  CHECK(put_reply.status == Status::kOk);
  const Packet listed = via->call(read);
  REQUIRE(listed.op == Op::kReply);
  REQUIRE(listed.status == Status::kOk);
  const auto entries = forein::net::decode_scan_entries(listed.value);
  REQUIRE(entries);
  REQUIRE(entries->size() == 2);
  // Newest first.
  CHECK(entries->at(0).key == dataset_key(kKeys + 2));
  CHECK(forein::net::decode_sidx_ts(entries->at(0).value) == w2.visibility->ts);
  CHECK(entries->at(1).key == dataset_key(kKeys + 1));
  CHECK(forein::net::decode_sidx_ts(entries->at(1).value) == w1.visibility->ts);
  CHECK_FALSE(listed.more);

  // 2. A verified write-heavy secondary-index load at Zipf 0.99, reads
  // asking for up to 64 keys (most listings complete, so missed members
  // would show).
  forein::testing::HistoryDir dir;
  auto load = start_load(bed, 3, dir.file("on.history"), "64");
  const std::string json = forein::testing::exit_json(*load);
  INFO(json);
  CHECK(json_number(json, "wrong") == 0);
  CHECK(json_number(json, "errors") == 0);
  CHECK(json_number(json, "writes") > 300);
  CHECK(json_number(json, "reads") > 300);
  CHECK(json_number(json, "writes_one_rtt") > 0);
  CHECK(json_number(json, "sidx_keys_kept") > 0);
  CHECK(json_number(json, "sidx_keys_listed") >= json_number(json, "sidx_keys_kept"));
  check_sidx_load_history(dir.file("on.history"), 300);

  // 3. The switch's exit line: partial entries stored, and at least the
  // read of step 1 forwarded with one attached.
  const std::string counters = forein::testing::stop_json(bed.sw());
  INFO(counters);
  CHECK(json_number(counters, "partial_stored") >= json_number(json, "writes_one_rtt"));
  CHECK(json_number(counters, "partial_stored") > 0);
  CHECK(json_number(counters, "partial_reads") >= 1);
  bed.stop_all();
}

TEST_CASE("Switch-delta secondary index with the table off: every write takes phase 2", "[e2e][switch]") {
  if (!forein::testing::can_make_taps()) {
    WARN("forein-switch: skipped: " << forein::testing::no_taps_reason());
    return;
  }
  Testbed bed(false, 1);
  forein::testing::HistoryDir dir;
  auto load = start_load(bed, 2, dir.file("off.history"), "10");  // the paper's count
  const std::string json = forein::testing::exit_json(*load);
  INFO(json);
  CHECK(json_number(json, "wrong") == 0);
  CHECK(json_number(json, "errors") == 0);
  CHECK(json_number(json, "writes_one_rtt") == 0);
  CHECK(json_number(json, "writes_two_phase") == json_number(json, "writes"));
  check_sidx_load_history(dir.file("off.history"), 200);
  const std::string counters = forein::testing::stop_json(bed.sw());
  CHECK(json_number(counters, "partial_stored") == 0);
  CHECK(json_number(counters, "partial_reads") == 0);
  bed.stop_all();
}

// Switch-delta with several metadata nodes end to end (docs/network.md,
// "Switch-delta", "Several metadata nodes"): two forein-data-node, five
// forein-kv-server --mode metadata --shard i/5 --keys N (the paper's
// testbed runs five) and forein-switch --backend switch_visibility
// --metadata-nodes P0,..,P4 --keys N on TAP ports; forein-load's
// write-heavy mix with --verify through the switch while one metadata node
// is SIGKILLed and restarted. Checks: no wrong read; each metadata node
// served and applied only its own keys (the switch routes each key to its
// owner; the others' log entries only move a node's cursors on); after the
// run every key's newest log entry is what its owner answers and what a
// read through the switch gets. And the switch SIGKILLed mid-run and
// started again empty (a new epoch), one metadata node crashing during its
// recovery: it serves again only once all five nodes have run the sync
// step, and no committed write is lost or invisible. Needs root and /dev/net/tun; conditions
// are polled with deadlines (no sleeps as synchronization); children are
// killed if a check fails.
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "child_process.h"
#include "data_node_logs.h"
#include "history_e2e.h"
#include "protocol/dataset.h"
#include "protocol/packet.h"
#include "protocol/visibility.h"
#include "switch_sync.h"
#include "tap_switch.h"
#include "udp_client.h"

namespace {

using forein::net::Op;
using forein::net::Packet;
using forein::net::VisibilityHeader;
using forein::net::VisState;
using forein::testing::ChildProcess;
using forein::testing::eventually;
using forein::testing::json_number;
using forein::testing::ready_port;
using forein::testing::TapNets;
using forein::testing::UdpClient;

constexpr std::uint64_t kKeys = 3000;
constexpr int kDataNodes = 2;
constexpr std::uint32_t kMetadataNodes = 5;

class Testbed {
 public:
  // variant: which TAP names and /24s (one per test case, tap_switch.h).
  explicit Testbed(int variant) : nets_("sm", variant) {
    service_port_ = forein::testing::free_udp_port();
    for (int i = 0; i < kDataNodes; ++i) data_ports_.push_back(forein::testing::free_udp_port());
    for (std::uint32_t i = 0; i < kMetadataNodes; ++i) metadata_ports_.push_back(forein::testing::free_udp_port());
    start_switch();
    for (int i = 0; i < kDataNodes; ++i) {
      data_nodes_.push_back(std::make_unique<ChildProcess>(
          FOREIN_DATA_NODE_BIN,
          std::vector<std::string>{"--listen", server_addr(data_ports_[static_cast<std::size_t>(i)]), "--node",
                                   std::to_string(i) + "/" + std::to_string(kDataNodes), "--keys",
                                   std::to_string(kKeys)}));
      REQUIRE(ready_port(*data_nodes_.back()) == data_ports_[static_cast<std::size_t>(i)]);
    }
    metadata_.resize(kMetadataNodes);
    for (std::uint32_t i = 0; i < kMetadataNodes; ++i) start_metadata_node(i);
  }

  // Starts (or, after the old one was killed, restarts) the switch: a new
  // process, an empty table, a new epoch.
  void start_switch() {
    std::string data, metadata;
    for (std::uint16_t p : data_ports_) data += (data.empty() ? "" : ",") + std::to_string(p);
    for (std::uint16_t p : metadata_ports_) metadata += (metadata.empty() ? "" : ",") + std::to_string(p);
    switch_ = std::make_unique<ChildProcess>(
        FOREIN_SWITCH_BIN,
        std::vector<std::string>{"--agent-listen", "127.0.0.1:0", "--client-iface", nets_.client_iface,
                                 "--server-iface", nets_.server_iface, "--client-net", nets_.client_net,
                                 "--server-net", nets_.server_net, "--backend", "switch_visibility",
                                 "--data-nodes", data, "--metadata-nodes", metadata, "--keys",
                                 std::to_string(kKeys), "--service-port", std::to_string(service_port_)});
    REQUIRE(ready_port(*switch_) > 0);
  }

  void start_metadata_node(std::uint32_t i) {
    std::string data;
    for (std::uint16_t p : data_ports_) data += (data.empty() ? "" : ",") + server_addr(p);
    metadata_[i] = std::make_unique<ChildProcess>(
        FOREIN_KV_SERVER_BIN,
        std::vector<std::string>{"--mode", "metadata", "--listen", server_addr(metadata_ports_[i]), "--data-nodes",
                                 data, "--switch", nets_.server_net + ".2:" + std::to_string(service_port_),
                                 "--shard", std::to_string(i) + "/" + std::to_string(kMetadataNodes), "--keys",
                                 std::to_string(kKeys), "--threads", "1", "--backend", "none"});
    REQUIRE(ready_port(*metadata_[i]) == metadata_ports_[i]);
  }

  std::string server_addr(std::uint16_t port) const { return nets_.server_net + ".1:" + std::to_string(port); }
  std::string target() const { return nets_.client_net + ".2:" + std::to_string(service_port_); }
  std::unique_ptr<UdpClient> via_switch() const {
    return std::make_unique<UdpClient>(service_port_, TapNets::addr(nets_.client_net, 2));
  }
  std::unique_ptr<UdpClient> metadata_direct(std::uint32_t i) const {
    return std::make_unique<UdpClient>(metadata_ports_[i], TapNets::addr(nets_.server_net, 1));
  }
  std::unique_ptr<UdpClient> data_direct(int i) const {
    return std::make_unique<UdpClient>(data_ports_[static_cast<std::size_t>(i)], TapNets::addr(nets_.server_net, 1));
  }

  ChildProcess& sw() { return *switch_; }
  ChildProcess& metadata(std::uint32_t i) { return *metadata_[i]; }

  std::string metadata_stats(std::uint32_t i) const {
    auto c = metadata_direct(i);
    return c->call(forein::testing::request(Op::kStats, "")).value;
  }

  // The metadata nodes' exit lines, then the data nodes'.
  std::vector<std::string> stop_all() {
    std::vector<std::string> out;
    for (auto& m : metadata_) out.push_back(forein::testing::stop_json(*m));
    for (auto& d : data_nodes_) out.push_back(forein::testing::stop_json(*d));
    return out;
  }

 private:
  TapNets nets_;
  std::uint16_t service_port_ = 0;
  std::vector<std::uint16_t> data_ports_;
  std::vector<std::uint16_t> metadata_ports_;
  std::unique_ptr<ChildProcess> switch_;
  std::vector<std::unique_ptr<ChildProcess>> data_nodes_;
  std::vector<std::unique_ptr<ChildProcess>> metadata_;
};

Packet visibility_request(Op op, const std::string& key) {
  Packet p = forein::testing::request(op, key);
  const forein::net::SlotKey sk = forein::net::slot_key(key);
  p.visibility = VisibilityHeader{sk.slot, VisState::kNone, sk.fingerprint, 0, 0};
  return p;
}

// Every log entry of every data node: (key, encoded location) of each,
// and key -> (ts, location) of each key's newest.
std::map<std::string, forein::net::StampedLocation> newest_in_logs(
    const Testbed& bed, std::set<std::pair<std::string, std::string>>* every = nullptr) {
  return forein::testing::newest_in_logs(kDataNodes, [&](int i) { return bed.data_direct(i); }, every);
}

std::set<std::pair<std::string, std::string>> entries_in_logs(const Testbed& bed) {
  std::set<std::pair<std::string, std::string>> every;
  (void)newest_in_logs(bed, &every);
  return every;
}

// Once every owner has caught up: each key's newest log entry is what the
// metadata node owning it answers (polled to eventually()'s deadline).
bool owners_answer_newest(const Testbed& bed,
                          const std::map<std::string, forein::net::StampedLocation>& newest) {
  std::vector<std::unique_ptr<UdpClient>> owners;
  for (std::uint32_t i = 0; i < kMetadataNodes; ++i) owners.push_back(bed.metadata_direct(i));
  return eventually([&] {
    for (const auto& [k, s] : newest) {
      const std::uint32_t owner = forein::net::shard_of(k, kMetadataNodes, kKeys);
      const Packet r = owners[owner]->call(visibility_request(Op::kMetaGet, k));
      if (r.op != Op::kReply || r.value != forein::net::encode_location(s.location)) return false;
    }
    return true;
  });
}

}  // namespace

TEST_CASE("Switch-delta, five metadata nodes: one killed mid-run and restarted, nothing committed lost",
          "[e2e][switch]") {
  if (!forein::testing::can_make_taps()) {
    WARN("forein-switch: skipped: " << forein::testing::no_taps_reason());
    return;
  }
  Testbed bed(0);
  constexpr std::uint32_t kVictim = 2;
  // A verified write-heavy load across the kill and the restart (uniform:
  // every metadata node gets writes).
  forein::testing::HistoryDir history;  // the load's history, checked below (history_e2e.h)
  auto load = std::make_unique<ChildProcess>(
      FOREIN_LOAD_BIN,
      std::vector<std::string>{"--target", bed.target(), "--keys", std::to_string(kKeys), "--workload",
                               "write-heavy", "--dist", "uniform", "--seconds", "3", "--outstanding", "16",
                               "--timeout-ms", "300", "--retries", "30", "--verify", "--seed", "7",
                               "--history", history.file("multi.history")});
  // Once the victim has taken copies of writes the switch stored...
  REQUIRE(eventually([&] { return json_number(bed.metadata_stats(kVictim), "meta_async") > 100; }));
  bed.metadata(kVictim).signal(SIGKILL);
  bed.metadata(kVictim).wait_exit();
  bed.start_metadata_node(kVictim);
  const std::string json = forein::testing::exit_json(*load);
  INFO(json);
  CHECK(json_number(json, "wrong") == 0);
  CHECK(json_number(json, "writes") > 200);
  CHECK(json_number(json, "writes_one_rtt") > 0);
  // Linearizable across the kill; corrupted copies are not.
  forein::testing::check_load_history(history.file("multi.history"), 200);

  // Every key's newest log entry, committed or not, is what its owner
  // answers once it has caught up, and what a read through the switch
  // gets (the switch routes it to the owner, or answers from its slot).
  const auto newest = newest_in_logs(bed);
  REQUIRE(newest.size() == kKeys);
  CHECK(owners_answer_newest(bed, newest));
  auto via = bed.via_switch();
  // Through the switch: the owner's answer is the newest entry; a slot
  // still valid (a write whose CLEAR is not due: e.g. replayed by the
  // restarted node, which clears on the next held reply) answers one of
  // the key's own log entries.
  const auto all = entries_in_logs(bed);
  std::size_t from_owner = 0, from_slot = 0;
  for (const auto& [k, s] : newest) {
    const Packet r = via->call(visibility_request(Op::kMetaGet, k));
    REQUIRE(r.op == Op::kReply);
    REQUIRE(r.visibility);
    if (r.visibility->state == VisState::kSwitchRead) {
      ++from_slot;
      CHECK(all.count({k, r.value}) == 1);
    } else {
      ++from_owner;
      CHECK(r.value == forein::net::encode_location(s.location));
    }
  }
  CHECK(from_owner + from_slot == kKeys);
  CHECK(from_owner > 0);
  // A key asked of a node that does not own it: refused.
  const std::string k0 = forein::net::dataset_key(0);
  const Packet refused = bed.metadata_direct(1)->call(visibility_request(Op::kMetaGet, k0));
  CHECK(refused.op == Op::kError);
  CHECK(refused.status == forein::net::Status::kBadRequest);

  const std::string counters = forein::testing::stop_json(bed.sw());
  CHECK(json_number(counters, "stored") > 0);
  const std::vector<std::string> exits = bed.stop_all();
  for (std::uint32_t i = 0; i < kMetadataNodes; ++i) {
    INFO("metadata node " << i << ": " << exits[i]);
    CHECK(json_number(exits[i], "not_owned") == (i == 1 ? 1 : 0));
    CHECK(json_number(exits[i], "bad_async") == 0);
    CHECK(json_number(exits[i], "foreign_entries") > 0);  // the others' entries, passed over
    if (i != kVictim) CHECK(json_number(exits[i], "meta_async") > 0);
  }
  // The nodes fetch only their own ranges (protocol/log_fetch.h): at
  // start-up alone each of the five passes over the other four ranges'
  // preloaded entries (4/5 of kKeys) without receiving them; fetching whole
  // logs would pass over none.
  long long passed_over = 0, fetched = 0;
  for (int d = 0; d < kDataNodes; ++d) {
    const std::string& line = exits[kMetadataNodes + static_cast<std::size_t>(d)];
    INFO("data node " << d << ": " << line);
    CHECK(json_number(line, "fetch_passed_over") > 0);
    passed_over += json_number(line, "fetch_passed_over");
    fetched += json_number(line, "fetched_entries");
  }
  CHECK(passed_over >= static_cast<long long>(4 * kKeys));
  const auto all_entries = static_cast<long long>(all.size());
  fetched -= 2 * all_entries;  // this test's own two full reads of the logs (newest_in_logs, entries_in_logs)
  std::printf("five metadata nodes: %lld log entries fetched for %lld in the logs, %lld passed over\n", fetched,
              all_entries, passed_over);
}

TEST_CASE("Switch-delta, five metadata nodes: the switch killed mid-run and restarted empty, one node crashing during its recovery: no committed write lost",
          "[e2e][switch]") {
  if (!forein::testing::can_make_taps()) {
    WARN("forein-switch: skipped: " << forein::testing::no_taps_reason());
    return;
  }
  Testbed bed(1);
  forein::testing::HistoryDir history;  // the load's history, checked below (history_e2e.h)
  auto load = std::make_unique<ChildProcess>(
      FOREIN_LOAD_BIN,
      std::vector<std::string>{"--target", bed.target(), "--keys", std::to_string(kKeys), "--workload",
                               "write-heavy", "--dist", "uniform", "--seconds", "4", "--outstanding", "16",
                               "--timeout-ms", "300", "--retries", "40", "--verify", "--seed", "11",
                               "--history", history.file("crash.history")});
  // Mid-run, once every node has taken copies of writes the switch stored:
  // slots hold committed writes whose copies may still be in flight to any
  // of the five.
  REQUIRE(eventually([&] {
    for (std::uint32_t i = 0; i < kMetadataNodes; ++i) {
      if (json_number(bed.metadata_stats(i), "meta_async") <= 20) return false;
    }
    return true;
  }));
  // One node crashes during the recovery: stopped before the switch dies
  // (copies the old switch sent it die in its socket with it), so only the
  // four others can sync with the new switch's epoch; then SIGKILLed and
  // started again (its index rebuilt from the logs, then its sync step).
  constexpr std::uint32_t kVictim = 3;
  bed.metadata(kVictim).stop_all_threads();
  bed.sw().kill_now();
  bed.start_switch();
  auto via = bed.via_switch();
  CHECK(eventually([&] { return forein::testing::switch_pending_syncs(*via, false) == 1; }));
  bed.metadata(kVictim).signal(SIGKILL);
  bed.metadata(kVictim).wait_exit();
  bed.start_metadata_node(kVictim);
  // The new switch serves only once all five have run the sync step.
  REQUIRE(forein::testing::switch_pending_syncs(*via, true) == 0);

  const std::string json = forein::testing::exit_json(*load);
  INFO(json);
  CHECK(json_number(json, "wrong") == 0);
  CHECK(json_number(json, "errors") == 0);
  CHECK(json_number(json, "writes") > 200);
  CHECK(json_number(json, "reads") > 200);
  // Linearizable across the crash; corrupted copies are not.
  forein::testing::check_load_history(history.file("crash.history"), 200);

  // Every key's newest log entry is what its owner answers once caught up,
  // and what a read through the new switch returns (from the owner, or
  // from a slot the new switch filled after the restart).
  const auto newest = newest_in_logs(bed);
  REQUIRE(newest.size() == kKeys);
  CHECK(owners_answer_newest(bed, newest));
  CHECK(eventually([&] {
    for (const auto& [k, s] : newest) {
      const Packet r = via->call(visibility_request(Op::kMetaGet, k));
      if (r.op != Op::kReply || r.value != forein::net::encode_location(s.location)) return false;
    }
    return true;
  }));

  const std::string counters = forein::testing::stop_json(bed.sw());
  INFO(counters);
  CHECK_FALSE(counters.find("\"recovering\":false") == std::string::npos);
  CHECK(json_number(counters, "stored") > 0);  // the new switch takes writes again
  const std::vector<std::string> exits = bed.stop_all();
  for (std::uint32_t i = 0; i < kMetadataNodes; ++i) {
    INFO("metadata node " << i << ": " << exits[i]);
    // The first switch's epoch, then the new one's; the restarted node
    // only the new one's.
    CHECK(json_number(exits[i], "syncs") == (i == kVictim ? 1 : 2));
    CHECK(json_number(exits[i], "bad_async") == 0);
    CHECK(json_number(exits[i], "not_owned") == 0);
  }
}

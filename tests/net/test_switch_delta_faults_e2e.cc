// Switch-delta's switch-crash recovery end to end (paper 002, sections
// III-E and V-F; docs/network.md, "Switch-crash recovery"): forein-switch
// --backend switch_visibility in front of two forein-data-node and one
// forein-kv-server --mode metadata on TAP ports, the switch SIGKILLed and
// started again (an empty table, a new epoch):
//   - under a verified write-heavy load: no wrong read, and afterwards every
//     key's newest log entry is what a read through the new switch returns;
//     the recovery time is printed (switch start -> every metadata node
//     synced; kill -> first write and read answered);
//   - the forced interleaving of hazard 1: a write the old switch committed
//     (kStored) whose META_ASYNC copy is really lost (the stopped metadata
//     node's receive buffer is full, so the kernel drops the copy; the
//     metadata node runs with a 60 s visibility timeout, so its catch-up
//     cannot rescue it): the read after the restart sees the write, applied
//     by the sync step.
// Needs root and /dev/net/tun; conditions are polled with deadlines (no
// sleeps as synchronization); children are killed if a check fails.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
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
using Clock = std::chrono::steady_clock;

// The data set; FOREIN_RECOVERY_KEYS=N measures with N keys (the
// recovery figures of docs/switch-delta-experiments.md; CTest runs 5000).
const std::uint64_t kKeys = [] {
  const char* v = std::getenv("FOREIN_RECOVERY_KEYS");
  return v != nullptr && std::strtoull(v, nullptr, 10) >= 1000 ? std::strtoull(v, nullptr, 10) : 5000ULL;
}();
constexpr int kDataNodes = 2;

// A number member of a JSON line (-1 when absent), with its fraction.
double json_double(const std::string& json, const std::string& name) {
  const std::size_t at = json.find("\"" + name + "\":");
  return at == std::string::npos ? -1.0 : std::strtod(json.c_str() + at + name.size() + 3, nullptr);
}

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

class Testbed {
 public:
  Testbed(int variant, std::vector<std::string> metadata_extra) : nets_("sr", variant), extra_(std::move(metadata_extra)) {
    service_port_ = forein::testing::free_udp_port();
    for (int i = 0; i < kDataNodes; ++i) data_ports_.push_back(forein::testing::free_udp_port());
    metadata_port_ = forein::testing::free_udp_port();
    start_switch();
    for (int i = 0; i < kDataNodes; ++i) {
      data_nodes_.push_back(std::make_unique<ChildProcess>(
          FOREIN_DATA_NODE_BIN,
          std::vector<std::string>{"--listen", server_addr(data_ports_[static_cast<std::size_t>(i)]), "--node",
                                   std::to_string(i) + "/" + std::to_string(kDataNodes), "--keys",
                                   std::to_string(kKeys)}));
      REQUIRE(ready_port(*data_nodes_.back(), std::chrono::seconds(120)) ==
              data_ports_[static_cast<std::size_t>(i)]);
    }
    std::string data;
    for (std::uint16_t p : data_ports_) data += (data.empty() ? "" : ",") + server_addr(p);
    std::vector<std::string> args{"--mode", "metadata", "--listen", server_addr(metadata_port_), "--data-nodes", data,
                                  "--switch", nets_.server_net + ".2:" + std::to_string(service_port_), "--threads",
                                  "1", "--backend", "none"};
    args.insert(args.end(), extra_.begin(), extra_.end());
    const Clock::time_point spawned = Clock::now();
    metadata_ = std::make_unique<ChildProcess>(FOREIN_KV_SERVER_BIN, args);
    REQUIRE(ready_port(*metadata_, std::chrono::seconds(120)) == metadata_port_);
    metadata_start_ms_ = ms_since(spawned);
    REQUIRE(pending_syncs(true) == 0);
  }

  // Starts (or, after kill_now(), restarts) the switch: a new process, an
  // empty table, a new epoch; the nodes bound to the server side's .1 keep
  // their sockets while its TAP is made again.
  void start_switch() {
    std::string data;
    for (std::uint16_t p : data_ports_) data += (data.empty() ? "" : ",") + std::to_string(p);
    switch_ = std::make_unique<ChildProcess>(
        FOREIN_SWITCH_BIN,
        std::vector<std::string>{"--agent-listen", "127.0.0.1:0", "--client-iface", nets_.client_iface,
                                 "--server-iface", nets_.server_iface, "--client-net", nets_.client_net,
                                 "--server-net", nets_.server_net, "--backend", "switch_visibility", "--data-nodes",
                                 data, "--metadata-nodes", std::to_string(metadata_port_), "--service-port",
                                 std::to_string(service_port_), "--visibility", "on"});
    REQUIRE(ready_port(*switch_) > 0);
  }

  // The metadata nodes the switch still waits for (0: recovered); wait:
  // until 0 (switch_sync.h).
  long long pending_syncs(bool wait) const { return forein::testing::switch_pending_syncs(*via_switch(), wait); }

  std::string server_addr(std::uint16_t port) const { return nets_.server_net + ".1:" + std::to_string(port); }
  std::string target() const { return nets_.client_net + ".2:" + std::to_string(service_port_); }
  std::uint16_t metadata_port() const { return metadata_port_; }
  // The metadata node's start (its index rebuilt from every log) to ready.
  double metadata_start_ms() const { return metadata_start_ms_; }
  std::uint32_t server_ip() const { return TapNets::addr(nets_.server_net, 1); }
  std::unique_ptr<UdpClient> via_switch() const {
    return std::make_unique<UdpClient>(service_port_, TapNets::addr(nets_.client_net, 2));
  }
  std::unique_ptr<UdpClient> metadata_direct() const {
    return std::make_unique<UdpClient>(metadata_port_, server_ip());
  }
  std::unique_ptr<UdpClient> data_direct(int i) const {
    return std::make_unique<UdpClient>(data_ports_[static_cast<std::size_t>(i)], server_ip());
  }

  ChildProcess& sw() { return *switch_; }
  ChildProcess& metadata() { return *metadata_; }

  void stop_all() {
    forein::testing::stop_json(*metadata_);
    for (auto& d : data_nodes_) forein::testing::stop_json(*d);
  }

 private:
  TapNets nets_;
  std::vector<std::string> extra_;
  std::uint16_t service_port_ = 0;
  std::vector<std::uint16_t> data_ports_;
  std::uint16_t metadata_port_ = 0;
  std::unique_ptr<ChildProcess> switch_;
  std::vector<std::unique_ptr<ChildProcess>> data_nodes_;
  std::unique_ptr<ChildProcess> metadata_;
  double metadata_start_ms_ = 0;
};

Packet visibility_request(Op op, const std::string& key, std::string value = {}) {
  Packet p = forein::testing::request(op, key, std::move(value));
  const forein::net::SlotKey sk = forein::net::slot_key(key);
  p.visibility = VisibilityHeader{sk.slot, VisState::kNone, sk.fingerprint, 0, 0};
  return p;
}

// One ordered write through the switch (phase 2 when the switch did not
// store it), as forein-load does; the reply's location and state.
struct Written {
  std::string location;
  VisState state = VisState::kNone;
};
Written ordered_write(UdpClient& via, const std::string& key, const std::string& record) {
  const Packet w = via.call(visibility_request(Op::kLogAppend, key, record));
  REQUIRE(w.op == Op::kReply);
  REQUIRE(w.status == Status::kOk);
  REQUIRE(w.visibility);
  if (w.visibility->state != VisState::kStored) {
    Packet put = visibility_request(Op::kMetaPut, key, w.value);
    put.visibility->ts = w.visibility->ts;
    const Packet pr = via.call(put);
    REQUIRE(pr.op == Op::kReply);
    REQUIRE(pr.status == Status::kOk);
  }
  return {w.value, w.visibility->state};
}

// Every log entry of every data node: key -> (ts, location) of its newest.
std::map<std::string, forein::net::StampedLocation> newest_in_logs(const Testbed& bed) {
  return forein::testing::newest_in_logs(kDataNodes, [&](int i) { return bed.data_direct(i); });
}

// The kernel's count of datagrams dropped at the UDP socket bound to
// port (this network namespace's /proc/net/udp; -1 if none).
long long udp_drops(std::uint16_t port) {
  std::ifstream in("/proc/net/udp");
  std::string line;
  std::getline(in, line);  // header
  char want[8];
  std::snprintf(want, sizeof want, ":%04X", port);
  long long total = -1;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string sl, local;
    f >> sl >> local;
    if (local.size() < 5 || local.substr(local.size() - 5) != want) continue;
    std::string field;
    std::vector<std::string> rest;
    while (f >> field) rest.push_back(field);
    if (rest.empty()) continue;
    total = (total < 0 ? 0 : total) + std::stoll(rest.back());  // the last column: drops
  }
  return total;
}

std::string metadata_stats(const Testbed& bed) {
  auto c = bed.metadata_direct();
  const Packet s = c->call(forein::testing::request(Op::kStats, ""));
  REQUIRE(s.op == Op::kReply);
  return s.value;
}

}  // namespace

TEST_CASE("Switch-delta: the switch killed mid-run and restarted empty loses no committed write", "[e2e][switch]") {
  if (!forein::testing::can_make_taps()) {
    WARN("forein-switch: skipped: " << forein::testing::no_taps_reason());
    return;
  }
  Testbed bed(0, {});
  forein::testing::HistoryDir history;  // the load's history, checked below (history_e2e.h)
  auto load = std::make_unique<ChildProcess>(
      FOREIN_LOAD_BIN,
      std::vector<std::string>{"--target", bed.target(), "--keys", std::to_string(kKeys), "--workload",
                               "write-heavy", "--dist", "zipf", "--seconds", "6", "--outstanding", "16",
                               "--timeout-ms", "300", "--retries", "40", "--verify", "--seed", "44",
                               "--history", history.file("crash.history")});
  REQUIRE(eventually([&] { return json_number(metadata_stats(bed), "meta_async") > 300; }));
  // Mid-run: slots hold committed writes whose copies may be in flight.
  const Clock::time_point killed = Clock::now();
  bed.sw().kill_now();
  bed.start_switch();
  const double started_ms = ms_since(killed);
  REQUIRE(bed.pending_syncs(true) == 0);
  const double ready_ms = ms_since(killed);
  auto via = bed.via_switch();
  // A key the load does not use (its verifier would not know this write).
  const std::string key = dataset_key(kKeys + 7);
  const Written w = ordered_write(*via, key, forein::net::dataset_record(kKeys + 7, 1));
  const Packet g = via->call(visibility_request(Op::kMetaGet, key));
  const double first_ms = ms_since(killed);
  REQUIRE(g.op == Op::kReply);
  CHECK(g.value == w.location);

  const std::string json = forein::testing::exit_json(*load);
  INFO(json);
  CHECK(json_number(json, "wrong") == 0);
  CHECK(json_number(json, "errors") == 0);
  CHECK(json_number(json, "writes") > 300);
  CHECK(json_number(json, "reads") > 300);
  // Linearizable across the crash; corrupted copies are not.
  forein::testing::check_load_history(history.file("crash.history"), 300);

  // Every key's newest log entry, committed or not, is what a read through
  // the new switch returns once the metadata node has caught up (every
  // key written since the start and every 100th other one when measuring
  // with more than 20,000 keys).
  const auto newest = newest_in_logs(bed);
  REQUIRE(newest.size() == kKeys + 1);
  std::uint64_t n = 0;
  CHECK(eventually([&] {
    for (const auto& [k, s] : newest) {
      if (kKeys > 20000 && s.ts <= 1 && ++n % 100 != 0) continue;
      const Packet r = via->call(visibility_request(Op::kMetaGet, k));
      if (r.op != Op::kReply || r.value != forein::net::encode_location(s.location)) return false;
    }
    return true;
  }));
  const std::string meta = metadata_stats(bed);  // (the switch's TAP is its way in)
  INFO(meta);
  const std::string counters = forein::testing::stop_json(bed.sw());
  INFO(counters);
  CHECK_FALSE(counters.find("\"recovering\":false") == std::string::npos);
  CHECK(json_number(counters, "stored") > 0);  // the new switch takes writes again
  CHECK(json_number(meta, "syncs") == 2);  // the first switch's epoch, then the new one's
  std::printf(
      "switch-crash recovery (%llu keys, under load): kill -> new switch ready %.1f ms; -> recovered (every "
      "metadata node synced) %.1f ms; -> first write and read %.1f ms; new switch: process start -> recovered "
      "%.1f ms, forwarding -> recovered %.1f ms; metadata node's sync step %.3f ms, %lld entries; the metadata node's "
      "start (index rebuilt from the logs) %.1f ms\n",
      static_cast<unsigned long long>(kKeys), started_ms, ready_ms, first_ms,
      json_double(counters, "recovered_ms"), json_double(counters, "sync_ms"), json_double(meta, "last_sync_ms"),
      json_number(meta, "sync_applied"),
      bed.metadata_start_ms());
  bed.stop_all();
}

TEST_CASE("Switch-delta: a committed write whose copy died with the switch is read after the restart (sync step)",
          "[e2e][switch]") {
  if (!forein::testing::can_make_taps()) {
    WARN("forein-switch: skipped: " << forein::testing::no_taps_reason());
    return;
  }
  // A 60 s visibility timeout: the catch-up cannot apply the lost write
  // within the test; only the sync step can.
  Testbed bed(1, {"--visibility-timeout-us", "60000000"});
  auto via = bed.via_switch();
  const std::string key = dataset_key(4242);
  const std::string before = metadata_stats(bed);
  // 1. The metadata node stopped, its receive buffer filled with junk
  //    datagrams until the kernel drops (so whatever comes next is lost).
  bed.metadata().stop_all_threads();
  {
    const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd >= 0);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(bed.metadata_port());
    to.sin_addr.s_addr = htonl(bed.server_ip());
    const char junk = 'x';
    const long long drops0 = udp_drops(bed.metadata_port());
    REQUIRE(drops0 >= 0);
    for (int sent = 0; udp_drops(bed.metadata_port()) == drops0; sent += 256) {
      REQUIRE(sent < 1'000'000);
      for (int i = 0; i < 256; ++i) {
        (void)::sendto(fd, &junk, 1, 0, reinterpret_cast<const sockaddr*>(&to), sizeof to);
      }
    }
    ::close(fd);
  }
  // 2. The write commits in the switch (kStored); its META_ASYNC copy is
  //    dropped at the full buffer.
  const long long drops1 = udp_drops(bed.metadata_port());
  const Written w = ordered_write(*via, key, forein::net::dataset_record(4242, 7));
  REQUIRE(w.state == VisState::kStored);
  REQUIRE(eventually([&] { return udp_drops(bed.metadata_port()) > drops1; }));
  const Packet from_slot = via->call(visibility_request(Op::kMetaGet, key));
  CHECK(from_slot.visibility->state == VisState::kSwitchRead);
  CHECK(from_slot.value == w.location);
  // 3. The switch killed and started again (empty table, new epoch): it
  //    waits for the metadata node (stopped) to sync.
  const Clock::time_point killed = Clock::now();
  bed.sw().kill_now();
  bed.start_switch();
  CHECK(bed.pending_syncs(false) == 1);
  // 4. The node resumed: junk passed over, its next probe meets the new
  //    epoch, the sync step applies the log's end; the switch recovers.
  bed.metadata().signal(SIGCONT);
  REQUIRE(bed.pending_syncs(true) == 0);
  const double recovered_ms = ms_since(killed);
  const Packet g = via->call(visibility_request(Op::kMetaGet, key));
  REQUIRE(g.op == Op::kReply);
  REQUIRE(g.status == Status::kOk);
  CHECK(g.visibility->state == VisState::kNone);  // from the metadata node: the table is empty
  CHECK(g.value == w.location);                    // the committed write, not the preloaded record
  const std::string after = metadata_stats(bed);
  INFO(before << "\n" << after);
  // Applied by the sync step, not by the catch-up (60 s) nor a copy.
  CHECK(json_number(after, "sync_applied") == json_number(before, "sync_applied") + 1);
  CHECK(json_number(after, "caught_up") == 0);
  CHECK(json_number(after, "meta_async") == json_number(before, "meta_async"));
  CHECK(json_number(after, "syncs") == 2);
  const std::string counters = forein::testing::stop_json(bed.sw());
  INFO(counters);
  CHECK(json_number(counters, "recovering_reads_dropped") == 0);
  std::printf("switch-crash recovery, lost copy: kill -> recovered %.1f ms (metadata node stopped meanwhile); "
              "the sync step applied %lld entr(ies)\n",
              recovered_ms, json_number(after, "sync_applied") - json_number(before, "sync_applied"));
  bed.stop_all();
}

// forein-kv-server --mode metadata (Switch-delta's metadata node) end to
// end: the real program as a child process, real UDP on loopback. The test
// plays the data nodes (a small responder answering LOG_FETCH from a log
// the test writes) and the switch (a socket sending META_ASYNC copies and
// held replies, receiving CLEARs). Covered: start-up replay of the logs,
// META_GET, META_PUT and its apply rule, META_ASYNC in deferred batches and
// with --deferred off (a CLEAR for each, to the sender), a held reply
// bounced back (CLEAR when applied, the reply resent with state kNone), a
// lost META_ASYNC caught up by the timeout fetch (CLEAR to --switch), a
// data node that never answers (exit 1), bad flags (exit 2), and two
// metadata nodes splitting the keys (--shard): who may clear a slot. Plus the
// pieces directly: DeferredBatch's combining and order, AppliedLog,
// decode_log_fetch, and Tree::prefetch. Synchronization is by lines and
// datagrams with deadlines; requests are retried by seq.
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "child_process.h"
#include "forein/tree.h"
#include "kv_server/deferred_batch.h"
#include "kv_server/log_catchup.h"
#include "kv_server/metadata_index.h"
#include "loopback_socket.h"
#include "protocol/dataset.h"
#include "protocol/log_fetch.h"
#include "protocol/packet.h"
#include "protocol/visibility.h"
#include "udp_client.h"

namespace {

using namespace forein::net;
using Clock = std::chrono::steady_clock;
using forein::testing::ChildProcess;
using forein::testing::json_number;
using forein::testing::request;
using Udp = forein::testing::UdpClient;

std::string be32(std::uint32_t v) {
  std::string out;
  for (int b = 3; b >= 0; --b) out.push_back(static_cast<char>(v >> (8 * b)));
  return out;
}

using Socket = forein::testing::LoopbackSocket;

// A data node's log, served over LOG_FETCH as forein-data-node does: the
// entries from the id asked for, at most count (<= 256), `more` when
// entries remain; with a key range (several metadata nodes), that range's
// only, the key naming the last id examined (protocol/log_fetch.h). Writes take the next log id and the next timestamp of
// their slot's counter.
class FakeDataNode {
 public:
  FakeDataNode(std::uint16_t index, std::uint32_t nodes, bool answer = true)
      : index_(index), nodes_(nodes), answer_(answer), thread_([this] { serve(); }) {}
  ~FakeDataNode() {
    stop_ = true;
    thread_.join();
  }

  std::uint16_t port() const { return socket_.port(); }
  std::string address() const { return "127.0.0.1:" + std::to_string(port()); }
  std::uint64_t fetches() const { return fetches_.load(); }

  StampedLocation append(const std::string& key) {
    REQUIRE(data_node_of(slot_key(key).slot, nodes_) == index_);
    std::lock_guard<std::mutex> lock(mu_);
    StampedLocation s;
    s.location = {index_, static_cast<std::uint32_t>(log_.size() + 1)};
    s.ts = ++slot_ts_[slot_key(key).slot];
    log_.push_back({key, s});
    return s;
  }

 private:
  void serve() {
    std::vector<std::byte> buf(kMaxDatagram + 1);
    while (!stop_) {
      pollfd p{socket_.fd(), POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;  // wakes to see stop_
      sockaddr_in from{};
      socklen_t len = sizeof from;
      const ssize_t n =
          ::recvfrom(socket_.fd(), buf.data(), buf.size(), MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&from), &len);
      if (n <= 0) continue;
      Packet req;
      if (parse_packet(std::span<const std::byte>(buf.data(), static_cast<std::size_t>(n)), &req) !=
              ParseError::kNone ||
          req.op != Op::kLogFetch) {
        continue;
      }
      std::string why;
      const std::optional<LogFetchValue> value = decode_log_fetch_value(req.value, &why);
      if (!value) continue;
      ++fetches_;
      if (!answer_) continue;
      Packet reply;
      reply.op = Op::kReply;
      reply.seq = req.seq;
      {
        std::lock_guard<std::mutex> lock(mu_);
        const std::uint32_t first = std::max<std::uint32_t>(value->first, 1);
        const std::uint32_t want = std::min<std::uint32_t>(req.count == 0 ? 64 : req.count, 256);
        std::vector<ScanEntry> entries;
        std::size_t id = first;
        for (; id <= log_.size() && entries.size() < want; ++id) {
          if (value->shard && !value->shard->owns(log_[id - 1].first)) continue;
          entries.push_back({log_[id - 1].first, encode_stamped(log_[id - 1].second)});
        }
        if (value->shard) reply.key = be32(static_cast<std::uint32_t>(id - 1));
        reply.more = id <= log_.size();
        reply.count = static_cast<std::uint32_t>(entries.size());
        reply.value = encode_scan_entries(entries);
      }
      const std::vector<std::byte> wire = encode_packet(reply);
      (void)::sendto(socket_.fd(), wire.data(), wire.size(), 0, reinterpret_cast<sockaddr*>(&from), len);
    }
  }

  std::uint16_t index_;
  std::uint32_t nodes_;
  bool answer_;
  Socket socket_;
  std::mutex mu_;
  std::vector<std::pair<std::string, StampedLocation>> log_;
  std::map<std::uint16_t, std::uint32_t> slot_ts_;
  std::atomic<std::uint64_t> fetches_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;  // last: starts once the rest is built
};

// The data set keys owned by data node `node` of `nodes`, from index `from`.
std::vector<std::string> keys_of(std::uint16_t node, std::uint32_t nodes, std::size_t count, std::uint64_t from = 0) {
  std::vector<std::string> out;
  for (std::uint64_t i = from; out.size() < count; ++i) {
    const std::string k = dataset_key(i);
    if (data_node_of(slot_key(k).slot, nodes) == node) out.push_back(k);
  }
  return out;
}

VisibilityHeader header_of(const std::string& key, std::uint32_t ts = 0, VisState state = VisState::kNone,
                           std::uint32_t aux = 0) {
  const SlotKey sk = slot_key(key);
  VisibilityHeader v;
  v.slot = sk.slot;
  v.fingerprint = sk.fingerprint;
  v.ts = ts;
  v.state = state;
  v.aux = aux;
  return v;
}

Packet meta_update(Op op, const std::string& key, const StampedLocation& s, std::uint64_t seq = 0) {
  Packet p = request(op, key, encode_location(s.location));
  p.seq = seq;
  p.visibility = header_of(key, s.ts);
  return p;
}

std::unique_ptr<ChildProcess> start_node(const std::vector<const FakeDataNode*>& nodes,
                                         std::vector<std::string> extra, std::uint16_t* port) {
  std::string list;
  for (const FakeDataNode* n : nodes) list += (list.empty() ? "" : ",") + n->address();
  std::vector<std::string> args = {"--mode", "metadata", "--listen", "127.0.0.1:0", "--data-nodes", list,
                                   "--backend", "none"};
  args.insert(args.end(), extra.begin(), extra.end());
  auto child = std::make_unique<ChildProcess>(FOREIN_KV_SERVER_BIN, args, /*capture_stderr=*/true);
  *port = static_cast<std::uint16_t>(forein::testing::ready_port(*child, std::chrono::seconds(30)));
  REQUIRE(*port != 0);
  return child;
}

void check_location(Udp& udp, const std::string& key, const StampedLocation& want) {
  Packet g = request(Op::kMetaGet, key);
  g.visibility = header_of(key);
  const Packet r = udp.call(g);
  REQUIRE(r.op == Op::kReply);
  REQUIRE(r.status == Status::kOk);
  CHECK(r.value == encode_location(want.location));
  REQUIRE(r.visibility);
  CHECK(r.visibility->ts == want.ts);
  CHECK(r.visibility->slot == slot_key(key).slot);
  CHECK(r.visibility->fingerprint == slot_key(key).fingerprint);
  CHECK(r.visibility->state == VisState::kNone);
}

// A CLEAR of key's slot with timestamp ts.
void check_clear(const Packet& c, const std::string& key, std::uint32_t ts) {
  CHECK(c.op == Op::kClear);
  CHECK(c.key.empty());
  REQUIRE(c.visibility);
  CHECK(c.visibility->slot == slot_key(key).slot);
  CHECK(c.visibility->ts == ts);
  CHECK(c.visibility->state == VisState::kNone);
  CHECK(c.visibility->aux == 0);
}

std::string exit_line(ChildProcess& child) { return forein::testing::stop_json(child); }

}  // namespace

TEST_CASE("metadata node: start-up replays the data nodes' logs; META_GET answers the newest", "[net][metadata]") {
  FakeDataNode d0(0, 2), d1(1, 2);
  std::map<std::string, StampedLocation> newest;
  // Over two LOG_FETCH pages per node (256 entries each): every key twice.
  for (int round = 0; round < 2; ++round) {
    for (const std::string& k : keys_of(0, 2, 200)) newest[k] = d0.append(k);
    for (const std::string& k : keys_of(1, 2, 150)) newest[k] = d1.append(k);
  }
  std::uint16_t port = 0;
  auto node = start_node({&d0, &d1}, {}, &port);
  Udp udp(port);
  for (const auto& [k, s] : newest) check_location(udp, k, s);

  // No header in, none out; an unknown key: not_found.
  const std::string some = newest.begin()->first;
  const Packet plain = udp.call(request(Op::kMetaGet, some));
  CHECK(plain.status == Status::kOk);
  CHECK_FALSE(plain.visibility);
  const std::string absent = dataset_key(1'000'000);
  const Packet miss = udp.call(request(Op::kMetaGet, absent));
  CHECK(miss.op == Op::kReply);
  CHECK(miss.status == Status::kNotFound);
  // Not a metadata-node request.
  const Packet get = udp.call(request(Op::kGet, some));
  CHECK(get.op == Op::kError);
  CHECK(get.status == Status::kBadRequest);
  CHECK(get.value == "not a metadata-node request");

  const std::string stats = forein::testing::server_stats(udp);
  INFO(stats);
  CHECK(json_number(stats, "replayed") == 700);
  CHECK(json_number(stats, "applied") == 700);  // log order is timestamp order
  CHECK(json_number(stats, "keys") == 350);
  CHECK(json_number(stats, "data_nodes") == 2);
  CHECK(json_number(stats, "meta_get") == static_cast<long long>(newest.size()) + 2);
  CHECK(json_number(stats, "bad_request") == 1);
  CHECK(d0.fetches() >= 2);  // two pages at least (catch-up adds more)

  const std::string json = exit_line(*node);
  CHECK(json.find("\"mode\":\"metadata\"") != std::string::npos);
  CHECK(json_number(json, "replayed") == 700);
  CHECK(json_number(json, "caught_up") == 0);
}

TEST_CASE("metadata node: META_PUT applies at once; an older timestamp is ignored", "[net][metadata]") {
  FakeDataNode d0(0, 2), d1(1, 2);
  std::uint16_t port = 0;
  auto node = start_node({&d0, &d1}, {}, &port);
  Udp udp(port);
  const std::string key = keys_of(1, 2, 1).front();
  const StampedLocation newer{{1, 40}, 9};
  const StampedLocation older{{1, 30}, 7};

  const Packet r1 = udp.call(meta_update(Op::kMetaPut, key, newer));
  REQUIRE(r1.op == Op::kReply);
  CHECK(r1.status == Status::kOk);
  CHECK(r1.key == key);
  CHECK(r1.value.empty());
  REQUIRE(r1.visibility);
  CHECK(*r1.visibility == header_of(key, 9));
  check_location(udp, key, newer);

  // Reordered: the older write's phase 2 arrives last; it is acknowledged
  // and changes nothing.
  const Packet r2 = udp.call(meta_update(Op::kMetaPut, key, older));
  CHECK(r2.status == Status::kOk);
  REQUIRE(r2.visibility);
  CHECK(r2.visibility->ts == 7);
  check_location(udp, key, newer);
  // A duplicate: the same.
  CHECK(udp.call(meta_update(Op::kMetaPut, key, newer)).status == Status::kOk);
  check_location(udp, key, newer);

  // Requests that fail the checks: ERROR bad_request, nothing applied.
  const auto refused = [&](Packet p, const std::string& what) {
    const Packet r = udp.call(p);
    INFO(r.value);
    CHECK(r.op == Op::kError);
    CHECK(r.status == Status::kBadRequest);
    CHECK(r.value.find(what) != std::string::npos);
  };
  Packet no_header = meta_update(Op::kMetaPut, key, {{1, 50}, 11});
  no_header.visibility.reset();
  refused(no_header, "visibility header");
  Packet wrong_fp = meta_update(Op::kMetaPut, key, {{1, 50}, 11});
  wrong_fp.visibility->fingerprint ^= 1;
  refused(wrong_fp, "not the key's");
  refused(meta_update(Op::kMetaPut, key, {{2, 50}, 11}), "data node 2 of 2");
  refused(meta_update(Op::kMetaPut, key, {{0, 50}, 11}), "belongs to data node 1");
  Packet bad_location = meta_update(Op::kMetaPut, key, {{1, 50}, 11});
  bad_location.value = "12345";
  refused(bad_location, "not a location");
  check_location(udp, key, newer);

  const std::string json = exit_line(*node);
  INFO(json);
  CHECK(json_number(json, "meta_put") == 8);
  CHECK(json_number(json, "applied") == 1);
  CHECK(json_number(json, "ignored_older") == 2);
  CHECK(json_number(json, "bad_request") == 5);
  CHECK(json_number(json, "clears_sent") == 0);
}

TEST_CASE("metadata node: META_ASYNC copies applied in deferred batches, their CLEARs batched to the sender",
          "[net][metadata]") {
  FakeDataNode d0(0, 1);
  std::uint16_t port = 0;
  // A long timeout: this test sees only the asynchronous path.
  auto node = start_node({&d0}, {"--batch", "16", "--visibility-timeout-us", "10000000"}, &port);
  Udp udp(port);
  Socket sw;
  const std::vector<std::string> keys = keys_of(0, 1, 40, 500);
  std::map<std::string, StampedLocation> written;
  for (const std::string& k : keys) written[k] = d0.append(k);
  // In reverse key order: the batches sort them.
  std::uint64_t seq = 1000;
  for (auto it = keys.rbegin(); it != keys.rend(); ++it) sw.send_to(port, meta_update(Op::kMetaAsync, *it, written[*it], seq++));

  // A batch's CLEARs share datagrams: the header's (slot, ts), then 6
  // bytes (slot u16, ts u32) per further one in the value.
  std::map<std::uint16_t, std::uint32_t> clears;  // slot -> ts
  int datagrams = 0;
  for (std::size_t pairs = 0; pairs < 40;) {
    std::uint16_t from = 0;
    const std::optional<Packet> c = sw.receive(std::chrono::seconds(10), &from);
    REQUIRE(c);
    ++datagrams;
    CHECK(from == port);
    CHECK(c->op == Op::kClear);
    REQUIRE(c->visibility);
    clears[c->visibility->slot] = c->visibility->ts;
    REQUIRE(c->value.size() % kClearEntryBytes == 0);
    for (std::size_t i = 0; i < c->value.size(); i += kClearEntryBytes) {
      const auto b = [&](std::size_t j) { return static_cast<std::uint32_t>(static_cast<unsigned char>(c->value[i + j])); };
      clears[static_cast<std::uint16_t>(b(0) << 8 | b(1))] = b(2) << 24 | b(3) << 16 | b(4) << 8 | b(5);
    }
    pairs += 1 + c->value.size() / kClearEntryBytes;
    REQUIRE(pairs <= 40);
  }
  // At least one datagram per batch (3 or more of at most 16), fewer than one per write.
  CHECK(datagrams >= 3);
  CHECK(datagrams < 40);
  for (const std::string& k : keys) {
    REQUIRE(clears.count(slot_key(k).slot) == 1);
    CHECK(clears[slot_key(k).slot] == written[k].ts);
    check_location(udp, k, written[k]);
  }
  CHECK_FALSE(sw.receive(std::chrono::milliseconds(100)));  // nothing more

  const std::string json = exit_line(*node);
  INFO(json);
  CHECK(json_number(json, "meta_async") == 40);
  CHECK(json_number(json, "batched_updates") == 40);
  CHECK(json_number(json, "batches") >= 3);  // at most 16 each
  CHECK(json_number(json, "clears_sent") == 40);
  CHECK(json_number(json, "clear_datagrams") == datagrams);
  CHECK(json_number(json, "applied") == 40);
  CHECK(json_number(json, "caught_up") == 0);
  CHECK(json.find("\"switch\":\"127.0.0.1:" + std::to_string(sw.port()) + "\"") != std::string::npos);
}

TEST_CASE("metadata node: --deferred off applies each META_ASYNC at once", "[net][metadata]") {
  FakeDataNode d0(0, 1);
  std::uint16_t port = 0;
  auto node = start_node({&d0}, {"--deferred", "off", "--visibility-timeout-us", "10000000"}, &port);
  Udp udp(port);
  Socket sw;
  const std::vector<std::string> keys = keys_of(0, 1, 5, 900);
  for (const std::string& k : keys) {
    const StampedLocation s = d0.append(k);
    sw.send_to(port, meta_update(Op::kMetaAsync, k, s, 7));
    const std::optional<Packet> c = sw.receive(std::chrono::seconds(10));
    REQUIRE(c);
    check_clear(*c, k, s.ts);
    CHECK(c->seq == 7);
    check_location(udp, k, s);
  }
  // One that fails the checks is dropped: no CLEAR, no reply.
  Packet bad = meta_update(Op::kMetaAsync, keys[0], {{0, 99}, 99});
  bad.visibility->slot ^= 1;
  sw.send_to(port, bad);
  CHECK_FALSE(sw.receive(std::chrono::milliseconds(200)));

  const std::string json = exit_line(*node);
  INFO(json);
  CHECK(json_number(json, "meta_async") == 6);
  CHECK(json_number(json, "bad_async") == 1);
  CHECK(json_number(json, "batches") == 0);
  CHECK(json_number(json, "clears_sent") == 5);
  CHECK(json_number(json, "applied") == 5);
  CHECK(json.find("\"deferred\":false") != std::string::npos);
}

TEST_CASE("metadata node: a held reply bounced by the switch: CLEAR when applied, then resent", "[net][metadata]") {
  FakeDataNode d0(0, 1);
  std::uint16_t port = 0;
  auto node = start_node({&d0}, {"--visibility-timeout-us", "10000000"}, &port);
  Socket sw;
  const std::vector<std::string> keys = keys_of(0, 1, 2, 2000);
  // The slot's write (keys[0]) reached the node as META_ASYNC; its CLEAR
  // "was lost" (the test ignores it).
  const StampedLocation in_slot = d0.append(keys[0]);
  sw.send_to(port, meta_update(Op::kMetaAsync, keys[0], in_slot, 1));
  REQUIRE(sw.receive(std::chrono::seconds(10)));

  // keys[1]'s META_PUT reply, held: the slot holds keys[0]'s write.
  Packet held;
  held.op = Op::kReply;
  held.seq = 4242;
  held.key = keys[1];
  held.value = encode_location(in_slot.location);
  held.visibility = header_of(keys[1], in_slot.ts + 5, VisState::kHeld, in_slot.ts);
  held.visibility->slot = slot_key(keys[0]).slot;  // the slot the switch holds it for
  sw.send_to(port, held);
  const std::optional<Packet> clear = sw.receive(std::chrono::seconds(10));
  REQUIRE(clear);
  check_clear(*clear, keys[0], in_slot.ts);
  const std::optional<Packet> again = sw.receive(std::chrono::seconds(10));
  REQUIRE(again);
  CHECK(again->op == Op::kReply);
  CHECK(again->seq == 4242);
  CHECK(again->key == keys[1]);
  CHECK(again->value.empty());
  REQUIRE(again->visibility);
  CHECK(again->visibility->state == VisState::kNone);
  CHECK(again->visibility->ts == in_slot.ts + 5);
  CHECK(again->visibility->slot == held.visibility->slot);

  // The slot's write not applied here (its copy still on the way): no
  // CLEAR, only the reply resent.
  held.seq = 4343;
  held.value = encode_location({0, 777});
  sw.send_to(port, held);
  const std::optional<Packet> only = sw.receive(std::chrono::seconds(10));
  REQUIRE(only);
  CHECK(only->op == Op::kReply);
  CHECK(only->seq == 4343);
  CHECK_FALSE(sw.receive(std::chrono::milliseconds(200)));

  const std::string json = exit_line(*node);
  INFO(json);
  CHECK(json_number(json, "held_bounces") == 2);
  CHECK(json_number(json, "resent") == 2);
  CHECK(json_number(json, "clears_sent") == 2);  // the META_ASYNC's and the bounce's
}

TEST_CASE("metadata node: a lost META_ASYNC is caught up by the timeout fetch and its slot cleared",
          "[net][metadata]") {
  FakeDataNode d0(0, 2), d1(1, 2);
  const std::vector<std::string> before = keys_of(1, 2, 10, 3000);
  for (const std::string& k : before) d1.append(k);
  Socket sw;
  std::uint16_t port = 0;
  auto node = start_node({&d0, &d1}, {"--switch", "127.0.0.1:" + std::to_string(sw.port()), "--visibility-timeout-us", "2000"},
                         &port);
  Udp udp(port);
  // A write the switch took whose copy the network lost: in the log, never
  // sent to the metadata node.
  const std::string lost = keys_of(1, 2, 1, 4000).front();
  const StampedLocation s = d1.append(lost);
  const std::optional<Packet> clear = sw.receive(std::chrono::seconds(20));
  REQUIRE(clear);
  check_clear(*clear, lost, s.ts);
  check_location(udp, lost, s);
  CHECK_FALSE(sw.receive(std::chrono::milliseconds(100)));

  const std::string json = exit_line(*node);
  INFO(json);
  CHECK(json_number(json, "caught_up") == 1);
  CHECK(json_number(json, "replayed") == 10);
  CHECK(json_number(json, "clears_sent") == 1);
  CHECK(json_number(json, "fetches") >= 2);
  CHECK(json.find("\"applied_through\":11") != std::string::npos);
}

// Several metadata nodes (--shard I/K --keys N) following one log: the
// clearing rule. (slot, ts) names one log entry; only the node owning its
// key, once it applied it, may CLEAR it. The interleaving is forced: node 1
// (owner of k1) is stopped while k1's write lands in the log with its
// META_ASYNC copy lost, and node 0 sees the entry in every catch-up fetch.
// Under the old rule (every node catches up every entry it finds missing a
// timeout) node 0 would apply k1 and CLEAR its slot one timeout later,
// right before the CLEAR of k0 (its own key, the log's next entry, missing
// as long): a switch would then send k1's reads to node 1, which does not
// hold the write. So the check below is that k0's CLEAR comes from node 0
// with none for k1 before it or in the several timeouts after.
TEST_CASE("metadata node: several nodes (--shard I/K): a slot is cleared only by its key's owner, once applied",
          "[net][metadata]") {
  constexpr std::uint64_t kKeys = 1000;  // shard 0/2: dataset keys 0..499, shard 1/2: 500..999
  REQUIRE(shard_of(dataset_key(499), 2, kKeys) == 0);
  REQUIRE(shard_of(dataset_key(500), 2, kKeys) == 1);
  FakeDataNode d0(0, 1);
  for (std::uint64_t i = 0; i < 10; ++i) {
    d0.append(dataset_key(10 + i));
    d0.append(dataset_key(510 + i));
  }
  Socket sw;
  const std::string to_switch = "127.0.0.1:" + std::to_string(sw.port());
  std::uint16_t p0 = 0, p1 = 0;
  auto n0 = start_node({&d0}, {"--shard", "0/2", "--keys", "1000", "--switch", to_switch, "--visibility-timeout-us", "2000"},
                       &p0);
  auto n1 = start_node({&d0}, {"--shard", "1/2", "--keys", "1000", "--switch", to_switch, "--visibility-timeout-us", "2000"},
                       &p1);
  Udp u0(p0), u1(p1);
  // Start-up: each applied its 10 keys and passed over the other 10.
  for (Udp* u : {&u0, &u1}) {
    const std::string stats = forein::testing::server_stats(*u);
    INFO(stats);
    CHECK(json_number(stats, "replayed") == 10);
    CHECK(json_number(stats, "foreign_entries") == 10);
    CHECK(json_number(stats, "keys") == 10);
  }
  // Each answers its own keys only.
  Packet own = request(Op::kMetaGet, dataset_key(10));
  CHECK(u0.call(own).status == Status::kOk);
  const Packet foreign_get = u0.call(request(Op::kMetaGet, dataset_key(510)));
  CHECK(foreign_get.op == Op::kError);
  CHECK(foreign_get.status == Status::kBadRequest);
  CHECK(foreign_get.value.find("not this metadata node's") != std::string::npos);
  CHECK(u1.call(request(Op::kMetaGet, dataset_key(510))).status == Status::kOk);

  n1->stop_all_threads();
  // Two writes the switch took, their copies lost: k1 (node 1's), then k0
  // (node 0's) right after it in the same log.
  const std::string k1 = dataset_key(700), k0 = dataset_key(300);
  REQUIRE(slot_key(k1).slot != slot_key(k0).slot);
  const StampedLocation s1 = d0.append(k1);
  const StampedLocation s0 = d0.append(k0);
  struct Clear {
    std::uint16_t from;
    std::uint16_t slot;
    std::uint32_t ts;
  };
  std::vector<Clear> clears;
  // The switch's socket also gets the nodes' SYNC probes (switch-crash
  // recovery): passed over here.
  const auto receive = [&](std::chrono::milliseconds wait, std::uint16_t* from) {
    const auto until = Clock::now() + wait;
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
      std::optional<Packet> p = sw.receive(std::max(left, std::chrono::milliseconds(1)), from);
      if (!p || p->op != Op::kSync) return p;
    }
  };
  const auto receive_clear = [&](std::chrono::milliseconds wait) {
    std::uint16_t from = 0;
    const std::optional<Packet> c = receive(wait, &from);
    if (!c) return false;
    REQUIRE(c->op == Op::kClear);
    REQUIRE(c->visibility);
    clears.push_back({from, c->visibility->slot, c->visibility->ts});
    return true;
  };
  const auto cleared = [&](std::uint16_t from, const std::string& key, std::uint32_t ts) {
    return std::any_of(clears.begin(), clears.end(), [&](const Clear& c) {
      return (from == 0 || c.from == from) && c.slot == slot_key(key).slot && c.ts == ts;
    });
  };
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  while (!cleared(p0, k0, s0.ts) && Clock::now() < deadline) receive_clear(std::chrono::milliseconds(100));
  REQUIRE(cleared(p0, k0, s0.ts));
  CHECK_FALSE(cleared(0, k1, s1.ts));
  // Several timeouts more: node 0's cursor is past k1's entry and it keeps
  // fetching; still no CLEAR of k1's slot.
  std::string stats0 = forein::testing::server_stats(u0);
  CHECK(json_number(stats0, "applied_through") == static_cast<long long>(s0.location.log_id));
  const long long fetches = json_number(stats0, "fetches");
  CHECK(forein::testing::eventually([&] {
    while (receive_clear(std::chrono::milliseconds(1))) {
    }
    return json_number(forein::testing::server_stats(u0), "fetches") >= fetches + 5;
  }));
  while (receive_clear(std::chrono::milliseconds(50))) {
  }
  CHECK_FALSE(cleared(0, k1, s1.ts));
  stats0 = forein::testing::server_stats(u0);
  INFO(stats0);
  CHECK(json_number(stats0, "caught_up") == 1);         // k0 only
  CHECK(json_number(stats0, "foreign_entries") == 11);  // and k1 passed over
  CHECK(json_number(stats0, "clears_sent") == 1);

  // Node 0 given k1's copy (a misrouted META_ASYNC) refuses it, and a held
  // reply naming k1's entry (which its cursor has passed) is only resent:
  // the first datagram back is the resent reply, no CLEAR before it.
  sw.send_to(p0, meta_update(Op::kMetaAsync, k1, s1, 31));
  Packet held;
  held.op = Op::kReply;
  held.seq = 4545;
  held.key = dataset_key(301);
  held.value = encode_location(s1.location);
  held.visibility = header_of(dataset_key(301), s1.ts + 5, VisState::kHeld, s1.ts);
  held.visibility->slot = slot_key(k1).slot;
  sw.send_to(p0, held);
  std::uint16_t from = 0;
  const std::optional<Packet> back = receive(std::chrono::seconds(10), &from);
  REQUIRE(back);
  CHECK(from == p0);
  CHECK(back->op == Op::kReply);
  CHECK(back->seq == 4545);

  // Node 1 resumes: its catch-up applies k1 and then clears the slot; by
  // the time the CLEAR is here, node 1 answers k1's new location.
  n1->signal(SIGCONT);
  const auto deadline1 = Clock::now() + std::chrono::seconds(20);
  while (!cleared(p1, k1, s1.ts) && Clock::now() < deadline1) receive_clear(std::chrono::milliseconds(100));
  REQUIRE(cleared(p1, k1, s1.ts));
  check_location(u1, k1, s1);
  CHECK_FALSE(cleared(p0, k1, s1.ts));

  const std::string json0 = exit_line(*n0);
  const std::string json1 = exit_line(*n1);
  INFO(json0 << "\n" << json1);
  CHECK(json_number(json0, "not_owned") == 2);  // the META_GET and the META_ASYNC
  CHECK(json_number(json0, "bad_async") == 1);
  CHECK(json_number(json0, "held_bounces") == 1);
  CHECK(json_number(json0, "clears_sent") == 1);
  CHECK(json_number(json1, "caught_up") == 1);
  CHECK(json_number(json1, "foreign_entries") == 11);  // k0 passed over
  CHECK(json_number(json1, "clears_sent") == 1);
  CHECK(json_number(json1, "not_owned") == 0);
}

TEST_CASE("metadata node: a data node that never answers: exit 1 with a message", "[net][metadata]") {
  FakeDataNode silent(0, 1, /*answer=*/false);
  ChildProcess child(FOREIN_KV_SERVER_BIN,
                     {"--mode", "metadata", "--listen", "127.0.0.1:0", "--data-nodes", silent.address(), "--backend",
                      "none"},
                     /*capture_stderr=*/true);
  const std::string err = child.read_stderr(std::chrono::seconds(30));
  CHECK(child.wait_exit() == 1);
  CHECK(err.find("did not answer LOG_FETCH") != std::string::npos);
  CHECK(err.find(silent.address()) != std::string::npos);
  CHECK(child.read_all(std::chrono::seconds(5)).find("ready") == std::string::npos);
  CHECK(silent.fetches() >= 2);  // retried
}

TEST_CASE("metadata node: bad flags exit 2", "[net][metadata]") {
  const auto rejected = [](std::vector<std::string> args, const std::string& what) {
    ChildProcess child(FOREIN_KV_SERVER_BIN, std::move(args), /*capture_stderr=*/true);
    const std::string err = child.read_stderr(std::chrono::seconds(30));
    INFO(err);
    CHECK(child.wait_exit() == 2);
    CHECK(err.find(what) != std::string::npos);
  };
  const std::vector<std::string> base = {"--mode", "metadata", "--listen", "127.0.0.1:0"};
  const auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  rejected(base, "needs --data-nodes");
  rejected(with({"--data-nodes", "127.0.0.1:9", "--threads", "2"}), "--threads must be 1 in metadata mode");
  rejected(with({"--data-nodes", "127.0.0.1:9", "--batch", "0"}), "--batch");
  rejected(with({"--data-nodes", "127.0.0.1:9", "--batch", "x"}), "--batch");
  rejected(with({"--data-nodes", "127.0.0.1:9", "--deferred", "maybe"}), "--deferred");
  rejected(with({"--data-nodes", "127.0.0.1:9", "--visibility-timeout-us", "5"}), "--visibility-timeout-us");
  rejected(with({"--data-nodes", "127.0.0.1"}), "--data-nodes");
  rejected(with({"--data-nodes", "127.0.0.1:9", "--keys", "10"}), "the key space --shard I/K splits");
  rejected(with({"--data-nodes", "127.0.0.1:9", "--shard", "0/2"}), "needs --keys N > 0");
  rejected(with({"--data-nodes", "127.0.0.1:9", "--shard", "0/2", "--keys", "0"}), "needs --keys N > 0");
  rejected(with({"--data-nodes", "127.0.0.1:9", "--data", "/dev/null"}), "--data is not used in metadata mode");
  rejected({"--mode", "meta", "--listen", "127.0.0.1:0"}, "--mode");
  rejected({"--listen", "127.0.0.1:0", "--keys", "10", "--batch", "4"}, "metadata-mode flag");
}

TEST_CASE("DeferredBatch: sorted by key, combined, every update reported", "[net][metadata]") {
  auto tree = forein::Tree::create(std::make_unique<forein::MemoryPageStore>());
  kv::MetadataIndex index(*tree);
  kv::DeferredBatch batch(8);
  const auto update = [](const std::string& key, std::uint32_t id, std::uint32_t ts) {
    kv::MetaUpdate u;
    u.key = key;
    u.stamped = {{0, id}, ts};
    return u;
  };
  // "b" twice (newest first in arrival order), "a", "c" whose stored ts is newer.
  index.apply("c", {{0, 50}, 50});
  batch.push(update("b", 3, 3));
  batch.push(update("c", 4, 4));
  batch.push(update("a", 1, 1));
  batch.push(update("b", 2, 2));
  CHECK(batch.size() == 4);
  CHECK_FALSE(batch.full());
  std::vector<std::pair<std::string, std::uint32_t>> order;
  const kv::BatchOutcome out = batch.apply(index, [&](const kv::MetaUpdate& u) { order.emplace_back(u.key, u.stamped.ts); });
  CHECK(batch.empty());
  const std::vector<std::pair<std::string, std::uint32_t>> want = {{"a", 1}, {"b", 2}, {"b", 3}, {"c", 4}};
  CHECK(order == want);
  CHECK(out.applied == 2);        // a, b@3
  CHECK(out.combined == 1);       // b@2
  CHECK(out.ignored_older == 1);  // c@4 < stored 50
  CHECK(index.lookup("b")->location.log_id == 3);
  CHECK(index.lookup("c")->ts == 50);
  for (int i = 0; i < 8; ++i) batch.push(update("k" + std::to_string(i), 10 + static_cast<std::uint32_t>(i), 1));
  CHECK(batch.full());
}

TEST_CASE("AppliedLog and decode_log_fetch", "[net][metadata]") {
  kv::AppliedLog log;
  log.mark(2);
  log.mark(4);
  CHECK(log.through() == 0);
  CHECK(log.contains(2));
  CHECK_FALSE(log.contains(1));
  log.mark(1);
  CHECK(log.through() == 2);
  log.mark(3);
  CHECK(log.through() == 4);
  CHECK(log.above() == 0);
  log.mark(3);
  CHECK(log.through() == 4);

  const std::string k0 = keys_of(0, 2, 1).front(), k1 = keys_of(1, 2, 1).front();
  Packet reply;
  reply.op = Op::kReply;
  const std::vector<ScanEntry> good = {{k0, encode_stamped({{0, 5}, 1})}, {k0, encode_stamped({{0, 6}, 2})}};
  reply.value = encode_scan_entries(good);
  reply.count = 2;
  std::string error;
  const auto entries = kv::decode_log_fetch(reply, 0, 2, 5, &error);
  REQUIRE(entries);
  CHECK(entries->size() == 2);
  CHECK(entries->back().stamped.location.log_id == 6);
  CHECK_FALSE(kv::decode_log_fetch(reply, 0, 2, 6, &error));  // below the id asked for
  CHECK_FALSE(kv::decode_log_fetch(reply, 1, 2, 1, &error));  // another node's entries
  CHECK(error.find("--data-nodes") != std::string::npos);
  // A reply to a fetch with a key range names how far it passed others
  // over: required, and not below the id asked for less one.
  std::uint32_t scanned = 0;
  CHECK_FALSE(kv::decode_log_fetch(reply, 0, 2, 5, &error, kv::LogFormat::kLocation, &scanned));
  CHECK(error.find("key range") != std::string::npos);
  reply.key = be32(9);
  REQUIRE(kv::decode_log_fetch(reply, 0, 2, 5, &error, kv::LogFormat::kLocation, &scanned));
  CHECK(scanned == 9);
  reply.key = be32(4);  // nothing passed over past the first id: allowed
  REQUIRE(kv::decode_log_fetch(reply, 0, 2, 5, &error, kv::LogFormat::kLocation, &scanned));
  CHECK(scanned == 4);
  reply.key = be32(4 + kMaxLogFetchScan);  // the most a data node examines
  REQUIRE(kv::decode_log_fetch(reply, 0, 2, 5, &error, kv::LogFormat::kLocation, &scanned));
  CHECK(scanned == 4 + kMaxLogFetchScan);
  reply.key = be32(5 + kMaxLogFetchScan);  // further: garbage, the cursor must not jump over it
  CHECK_FALSE(kv::decode_log_fetch(reply, 0, 2, 5, &error, kv::LogFormat::kLocation, &scanned));
  reply.key = be32(0xFFFFFFFFu);
  CHECK_FALSE(kv::decode_log_fetch(reply, 0, 2, 5, &error, kv::LogFormat::kLocation, &scanned));
  reply.key = be32(3);
  CHECK_FALSE(kv::decode_log_fetch(reply, 0, 2, 5, &error, kv::LogFormat::kLocation, &scanned));
  reply.key = "abc";
  CHECK_FALSE(kv::decode_log_fetch(reply, 0, 2, 5, &error, kv::LogFormat::kLocation, &scanned));
  reply.key.clear();
  const std::vector<ScanEntry> foreign = {{k1, encode_stamped({{0, 5}, 1})}};
  reply.value = encode_scan_entries(foreign);
  reply.count = 1;
  CHECK_FALSE(kv::decode_log_fetch(reply, 0, 2, 1, &error));  // key of node 1 in node 0's log
  reply.count = 2;
  CHECK_FALSE(kv::decode_log_fetch(reply, 0, 2, 1, &error));  // count disagrees
  reply.op = Op::kError;
  CHECK_FALSE(kv::decode_log_fetch(reply, 0, 2, 1, &error));
}

TEST_CASE("Tree::prefetch changes and counts nothing, also beside writers", "[net][metadata]") {
  auto tree = forein::Tree::create(std::make_unique<forein::MemoryPageStore>());
  tree->prefetch("anything");  // a single leaf
  std::vector<std::pair<std::string, std::string>> rows;
  for (std::uint64_t i = 0; i < 800'000; i += 2) rows.emplace_back(dataset_key(i), "v");  // three levels
  tree->bulk_load(rows);
  REQUIRE(tree->height() >= 3);
  const forein::TreeStats before = tree->stats();
  for (std::uint64_t i = 0; i < 1000; ++i) tree->prefetch(dataset_key(i * 199));
  tree->prefetch("");
  tree->prefetch(std::string(300, '\xff'));
  CHECK(tree->stats().operations == before.operations);
  CHECK(tree->stats().nodes_visited == before.nodes_visited);
  CHECK(tree->size() == rows.size());

  // Splits and merges under a prefetching thread: it gives up quietly.
  std::atomic<bool> stop{false};
  std::thread prefetcher([&] {
    std::mt19937_64 rng(1);
    while (!stop.load()) tree->prefetch(dataset_key(rng() % 1'600'000));
  });
  std::mt19937_64 rng(2);
  for (int i = 0; i < 100'000; ++i) {
    const std::string k = dataset_key(rng() % 1'600'000);
    if (i % 3 == 0) {
      tree->erase(k);
    } else {
      tree->put(k, "w");
    }
  }
  stop = true;
  prefetcher.join();
  tree->check();
}

// Switch-crash recovery (section III-E): the node probes --switch with
// SYNC (ts 0, aux = the epoch it last synced for); a switch answering with
// a new epoch (a restarted one, whose table is empty) gets the sync step:
// every data node's log applied from the cursor to its end at once. The
// write here committed through the old switch (kStored) and its META_ASYNC
// copy was lost with it; the catch-up cannot rescue it (a 60 s visibility
// timeout), so before the sync step the node does not know the key (the
// stale read a naive restart serves), after it the node answers it.
TEST_CASE("metadata node: a new switch epoch triggers the sync step: a write whose copy was lost is applied at once",
          "[net][metadata]") {
  FakeDataNode d0(0, 1);
  for (const std::string& k : keys_of(0, 1, 5)) d0.append(k);
  Socket sw;
  sw.keep_sync(true);
  std::uint16_t port = 0;
  auto node = start_node({&d0}, {"--switch", "127.0.0.1:" + std::to_string(sw.port()), "--visibility-timeout-us",
                                 "60000000"},
                         &port);
  Udp udp(port);
  const auto next_sync = [&](std::uint16_t* from) {
    for (;;) {
      const std::optional<Packet> p = sw.receive(std::chrono::seconds(10), from);
      REQUIRE(p);
      if (p->op == Op::kSync) return *p;
    }
  };
  std::uint16_t from = 0;
  const Packet probe = next_sync(&from);
  REQUIRE(probe.visibility);
  CHECK(probe.visibility->ts == 0);
  CHECK(probe.visibility->aux == 0);  // never synced
  CHECK(from == port);

  const std::string lost = keys_of(0, 1, 1, 4000).front();
  const StampedLocation s = d0.append(lost);
  Packet g = request(Op::kMetaGet, lost);
  g.visibility = header_of(lost);
  CHECK(udp.call(g).status == Status::kNotFound);  // hazard 1: invisible without the sync step

  constexpr std::uint32_t kEpoch = 0x5EED0001;
  Packet answer = probe;
  answer.visibility->ts = 1;
  answer.visibility->aux = kEpoch;
  sw.send_to(port, answer);
  // The sync step's CLEAR of the entry's slot, then a probe naming the epoch.
  bool cleared = false;
  for (;;) {
    const std::optional<Packet> p = sw.receive(std::chrono::seconds(10));
    REQUIRE(p);
    if (p->op == Op::kClear) {
      check_clear(*p, lost, s.ts);
      cleared = true;
      continue;
    }
    REQUIRE(p->op == Op::kSync);
    REQUIRE(p->visibility);
    if (p->visibility->aux == kEpoch) break;
  }
  CHECK(cleared);
  check_location(udp, lost, s);
  // The same epoch again: nothing more to do.
  sw.send_to(port, answer);
  const Packet after = next_sync(nullptr);
  CHECK(after.visibility->aux == kEpoch);

  const std::string json = exit_line(*node);
  INFO(json);
  CHECK(json_number(json, "syncs") == 1);
  CHECK(json_number(json, "sync_applied") == 1);
  CHECK(json_number(json, "caught_up") == 0);
  CHECK(json_number(json, "switch_epoch") == kEpoch);
  CHECK(json_number(json, "sync_failed") == 0);
}

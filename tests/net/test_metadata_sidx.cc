// forein-kv-server --mode metadata --secondary-index (the secondary-index
// case study, paper 002 VI-B, with the partial writes of III-C;
// net/kv_server/secondary_index.h, net/protocol/secondary_index.h). The
// index directly (the apply rule, reads newest first, count and more,
// the stale composite key left for later), decode_log_fetch's secondary-
// index entries, and the real program as a child process on loopback
// with the test playing the data node (LOG_FETCH answered from a log the
// test writes, entries StampedLocation + secondary key) and the switch
// (META_ASYNC copies, held replies, attached partial entries; CLEARs in).
// Synchronization is by datagrams with deadlines.
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
#include <string>
#include <thread>
#include <vector>

#include "child_process.h"
#include "forein/tree.h"
#include "kv_server/log_catchup.h"
#include "kv_server/secondary_index.h"
#include "loopback_socket.h"
#include "protocol/dataset.h"
#include "protocol/packet.h"
#include "protocol/secondary_index.h"
#include "protocol/visibility.h"
#include "udp_client.h"

namespace {

using namespace forein::net;
using Clock = std::chrono::steady_clock;
using forein::testing::ChildProcess;
using forein::testing::json_number;
using forein::testing::request;
using Udp = forein::testing::UdpClient;

std::uint32_t load_be32(std::string_view s) {
  std::uint32_t v = 0;
  for (char c : s) v = (v << 8) | static_cast<unsigned char>(c);
  return v;
}

using Socket = forein::testing::LoopbackSocket;

// A --secondary-index data node's log over LOG_FETCH: entries key =
// primary key, value = StampedLocation + secondary key; one timestamp
// counter for every write. raw() appends an entry of another format.
class FakeSidxDataNode {
 public:
  FakeSidxDataNode() : thread_([this] { serve(); }) {}
  ~FakeSidxDataNode() {
    stop_ = true;
    thread_.join();
  }

  std::string address() const { return "127.0.0.1:" + std::to_string(socket_.port()); }

  // The write's timestamp.
  std::uint32_t append(const std::string& primary, const std::string& secondary) {
    std::lock_guard<std::mutex> lock(mu_);
    const StampedLocation s{{0, static_cast<std::uint32_t>(log_.size() + 1)}, ++ts_};
    log_.push_back({primary, encode_stamped(s) + secondary});
    return s.ts;
  }
  // An entry whose value is `value` (another format); it takes a log id.
  void raw(const std::string& key, const std::string& value) {
    std::lock_guard<std::mutex> lock(mu_);
    log_.push_back({key, value});
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
          req.op != Op::kLogFetch || req.value.size() != 4) {
        continue;
      }
      Packet reply;
      reply.op = Op::kReply;
      reply.seq = req.seq;
      {
        std::lock_guard<std::mutex> lock(mu_);
        const std::uint32_t first = std::max<std::uint32_t>(load_be32(req.value), 1);
        const std::uint32_t want = std::min<std::uint32_t>(req.count == 0 ? 64 : req.count, 256);
        std::vector<ScanEntry> entries;
        for (std::size_t id = first; id <= log_.size() && entries.size() < want; ++id) entries.push_back(log_[id - 1]);
        reply.more = first + entries.size() <= log_.size();
        reply.count = static_cast<std::uint32_t>(entries.size());
        reply.value = encode_scan_entries(entries);
      }
      const std::vector<std::byte> wire = encode_packet(reply);
      (void)::sendto(socket_.fd(), wire.data(), wire.size(), 0, reinterpret_cast<sockaddr*>(&from), len);
    }
  }

  Socket socket_;
  std::mutex mu_;
  std::vector<ScanEntry> log_;
  std::uint32_t ts_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;  // last: starts once the rest is built
};

VisibilityHeader header_of(const std::string& slot_key_of, std::uint32_t ts = 0, VisState state = VisState::kNone,
                           std::uint32_t aux = 0) {
  const SlotKey sk = slot_key(slot_key_of);
  VisibilityHeader v;
  v.slot = sk.slot;
  v.fingerprint = sk.fingerprint;
  v.ts = ts;
  v.state = state;
  v.aux = aux;
  return v;
}

// META_PUT / META_ASYNC of the write (primary, secondary, ts): the
// secondary key's slot.
Packet sidx_update(Op op, const std::string& primary, const std::string& secondary, std::uint32_t ts,
                   std::uint64_t seq = 0) {
  Packet p = request(op, primary, encode_sidx_entry(primary, secondary));
  p.seq = seq;
  p.visibility = header_of(secondary, ts);
  return p;
}

Packet sidx_read_request(const std::string& secondary, std::uint32_t count) {
  Packet p = request(Op::kSidxRead, secondary, "", count);
  p.visibility = header_of(secondary);
  return p;
}

// The reply's (primary, ts) entries, checked well formed.
std::vector<std::pair<std::string, std::uint32_t>> members_of(const Packet& r) {
  REQUIRE(r.op == Op::kReply);
  REQUIRE(r.status == Status::kOk);
  const std::optional<std::vector<ScanEntry>> entries = decode_scan_entries(r.value);
  REQUIRE(entries);
  REQUIRE(entries->size() == r.count);
  std::vector<std::pair<std::string, std::uint32_t>> out;
  for (const ScanEntry& e : *entries) {
    const std::optional<std::uint32_t> ts = decode_sidx_ts(e.value);
    REQUIRE(ts);
    out.emplace_back(e.key, *ts);
  }
  return out;
}

std::vector<std::pair<std::string, std::uint32_t>> sidx_read(Udp& udp, const std::string& secondary,
                                                             std::uint32_t count = 10, bool* more = nullptr) {
  const Packet r = udp.call(sidx_read_request(secondary, count));
  INFO(r.value);
  REQUIRE(r.visibility);
  CHECK(r.visibility->slot == slot_key(secondary).slot);
  CHECK(r.visibility->fingerprint == slot_key(secondary).fingerprint);
  CHECK(r.visibility->state == VisState::kNone);
  CHECK(r.key == secondary);
  if (more != nullptr) *more = r.more;
  return members_of(r);
}

std::unique_ptr<ChildProcess> start_node(const FakeSidxDataNode& data, std::vector<std::string> extra,
                                         std::uint16_t* port) {
  std::vector<std::string> args = {"--mode", "metadata", "--listen", "127.0.0.1:0", "--data-nodes", data.address(),
                                   "--backend", "none", "--secondary-index"};
  args.insert(args.end(), extra.begin(), extra.end());
  auto child = std::make_unique<ChildProcess>(FOREIN_KV_SERVER_BIN, args, /*capture_stderr=*/true);
  *port = static_cast<std::uint16_t>(forein::testing::ready_port(*child, std::chrono::seconds(30)));
  REQUIRE(*port != 0);
  return child;
}

// A CLEAR of the secondary key's slot with timestamp ts.
void check_clear(const Packet& c, const std::string& secondary, std::uint32_t ts, std::uint32_t fingerprint) {
  CHECK(c.op == Op::kClear);
  REQUIRE(c.visibility);
  CHECK(c.visibility->slot == slot_key(secondary).slot);
  CHECK(c.visibility->fingerprint == fingerprint);
  CHECK(c.visibility->ts == ts);
  CHECK(c.value.empty());
}

using Members = std::vector<std::pair<std::string, std::uint32_t>>;

}  // namespace

TEST_CASE("SecondaryIndex: the apply rule, newest first, count and more, the stale composite key",
          "[net][metadata][sidx]") {
  auto tree = forein::Tree::create(std::make_unique<forein::MemoryPageStore>());
  kv::SecondaryIndex index(*tree);
  bool more = true;
  CHECK(index.read("s1", 10, &more).empty());
  CHECK_FALSE(more);

  CHECK(index.apply("p1", "s1", 5) == kv::ApplyResult::kApplied);
  CHECK(index.apply("p2", "s1", 7) == kv::ApplyResult::kApplied);
  CHECK(index.apply("p3", "s1", 6) == kv::ApplyResult::kApplied);
  // A secondary key that extends another, and one of another length
  // sharing the prefix: never in s1's range.
  CHECK(index.apply("p4", "s10", 8) == kv::ApplyResult::kApplied);
  CHECK(index.apply("p5", "s", 9) == kv::ApplyResult::kApplied);
  std::vector<kv::SecondaryIndex::Member> got = index.read("s1", 10, &more);
  REQUIRE(got.size() == 3);
  CHECK_FALSE(more);
  CHECK(got[0].primary == "p2");  // newest first
  CHECK(got[0].ts == 7);
  CHECK(got[1].primary == "p3");
  CHECK(got[2].primary == "p1");
  got = index.read("s1", 2, &more);
  CHECK(got.size() == 2);
  CHECK(more);
  got = index.read("s1", 3, &more);
  CHECK(got.size() == 3);
  CHECK_FALSE(more);
  CHECK(index.read("s10", 10, &more).size() == 1);
  CHECK(index.read("s", 10, &more).size() == 1);

  // Older and equal timestamps: no-ops (the reverse map says ts 5).
  CHECK(index.apply("p1", "s2", 4) == kv::ApplyResult::kIgnoredOlder);
  CHECK(index.apply("p1", "s2", 5) == kv::ApplyResult::kIgnoredOlder);
  CHECK(index.read("s2", 10, &more).empty());
  // Newer: p1 moves to s2, its s1 composite key deleted at once.
  CHECK(index.apply("p1", "s2", 10) == kv::ApplyResult::kApplied);
  CHECK(index.read("s2", 10, &more).size() == 1);
  CHECK(index.read("s1", 10, &more).size() == 2);
  REQUIRE(index.lookup("p1"));
  CHECK(index.lookup("p1")->secondary == "s2");
  CHECK(index.lookup("p1")->ts == 10);
  CHECK_FALSE(index.lookup("p9"));
  CHECK(index.stale_deleted() == 1);
  CHECK(index.composites() == 5);
  CHECK(index.primaries() == 5);

  // The phase-2 form: the stale key handed out, still in the tree until
  // erase_stale. Moving within one secondary key lists it twice until then.
  std::string stale;
  CHECK(index.apply("p2", "s1", 11, &stale) == kv::ApplyResult::kApplied);
  CHECK(stale == kv::SecondaryIndex::composite_key("s1", 7, "p2"));
  got = index.read("s1", 10, &more);
  CHECK(got.size() == 3);
  CHECK(index.composites() == 6);
  index.erase_stale(stale);
  got = index.read("s1", 10, &more);
  REQUIRE(got.size() == 2);
  CHECK(got[0].primary == "p2");
  CHECK(got[0].ts == 11);
  CHECK(index.stale_deleted() == 2);
  CHECK(index.composites() == 5);
  index.erase_stale(stale);  // twice: nothing
  CHECK(index.stale_deleted() == 2);
  CHECK(tree->size() == 10);  // 5 composite keys + 5 reverse entries

  CHECK(index.too_long("p", "s").empty());
  CHECK_FALSE(index.too_long("p", std::string(tree->max_key_size(), 'x')).empty());
}

TEST_CASE("decode_log_fetch: secondary-index entries; other formats marked, not errors", "[net][metadata][sidx]") {
  Packet reply;
  reply.op = Op::kReply;
  const std::vector<ScanEntry> entries = {
      {"p1", encode_stamped({{0, 3}, 9}) + "sec"},
      {"p2", encode_stamped({{0, 4}, 10})},  // a KV-format entry: no secondary key
      {"p3", "xyz"},                          // not even a location
      {"p4", encode_stamped({{0, 6}, 12}) + "s"},
  };
  reply.value = encode_scan_entries(entries);
  reply.count = 4;
  std::string error;
  const auto got = kv::decode_log_fetch(reply, 0, 1, 1, &error, kv::LogFormat::kSecondaryIndex);
  INFO(error);
  REQUIRE(got);
  REQUIRE(got->size() == 4);
  CHECK((*got)[0].secondary == "sec");
  CHECK((*got)[0].stamped.ts == 9);
  CHECK_FALSE((*got)[0].other_format);
  CHECK((*got)[1].other_format);
  CHECK((*got)[1].stamped.location.log_id == 4);
  CHECK((*got)[2].other_format);
  CHECK((*got)[2].stamped.location.log_id == 0);
  CHECK((*got)[3].secondary == "s");
  // The same reply in the KV format is not the log.
  CHECK_FALSE(kv::decode_log_fetch(reply, 0, 1, 1, &error));
  // Out of order ids are still an error.
  CHECK_FALSE(kv::decode_log_fetch(reply, 0, 1, 5, &error, kv::LogFormat::kSecondaryIndex));
}

TEST_CASE("metadata --secondary-index: start-up replay, SIDX_READ newest first with count and more, errors",
          "[net][metadata][sidx]") {
  FakeSidxDataNode data;
  const std::string s1 = dataset_key(1), s2 = dataset_key(2);
  // Over two LOG_FETCH pages: 300 writes, primary keys moving between s1 and s2.
  std::map<std::string, std::pair<std::string, std::uint32_t>> newest;  // primary -> (secondary, ts)
  for (int i = 0; i < 300; ++i) {
    const std::string p = dataset_key(1000 + static_cast<std::uint64_t>(i % 40));
    const std::string& s = (i % 3 == 0) ? s1 : s2;
    newest[p] = {s, data.append(p, s)};
  }
  data.raw(dataset_key(5000), encode_stamped({{0, 301}, 999}));  // another format: skipped
  const std::string p_last = dataset_key(2000);
  newest[p_last] = {s1, data.append(p_last, s1)};
  std::uint16_t port = 0;
  auto node = start_node(data, {"--visibility-timeout-us", "10000000"}, &port);
  Udp udp(port);

  Members want1, want2;
  for (const auto& [p, st] : newest) (st.first == s1 ? want1 : want2).emplace_back(p, st.second);
  const auto newest_first = [](Members m) {
    std::sort(m.begin(), m.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    return m;
  };
  want1 = newest_first(want1);
  want2 = newest_first(want2);
  REQUIRE(want1.size() >= 3);
  bool more = true;
  CHECK(sidx_read(udp, s1, kMaxSidxReadCount, &more) == want1);
  CHECK_FALSE(more);
  CHECK(sidx_read(udp, s2, kMaxSidxReadCount, &more) == want2);
  CHECK_FALSE(more);
  const Members first2 = sidx_read(udp, s1, 2, &more);
  CHECK(more);
  CHECK(first2 == Members(want1.begin(), want1.begin() + 2));
  CHECK(first2.front().first == p_last);
  CHECK(sidx_read(udp, s1, static_cast<std::uint32_t>(want1.size()), &more).size() == want1.size());
  CHECK_FALSE(more);
  CHECK(sidx_read(udp, dataset_key(3), 10, &more).empty());  // no primary keys
  CHECK_FALSE(more);

  // Refused with a reason: ERROR bad_request.
  const auto refused = [&](const Packet& p, const std::string& what) {
    const Packet r = udp.call(p);
    INFO(r.value);
    CHECK(r.op == Op::kError);
    CHECK(r.status == Status::kBadRequest);
    CHECK(r.value.find(what) != std::string::npos);
  };
  refused(sidx_read_request(s1, 0), "count 0");
  refused(sidx_read_request(s1, kMaxSidxReadCount + 1), "count 257");
  refused(request(Op::kSidxRead, "", "", 1), "secondary key");
  Packet get = request(Op::kMetaGet, dataset_key(1000));
  refused(get, "META_GET is not served with --secondary-index");
  Packet bad_entry = sidx_update(Op::kMetaPut, dataset_key(1000), s1, 500);
  bad_entry.value = encode_location({0, 5});
  refused(bad_entry, "not a SidxEntry");
  Packet other_primary = sidx_update(Op::kMetaPut, dataset_key(1000), s1, 500);
  other_primary.value = encode_sidx_entry(dataset_key(1001), s1);
  refused(other_primary, "not the packet's key");
  Packet primary_slot = sidx_update(Op::kMetaPut, dataset_key(1000), s1, 500);
  primary_slot.visibility = header_of(dataset_key(1000), 500);  // the primary key's slot: wrong
  refused(primary_slot, "not the secondary key's");
  refused(sidx_update(Op::kMetaPut, dataset_key(1000), s1, 0), "timestamp 0");
  Packet bad_partial = sidx_read_request(s1, 5);
  bad_partial.visibility->state = VisState::kPartial;
  bad_partial.visibility->ts = 7;
  bad_partial.value = "junk";
  refused(bad_partial, "attached partial entry");
  CHECK(sidx_read(udp, s1, kMaxSidxReadCount) == want1);  // nothing changed

  const std::string json = forein::testing::stop_json(*node);
  INFO(json);
  CHECK(json.find("\"secondary_index\":true") != std::string::npos);
  CHECK(json_number(json, "replayed") == 301);
  CHECK(json_number(json, "other_format_entries") == 1);
  CHECK(json_number(json, "primary_keys") == static_cast<long long>(newest.size()));
  CHECK(json_number(json, "composites") == static_cast<long long>(newest.size()));
  CHECK(json_number(json, "sidx_stale_deleted") == 301 - static_cast<long long>(newest.size()));
  CHECK(json_number(json, "sidx_reads") == 10);
  CHECK(json_number(json, "sidx_partial_merged") == 0);
  CHECK(json_number(json, "bad_request") == 9);
  CHECK(json_number(json, "keys") == 2 * static_cast<long long>(newest.size()));
}

TEST_CASE("metadata --secondary-index: META_PUT replies, then the stale composite key goes; META_ASYNC CLEARs "
          "the secondary key's slot",
          "[net][metadata][sidx]") {
  FakeSidxDataNode data;
  std::uint16_t port = 0;
  auto node = start_node(data, {"--batch", "4", "--visibility-timeout-us", "10000000"}, &port);
  Udp udp(port);
  Socket sw;
  const std::string p = dataset_key(7), s1 = dataset_key(70), s2 = dataset_key(71);
  REQUIRE(slot_key(s1).slot != slot_key(p).slot);

  // Phase 2 of two writes of p: s1, then s2. The reply names the
  // secondary key's slot and the write's ts.
  const std::uint32_t t1 = data.append(p, s1);
  Packet r = udp.call(sidx_update(Op::kMetaPut, p, s1, t1));
  REQUIRE(r.op == Op::kReply);
  CHECK(r.status == Status::kOk);
  CHECK(r.key == p);
  CHECK(r.value.empty());
  REQUIRE(r.visibility);
  CHECK(*r.visibility == header_of(s1, t1));
  const std::uint32_t t2 = data.append(p, s2);
  r = udp.call(sidx_update(Op::kMetaPut, p, s2, t2));
  CHECK(r.status == Status::kOk);
  CHECK(sidx_read(udp, s2) == Members{{p, t2}});
  CHECK(sidx_read(udp, s1).empty());  // the stale key is gone (before any read at the latest)
  // Reordered: the older phase 2 again changes nothing.
  CHECK(udp.call(sidx_update(Op::kMetaPut, p, s1, t1)).status == Status::kOk);
  CHECK(sidx_read(udp, s1).empty());
  std::string stats = forein::testing::server_stats(udp);
  CHECK(json_number(stats, "sidx_stale_deleted") == 1);
  CHECK(json_number(stats, "composites") == 1);
  CHECK(json_number(stats, "ignored_older") == 1);

  // META_ASYNC copies (deferred, in batches of 4): each CLEARs the
  // header's slot (the secondary key's) with its ts, to the sender.
  std::vector<std::pair<std::string, std::uint32_t>> writes;  // primary, ts; all in s1
  for (int i = 0; i < 6; ++i) {
    const std::string pk = dataset_key(100 + static_cast<std::uint64_t>(i));
    writes.emplace_back(pk, data.append(pk, s1));
    sw.send_to(port, sidx_update(Op::kMetaAsync, pk, s1, writes.back().second, 50 + static_cast<std::uint64_t>(i)));
  }
  std::map<std::uint32_t, int> cleared;  // ts -> CLEARs
  while (cleared.size() < writes.size()) {
    const std::optional<Packet> c = sw.receive(std::chrono::seconds(10));
    REQUIRE(c);
    REQUIRE(c->op == Op::kClear);
    REQUIRE(c->visibility);
    CHECK(c->visibility->slot == slot_key(s1).slot);
    ++cleared[c->visibility->ts];
    REQUIRE(c->value.size() % kClearEntryBytes == 0);
    for (std::size_t i = 0; i < c->value.size(); i += kClearEntryBytes) {
      CHECK(load_be32(c->value.substr(i, 2)) == slot_key(s1).slot);
      ++cleared[load_be32(c->value.substr(i + 2, 4))];
    }
  }
  for (const auto& [pk, ts] : writes) CHECK(cleared[ts] == 1);
  Members want;
  for (auto it = writes.rbegin(); it != writes.rend(); ++it) want.emplace_back(it->first, it->second);
  CHECK(sidx_read(udp, s1) == want);
  // A malformed copy is dropped (no CLEAR).
  Packet bad = sidx_update(Op::kMetaAsync, p, s1, 999);
  bad.value = "x";
  sw.send_to(port, bad);
  CHECK_FALSE(sw.receive(std::chrono::milliseconds(200)));

  const std::string json = forein::testing::stop_json(*node);
  INFO(json);
  CHECK(json_number(json, "meta_put") == 3);
  CHECK(json_number(json, "meta_async") == 7);
  CHECK(json_number(json, "bad_async") == 1);
  CHECK(json_number(json, "clears_sent") == 6);
  CHECK(json_number(json, "applied") == 8);
  CHECK(json_number(json, "caught_up") == 0);
}

TEST_CASE("metadata --secondary-index: SIDX_READ merges the attached partial entry; held replies", "[net][metadata][sidx]") {
  FakeSidxDataNode data;
  std::uint16_t port = 0;
  auto node = start_node(data, {"--visibility-timeout-us", "10000000"}, &port);
  Udp udp(port);
  Socket sw;
  const std::string s = dataset_key(300), p_old = dataset_key(301), p_new = dataset_key(302);
  const std::uint32_t t_old = data.append(p_old, s);
  CHECK(udp.call(sidx_update(Op::kMetaPut, p_old, s, t_old)).status == Status::kOk);

  // The switch's slot holds p_new's partial entry, its copy not here yet:
  // the read carries it and the answer includes it, newest first.
  const std::uint32_t t_new = data.append(p_new, s);
  Packet read = sidx_read_request(s, 10);
  read.visibility->state = VisState::kPartial;
  read.visibility->ts = t_new;
  read.value = encode_sidx_entry(p_new, s);
  const Packet merged = udp.call(read);
  REQUIRE(merged.visibility);
  CHECK(merged.visibility->slot == slot_key(s).slot);
  CHECK(merged.visibility->state == VisState::kNone);
  const Members want = {{p_new, t_new}, {p_old, t_old}};
  CHECK(members_of(merged) == want);
  CHECK(sidx_read(udp, s) == want);  // later reads without it have it too
  CHECK(members_of(udp.call(read)) == want);  // attached again: already applied
  std::string stats = forein::testing::server_stats(udp);
  CHECK(json_number(stats, "sidx_partial_merged") == 1);

  // The copy then comes: applied already, CLEAR of the secondary key's slot.
  sw.send_to(port, sidx_update(Op::kMetaAsync, p_new, s, t_new, 9));
  const std::optional<Packet> c = sw.receive(std::chrono::seconds(10));
  REQUIRE(c);
  check_clear(*c, s, t_new, slot_key(s).fingerprint);

  // A held META_PUT reply (another write of the slot's secondary key),
  // value = the slot's partial entry, aux = its CurTs: applied here, so a
  // CLEAR (fingerprint 0), then the reply sent back with state none.
  const std::string p_other = dataset_key(303);
  Packet held;
  held.op = Op::kReply;
  held.seq = 4242;
  held.key = p_other;
  held.value = encode_sidx_entry(p_new, s);
  held.visibility = header_of(s, t_new + 5, VisState::kHeld, t_new);
  sw.send_to(port, held);
  const std::optional<Packet> clear = sw.receive(std::chrono::seconds(10));
  REQUIRE(clear);
  check_clear(*clear, s, t_new, 0);
  const std::optional<Packet> again = sw.receive(std::chrono::seconds(10));
  REQUIRE(again);
  CHECK(again->op == Op::kReply);
  CHECK(again->seq == 4242);
  CHECK(again->key == p_other);
  CHECK(again->value.empty());
  REQUIRE(again->visibility);
  CHECK(again->visibility->state == VisState::kNone);
  CHECK(again->visibility->ts == t_new + 5);

  // The slot's entry not applied here (a newer write of a primary key the
  // node has not seen): only the reply, no CLEAR.
  held.seq = 4343;
  held.value = encode_sidx_entry(dataset_key(304), s);
  held.visibility->aux = t_new + 3;
  sw.send_to(port, held);
  const std::optional<Packet> only = sw.receive(std::chrono::seconds(10));
  REQUIRE(only);
  CHECK(only->op == Op::kReply);
  CHECK(only->seq == 4343);
  CHECK_FALSE(sw.receive(std::chrono::milliseconds(200)));

  const std::string json = forein::testing::stop_json(*node);
  INFO(json);
  CHECK(json_number(json, "sidx_partial_merged") == 1);
  CHECK(json_number(json, "sidx_reads") == 3);
  CHECK(json_number(json, "held_bounces") == 2);
  CHECK(json_number(json, "resent") == 2);
  CHECK(json_number(json, "clears_sent") == 2);
  CHECK(json_number(json, "ignored_older") == 2);  // the second attachment, the copy
}

TEST_CASE("metadata --secondary-index: a lost META_ASYNC is caught up and the secondary key's slot cleared",
          "[net][metadata][sidx]") {
  FakeSidxDataNode data;
  Socket sw;
  std::uint16_t port = 0;
  auto node = start_node(data, {"--switch", "127.0.0.1:" + std::to_string(sw.port()), "--visibility-timeout-us", "2000"},
                         &port);
  Udp udp(port);
  const std::string s = dataset_key(400);
  // One write through META_PUT (processed: the catch-up passes it over;
  // sent before its entry is in the log, so no catch-up can meet the
  // entry first), then one whose copy was lost.
  const std::string p1 = dataset_key(401), p2 = dataset_key(402);
  const std::uint32_t t1 = 1;  // the data node's first timestamp
  CHECK(udp.call(sidx_update(Op::kMetaPut, p1, s, t1)).status == Status::kOk);
  REQUIRE(data.append(p1, s) == t1);
  const std::uint32_t t2 = data.append(p2, s);
  const std::optional<Packet> clear = sw.receive(std::chrono::seconds(20));
  REQUIRE(clear);
  check_clear(*clear, s, t2, slot_key(s).fingerprint);
  CHECK(sidx_read(udp, s) == Members{{p2, t2}, {p1, t1}});
  CHECK_FALSE(sw.receive(std::chrono::milliseconds(100)));

  const std::string json = forein::testing::stop_json(*node);
  INFO(json);
  CHECK(json_number(json, "caught_up") == 1);
  CHECK(json_number(json, "clears_sent") == 1);
  CHECK(json.find("\"applied_through\":2") != std::string::npos);
}

TEST_CASE("metadata --secondary-index: SIDX_READ without it; bad flags exit 2", "[net][metadata][sidx]") {
  FakeSidxDataNode data;  // an empty log reads the same in either format
  ChildProcess kv(FOREIN_KV_SERVER_BIN,
                  {"--mode", "metadata", "--listen", "127.0.0.1:0", "--data-nodes", data.address(), "--backend", "none"},
                  /*capture_stderr=*/true);
  const int port = forein::testing::ready_port(kv, std::chrono::seconds(30));
  REQUIRE(port != 0);
  Udp udp(static_cast<std::uint16_t>(port));
  const Packet r = udp.call(sidx_read_request(dataset_key(1), 10));
  INFO(r.value);
  CHECK(r.op == Op::kError);
  CHECK(r.status == Status::kBadRequest);
  CHECK(r.value.find("--secondary-index") != std::string::npos);
  const std::string json = forein::testing::stop_json(kv);
  CHECK(json.find("\"secondary_index\":false") != std::string::npos);
  CHECK(json.find("sidx_reads") == std::string::npos);

  const auto rejected = [](std::vector<std::string> args, const std::string& what) {
    ChildProcess child(FOREIN_KV_SERVER_BIN, std::move(args), /*capture_stderr=*/true);
    const std::string err = child.read_stderr(std::chrono::seconds(30));
    INFO(err);
    CHECK(child.wait_exit() == 2);
    CHECK(err.find(what) != std::string::npos);
  };
  const std::vector<std::string> base = {"--mode", "metadata", "--listen", "127.0.0.1:0", "--secondary-index"};
  const auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  rejected(with({"--data-nodes", "127.0.0.1:9,127.0.0.1:10"}), "exactly one --data-nodes");
  rejected(with({"--data-nodes", "127.0.0.1:9", "--shard", "0/2", "--keys", "10"}), "--shard must be 1/1");
  rejected({"--listen", "127.0.0.1:0", "--keys", "10", "--secondary-index"}, "metadata-mode flag");
}

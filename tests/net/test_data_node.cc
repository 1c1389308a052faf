// forein-data-node (net/data_node, docs/network.md "forein-data-node"):
// the handler directly (timestamps per slot, log ids, ownership and header
// refusals, LOG_READ's outcomes, LOG_FETCH's paging, --keys preload, the
// log's id limit, STATS, serve() on malformed datagrams), then the real
// program as a child process on a free port with real UDP datagrams: bad
// flags exit 2, appends, reads, fetches, garbage, STATS and the exit line
// after SIGTERM.
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "child_process.h"
#include "data_node/handler.h"
#include "data_node_logs.h"
#include "data_node/log.h"
#include "data_node/options.h"
#include "data_node/stats.h"
#include "protocol/dataset.h"
#include "protocol/log_fetch.h"
#include "protocol/packet.h"
#include "protocol/visibility.h"
#include "udp_client.h"

namespace {

using namespace forein::net;
using namespace forein::net::data_node;
using forein::testing::ChildProcess;
using forein::testing::fetch_all;
using forein::testing::json_number;
using Udp = forein::testing::UdpClient;

std::atomic<std::uint64_t> next_seq{100};

// A LOG_APPEND as a client sends it: the key's slot and fingerprint in the
// visibility header.
Packet append_request(const std::string& key, const std::string& record) {
  Packet p;
  p.op = Op::kLogAppend;
  p.seq = ++next_seq;
  p.key = key;
  p.value = record;
  const SlotKey sk = slot_key(key);
  p.visibility = VisibilityHeader{sk.slot, VisState::kNone, sk.fingerprint, 0, 0};
  return p;
}

Packet read_request(const std::string& key, const std::string& location) {
  Packet p;
  p.op = Op::kLogRead;
  p.seq = ++next_seq;
  p.key = key;
  p.value = location;
  p.visibility = VisibilityHeader{slot_key(key).slot, VisState::kNone, 0, 0, 0};
  return p;
}

Packet fetch_request(std::uint32_t first, std::uint32_t count) {
  return forein::testing::log_fetch_request(first, count, ++next_seq);
}

// A handler over its own log and counters.
struct Node {
  DataLog log;
  DataNodeStats stats;
  Handler handler;
  explicit Node(NodeId id = {}, std::uint32_t max_log_id = DataLog::kMaxLogId)
      : log(max_log_id), handler(log, id, stats) {}
  Packet call(const Packet& p) {
    const Packet r = handler.handle(p);
    // Every reply must go on the wire.
    CHECK(encoded_size(r) <= kMaxDatagram);
    return r;
  }
};

void require_error(const Packet& r, Status status, const std::string& message_part) {
  INFO(r.value);
  REQUIRE(r.op == Op::kError);
  REQUIRE(r.status == status);
  CHECK(r.value.find(message_part) != std::string::npos);
}

// The first data set index at or after `from` whose slot `node` owns.
std::uint64_t owned_index(NodeId node, std::uint64_t from = 0) {
  for (std::uint64_t i = from;; ++i) {
    if (node.owns(slot_key(dataset_key(i)).slot)) return i;
  }
}

}  // namespace

TEST_CASE("data node: appends take log ids 1, 2, ... and per-slot timestamps", "[net][data_node]") {
  Node node;
  std::map<std::uint16_t, std::uint32_t> last_ts;
  std::uint32_t log_id = 0;
  for (int round = 0; round < 2; ++round) {
    for (std::uint64_t i = 0; i < 500; ++i) {
      const std::string key = dataset_key(i);
      const std::string record = dataset_record(i, static_cast<std::uint32_t>(round + 1));
      Packet req = append_request(key, record);
      req.visibility->aux = static_cast<std::uint32_t>(i) * 7 + 1;  // the switch's epoch: echoed
      const Packet r = node.call(req);
      INFO(r.value);
      REQUIRE(r.op == Op::kReply);
      REQUIRE(r.status == Status::kOk);
      CHECK(r.seq == req.seq);
      CHECK(r.key == key);
      const auto at = decode_location(r.value);
      REQUIRE(at);
      CHECK(at->node == 0);
      CHECK(at->log_id == ++log_id);
      REQUIRE(r.visibility);
      const SlotKey sk = slot_key(key);
      CHECK(r.visibility->slot == sk.slot);
      CHECK(r.visibility->fingerprint == sk.fingerprint);
      CHECK(r.visibility->state == VisState::kNone);
      CHECK(r.visibility->aux == req.visibility->aux);
      // The slot's counter: the first append gets 1, each next one + 1.
      CHECK(r.visibility->ts != 0);
      CHECK(r.visibility->ts == last_ts[sk.slot] + 1);
      last_ts[sk.slot] = r.visibility->ts;
      CHECK(node.log.slot_ts(sk.slot) == r.visibility->ts);
      const auto e = node.log.entry(at->log_id);
      REQUIRE(e);
      CHECK(e->key == key);
      CHECK(e->record == record);
      CHECK(e->ts == r.visibility->ts);
    }
  }
  CHECK(node.log.entries() == 1000);
  CHECK(node.stats.get(Counter::kAppends) == 1000);
  CHECK(node.log.bytes() == 1000 * (8 + kRecordBytes));
}

TEST_CASE("data node: keys sharing a slot share its counter", "[net][data_node]") {
  // Two data set keys with one slot (2^16 slots: a few hundred keys in).
  std::map<std::uint16_t, std::uint64_t> seen;
  std::uint64_t a = 0, b = 0;
  for (std::uint64_t i = 0;; ++i) {
    const auto [it, fresh] = seen.emplace(slot_key(dataset_key(i)).slot, i);
    if (!fresh) {
      a = it->second;
      b = i;
      break;
    }
  }
  const std::string ka = dataset_key(a), kb = dataset_key(b);
  REQUIRE(ka != kb);
  REQUIRE(slot_key(ka).slot == slot_key(kb).slot);
  REQUIRE(slot_key(ka).fingerprint != slot_key(kb).fingerprint);
  Node node;
  std::vector<std::uint32_t> ts;
  for (const std::string& k : {ka, kb, ka, kb, kb}) {
    const Packet r = node.call(append_request(k, "x"));
    REQUIRE(r.status == Status::kOk);
    REQUIRE(r.visibility);
    ts.push_back(r.visibility->ts);
  }
  CHECK(ts == std::vector<std::uint32_t>{1, 2, 3, 4, 5});
  // Another slot's counter is untouched: its first append gets 1.
  std::uint64_t c = 0;
  while (slot_key(dataset_key(c)).slot == slot_key(ka).slot) ++c;
  const Packet r = node.call(append_request(dataset_key(c), "y"));
  REQUIRE(r.visibility);
  CHECK(r.visibility->ts == 1);
}

TEST_CASE("data node: ownership, header, size and op refusals", "[net][data_node]") {
  const NodeId id{1, 3};
  Node node(id);
  // A key data node 1/3 does not own.
  std::uint64_t foreign = 0;
  while (id.owns(slot_key(dataset_key(foreign)).slot)) ++foreign;
  const std::uint16_t foreign_slot = slot_key(dataset_key(foreign)).slot;
  require_error(node.call(append_request(dataset_key(foreign), "r")), Status::kBadRequest,
                "slot " + std::to_string(foreign_slot) + " not owned by data node 1/3");

  const std::string key = dataset_key(owned_index(id));
  {
    Packet p = append_request(key, "r");
    p.visibility.reset();
    require_error(node.call(p), Status::kBadRequest, "visibility header");
  }
  {
    Packet p = append_request(key, "r");
    p.visibility->fingerprint ^= 1;
    require_error(node.call(p), Status::kBadRequest, "is not the key's");
  }
  {
    Packet p = append_request(key, "r");
    p.visibility->slot = static_cast<std::uint16_t>(p.visibility->slot + 1);
    require_error(node.call(p), Status::kBadRequest, "is not the key's");
  }
  require_error(node.call(append_request(key, std::string(kMaxRecordBytes + 1, 'z'))), Status::kBadRequest,
                "at most 4096");
  CHECK(node.log.entries() == 0);  // nothing refused was appended
  CHECK(node.log.slot_ts(slot_key(key).slot) == 0);
  const Packet ok = node.call(append_request(key, std::string(kMaxRecordBytes, 'z')));
  REQUIRE(ok.status == Status::kOk);
  CHECK(decode_location(ok.value)->node == 1);

  for (const Op op : {Op::kGet, Op::kPut, Op::kDelete, Op::kScan, Op::kMetaGet, Op::kMetaPut, Op::kMetaAsync,
                      Op::kClear, Op::kReply, Op::kError}) {
    Packet p;
    p.op = op;
    p.key = key;
    p.value = "v";
    const Packet r = node.call(p);
    require_error(r, Status::kBadRequest, "not a data-node request");
  }
  CHECK(node.stats.get(Counter::kOther) == 10);
  CHECK(node.stats.get(Counter::kBadRequest) == 15);
  CHECK(node.stats.get(Counter::kAppends) == 1);
}

TEST_CASE("data node: LOG_READ ok, mismatch, not found, bad location", "[net][data_node]") {
  const NodeId id{0, 2};
  Node node(id);
  const std::uint64_t ia = owned_index(id), ib = owned_index(id, ia + 1);
  const std::string ka = dataset_key(ia), kb = dataset_key(ib);
  const Packet wa = node.call(append_request(ka, dataset_record(ia, 1)));
  const Packet wb = node.call(append_request(kb, dataset_record(ib, 1)));
  REQUIRE(wa.status == Status::kOk);
  REQUIRE(wb.status == Status::kOk);

  Packet r = node.call(read_request(ka, wa.value));
  REQUIRE(r.op == Op::kReply);
  REQUIRE(r.status == Status::kOk);
  CHECK(r.key == ka);
  CHECK(r.value == dataset_record(ia, 1));
  CHECK(record_version(r.value, ia) == 1u);
  r = node.call(read_request(kb, wb.value));
  REQUIRE(r.status == Status::kOk);
  CHECK(r.value == dataset_record(ib, 1));

  // Section III-B's validation: the entry holds another key.
  r = node.call(read_request(kb, wa.value));
  REQUIRE(r.op == Op::kReply);
  CHECK(r.status == Status::kMismatch);
  CHECK(r.value.empty());

  // Past the end of the log.
  r = node.call(read_request(ka, encode_location({0, 3})));
  REQUIRE(r.op == Op::kReply);
  CHECK(r.status == Status::kNotFound);
  r = node.call(read_request(ka, encode_location({0, 0xFFFFFFFFu})));
  CHECK(r.status == Status::kNotFound);

  // Not a location, log id 0, another data node's location.
  require_error(node.call(read_request(ka, wa.value.substr(0, 5))), Status::kBadRequest, "6-byte log location");
  require_error(node.call(read_request(ka, wa.value + "x")), Status::kBadRequest, "6-byte log location");
  require_error(node.call(read_request(ka, encode_location({0, 1}).substr(0, 2) + std::string(4, '\0'))),
                Status::kBadRequest, "6-byte log location");
  require_error(node.call(read_request(ka, encode_location({1, 1}))), Status::kBadRequest,
                "location on data node 1, not on data node 0/2");

  CHECK(node.stats.get(Counter::kReads) == 2);
  CHECK(node.stats.get(Counter::kMismatches) == 1);
  CHECK(node.stats.get(Counter::kNotFound) == 2);
  CHECK(node.stats.get(Counter::kBadRequest) == 4);
}

TEST_CASE("data node: LOG_FETCH pages the log in id order", "[net][data_node]") {
  Node node;
  std::vector<std::uint32_t> ts;
  for (std::uint64_t i = 0; i < 300; ++i) {
    // Some keys twice, so one key appears at two log ids.
    const std::uint64_t k = i % 250;
    const Packet r = node.call(append_request(dataset_key(k), dataset_record(k, static_cast<std::uint32_t>(i))));
    REQUIRE(r.status == Status::kOk);
    ts.push_back(r.visibility->ts);
  }
  const auto check_entry = [&](const ScanEntry& e, std::uint32_t log_id) {
    INFO("log id " << log_id);
    CHECK(e.key == dataset_key((log_id - 1) % 250));
    const auto s = decode_stamped(e.value);
    REQUIRE(s);
    CHECK(s->location == LogLocation{0, log_id});
    CHECK(s->ts == ts[log_id - 1]);
  };

  // count 0: 64 entries; more.
  Packet r = node.call(fetch_request(1, 0));
  REQUIRE(r.op == Op::kReply);
  REQUIRE(r.status == Status::kOk);
  CHECK(r.count == kDefaultFetchEntries);
  CHECK(r.more);
  auto entries = decode_scan_entries(r.value);
  REQUIRE(entries);
  for (std::uint32_t j = 0; j < entries->size(); ++j) check_entry((*entries)[j], 1 + j);

  // A count over 256 is capped; first id 0 counts as 1.
  r = node.call(fetch_request(0, 100000));
  CHECK(r.count == kMaxFetchEntries);
  CHECK(r.more);
  entries = decode_scan_entries(r.value);
  REQUIRE(entries);
  check_entry(entries->front(), 1);
  check_entry(entries->back(), 256);

  // Exactly the rest: no more flag.
  r = node.call(fetch_request(201, 100));
  CHECK(r.count == 100);
  CHECK(!r.more);
  r = node.call(fetch_request(201, 99));
  CHECK(r.count == 99);
  CHECK(r.more);
  r = node.call(fetch_request(300, 5));
  CHECK(r.count == 1);
  CHECK(!r.more);
  entries = decode_scan_entries(r.value);
  REQUIRE(entries);
  check_entry(entries->front(), 300);

  // Past the end: nothing, no more flag.
  for (const std::uint32_t first : {301u, 1000u, 0xFFFFFFFFu}) {
    r = node.call(fetch_request(first, 10));
    REQUIRE(r.op == Op::kReply);
    CHECK(r.status == Status::kOk);
    CHECK(r.count == 0);
    CHECK(r.value.empty());
    CHECK(!r.more);
  }

  // Paging through everything in 7-entry pages.
  std::size_t pages = 0;
  const auto all = fetch_all([&](const Packet& p) { return node.call(p); }, 7, &pages);
  REQUIRE(all.size() == 300);
  CHECK(pages == 43);
  for (std::uint32_t j = 0; j < all.size(); ++j) check_entry(all[j], j + 1);

  // The value must be a u32.
  Packet bad = fetch_request(1, 1);
  bad.value = "abc";
  require_error(node.call(bad), Status::kBadRequest, "first log id");
  CHECK(node.stats.get(Counter::kFetches) == 8 + pages);
}

TEST_CASE("data node: LOG_FETCH stops at the datagram size", "[net][data_node]") {
  Node node;
  // 1,024-byte keys: an entry is 1,040 bytes, so 256 do not fit 65,507.
  for (int i = 0; i < 300; ++i) {
    std::string key(kMaxKeyBytes, 'k');
    key.replace(0, 8, dataset_key(static_cast<std::uint64_t>(i)));
    REQUIRE(node.call(append_request(key, "r")).status == Status::kOk);
  }
  const Packet r = node.call(fetch_request(1, 256));
  REQUIRE(r.status == Status::kOk);
  CHECK(r.count == (kMaxDatagram - kHeaderBytes) / (6 + kMaxKeyBytes + kStampedLocationBytes));
  CHECK(r.more);
  CHECK(encode_packet(r).size() <= kMaxDatagram);
  std::size_t pages = 0;
  const auto all = fetch_all([&](const Packet& p) { return node.call(p); }, 256, &pages);
  CHECK(all.size() == 300);
  CHECK(pages == 5);
}

// A LOG_FETCH naming a key range: shard i of k over `keys` dataset keys.
Packet fetch_range_request(std::uint32_t first, std::uint32_t count, std::uint32_t shard, std::uint32_t shards,
                           std::uint64_t keys) {
  Packet p = fetch_request(first, count);
  p.value = encode_log_fetch_value({first, LogFetchShard{shard, shards, keys}});
  return p;
}

// The id a reply to a LOG_FETCH with a key range names in its key.
std::uint32_t scanned_of(const Packet& r) {
  REQUIRE(r.key.size() == 4);
  std::uint32_t v = 0;
  for (unsigned char c : r.key) v = (v << 8) | c;
  return v;
}

TEST_CASE("data node: LOG_FETCH with a key range sends that range's entries and how far it passed others over",
          "[net][data_node]") {
  constexpr std::uint64_t kKeys = 1000;  // shard 0/2: keys 0..499, 1/2: 500..999
  Node node;
  std::vector<std::uint64_t> key_at;  // log id - 1 -> dataset index
  for (std::uint64_t i = 0; i < 700; ++i) {
    const std::uint64_t k = (i * 7 + i / 3) % kKeys;
    REQUIRE(node.call(append_request(dataset_key(k), dataset_record(k, 1))).status == Status::kOk);
    key_at.push_back(k);
  }
  for (std::uint32_t shard = 0; shard < 2; ++shard) {
    INFO("shard " << shard << "/2");
    const std::uint64_t before = node.stats.get(Counter::kFetchPassedOver);
    // Paged as a metadata node pages: from the id after the last one named.
    std::vector<std::uint32_t> got, want;
    for (std::uint32_t id = 1; id <= key_at.size(); ++id) {
      if ((key_at[id - 1] < 500 ? 0u : 1u) == shard) want.push_back(id);
    }
    std::uint32_t first = 1;
    bool more = true;
    while (more) {
      const Packet r = node.call(fetch_range_request(first, 50, shard, 2, kKeys));
      REQUIRE(r.op == Op::kReply);
      REQUIRE(r.status == Status::kOk);
      const auto entries = decode_scan_entries(r.value);
      REQUIRE(entries);
      REQUIRE(entries->size() == r.count);
      const std::uint32_t scanned = scanned_of(r);
      REQUIRE(scanned + 1 >= first);
      for (const ScanEntry& e : *entries) {
        const auto st = decode_stamped(e.value);
        REQUIRE(st);
        CHECK(shard_of(e.key, 2, kKeys) == shard);
        CHECK(e.key == dataset_key(key_at[st->location.log_id - 1]));
        CHECK(st->location.log_id <= scanned);  // no pending entries here: everything examined is passed
        got.push_back(st->location.log_id);
      }
      // A full page stops at its last entry; the last page at the log's end.
      if (r.count == 50) CHECK(scanned == got.back());
      more = r.more;
      if (!more) CHECK(scanned == key_at.size());
      first = scanned + 1;
    }
    CHECK(got == want);
    CHECK(node.stats.get(Counter::kFetchPassedOver) - before == key_at.size() - want.size());
  }

  // A range with no entries in a long stretch: at most kMaxFetchScan ids
  // examined per request, the rest paged.
  Node sparse;
  for (std::uint32_t i = 0; i < kMaxFetchScan + 100; ++i) {
    const std::uint64_t k = 500 + i % 500;  // shard 1 only
    REQUIRE(sparse.call(append_request(dataset_key(k), dataset_record(k, 1))).status == Status::kOk);
  }
  Packet r = sparse.call(fetch_range_request(1, 256, 0, 2, kKeys));
  CHECK(r.count == 0);
  CHECK(r.more);
  CHECK(scanned_of(r) == kMaxFetchScan);
  r = sparse.call(fetch_range_request(scanned_of(r) + 1, 256, 0, 2, kKeys));
  CHECK(r.count == 0);
  CHECK_FALSE(r.more);
  CHECK(scanned_of(r) == kMaxFetchScan + 100);
  // Past the end: the id before the first asked for.
  r = sparse.call(fetch_range_request(kMaxFetchScan + 500, 256, 1, 2, kKeys));
  CHECK(r.count == 0);
  CHECK_FALSE(r.more);
  CHECK(scanned_of(r) == kMaxFetchScan + 499);

  // Bad ranges and lengths: refused with what is wrong.
  Packet bad = fetch_range_request(1, 10, 2, 2, kKeys);
  require_error(sparse.call(bad), Status::kBadRequest, "shard 2 of 2");
  bad = fetch_range_request(1, 10, 0, 0, kKeys);
  require_error(sparse.call(bad), Status::kBadRequest, "shard 0 of 0");
  bad.value.push_back('x');
  require_error(sparse.call(bad), Status::kBadRequest, "4 or 20 bytes, not 21");
  bad.value.resize(19);
  require_error(sparse.call(bad), Status::kBadRequest, "4 or 20 bytes, not 19");
}

TEST_CASE("data log: a filtered fetch's passed-over id stops before a pending entry", "[net][data_node]") {
  DataLog log;
  DataLog::Appended a;
  // ids 1 (foreign), 2 (own), 3 (own, pending), 4 (foreign), 5 (own)
  const auto add = [&](const char* key, bool pending) {
    const std::uint16_t slot = slot_key(key).slot;
    REQUIRE((pending ? log.reserve(slot, key, "r", &a) : log.append(slot, key, "r", &a)) ==
            DataLog::AppendError::kNone);
    return a.log_id;
  };
  add("b-1", false);
  add("a-2", false);
  const std::uint32_t pending = add("a-3", true);
  add("b-4", false);
  add("a-5", false);
  const auto keep = [](std::string_view key) { return key.front() == 'a'; };
  bool more = true;
  std::uint32_t scanned = 0;
  std::size_t passed = 0;
  auto got = log.fetch_filtered(1, 256, 16, 65000, keep, 4096, &more, &scanned, &passed);
  REQUIRE(got.size() == 2);
  CHECK(got[0].log_id == 2);
  CHECK(got[1].log_id == 5);  // entries after the pending one still come
  CHECK(scanned == 2);        // but the cursor may not pass id 3 (nor the foreign 4 after it)
  CHECK(passed == 2);
  CHECK_FALSE(more);
  log.commit(pending);
  got = log.fetch_filtered(3, 256, 16, 65000, keep, 4096, &more, &scanned, &passed);
  REQUIRE(got.size() == 2);
  CHECK(got[0].log_id == 3);
  CHECK(scanned == 5);
  CHECK(passed == 1);
  // The plain fetch is unchanged: every committed entry.
  CHECK(log.fetch(1, 256, 16, 65000, &more).size() == 5);
}

TEST_CASE("data node: --keys preloads the owned data set keys in key order", "[net][data_node]") {
  const NodeId id{1, 2};
  DataLog log;
  const std::uint64_t n = preload(log, id, 3000, 200);
  REQUIRE(n == log.entries());
  std::uint32_t log_id = 0;
  std::map<std::uint16_t, std::uint32_t> ts;
  for (std::uint64_t i = 0; i < 3000; ++i) {
    const std::string key = dataset_key(i);
    const SlotKey sk = slot_key(key);
    if (!id.owns(sk.slot)) continue;
    const auto e = log.entry(++log_id);
    REQUIRE(e);
    CHECK(e->key == key);
    CHECK(e->record == dataset_record(i, 0, 200));
    CHECK(record_version(e->record, i) == 0u);
    CHECK(e->ts == ++ts[sk.slot]);
  }
  CHECK(log_id == n);
  CHECK(n > 1300);
  CHECK(n < 1700);
  // Appends go on from there, on the same counters.
  DataNodeStats stats;
  Handler handler(log, id, stats);
  const std::uint64_t i = owned_index(id);
  const Packet r = handler.handle(append_request(dataset_key(i), dataset_record(i, 1)));
  REQUIRE(r.status == Status::kOk);
  CHECK(decode_location(r.value)->log_id == n + 1);
  CHECK(r.visibility->ts == ts[slot_key(dataset_key(i)).slot] + 1);
  // Data node 0/2 gets the others.
  DataLog other;
  CHECK(preload(other, {0, 2}, 3000, 128) == 3000 - n);
}

TEST_CASE("data node: a full log refuses appends", "[net][data_node]") {
  Node node({}, 3);
  for (std::uint32_t i = 1; i <= 3; ++i) {
    const Packet r = node.call(append_request(dataset_key(i), "r"));
    REQUIRE(r.status == Status::kOk);
    CHECK(decode_location(r.value)->log_id == i);
  }
  const std::uint16_t slot = slot_key(dataset_key(4)).slot;
  const std::uint32_t before = node.log.slot_ts(slot);
  require_error(node.call(append_request(dataset_key(4), "r")), Status::kServerError, "log full");
  CHECK(node.log.entries() == 3);
  CHECK(node.log.slot_ts(slot) == before);  // no timestamp taken
  CHECK(node.stats.get(Counter::kLogFull) == 1);
  // Reads and fetches still work.
  CHECK(node.call(read_request(dataset_key(2), encode_location({0, 2}))).status == Status::kOk);
  CHECK(node.call(fetch_request(1, 0)).count == 3);
  DataLog tiny(2);
  CHECK_THROWS_WITH(preload(tiny, {}, 10, 128), Catch::Contains("no log id left"));
}

TEST_CASE("data node: STATS and serve() on malformed datagrams", "[net][data_node]") {
  Node node;
  const std::string key = dataset_key(7);
  const Packet w = node.call(append_request(key, "rec"));
  REQUIRE(w.status == Status::kOk);
  REQUIRE(node.call(read_request(dataset_key(8), w.value)).status == Status::kMismatch);

  // Garbage, truncated and REPLY datagrams: dropped and counted.
  std::mt19937_64 rng(42);
  const std::vector<std::byte> good = encode_packet(read_request(key, w.value));
  std::size_t answered = 0;
  for (int i = 0; i < 2000; ++i) {
    std::vector<std::byte> d;
    if (i % 2 == 0) {
      d.resize(rng() % 64);
      for (auto& b : d) b = static_cast<std::byte>(rng());
    } else {
      d.assign(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(rng() % good.size()));
    }
    if (node.handler.serve(d)) ++answered;
  }
  CHECK(answered == 0);
  Packet reply = w;
  REQUIRE(!node.handler.serve(encode_packet(reply)));
  CHECK(node.stats.drops(DropReason::kNotRequest) == 1);
  CHECK(node.stats.parse_errors(ParseError::kTruncated) >= 1000);

  const auto out = node.handler.serve(good);
  REQUIRE(out);
  Packet r;
  REQUIRE(parse_packet(*out, &r) == ParseError::kNone);
  CHECK(r.status == Status::kOk);
  CHECK(r.value == "rec");

  Packet stats;
  stats.op = Op::kStats;
  r = node.call(stats);
  REQUIRE(r.op == Op::kReply);
  REQUIRE(r.status == Status::kOk);
  const std::string& json = r.value;
  INFO(json);
  REQUIRE(json.starts_with("{"));
  REQUIRE(json.ends_with("}"));
  CHECK(json_number(json, "appends") == 1);
  CHECK(json_number(json, "reads") == 1);
  CHECK(json_number(json, "mismatches") == 1);
  CHECK(json_number(json, "fetches") == 0);
  CHECK(json_number(json, "fetched_entries") == 0);
  CHECK(json_number(json, "log_entries") == 1);
  CHECK(json_number(json, "log_bytes") == 8 + 3);
  CHECK(json_number(json, "bad_request") == 0);
  CHECK(json_number(json, "datagrams") == 2002);
  CHECK(json_number(json, "truncated") >= 1000);
  CHECK(json_number(json, "bad_magic") >= 1);
  CHECK(json_number(json, "not_request") == 1);
  CHECK(json_number(json, "drops") == 2001);
  CHECK(json_number(json, "node") == 0);
  CHECK(json_number(json, "nodes") == 1);
}

TEST_CASE("data node: concurrent appends, reads and fetches", "[net][data_node]") {
  // What --threads T does to the log: writers appending 200 keys over and
  // over (keys that share a slot share its counter), a reader fetching and
  // reading back while they append. No Catch2 assertions off the main
  // thread: the reader counts what is wrong.
  Node node;
  constexpr int kWriters = 4, kPerWriter = 1500;
  std::vector<std::vector<Packet>> replies(kWriters);
  std::atomic<bool> done{false};
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      for (int i = 0; i < kPerWriter; ++i) {
        const std::uint64_t k = static_cast<std::uint64_t>(i % 200);
        replies[static_cast<std::size_t>(w)].push_back(
            node.handler.handle(append_request(dataset_key(k), dataset_record(k, static_cast<std::uint32_t>(w)))));
      }
    });
  }
  std::atomic<std::uint64_t> bad{0}, checked{0};
  std::thread reader([&] {
    // Until the writers are done, then once more.
    for (bool last = false; !last;) {
      last = done.load();
      const Packet f = node.handler.handle(fetch_request(1, 256));
      const auto entries = decode_scan_entries(f.value);
      if (f.status != Status::kOk || !entries || entries->size() != f.count) {
        ++bad;
        continue;
      }
      std::uint32_t id = 1;
      for (const ScanEntry& e : *entries) {
        const auto at = decode_stamped(e.value);
        std::uint64_t k = 0;
        if (!at || at->location.log_id != id++ || !dataset_index(e.key, &k)) {
          ++bad;
          continue;
        }
        // The record is one writer's version of this key.
        const Packet r = node.handler.handle(read_request(e.key, encode_location(at->location)));
        if (r.status != Status::kOk || !record_version(r.value, k)) ++bad;
        ++checked;
      }
    }
  });
  for (auto& t : threads) t.join();
  done = true;
  reader.join();
  CHECK(bad.load() == 0);
  CHECK(checked.load() >= 256);
  REQUIRE(node.log.entries() == kWriters * kPerWriter);
  // Every log id once; per slot, the timestamps are exactly 1..n.
  std::vector<bool> seen(kWriters * kPerWriter + 1, false);
  std::map<std::uint16_t, std::vector<std::uint32_t>> ts;
  for (const auto& list : replies) {
    for (const Packet& r : list) {
      REQUIRE(r.status == Status::kOk);
      const auto at = decode_location(r.value);
      REQUIRE(at);
      REQUIRE(at->log_id <= kWriters * kPerWriter);
      CHECK(!seen[at->log_id]);
      seen[at->log_id] = true;
      ts[r.visibility->slot].push_back(r.visibility->ts);
      CHECK(node.log.entry(at->log_id)->ts == r.visibility->ts);
    }
  }
  for (auto& [slot, list] : ts) {
    std::sort(list.begin(), list.end());
    for (std::size_t j = 0; j < list.size(); ++j) CHECK(list[j] == j + 1);
    CHECK(node.log.slot_ts(slot) == list.size());
  }
}

TEST_CASE("data node: options", "[net][data_node]") {
  const auto parse = [](std::vector<std::string> args, Options* o, std::string* error) {
    args.insert(args.begin(), "forein-data-node");
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    bool help = false;
    return parse_options(static_cast<int>(argv.size()), argv.data(), o, error, &help);
  };
  Options o;
  std::string error;
  REQUIRE(parse({}, &o, &error));
  CHECK(o.listen_host == "127.0.0.1");
  CHECK(o.listen_port == 0);
  CHECK(o.node == 0);
  CHECK(o.nodes == 1);
  CHECK(o.keys == 0);
  CHECK(o.record_bytes == 128);
  CHECK(o.threads == 1);
  o = Options{};
  REQUIRE(parse({"--listen", "0.0.0.0:9000", "--node=2/5", "--keys", "77", "--record-bytes", "4096",
                 "--threads", "4"},
                &o, &error));
  CHECK(o.listen_host == "0.0.0.0");
  CHECK(o.listen_port == 9000);
  CHECK(o.node == 2);
  CHECK(o.nodes == 5);
  CHECK(o.keys == 77);
  CHECK(o.record_bytes == 4096);
  CHECK(o.threads == 4);
  for (const std::vector<std::string>& bad :
       std::vector<std::vector<std::string>>{{"--node", "3/3"}, {"--node", "1"}, {"--node", "0/0"},
                                             {"--node", "0/65537"}, {"--node", "a/2"}, {"--record-bytes", "0"},
                                             {"--record-bytes", "4097"}, {"--threads", "0"}, {"--threads", "65"},
                                             {"--keys", "-1"}, {"--keys", "4294967296"}, {"--listen", "nohost"},
                                             {"--listen", "h:65536"}, {"--keys"}, {"--what"}}) {
    o = Options{};
    error.clear();
    INFO(bad.front());
    CHECK(!parse(bad, &o, &error));
    CHECK(!error.empty());
  }
}

// The real program.

namespace {

std::unique_ptr<ChildProcess> spawn_node(std::vector<std::string> args) {
  return std::make_unique<ChildProcess>(FOREIN_DATA_NODE_BIN, std::move(args), /*capture_stderr=*/true);
}

}  // namespace

TEST_CASE("data node program: bad flags exit 2, --help exits 0", "[net][data_node]") {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"--node", "2/2"}, {"--threads", "0"}, {"--record-bytes", "5000"}, {"--bogus"}, {"--listen"},
           {"--listen", "127.0.0.1"}}) {
    const auto c = spawn_node(args);
    INFO(args.front());
    const std::string err = c->read_stderr(std::chrono::seconds(30));
    CHECK(err.find("forein-data-node: ") != std::string::npos);
    CHECK(err.find("usage: ") != std::string::npos);
    CHECK(c->wait_exit() == 2);
  }
  {
    const auto c = spawn_node({"--help"});
    CHECK(c->read_all(std::chrono::seconds(30)).find("--node I/D") != std::string::npos);
    CHECK(c->wait_exit() == 0);
  }
  {
    // An address in use (a socket without SO_REUSEPORT holds the port).
    const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd >= 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    socklen_t len = sizeof a;
    REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
    const auto c = spawn_node({"--listen", "127.0.0.1:" + std::to_string(ntohs(a.sin_port))});
    const std::string err = c->read_stderr(std::chrono::seconds(30));
    ::close(fd);
    CHECK(err.find("in use") != std::string::npos);
    CHECK(c->wait_exit() == 2);
  }
}

TEST_CASE("data node program: UDP appends, reads, fetches, garbage, STATS and exit line", "[net][data_node]") {
  const NodeId id{0, 2};
  const auto child = spawn_node({"--node", "0/2", "--keys", "2000", "--threads", "2"});
  const int port = forein::testing::ready_port(*child);
  REQUIRE(port != 0);
  Udp udp(static_cast<std::uint16_t>(port));

  // What --keys 2000 loaded, from the same preload in this process.
  DataLog local;
  const std::uint64_t preloaded = preload(local, id, 2000, kRecordBytes);

  // Every preloaded entry comes back by LOG_FETCH, and reads back.
  std::size_t pages = 0;
  const auto all = fetch_all([&](const Packet& p) { return udp.call(p); }, 0, &pages);
  REQUIRE(all.size() == preloaded);
  CHECK(pages == (preloaded + 63) / 64);
  for (std::uint32_t j = 0; j < all.size(); ++j) {
    const auto e = local.entry(j + 1);
    REQUIRE(e);
    CHECK(all[j].key == e->key);
    const auto s = decode_stamped(all[j].value);
    REQUIRE(s);
    CHECK(s->location == LogLocation{0, j + 1});
    CHECK(s->ts == e->ts);
  }
  for (std::uint32_t j = 1; j <= preloaded; j += 37) {
    const auto e = local.entry(j);
    const Packet r = udp.call(read_request(e->key, encode_location({0, j})));
    REQUIRE(r.op == Op::kReply);
    REQUIRE(r.status == Status::kOk);
    CHECK(r.value == e->record);
  }

  // New writes get the next ids and timestamps; a read with another key
  // gets kMismatch; a key of the other node is refused.
  std::uint64_t appended = 0;
  for (std::uint64_t i = 0; i < 2000; i += 50) {
    const std::string key = dataset_key(i);
    const SlotKey sk = slot_key(key);
    const Packet r = udp.call(append_request(key, dataset_record(i, 1)));
    if (!id.owns(sk.slot)) {
      REQUIRE(r.op == Op::kError);
      CHECK(r.status == Status::kBadRequest);
      CHECK(r.value.find("not owned by data node 0/2") != std::string::npos);
      continue;
    }
    REQUIRE(r.status == Status::kOk);
    ++appended;
    DataLog::Appended a;
    REQUIRE(local.append(sk.slot, key, dataset_record(i, 1), &a) == DataLog::AppendError::kNone);
    CHECK(decode_location(r.value)->log_id == a.log_id);
    REQUIRE(r.visibility);
    CHECK(r.visibility->ts == a.ts);
    CHECK(r.visibility->ts >= 2);  // the key was preloaded: its slot's counter was >= 1
    const Packet back = udp.call(read_request(key, r.value));
    REQUIRE(back.status == Status::kOk);
    CHECK(back.value == dataset_record(i, 1));
    CHECK(udp.call(read_request(key + "x", r.value)).status == Status::kMismatch);
  }
  REQUIRE(appended > 0);

  // Random and truncated datagrams between requests: never an answer,
  // never a crash.
  std::mt19937_64 rng(7);
  const std::vector<std::byte> good = encode_packet(fetch_request(1, 3));
  for (int i = 0; i < 3000; ++i) {
    std::vector<std::byte> d;
    if (i % 2 == 0) {
      d.resize(rng() % 200);
      for (auto& b : d) b = static_cast<std::byte>(rng());
    } else {
      d.assign(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(rng() % good.size()));
    }
    udp.send_raw(d);
    if (i % 500 == 0) CHECK(udp.call(fetch_request(1, 1)).count == 1);
  }
  Packet get;
  get.op = Op::kGet;
  get.key = dataset_key(1);
  const Packet refused = udp.call(get);
  REQUIRE(refused.op == Op::kError);
  CHECK(refused.value == "not a data-node request");

  const std::string stats = forein::testing::server_stats(udp);
  INFO(stats);
  CHECK(json_number(stats, "appends") == static_cast<long long>(appended));
  CHECK(json_number(stats, "log_entries") == static_cast<long long>(preloaded + appended));
  CHECK(json_number(stats, "preloaded") == static_cast<long long>(preloaded));
  CHECK(json_number(stats, "mismatches") == static_cast<long long>(appended));
  CHECK(json_number(stats, "threads") == 2);
  CHECK(json_number(stats, "port") == port);
  CHECK(json_number(stats, "truncated") >= 1000);

  const std::string exit_line = forein::testing::stop_json(*child);
  INFO(exit_line);
  CHECK(json_number(exit_line, "appends") == static_cast<long long>(appended));
  CHECK(json_number(exit_line, "log_entries") == static_cast<long long>(preloaded + appended));
  CHECK(json_number(exit_line, "log_bytes") ==
        static_cast<long long>((preloaded + appended) * (8 + kRecordBytes)));
  CHECK(json_number(exit_line, "reads") >= static_cast<long long>(appended));
  CHECK(json_number(exit_line, "fetches") >= static_cast<long long>(pages + 6));
  CHECK(json_number(exit_line, "fetched_entries") >= static_cast<long long>(preloaded));
  CHECK(json_number(exit_line, "bad_request") >= 1);
  CHECK(json_number(exit_line, "stats") == 1);
  CHECK(json_number(exit_line, "drops") >= 1500);
  CHECK(json_number(exit_line, "node") == 0);
  CHECK(json_number(exit_line, "nodes") == 2);
}

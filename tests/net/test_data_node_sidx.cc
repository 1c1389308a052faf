// forein-data-node --secondary-index (net/data_node; docs/network.md
// "forein-data-node", "Secondary index"; protocol/secondary_index.h): the
// handler over a LogMode::kSecondaryIndex log directly (SidxRecord
// appends answered with a partial SidxEntry, one timestamp counter across
// slots, the primary index behind LOG_READ by key and multi-reads, refusals, LOG_FETCH's
// entries with their secondary keys, the --keys preload, concurrent
// writers), the options, and the real program over UDP.
#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
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
#include "protocol/packet.h"
#include "protocol/secondary_index.h"
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

// A LOG_APPEND as forein-load's secondary-index workload sends it: key =
// the primary key, value = the SidxRecord, the header naming the
// secondary key's slot and fingerprint.
Packet sidx_append(const std::string& primary, const std::string& secondary, const std::string& payload,
                   std::uint32_t aux = 0) {
  Packet p;
  p.op = Op::kLogAppend;
  p.seq = ++next_seq;
  p.key = primary;
  p.value = encode_sidx_record(secondary, payload);
  const SlotKey sk = slot_key(secondary);
  p.visibility = VisibilityHeader{sk.slot, VisState::kNone, sk.fingerprint, 0, aux};
  return p;
}

// LOG_READ by key (empty value) or by location.
Packet read_request(const std::string& key, const std::string& location = {}) {
  Packet p;
  p.op = Op::kLogRead;
  p.seq = ++next_seq;
  p.key = key;
  p.value = location;
  p.visibility = VisibilityHeader{slot_key(key).slot, VisState::kNone, slot_key(key).fingerprint, 0, 0};
  return p;
}

// A multi-read (protocol/secondary_index.h): count = the keys, value =
// their scan entries with empty values, packet key = the first.
Packet multi_read_request(const std::vector<std::string>& keys) {
  std::vector<ScanEntry> entries;
  for (const std::string& k : keys) entries.push_back({k, std::string()});
  Packet p = read_request(keys.empty() ? dataset_key(0) : keys.front());
  p.count = static_cast<std::uint32_t>(keys.size());
  p.value = encode_scan_entries(entries);
  return p;
}

Packet fetch_request(std::uint32_t first, std::uint32_t count) {
  return forein::testing::log_fetch_request(first, count, ++next_seq);
}

// A handler over its own --secondary-index log.
struct Node {
  DataLog log;
  DataNodeStats stats;
  Handler handler;
  explicit Node(std::uint32_t max_log_id = DataLog::kMaxLogId)
      : log(max_log_id, LogMode::kSecondaryIndex), handler(log, NodeId{}, stats) {}
  Packet call(const Packet& p) {
    const Packet r = handler.handle(p);
    CHECK(r.seq == p.seq);
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

// A LOG_FETCH entry of a --secondary-index node: StampedLocation, then
// the secondary key.
struct SidxFetched {
  StampedLocation at;
  std::string secondary;
};

std::optional<SidxFetched> decode_fetched(const std::string& value) {
  if (value.size() < kStampedLocationBytes) return std::nullopt;
  const auto at = decode_stamped(std::string_view(value).substr(0, kStampedLocationBytes));
  if (!at) return std::nullopt;
  return SidxFetched{*at, value.substr(kStampedLocationBytes)};
}

}  // namespace

TEST_CASE("sidx data node: an append answers the partial entry, state partial", "[net][data_node][sidx]") {
  Node node;
  const std::string primary = dataset_key(7), secondary = dataset_key(123);
  const Packet req = sidx_append(primary, secondary, dataset_record(7, 1), /*aux=*/42);
  const Packet r = node.call(req);
  INFO(r.value);
  REQUIRE(r.op == Op::kReply);
  REQUIRE(r.status == Status::kOk);
  CHECK(r.key == primary);
  CHECK(r.value == encode_sidx_entry(primary, secondary));
  const auto entry = decode_sidx_entry(r.value);
  REQUIRE(entry);
  CHECK(*entry == SidxEntry{primary, secondary});
  CHECK(r.value.size() <= kMaxSlotMetadataBytes);
  REQUIRE(r.visibility);
  const SlotKey sk = slot_key(secondary);
  CHECK(r.visibility->slot == sk.slot);
  CHECK(r.visibility->fingerprint == sk.fingerprint);
  CHECK(r.visibility->state == VisState::kPartial);
  CHECK(r.visibility->ts == 1);
  CHECK(r.visibility->aux == 42);  // the switch's epoch, echoed
  // The log entry: key = primary key, record = the SidxRecord as sent.
  const auto e = node.log.entry(1);
  REQUIRE(e);
  CHECK(e->key == primary);
  CHECK(e->record == req.value);
  CHECK(e->ts == 1);
  CHECK(node.log.primary_keys() == 1);
  CHECK(node.stats.get(Counter::kAppends) == 1);
}

TEST_CASE("sidx data node: one counter for every slot, strictly increasing", "[net][data_node][sidx]") {
  Node node;
  std::set<std::uint16_t> slots;
  for (std::uint32_t i = 0; i < 400; ++i) {
    // Different secondary keys (different slots) and primary keys.
    const std::string secondary = dataset_key(1000 + i);
    slots.insert(slot_key(secondary).slot);
    const Packet r = node.call(sidx_append(dataset_key(i % 37), secondary, "p"));
    REQUIRE(r.status == Status::kOk);
    REQUIRE(r.visibility);
    CHECK(r.visibility->ts == i + 1);
  }
  CHECK(slots.size() > 300);
  // Every slot reads the one counter.
  CHECK(node.log.slot_ts(0) == 400);
  CHECK(node.log.slot_ts(*slots.begin()) == 400);
  CHECK(node.log.primary_keys() == 37);
}

TEST_CASE("sidx data node: LOG_READ by key returns the newest record", "[net][data_node][sidx]") {
  Node node;
  const std::string a = dataset_key(1), b = dataset_key(2);
  // Nothing yet: not found.
  Packet r = node.call(read_request(a));
  REQUIRE(r.op == Op::kReply);
  CHECK(r.status == Status::kNotFound);
  CHECK(r.value.empty());

  std::vector<std::string> locations;
  for (std::uint32_t v = 1; v <= 5; ++v) {
    // Each write of a names another secondary key; b's writes in between.
    REQUIRE(node.call(sidx_append(a, dataset_key(100 + v), dataset_record(1, v))).status == Status::kOk);
    REQUIRE(node.call(sidx_append(b, dataset_key(200 + v), dataset_record(2, v))).status == Status::kOk);
    r = node.call(read_request(a));
    REQUIRE(r.status == Status::kOk);
    CHECK(r.key == a);
    const auto rec = decode_sidx_record(r.value);
    REQUIRE(rec);
    CHECK(rec->secondary == dataset_key(100 + v));
    CHECK(rec->payload == dataset_record(1, v));
    CHECK(record_version(rec->payload, 1) == v);
  }
  r = node.call(read_request(b));
  REQUIRE(r.status == Status::kOk);
  CHECK(r.value == encode_sidx_record(dataset_key(205), dataset_record(2, 5)));
  CHECK(node.call(read_request(dataset_key(3))).status == Status::kNotFound);
  // A location still reads that entry (an old version), as without the mode.
  r = node.call(read_request(a, encode_location({0, 1})));
  REQUIRE(r.status == Status::kOk);
  CHECK(r.value == encode_sidx_record(dataset_key(101), dataset_record(1, 1)));
  CHECK(node.call(read_request(b, encode_location({0, 1}))).status == Status::kMismatch);
  require_error(node.call(read_request(a, "xyz")), Status::kBadRequest, "6-byte log location");
  CHECK(node.log.primary_keys() == 2);
  CHECK(node.stats.get(Counter::kNotFound) == 2);
}

TEST_CASE("sidx data node: a multi-read answers the keys in order, empty when not found",
          "[net][data_node][sidx]") {
  Node node;
  for (std::uint64_t i = 0; i < 6; ++i) {
    REQUIRE(node.call(sidx_append(dataset_key(i), dataset_key(100 + i), dataset_record(i, 1))).status ==
            Status::kOk);
  }
  // Key 2's newest record, not its first.
  REQUIRE(node.call(sidx_append(dataset_key(2), dataset_key(300), dataset_record(2, 2))).status == Status::kOk);
  // Out of key order, with keys the node never saw and a repeat.
  const std::vector<std::string> keys = {dataset_key(4), dataset_key(50), dataset_key(2), dataset_key(0),
                                         dataset_key(51), dataset_key(4)};
  const Packet r = node.call(multi_read_request(keys));
  REQUIRE(r.op == Op::kReply);
  REQUIRE(r.status == Status::kOk);
  CHECK(r.key == keys.front());
  CHECK_FALSE(r.more);
  CHECK(encoded_size(r) <= kMaxSidxMultiReadBytes);
  const auto got = decode_scan_entries(r.value);
  REQUIRE(got);
  REQUIRE(r.count == keys.size());
  REQUIRE(got->size() == keys.size());
  for (std::size_t k = 0; k < keys.size(); ++k) CHECK((*got)[k].key == keys[k]);
  CHECK((*got)[0].value == encode_sidx_record(dataset_key(104), dataset_record(4, 1)));
  CHECK((*got)[1].value.empty());
  CHECK((*got)[2].value == encode_sidx_record(dataset_key(300), dataset_record(2, 2)));
  CHECK((*got)[3].value == encode_sidx_record(dataset_key(100), dataset_record(0, 1)));
  CHECK((*got)[4].value.empty());
  CHECK((*got)[5].value == (*got)[0].value);
  // All not found: still kOk, every entry empty.
  const Packet none = node.call(multi_read_request({dataset_key(70), dataset_key(71)}));
  REQUIRE(none.status == Status::kOk);
  REQUIRE(none.count == 2);
  const auto empty = decode_scan_entries(none.value);
  REQUIRE(empty);
  CHECK(std::all_of(empty->begin(), empty->end(), [](const ScanEntry& e) { return e.value.empty(); }));
  // One key: as a single read by key, in the multi-read's form.
  const Packet one = node.call(multi_read_request({dataset_key(1)}));
  REQUIRE(one.count == 1);
  CHECK(decode_scan_entries(one.value)->at(0).value == node.call(read_request(dataset_key(1))).value);
  CHECK(node.stats.get(Counter::kMultiReads) == 3);
  CHECK(node.stats.get(Counter::kMultiReadKeys) == 9);
  CHECK(node.stats.get(Counter::kNotFound) == 0);  // a multi-read's not-found keys are entries, not statuses
  const std::string stats = node.handler.stats_json();
  CHECK(json_number(stats, "multi_reads") == 3);
  CHECK(json_number(stats, "multi_read_keys") == 9);
}

TEST_CASE("sidx data node: a multi-read's reply fits one frame; the more flag says what is left",
          "[net][data_node][sidx]") {
  Node node;
  constexpr std::uint64_t kKeys = 20;
  std::vector<std::string> keys;
  for (std::uint64_t i = 0; i < kKeys; ++i) {
    keys.push_back(dataset_key(i));
    REQUIRE(node.call(sidx_append(keys.back(), dataset_key(1000 + i), dataset_record(i, 1, 128))).status ==
            Status::kOk);
  }
  // 20 entries of 6 + 8 + (2 + 8 + 128) bytes do not fit 1,400; the reader
  // asks again for the rest until every key is answered, in order.
  std::size_t at = 0, replies = 0;
  while (at < keys.size()) {
    const std::vector<std::string> rest(keys.begin() + static_cast<std::ptrdiff_t>(at), keys.end());
    const Packet r = node.call(multi_read_request(rest));
    REQUIRE(r.status == Status::kOk);
    ++replies;
    CHECK(encoded_size(r) <= kMaxSidxMultiReadBytes);
    const auto got = decode_scan_entries(r.value);
    REQUIRE(got);
    REQUIRE(got->size() == r.count);
    REQUIRE(!got->empty());
    CHECK(r.more == (got->size() < rest.size()));
    // Full: one more entry would not have fit.
    if (r.more) CHECK(encoded_size(r) + 6 + 8 + 138 > kMaxSidxMultiReadBytes);
    for (std::size_t k = 0; k < got->size(); ++k) {
      CHECK((*got)[k].key == rest[k]);
      CHECK((*got)[k].value == encode_sidx_record(dataset_key(1000 + at + k), dataset_record(at + k, 1, 128)));
    }
    at += got->size();
  }
  CHECK(replies == 3);  // 9 + 9 + 2
  CHECK(node.stats.get(Counter::kMultiReadKeys) == kKeys);

  // A record larger than the cap on its own still comes back, alone.
  const std::string big = dataset_key(500);
  REQUIRE(node.call(sidx_append(big, dataset_key(501), std::string(kMaxRecordBytes, 'p'))).status == Status::kOk);
  const Packet r = node.call(multi_read_request({big, keys[0]}));
  REQUIRE(r.status == Status::kOk);
  REQUIRE(r.count == 1);
  CHECK(r.more);
  CHECK(decode_scan_entries(r.value)->at(0).value == encode_sidx_record(dataset_key(501), std::string(4096, 'p')));
}

TEST_CASE("sidx data node: malformed multi-reads are refused", "[net][data_node][sidx]") {
  Node node;
  REQUIRE(node.call(sidx_append(dataset_key(1), dataset_key(2), dataset_record(1, 1))).status == Status::kOk);
  {
    std::vector<std::string> keys;
    for (std::uint32_t i = 0; i <= kMaxSidxReadCount; ++i) keys.push_back(dataset_key(i));
    require_error(node.call(multi_read_request(keys)), Status::kBadRequest, "at most 256");
  }
  const std::string needs = "count (";
  {
    Packet p = multi_read_request({dataset_key(1), dataset_key(2)});
    p.count = 3;  // fewer entries than count
    require_error(node.call(p), Status::kBadRequest, needs);
    p.count = 1;  // more
    require_error(node.call(p), Status::kBadRequest, needs);
    p.value = "garbage";
    require_error(node.call(p), Status::kBadRequest, needs);
    p.value.clear();
    require_error(node.call(p), Status::kBadRequest, needs);
  }
  {
    Packet p = multi_read_request({dataset_key(1)});
    const std::vector<ScanEntry> with_value = {{dataset_key(1), "v"}};
    p.value = encode_scan_entries(with_value);
    require_error(node.call(p), Status::kBadRequest, "an empty value");
    const std::vector<ScanEntry> empty_key = {{dataset_key(1), ""}, {"", ""}};
    p.value = encode_scan_entries(empty_key);
    p.count = 2;
    require_error(node.call(p), Status::kBadRequest, "a primary key of 1..1024 bytes");
  }
  CHECK(node.stats.get(Counter::kMultiReads) == 0);
  CHECK(node.stats.get(Counter::kBadRequest) == 7);

  // Without --secondary-index: refused, and count 0 reads by location as before.
  DataLog plain;
  DataNodeStats stats;
  Handler handler(plain, NodeId{}, stats);
  DataLog::Appended a;
  REQUIRE(plain.append(slot_key(dataset_key(1)).slot, dataset_key(1), "rec", &a) == DataLog::AppendError::kNone);
  const Packet refused = handler.handle(multi_read_request({dataset_key(1)}));
  INFO(refused.value);
  REQUIRE(refused.op == Op::kError);
  CHECK(refused.status == Status::kBadRequest);
  CHECK(refused.value.find("only by a --secondary-index data node") != std::string::npos);
  const Packet ok = handler.handle(read_request(dataset_key(1), encode_location({0, a.log_id})));
  REQUIRE(ok.status == Status::kOk);
  CHECK(ok.value == "rec");
}

TEST_CASE("sidx data node: refusals change nothing", "[net][data_node][sidx]") {
  Node node;
  const std::string primary = dataset_key(5), secondary = dataset_key(6);
  const std::string needs = "LOG_APPEND to a --secondary-index data node needs a secondary-index record";
  for (const std::string& value : {std::string(), std::string("\x01"), std::string("\x00\x00payload", 9),
                                   std::string("\x00\x09short", 7), std::string("\xFF\xFF", 2)}) {
    Packet p = sidx_append(primary, secondary, "x");
    p.value = value;
    require_error(node.call(p), Status::kBadRequest, needs);
  }
  {
    Packet p = sidx_append(primary, secondary, "x");
    p.visibility.reset();
    require_error(node.call(p), Status::kBadRequest, "visibility header");
  }
  {
    // The primary key's slot instead of the secondary key's.
    Packet p = sidx_append(primary, secondary, "x");
    p.visibility->slot = slot_key(primary).slot;
    p.visibility->fingerprint = slot_key(primary).fingerprint;
    require_error(node.call(p), Status::kBadRequest, "is not the secondary key's");
  }
  require_error(node.call(sidx_append("", secondary, "x")), Status::kBadRequest, "needs a primary key");
  require_error(node.call(sidx_append(primary, std::string(kMaxKeyBytes + 1, 's'), "x")), Status::kBadRequest,
                "at most 1024");
  require_error(node.call(sidx_append(primary, secondary, std::string(kMaxRecordBytes + 1, 'p'))),
                Status::kBadRequest, "at most 4096");
  CHECK(node.log.entries() == 0);
  CHECK(node.log.slot_ts(0) == 0);
  CHECK(node.log.primary_keys() == 0);
  CHECK(node.stats.get(Counter::kBadRequest) == 10);
  // The limits themselves are fine.
  const Packet ok = node.call(
      sidx_append(primary, std::string(kMaxKeyBytes, 's'), std::string(kMaxRecordBytes, 'p')));
  REQUIRE(ok.status == Status::kOk);
  CHECK(ok.visibility->ts == 1);
}

TEST_CASE("sidx data node: an entry over 96 bytes is appended and answered all the same",
          "[net][data_node][sidx]") {
  // The switch cannot store it (it answers kFallback); the data node does
  // not decide that.
  Node node;
  const std::string primary(60, 'p'), secondary(60, 's');
  const Packet r = node.call(sidx_append(primary, secondary, "payload"));
  REQUIRE(r.status == Status::kOk);
  CHECK(r.value.size() > kMaxSlotMetadataBytes);
  CHECK(r.value == encode_sidx_entry(primary, secondary));
  CHECK(r.visibility->state == VisState::kPartial);
  CHECK(node.call(read_request(primary)).value == encode_sidx_record(secondary, "payload"));
}

TEST_CASE("sidx data node: LOG_FETCH entries carry the secondary key", "[net][data_node][sidx]") {
  Node node;
  std::vector<std::uint32_t> ts;
  for (std::uint32_t i = 0; i < 150; ++i) {
    const Packet r = node.call(sidx_append(dataset_key(i % 90), dataset_key(5000 + i), dataset_record(i % 90, i)));
    REQUIRE(r.status == Status::kOk);
    ts.push_back(r.visibility->ts);
  }
  std::size_t pages = 0;
  const auto all = fetch_all([&](const Packet& p) { return node.call(p); }, 16, &pages);
  REQUIRE(all.size() == 150);
  CHECK(pages == 10);
  for (std::uint32_t j = 0; j < all.size(); ++j) {
    INFO("log id " << j + 1);
    CHECK(all[j].key == dataset_key(j % 90));
    const auto f = decode_fetched(all[j].value);
    REQUIRE(f);
    CHECK(f->at.location == LogLocation{0, j + 1});
    CHECK(f->at.ts == ts[j]);
    CHECK(f->secondary == dataset_key(5000 + j));
  }

  // Long secondary keys: the datagram limit counts them.
  Node big;
  for (int i = 0; i < 120; ++i) {
    std::string secondary(kMaxKeyBytes, 's');
    secondary.replace(0, 8, dataset_key(static_cast<std::uint64_t>(i)));
    REQUIRE(big.call(sidx_append(dataset_key(static_cast<std::uint64_t>(i)), secondary, "r")).status ==
            Status::kOk);
  }
  const Packet r = big.call(fetch_request(1, 256));
  REQUIRE(r.status == Status::kOk);
  CHECK(r.count == (kMaxDatagram - kHeaderBytes) / (6 + 8 + kStampedLocationBytes + kMaxKeyBytes));
  CHECK(r.more);
  CHECK(encode_packet(r).size() <= kMaxDatagram);
  const auto many = fetch_all([&](const Packet& p) { return big.call(p); }, 256, &pages);
  REQUIRE(many.size() == 120);
  CHECK(decode_fetched(many.back().value)->secondary.size() == kMaxKeyBytes);
}

TEST_CASE("sidx data node: --keys preload", "[net][data_node][sidx]") {
  DataLog log(DataLog::kMaxLogId, LogMode::kSecondaryIndex);
  constexpr std::uint64_t kKeys = 2000, kSecondary = 80;
  REQUIRE(preload_secondary_index(log, kKeys, 200, kSecondary) == kKeys);
  REQUIRE(log.entries() == kKeys);
  CHECK(log.primary_keys() == kKeys);
  std::set<std::string> secondaries;
  for (std::uint64_t i = 0; i < kKeys; ++i) {
    const auto e = log.entry(static_cast<std::uint32_t>(i + 1));
    REQUIRE(e);
    CHECK(e->key == dataset_key(i));
    CHECK(e->ts == i + 1);
    const std::string secondary = secondary_key_of(i, 0, kSecondary);
    CHECK(e->record == encode_sidx_record(secondary, dataset_record(i, 0, 200)));
    secondaries.insert(secondary);
  }
  CHECK(secondaries.size() == kSecondary);
  // Reads by key and appends go on from there, on the one counter.
  DataNodeStats stats;
  Handler handler(log, NodeId{}, stats);
  Packet r = handler.handle(read_request(dataset_key(1234)));
  REQUIRE(r.status == Status::kOk);
  CHECK(r.value == encode_sidx_record(secondary_key_of(1234, 0, kSecondary), dataset_record(1234, 0, 200)));
  r = handler.handle(sidx_append(dataset_key(1234), secondary_key_of(1234, 1, kSecondary), dataset_record(1234, 1)));
  REQUIRE(r.status == Status::kOk);
  CHECK(r.visibility->ts == kKeys + 1);
  CHECK(log.primary_keys() == kKeys);
  r = handler.handle(read_request(dataset_key(1234)));
  CHECK(decode_sidx_record(r.value)->secondary == secondary_key_of(1234, 1, kSecondary));
  // The stats say what the node is.
  const std::string json = handler.stats_json();
  INFO(json);
  CHECK(json.find("\"secondary_index\":true") != std::string::npos);
  CHECK(json_number(json, "primary_keys") == static_cast<long long>(kKeys));
  DataLog plain;
  DataNodeStats plain_stats;
  const std::string plain_json = Handler(plain, NodeId{}, plain_stats).stats_json();
  CHECK(plain_json.find("\"secondary_index\":false") != std::string::npos);
  CHECK(json_number(plain_json, "primary_keys") == 0);

  DataLog tiny(5, LogMode::kSecondaryIndex);
  CHECK_THROWS_WITH(preload_secondary_index(tiny, 10, 128, 1), Catch::Contains("no log id left"));
}

TEST_CASE("sidx data node: a full log refuses appends", "[net][data_node][sidx]") {
  Node node(2);
  REQUIRE(node.call(sidx_append(dataset_key(1), dataset_key(9), "a")).status == Status::kOk);
  REQUIRE(node.call(sidx_append(dataset_key(2), dataset_key(9), "b")).status == Status::kOk);
  require_error(node.call(sidx_append(dataset_key(1), dataset_key(8), "c")), Status::kServerError, "log full");
  CHECK(node.log.slot_ts(0) == 2);
  CHECK(node.call(read_request(dataset_key(1))).value == encode_sidx_record(dataset_key(9), "a"));
}

TEST_CASE("sidx data node: concurrent writers agree with the primary index", "[net][data_node][sidx]") {
  // What --threads T does: writers on the same primary keys with
  // different secondary keys. The primary index must name each key's
  // entry with the largest timestamp. No Catch2 assertions off the main
  // thread.
  Node node;
  constexpr int kWriters = 4, kPerWriter = 2000, kKeys = 50;
  std::vector<std::vector<Packet>> replies(kWriters);
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      for (int i = 0; i < kPerWriter; ++i) {
        const auto k = static_cast<std::uint64_t>(i % kKeys);
        const auto v = static_cast<std::uint32_t>(w * kPerWriter + i);
        replies[static_cast<std::size_t>(w)].push_back(
            node.handler.handle(sidx_append(dataset_key(k), secondary_key_of(k, v, 97), dataset_record(k, v))));
      }
    });
  }
  // A reader meanwhile: every record it sees by key decodes and is the key's.
  std::atomic<bool> done{false};
  std::atomic<std::uint64_t> bad{0};
  std::thread reader([&] {
    for (bool last = false; !last;) {
      last = done.load();
      for (std::uint64_t k = 0; k < kKeys; ++k) {
        const Packet r = node.handler.handle(read_request(dataset_key(k)));
        if (r.status == Status::kNotFound) continue;
        const auto rec = decode_sidx_record(r.value);
        if (r.status != Status::kOk || !rec || !record_version(rec->payload, k)) ++bad;
      }
    }
  });
  for (auto& t : threads) t.join();
  done = true;
  reader.join();
  CHECK(bad.load() == 0);
  std::map<std::string, std::pair<std::uint32_t, std::string>> newest;  // key -> (ts, secondary)
  std::vector<bool> seen(kWriters * kPerWriter + 1, false);
  for (const auto& list : replies) {
    for (const Packet& r : list) {
      REQUIRE(r.status == Status::kOk);
      REQUIRE(r.visibility);
      const std::uint32_t ts = r.visibility->ts;
      REQUIRE(ts >= 1);
      REQUIRE(ts <= kWriters * kPerWriter);
      CHECK(!seen[ts]);  // one counter: every timestamp once
      seen[ts] = true;
      const auto entry = decode_sidx_entry(r.value);
      REQUIRE(entry);
      auto& n = newest[entry->primary];
      if (ts > n.first) n = {ts, entry->secondary};
    }
  }
  REQUIRE(newest.size() == kKeys);
  for (const auto& [key, n] : newest) {
    const Packet r = node.call(read_request(key));
    REQUIRE(r.status == Status::kOk);
    const auto rec = decode_sidx_record(r.value);
    REQUIRE(rec);
    CHECK(rec->secondary == n.second);
  }
  CHECK(node.log.primary_keys() == kKeys);
}

TEST_CASE("sidx data node: options", "[net][data_node][sidx]") {
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
  CHECK(!o.secondary_index);
  CHECK(o.secondary_keys == 0);
  o = Options{};
  REQUIRE(parse({"--secondary-index", "--keys", "1000"}, &o, &error));
  CHECK(o.secondary_index);
  CHECK(o.secondary_keys == 40);  // default_secondary_keys: --keys / 25
  o = Options{};
  REQUIRE(parse({"--secondary-index"}, &o, &error));
  CHECK(o.secondary_keys == 1);
  o = Options{};
  REQUIRE(parse({"--secondary-index", "--keys", "1000", "--secondary-keys", "7", "--threads", "3"}, &o, &error));
  CHECK(o.secondary_keys == 7);
  const std::vector<std::pair<std::vector<std::string>, std::string>> bad = {
      {{"--secondary-keys", "5"}, "--secondary-keys: needs --secondary-index"},
      {{"--secondary-index", "--secondary-keys", "0"}, "--secondary-keys"},
      {{"--secondary-index", "--secondary-keys", "x"}, "--secondary-keys"},
      {{"--secondary-index", "--backups", "127.0.0.1:9"}, "replication is not supported"},
      {{"--secondary-index", "--backup"}, "replication is not supported"},
      {{"--secondary-index", "--node", "0/2"}, "one data node only"},
  };
  for (const auto& [args, message] : bad) {
    o = Options{};
    error.clear();
    INFO(args.back());
    CHECK(!parse(args, &o, &error));
    INFO(error);
    CHECK(error.find(message) != std::string::npos);
  }
}

// The real program.

TEST_CASE("sidx data node program: bad flags exit 2", "[net][data_node][sidx]") {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"--secondary-keys", "3"}, {"--secondary-index", "--backup"}, {"--secondary-index", "--node", "1/2"}}) {
    ChildProcess c(FOREIN_DATA_NODE_BIN, args, /*capture_stderr=*/true);
    INFO(args.back());
    const std::string err = c.read_stderr(std::chrono::seconds(30));
    INFO(err);
    CHECK(err.find("forein-data-node: ") != std::string::npos);
    CHECK(err.find("secondary") != std::string::npos);
    CHECK(c.wait_exit() == 2);
  }
}

TEST_CASE("sidx data node program: UDP appends, reads by key, fetches, STATS", "[net][data_node][sidx]") {
  constexpr std::uint64_t kKeys = 600, kSecondary = 30;
  ChildProcess child(FOREIN_DATA_NODE_BIN,
                     {"--secondary-index", "--keys", std::to_string(kKeys), "--secondary-keys",
                      std::to_string(kSecondary), "--threads", "2"},
                     /*capture_stderr=*/true);
  const int port = forein::testing::ready_port(child);
  REQUIRE(port != 0);
  Udp udp(static_cast<std::uint16_t>(port));

  // The preload, fetched: keys in order with their secondary keys.
  std::size_t pages = 0;
  const auto all = fetch_all([&](const Packet& p) { return udp.call(p); }, 0, &pages);
  REQUIRE(all.size() == kKeys);
  for (std::uint32_t j = 0; j < kKeys; ++j) {
    CHECK(all[j].key == dataset_key(j));
    const auto f = decode_fetched(all[j].value);
    REQUIRE(f);
    CHECK(f->at.location == LogLocation{0, j + 1});
    CHECK(f->at.ts == j + 1);
    CHECK(f->secondary == secondary_key_of(j, 0, kSecondary));
  }
  Packet r = udp.call(read_request(dataset_key(17)));
  REQUIRE(r.status == Status::kOk);
  CHECK(r.value == encode_sidx_record(secondary_key_of(17, 0, kSecondary), dataset_record(17, 0)));
  CHECK(udp.call(read_request(dataset_key(kKeys))).status == Status::kNotFound);
  // A multi-read over UDP: within one frame's bytes.
  {
    const Packet m = udp.call(multi_read_request({dataset_key(17), dataset_key(kKeys), dataset_key(3)}));
    REQUIRE(m.status == Status::kOk);
    REQUIRE(m.count == 3);
    const auto got = decode_scan_entries(m.value);
    REQUIRE(got);
    CHECK((*got)[0].value == r.value);
    CHECK((*got)[1].value.empty());
    CHECK((*got)[2].value == encode_sidx_record(secondary_key_of(3, 0, kSecondary), dataset_record(3, 0)));
  }

  // Writes: partial entries, timestamps past the preload's, increasing;
  // then the newest record by key.
  std::uint32_t last_ts = static_cast<std::uint32_t>(kKeys);
  for (std::uint32_t v = 1; v <= 20; ++v) {
    const std::uint64_t i = v % 4;
    const std::string secondary = secondary_key_of(i, v, kSecondary);
    r = udp.call(sidx_append(dataset_key(i), secondary, dataset_record(i, v), v));
    REQUIRE(r.op == Op::kReply);
    REQUIRE(r.status == Status::kOk);
    CHECK(r.value == encode_sidx_entry(dataset_key(i), secondary));
    REQUIRE(r.visibility);
    CHECK(r.visibility->state == VisState::kPartial);
    CHECK(r.visibility->slot == slot_key(secondary).slot);
    CHECK(r.visibility->aux == v);
    CHECK(r.visibility->ts > last_ts);  // a resend may have appended once more
    last_ts = r.visibility->ts;
    const Packet back = udp.call(read_request(dataset_key(i)));
    REQUIRE(back.status == Status::kOk);
    CHECK(back.value == encode_sidx_record(secondary, dataset_record(i, v)));
  }
  Packet garbage;
  garbage.op = Op::kLogAppend;
  garbage.key = dataset_key(1);
  garbage.value = "not a record";
  garbage.visibility = VisibilityHeader{};
  require_error(udp.call(garbage), Status::kBadRequest, "needs a secondary-index record");

  const std::string stats = forein::testing::server_stats(udp);
  INFO(stats);
  CHECK(stats.find("\"secondary_index\":true") != std::string::npos);
  CHECK(json_number(stats, "primary_keys") == static_cast<long long>(kKeys));
  CHECK(json_number(stats, "secondary_keys") == static_cast<long long>(kSecondary));
  CHECK(json_number(stats, "preloaded") == static_cast<long long>(kKeys));
  CHECK(json_number(stats, "appends") >= 20);
  CHECK(json_number(stats, "multi_reads") >= 1);
  const std::string exit_line = forein::testing::stop_json(child);
  INFO(exit_line);
  // A client resend appends again (a later timestamp than the one answered).
  CHECK(json_number(exit_line, "log_entries") >= static_cast<long long>(last_ts));
  CHECK(json_number(exit_line, "bad_request") >= 1);
}

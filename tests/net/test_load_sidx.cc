// forein-load --workload secondary-index's parts (net/load): the write and
// read state machines (load/sidx_ops.h, the read's multi-reads) against hand-built replies, the
// command line's --secondary-keys / --sidx-read-count, the report's
// fields and the history's SW / SR lines.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "load/history.h"
#include "load/options.h"
#include "load/report.h"
#include "load/sidx_ops.h"
#include "load/workload.h"
#include "protocol/dataset.h"
#include "protocol/packet.h"
#include "protocol/secondary_index.h"
#include "protocol/visibility.h"

using namespace forein::net;
using namespace forein::net::load;

namespace {

constexpr std::uint64_t kS = 40;  // secondary keys

Packet reply_to(const Packet& request, Status status, std::string value = {},
                std::optional<VisibilityHeader> vis = std::nullopt) {
  Packet r;
  r.op = Op::kReply;
  r.status = status;
  r.seq = request.seq;
  r.key = request.key;
  r.value = std::move(value);
  r.visibility = vis;
  return r;
}

VisibilityHeader vis_of(const std::string& key, VisState state, std::uint32_t ts = 0) {
  const SlotKey k = slot_key(key);
  VisibilityHeader h;
  h.slot = k.slot;
  h.fingerprint = k.fingerprint;
  h.state = state;
  h.ts = ts;
  return h;
}

void check_encodes(const Packet& p) {
  Packet back;
  const auto d = encode_packet(p);
  REQUIRE(parse_packet(d, &back) == ParseError::kNone);
  CHECK(back.op == p.op);
  CHECK(back.key == p.key);
  CHECK(back.value == p.value);
  CHECK(back.count == p.count);
  CHECK(back.visibility == p.visibility);
}

// A SIDX_READ reply listing `primaries` (ts 1, 2, ...).
Packet listing(const Packet& request, const std::vector<std::uint64_t>& primaries, bool more = false) {
  std::vector<ScanEntry> entries;
  std::uint32_t ts = 1;
  for (std::uint64_t i : primaries) entries.push_back({dataset_key(i), encode_sidx_ts(ts++)});
  Packet r = reply_to(request, Status::kOk, encode_scan_entries(entries));
  r.count = static_cast<std::uint32_t>(entries.size());
  r.more = more;
  return r;
}

// The record a data node returns for version v of key i naming secondary j.
std::string record(std::uint64_t i, std::uint32_t v, std::uint64_t j) {
  return encode_sidx_record(dataset_key(j), dataset_record(i, v));
}

// The keys a multi-read asks for (its value's entries), checking its form.
std::vector<std::string> asked_keys(const Packet& request) {
  REQUIRE(request.op == Op::kLogRead);
  const auto entries = decode_scan_entries(request.value);
  REQUIRE(entries);
  REQUIRE(entries->size() == request.count);
  REQUIRE(!entries->empty());
  std::vector<std::string> keys;
  for (const ScanEntry& e : *entries) {
    CHECK(e.value.empty());
    keys.push_back(e.key);
  }
  CHECK(request.key == keys.front());  // routes by the first key's slot
  REQUIRE(request.visibility);
  CHECK(request.visibility->slot == slot_key(keys.front()).slot);
  CHECK(request.visibility->fingerprint == slot_key(keys.front()).fingerprint);
  CHECK(encoded_size(request) <= kMaxSidxMultiReadBytes);
  return keys;
}

// A multi-read's reply: the first records.size() keys asked, each with
// its record ("" = not found); more when fewer than asked.
Packet multi_reply(const Packet& request, const std::vector<std::string>& records) {
  const std::vector<std::string> keys = asked_keys(request);
  REQUIRE(records.size() <= keys.size());
  std::vector<ScanEntry> entries;
  for (std::size_t k = 0; k < records.size(); ++k) entries.push_back({keys[k], records[k]});
  Packet r = reply_to(request, Status::kOk, encode_scan_entries(entries));
  r.count = static_cast<std::uint32_t>(entries.size());
  r.more = records.size() < keys.size();
  return r;
}

std::vector<std::string> keys_of(const std::vector<std::uint64_t>& indexes) {
  std::vector<std::string> out;
  for (std::uint64_t i : indexes) out.push_back(dataset_key(i));
  return out;
}

}  // namespace

TEST_CASE("secondary-index write: LOG_APPEND of the record, then done or META_PUT", "[load][sidx]") {
  const std::uint64_t j = secondary_index_of(17, 3, kS);
  const std::string secondary = dataset_key(j);
  const std::string entry = encode_sidx_entry(dataset_key(17), secondary);

  SECTION("the switch stored the partial entry: committed after one request") {
    SidxWrite w(17, 3, kS);
    CHECK(w.secondary_index() == j);
    const Packet append = w.start();
    CHECK(append.op == Op::kLogAppend);
    CHECK(append.key == dataset_key(17));
    const auto rec = decode_sidx_record(append.value);
    REQUIRE(rec);
    CHECK(rec->secondary == secondary);
    CHECK(rec->payload == dataset_record(17, 3));
    REQUIRE(append.visibility);
    // The slot is the secondary key's: the switch keeps a secondary key's
    // partial entry there.
    CHECK(append.visibility->slot == slot_key(secondary).slot);
    CHECK(append.visibility->fingerprint == slot_key(secondary).fingerprint);
    CHECK(append.visibility->state == VisState::kNone);
    check_encodes(append);
    const Step s = w.on_reply(reply_to(append, Status::kOk, entry, vis_of(secondary, VisState::kStored, 70)));
    CHECK(s.kind == Step::Kind::kDone);
    CHECK(w.phase() == SidxWrite::Phase::kCommitted);
    CHECK(w.one_rtt());
    CHECK(w.ts() == 70);
  }

  SECTION("fallback, or the data node's own kPartial (no table), or kNone: META_PUT of the entry") {
    for (VisState state : {VisState::kFallback, VisState::kPartial, VisState::kNone}) {
      INFO("state " << static_cast<int>(state));
      SidxWrite w(17, 3, kS, 64);
      const Packet append = w.start();
      CHECK(decode_sidx_record(append.value)->payload == dataset_record(17, 3, 64));
      const Step s = w.on_reply(reply_to(append, Status::kOk, entry, vis_of(secondary, state, 71)));
      REQUIRE(s.kind == Step::Kind::kSend);
      CHECK(w.phase() == SidxWrite::Phase::kMetaPut);
      const Packet& put = s.request;
      CHECK(put.op == Op::kMetaPut);
      CHECK(put.key == dataset_key(17));
      CHECK(put.value == entry);
      REQUIRE(put.visibility);
      CHECK(put.visibility->slot == slot_key(secondary).slot);
      CHECK(put.visibility->fingerprint == slot_key(secondary).fingerprint);
      CHECK(put.visibility->ts == 71);
      CHECK(put.visibility->state == VisState::kNone);
      check_encodes(put);
      CHECK(w.on_reply(reply_to(put, Status::kOk)).kind == Step::Kind::kDone);
      CHECK(w.phase() == SidxWrite::Phase::kCommitted);
      CHECK_FALSE(w.one_rtt());
      CHECK(w.on_reply(reply_to(put, Status::kOk)).kind == Step::Kind::kFailed);  // nothing after the end
    }
  }

  SECTION("error replies end the write with a reason") {
    auto failed = [&](const Packet& reply) {
      SidxWrite w(17, 3, kS);
      const Step s = w.on_reply(reply);
      CHECK(w.phase() == SidxWrite::Phase::kFailed);
      return s.kind == Step::Kind::kFailed && !s.why.empty() ? s.why : std::string();
    };
    const Packet append = SidxWrite(17, 3, kS).start();
    CHECK(failed(reply_to(append, Status::kBadRequest, "no", vis_of(secondary, VisState::kPartial, 1)))
              .find("bad request") != std::string::npos);
    // A data node without --secondary-index answers with a location.
    CHECK(failed(reply_to(append, Status::kOk, encode_location({0, 5}), vis_of(secondary, VisState::kStored, 1)))
              .find("--secondary-index") != std::string::npos);
    CHECK(failed(reply_to(append, Status::kOk, encode_sidx_entry(dataset_key(17), dataset_key(j + 1)),
                          vis_of(secondary, VisState::kStored, 1)))
              .find("entry") != std::string::npos);
    CHECK(failed(reply_to(append, Status::kOk, entry)).find("visibility") != std::string::npos);
    CHECK(failed(reply_to(append, Status::kOk, entry, vis_of(secondary, VisState::kHeld, 1))).find("state") !=
          std::string::npos);
    Packet other = reply_to(append, Status::kOk, entry, vis_of(secondary, VisState::kStored, 1));
    other.key = dataset_key(18);
    CHECK(failed(other).find("another key") != std::string::npos);
    // META_PUT refused.
    SidxWrite w(17, 3, kS);
    const Step s = w.on_reply(reply_to(append, Status::kOk, entry, vis_of(secondary, VisState::kFallback, 9)));
    REQUIRE(s.kind == Step::Kind::kSend);
    const Step e = w.on_reply(reply_to(s.request, Status::kServerError));
    CHECK(e.kind == Step::Kind::kFailed);
    CHECK(e.why.find("META_PUT") != std::string::npos);
  }
}

TEST_CASE("secondary-index read: SIDX_READ, multi-read the listed keys, keep those still named", "[load][sidx]") {
  const std::uint64_t j = 7;
  const std::string secondary = dataset_key(j);

  SECTION("kept, moved on, not found, bad payload in one multi-read; the listing complete") {
    SidxRead r(j, 10);
    const Packet ask = r.start();
    CHECK(ask.op == Op::kSidxRead);
    CHECK(ask.key == secondary);
    CHECK(ask.count == 10);
    REQUIRE(ask.visibility);
    CHECK(ask.visibility->slot == slot_key(secondary).slot);
    CHECK(ask.visibility->fingerprint == slot_key(secondary).fingerprint);
    check_encodes(ask);
    // 4 and 9 are listed twice (a key that moved away and back): read once.
    Step s = r.on_reply(listing(ask, {4, 9, 4, 12, 30, 9}));
    CHECK(r.listed() == std::vector<std::uint64_t>{4, 9, 12, 30});
    CHECK(r.listed_entries() == 6);
    CHECK_FALSE(r.truncated());
    CHECK_FALSE(r.take_looked());
    // One multi-read for all four keys, in the listing's order.
    REQUIRE(s.kind == Step::Kind::kSend);
    CHECK(asked_keys(s.request) == keys_of({4, 9, 12, 30}));
    check_encodes(s.request);
    CHECK(r.multi_reads() == 1);
    // 4 still names j: kept; 9 moved on: dropped; 12 not found: dropped;
    // 30 names j but its payload is another key's record: dropped.
    s = r.on_reply(multi_reply(s.request, {record(4, 11, j), record(9, 12, j + 1), "", record(31, 2, j)}));
    CHECK(s.kind == Step::Kind::kDone);
    CHECK(r.phase() == SidxRead::Phase::kDone);
    // The engine is shown every record found, each once, in order.
    auto looked = r.take_looked();
    REQUIRE(looked);
    CHECK(looked->index == 4);
    CHECK(looked->secondary == secondary);
    CHECK(looked->payload == dataset_record(4, 11));
    looked = r.take_looked();
    REQUIRE(looked);
    CHECK(looked->index == 9);
    CHECK(looked->secondary == dataset_key(j + 1));
    looked = r.take_looked();
    REQUIRE(looked);
    CHECK(looked->index == 30);
    CHECK(looked->payload == dataset_record(31, 2));
    CHECK_FALSE(r.take_looked());
    CHECK(r.kept() == std::vector<SidxRead::Member>{{4, 11}});
    CHECK(r.dropped() == 3);
    CHECK(r.not_found() == 1);
    CHECK(r.multi_reads() == 1);
    CHECK(r.on_reply(reply_to(s.request, Status::kOk)).kind == Step::Kind::kFailed);
  }

  SECTION("a reply with more: the keys left out are asked again") {
    SidxRead r(j, 10);
    Step s = r.on_reply(listing(r.start(), {1, 2, 3, 4, 5}));
    REQUIRE(s.kind == Step::Kind::kSend);
    CHECK(asked_keys(s.request) == keys_of({1, 2, 3, 4, 5}));
    s = r.on_reply(multi_reply(s.request, {record(1, 1, j), ""}));  // two answered, more
    REQUIRE(s.kind == Step::Kind::kSend);
    CHECK(r.take_looked()->index == 1);
    CHECK_FALSE(r.take_looked());
    CHECK(asked_keys(s.request) == keys_of({3, 4, 5}));
    s = r.on_reply(multi_reply(s.request, {record(3, 2, j)}));  // one more
    REQUIRE(s.kind == Step::Kind::kSend);
    CHECK(asked_keys(s.request) == keys_of({4, 5}));
    s = r.on_reply(multi_reply(s.request, {record(4, 1, j + 2), record(5, 6, j)}));
    CHECK(s.kind == Step::Kind::kDone);
    CHECK(r.kept() == std::vector<SidxRead::Member>{{1, 1}, {3, 2}, {5, 6}});
    CHECK(r.dropped() == 2);
    CHECK(r.not_found() == 1);
    CHECK(r.multi_reads() == 3);
  }

  SECTION("a long listing goes out in requests of one frame each") {
    SidxRead r(j, kMaxSidxReadCount);
    std::vector<std::uint64_t> all;
    for (std::uint64_t i = 0; i < kMaxSidxReadCount; ++i) all.push_back(i);
    Step s = r.on_reply(listing(r.start(), all));
    std::vector<std::string> asked;
    while (s.kind == Step::Kind::kSend) {
      const std::vector<std::string> keys = asked_keys(s.request);  // each within kMaxSidxMultiReadBytes
      CHECK(keys.size() < kMaxSidxReadCount);
      asked.insert(asked.end(), keys.begin(), keys.end());
      s = r.on_reply(multi_reply(s.request, std::vector<std::string>(keys.size())));
    }
    CHECK(s.kind == Step::Kind::kDone);
    CHECK(asked == keys_of(all));
    CHECK(r.multi_reads() > 1);
    CHECK(r.not_found() == kMaxSidxReadCount);
  }

  SECTION("truncated: the more flag, or as many entries as asked for") {
    SidxRead a(j, 3);
    a.on_reply(listing(a.start(), {1, 2}, /*more=*/true));
    CHECK(a.truncated());
    SidxRead b(j, 3);
    b.on_reply(listing(b.start(), {1, 2, 3}));
    CHECK(b.truncated());
    SidxRead c(j, 3);
    c.on_reply(listing(c.start(), {1, 2}));
    CHECK_FALSE(c.truncated());
  }

  SECTION("nothing listed (count 0, or not found): done after one request") {
    SidxRead a(j, 10);
    CHECK(a.on_reply(listing(a.start(), {})).kind == Step::Kind::kDone);
    CHECK(a.kept().empty());
    SidxRead b(j, 10);
    CHECK(b.on_reply(reply_to(b.start(), Status::kNotFound)).kind == Step::Kind::kDone);
    CHECK_FALSE(b.truncated());
  }

  SECTION("malformed or refused replies end the read with a reason") {
    auto why = [&](SidxRead& r, const Packet& reply) {
      const Step s = r.on_reply(reply);
      CHECK(r.phase() == SidxRead::Phase::kFailed);
      return s.kind == Step::Kind::kFailed ? s.why : std::string();
    };
    {
      SidxRead r(j, 10);
      CHECK(why(r, reply_to(r.start(), Status::kBadRequest)).find("bad request") != std::string::npos);
    }
    {
      SidxRead r(j, 10);
      Packet bad = listing(r.start(), {1, 2});
      bad.count = 3;
      CHECK(why(r, bad).find("count") != std::string::npos);
    }
    {
      SidxRead r(j, 2);
      CHECK(why(r, listing(r.start(), {1, 2, 3})).find("entries for a count of 2") != std::string::npos);
    }
    {
      SidxRead r(j, 10);
      Packet bad = reply_to(r.start(), Status::kOk, encode_scan_entries(std::vector<ScanEntry>{{"abc", "1234"}}));
      bad.count = 1;
      CHECK(why(r, bad).find("8-byte") != std::string::npos);
    }
    {
      SidxRead r(j, 10);
      const Step s = r.on_reply(listing(r.start(), {5}));
      REQUIRE(s.kind == Step::Kind::kSend);
      CHECK(why(r, multi_reply(s.request, {"x"})).find("no secondary-index record") != std::string::npos);
    }
    {
      SidxRead r(j, 10);
      const Step s = r.on_reply(listing(r.start(), {5}));
      CHECK(why(r, reply_to(s.request, Status::kServerError)).find("LOG_READ") != std::string::npos);
    }
    {
      // A single read's answer (no entries): a data node without multi-reads.
      SidxRead r(j, 10);
      const Step s = r.on_reply(listing(r.start(), {5}));
      CHECK(why(r, reply_to(s.request, Status::kOk, record(5, 1, j))).find("count") != std::string::npos);
    }
    {
      // Fewer entries than asked without the more flag; none at all.
      SidxRead r(j, 10);
      Step s = r.on_reply(listing(r.start(), {5, 6}));
      Packet bad = multi_reply(s.request, {""});
      bad.more = false;
      CHECK(why(r, bad).find("without the more flag") != std::string::npos);
      SidxRead r2(j, 10);
      s = r2.on_reply(listing(r2.start(), {5, 6}));
      CHECK(why(r2, multi_reply(s.request, {})).find("0 entries for 2 keys") != std::string::npos);
    }
    {
      // An entry for another key than the one asked there.
      SidxRead r(j, 10);
      const Step s = r.on_reply(listing(r.start(), {5, 6}));
      Packet bad = multi_reply(s.request, {"", ""});
      const std::vector<ScanEntry> swapped = {{dataset_key(6), ""}, {dataset_key(5), ""}};
      bad.value = encode_scan_entries(swapped);
      CHECK(why(r, bad).find("the key asked there") != std::string::npos);
    }
  }
}

TEST_CASE("command line: --workload secondary-index, --secondary-keys, --sidx-read-count", "[load][sidx]") {
  auto parse = [](std::vector<std::string> args, LoadOptions* o, std::string* err) {
    std::vector<std::string> all = {"forein-load", "--target", "127.0.0.1:9000", "--keys", "1000"};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : all) argv.push_back(a.data());
    bool help = false;
    return parse_options(static_cast<int>(argv.size()), argv.data(), o, err, &help);
  };
  LoadOptions o;
  std::string err;
  REQUIRE(parse({"--workload", "secondary-index"}, &o, &err));
  CHECK(o.workload == Workload::kSecondaryIndex);
  CHECK(is_ordered(o.workload));
  CHECK(std::string(to_string(o.workload)) == "secondary-index");
  CHECK(o.secondary_keys == 40);  // keys / 25, as the data node's default
  CHECK(o.sidx_read_count == 10);
  REQUIRE(parse({"--workload", "secondary-index", "--secondary-keys", "7", "--sidx-read-count", "256",
                 "--record-bytes", "64", "--history", "/dev/null"},
                &o, &err));
  CHECK(o.secondary_keys == 7);
  CHECK(o.sidx_read_count == 256);
  CHECK(o.record_bytes == 64);
  for (const char* bad : {"0", "257", "x", ""}) {
    INFO("--sidx-read-count '" << bad << "'");
    CHECK_FALSE(parse({"--workload", "secondary-index", "--sidx-read-count", bad}, &o, &err));
    CHECK(err.find("--sidx-read-count") != std::string::npos);
  }
  CHECK_FALSE(parse({"--workload", "secondary-index", "--secondary-keys", "0"}, &o, &err));
  CHECK(err.find("--secondary-keys") != std::string::npos);
  // The two flags are the workload's own.
  CHECK_FALSE(parse({"--workload", "write-heavy", "--secondary-keys", "5"}, &o, &err));
  CHECK(err.find("needs --workload secondary-index") != std::string::npos);
  CHECK_FALSE(parse({"--workload", "a", "--sidx-read-count", "5"}, &o, &err));
  CHECK(err.find("needs --workload secondary-index") != std::string::npos);
  CHECK_FALSE(parse({"--workload", "secondary-index", "--agent", "h:1"}, &o, &err));
  CHECK(usage_text("forein-load").find("--sidx-read-count") != std::string::npos);
  // Half writes, half reads.
  WorkloadGenerator g(Workload::kSecondaryIndex, Distribution::kZipf, 1000, 0.99, 3);
  int writes = 0;
  for (int n = 0; n < 10000; ++n) writes += g.next().kind == OpKind::kWrite ? 1 : 0;
  CHECK(writes > 4500);
  CHECK(writes < 5500);
}

TEST_CASE("report: the secondary-index fields", "[load][sidx]") {
  RunReport r;
  r.options.workload = Workload::kSecondaryIndex;
  r.options.keys = 1000;
  r.options.secondary_keys = 40;
  r.options.sidx_read_count = 10;
  r.per_op[static_cast<std::size_t>(OpKind::kWrite)] = 6;
  r.per_op[static_cast<std::size_t>(OpKind::kRead)] = 4;
  r.writes_one_rtt = 5;
  r.writes_two_phase = 1;
  r.sidx_keys_listed = 33;
  r.sidx_keys_kept = 20;
  r.sidx_keys_dropped = 13;
  r.sidx_reads_truncated = 2;
  r.not_found = 1;
  r.read_latency.record(5000);
  const std::string json = report_json(r);
  INFO(json);
  for (const char* f : {"\"workload\":\"secondary-index\"", "\"secondary_keys\":40", "\"sidx_read_count\":10",
                        "\"sidx_keys_listed\":33", "\"sidx_keys_kept\":20", "\"sidx_keys_dropped\":13",
                        "\"sidx_reads_truncated\":2", "\"writes_one_rtt\":5", "\"writes_two_phase\":1",
                        "\"writes\":6", "\"reads\":4", "\"read_latency_ns\":{"}) {
    CHECK(json.find(f) != std::string::npos);
  }
  const std::string text = format_report(r);
  CHECK(text.find("kept 20, dropped by validation 13 (not found 1); truncated 2") != std::string::npos);
  RunReport w;
  w.options.workload = Workload::kWriteHeavy;
  CHECK(report_json(w).find("sidx_") == std::string::npos);
}

TEST_CASE("history: SW and SR lines format and parse back", "[load][sidx]") {
  HistoryOp w;
  w.slot = 3;
  w.write = true;
  w.sidx = true;
  w.key = 17;
  w.version = 9;
  w.secondary = 33;
  w.invoke_ns = 100;
  w.response_ns = 250;
  w.resends = 1;
  CHECK(format_history_line(w) == "3 SW 17 9 100 250 ok 1 33");
  HistoryOp r;
  r.slot = 4;
  r.sidx = true;
  r.key = 33;
  r.invoke_ns = 300;
  r.response_ns = 400;
  r.truncated = true;
  r.members = {{17, 9}, {2, 0}};
  CHECK(format_history_line(r) == "4 SR 33 - 300 400 ok 0 truncated 17:9,2:0");
  HistoryOp none = r;
  none.truncated = false;
  none.members.clear();
  CHECK(format_history_line(none) == "4 SR 33 - 300 400 ok 0 all -");
  HistoryOp failed = none;
  failed.outcome = HistoryOp::Outcome::kFailed;
  CHECK(format_history_line(failed) == "4 SR 33 - 300 400 failed 0 - -");
  for (const HistoryOp& op : {w, r, none, failed}) {
    std::string why;
    const auto back = parse_history_line(format_history_line(op), &why);
    INFO(format_history_line(op) << ": " << why);
    REQUIRE(back);
    CHECK(*back == op);
  }
  for (const char* bad : {"3 SW 17 9 100 250 ok 1", "3 SW 17 9 100 250 ok 1 x", "3 SW 17 - 100 250 ok 1 4",
                          "4 SR 33 - 300 400 ok 0 truncated", "4 SR 33 5 300 400 ok 0 all -",
                          "4 SR 33 - 300 400 ok 0 some -", "4 SR 33 - 300 400 ok 0 all 17", "4 SR 33 - 300 400 ok 0 all 17:",
                          "4 SR 33 - 300 400 ok 0 all 17:1,", "4 SR 33 - 300 400 ok 0 all ,17:1",
                          "4 SR 33 - 300 400 failed 0 all -", "4 SR 33 - 300 400 failed 0 - 1:2", "3 X 1 1 1 2 ok 0",
                          "3 W 17 9 100 250 ok 1 33"}) {
    std::string why;
    INFO(bad);
    CHECK_FALSE(parse_history_line(bad, &why));
    CHECK_FALSE(why.empty());
  }
}

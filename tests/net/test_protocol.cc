// The wire protocol (net/protocol/packet.h, docs/protocol.md): round trips
// of every op, the documented byte layout, every ParseError, truncations,
// random bytes and the switch's in-place trailer rewrites.
// FOREIN_SEED=<n> replays the randomized cases.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "forein/error.h"
#include "protocol/packet.h"
#include "protocol/secondary_index.h"
#include "support/seed.h"

using forein::InvalidArgument;
using forein::StartHints;
using forein::net::check_datagram;
using forein::net::decode_scan_entries;
using forein::net::encode_packet;
using forein::net::encode_scan_entries;
using forein::net::encoded_size;
using forein::net::FattreeHeader;
using forein::net::kFattreeHeaderBytes;
using forein::net::kFlagFattree;
using forein::net::kFlagHint;
using forein::net::kFlagMore;
using forein::net::kHeaderBytes;
using forein::net::kHintTrailerBytes;
using forein::net::kMaxDatagram;
using forein::net::kMaxKeyBytes;
using forein::net::kParseErrors;
using forein::net::Op;
using forein::net::Packet;
using forein::net::packet_key;
using forein::net::parse_packet;
using forein::net::ParseError;
using forein::net::ScanEntry;
using forein::net::set_fattree_header;
using forein::net::set_hint_trailer;
using forein::net::Status;

namespace {

using Bytes = std::vector<std::byte>;

// Hints travel without their version, so only node and level compare.
bool same_hints(const std::optional<StartHints>& a, const std::optional<StartHints>& b) {
  if (a.has_value() != b.has_value()) return false;
  if (!a) return true;
  return a->primary.node == b->primary.node && a->primary.level == b->primary.level &&
         a->secondary.node == b->secondary.node && a->secondary.level == b->secondary.level;
}

bool same(const Packet& a, const Packet& b) {
  return a.op == b.op && a.status == b.status && a.more == b.more && a.seq == b.seq &&
         a.count == b.count && a.key == b.key && a.value == b.value && same_hints(a.hints, b.hints) &&
         a.fattree == b.fattree && a.visibility == b.visibility;
}

ParseError parse(const Bytes& d, Packet* out = nullptr) {
  Packet scratch;
  return parse_packet(d, out != nullptr ? out : &scratch);
}

StartHints hints(std::uint32_t n1, std::uint16_t l1, std::uint32_t n2, std::uint16_t l2) {
  StartHints h;
  h.primary.node = n1;
  h.primary.level = l1;
  h.secondary.node = n2;
  h.secondary.level = l2;
  return h;
}

Bytes bytes(std::initializer_list<int> v) {
  Bytes out;
  for (int b : v) out.push_back(static_cast<std::byte>(b));
  return out;
}

// A valid packet of each op, its trailers chosen by the two flags.
std::vector<Packet> samples(bool with_hint, bool with_fattree) {
  std::vector<Packet> out;
  for (int op = 1; op <= 15; ++op) {
    Packet p;
    p.op = static_cast<Op>(op);
    p.seq = 0x8000000000000000ull + static_cast<std::uint64_t>(op);
    p.key = std::string("key\0\xff", 5) + std::to_string(op);
    if (p.op == Op::kPut) p.value = "value";
    if (p.op == Op::kScan) p.count = 100;
    if (p.op == Op::kReply) {
      std::vector<ScanEntry> e = {{"a", "1"}, {"", ""}, {std::string(kMaxKeyBytes, 'k'), "big"}};
      p.value = encode_scan_entries(e);
      p.count = 3;
      p.more = true;
    }
    if (p.op == Op::kError) p.status = Status::kTooLarge;
    if (with_hint) p.hints = hints(0xDEADBEEF, 3, 7, 0);
    if (with_fattree) p.fattree = FattreeHeader{0xFFFFFFFFFFFFFFFFull, 65535, 4};
    // Switch-delta's ops carry the visibility header; so may any other.
    if (op >= 8 || op % 3 == 0) {
      p.visibility = forein::net::VisibilityHeader{static_cast<std::uint16_t>(0xFFF0 + op),
                                                   static_cast<forein::net::VisState>(op % (forein::net::kMaxVisState + 1)), 0xFFFFFFFFu,
                                                   0x80000000u + static_cast<std::uint32_t>(op), 0xFFFFFFFFu};
    }
    out.push_back(p);
  }
  // Edge sizes: empty key and value, the longest key.
  Packet empty;
  out.push_back(empty);
  Packet longest;
  longest.op = Op::kGet;
  longest.key.assign(kMaxKeyBytes, 'x');
  out.push_back(longest);
  return out;
}

}  // namespace

TEST_CASE("every op round-trips, with and without trailers", "[net][protocol]") {
  for (bool h : {false, true}) {
    for (bool f : {false, true}) {
      for (const Packet& p : samples(h, f)) {
        Bytes d = encode_packet(p);
        REQUIRE(d.size() == encoded_size(p));
        Packet q;
        REQUIRE(parse(d, &q) == ParseError::kNone);
        CHECK(same(p, q));
        CHECK(check_datagram(d) == ParseError::kNone);
        CHECK(packet_key(d) == p.key);
        CHECK(encode_packet(q) == d);
      }
    }
  }
}

TEST_CASE("every status and a plain reply round-trip", "[net][protocol]") {
  for (int s = 0; s <= 255; ++s) {
    Packet p;
    p.op = Op::kReply;
    p.status = static_cast<Status>(s);
    p.value = "not entries: count is 0";
    Packet q;
    REQUIRE(parse(encode_packet(p), &q) == ParseError::kNone);
    CHECK(same(p, q));
  }
}

TEST_CASE("the documented byte layout", "[net][protocol]") {
  Packet p;
  p.op = Op::kPut;
  p.status = Status::kNotFound;
  p.seq = 0x0102030405060708ull;
  p.count = 0x0A0B0C0D;
  p.key = "ab";
  p.value = "xyz";
  p.hints = hints(0x11223344, 0x0506, 0x55667788, 0x0708);
  p.fattree = FattreeHeader{0xA1A2A3A4A5A6A7A8ull, 0xB1B2, 0xC1C2};
  Bytes want = bytes({
      0xF0, 0xE1,                                      // 0  magic
      0x01,                                            // 2  version
      0x02,                                            // 3  op PUT
      0x03,                                            // 4  flags hint | fattree
      0x01,                                            // 5  status
      0x00, 0x02,                                      // 6  key length
      0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,  // 8  seq
      0x00, 0x00, 0x00, 0x03,                          // 16 value length
      0x0A, 0x0B, 0x0C, 0x0D,                          // 20 count
      'a', 'b',                                        // 24 key
      'x', 'y', 'z',                                   // 26 value
      0x11, 0x22, 0x33, 0x44, 0x05, 0x06, 0x00, 0x00,  // 29 hint: primary
      0x55, 0x66, 0x77, 0x88, 0x07, 0x08, 0x00, 0x00,  // 37        secondary
      0xA1, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6, 0xA7, 0xA8,  // 45 fattree: address
      0xB1, 0xB2, 0xC1, 0xC2, 0x00, 0x00, 0x00, 0x00,  // 53 server, resolved, 0
  });
  CHECK(encode_packet(p) == want);
  CHECK(want.size() == kHeaderBytes + 2 + 3 + kHintTrailerBytes + kFattreeHeaderBytes);

  // kFlagMore is bit 2; a SCAN reply's entries are u16 key length, u32
  // value length, key, value.
  Packet r;
  r.op = Op::kReply;
  r.more = true;
  r.count = 1;
  r.value = encode_scan_entries(std::vector<ScanEntry>{{"k", "vv"}});
  Bytes d = encode_packet(r);
  CHECK(d[4] == std::byte{kFlagMore});
  CHECK(Bytes(d.begin() + kHeaderBytes, d.end()) ==
        bytes({0x00, 0x01, 0x00, 0x00, 0x00, 0x02, 'k', 'v', 'v'}));
}

TEST_CASE("reserved trailer bytes are ignored by the parser", "[net][protocol]") {
  Packet p;
  p.hints = hints(1, 2, 3, 4);
  p.fattree = FattreeHeader{5, 6, 7};
  Bytes d = encode_packet(p);
  for (std::size_t at : {kHeaderBytes + 6, kHeaderBytes + 14, kHeaderBytes + 28}) {
    d[at] = std::byte{0xFF};
  }
  Packet q;
  REQUIRE(parse(d, &q) == ParseError::kNone);
  CHECK(same(p, q));
}

TEST_CASE("every ParseError is reachable", "[net][protocol]") {
  Packet p;
  p.op = Op::kGet;
  p.key = "key";
  const Bytes good = encode_packet(p);
  std::set<ParseError> seen = {ParseError::kNone};

  auto expect = [&](const Bytes& d, ParseError e) {
    CHECK(parse(d) == e);
    CHECK(check_datagram(d) == e);
    CHECK(packet_key(d).empty());
    seen.insert(e);
  };

  expect(Bytes(good.begin(), good.begin() + 10), ParseError::kTruncated);
  expect(Bytes(good.begin(), good.end() - 1), ParseError::kTruncated);
  Bytes d = good;
  d[1] = std::byte{0xE2};
  expect(d, ParseError::kBadMagic);
  d = good;
  d[2] = std::byte{2};
  expect(d, ParseError::kUnknownVersion);
  d[2] = std::byte{0};
  expect(d, ParseError::kUnknownVersion);
  for (int op : {0, static_cast<int>(forein::net::kLastOp) + 1, 255}) {
    d = good;
    d[3] = static_cast<std::byte>(op);
    expect(d, ParseError::kUnknownOp);
  }
  for (int bit = 4; bit < 8; ++bit) {
    d = good;
    d[4] = static_cast<std::byte>(1 << bit);
    expect(d, ParseError::kUnknownFlags);
  }
  // Key length 1025, with the datagram as long as it says.
  d = good;
  d[6] = std::byte{0x04};
  d[7] = std::byte{0x01};
  d.resize(kHeaderBytes + 1025);
  expect(d, ParseError::kKeyTooLong);
  d = good;
  d.push_back(std::byte{0});
  expect(d, ParseError::kTrailingBytes);
  // A flag whose trailer is missing is a truncation.
  d = good;
  d[4] = std::byte{kFlagFattree};
  expect(d, ParseError::kTruncated);

  // A reply whose count disagrees with its entries.
  Packet r;
  r.op = Op::kReply;
  r.count = 2;
  r.value = encode_scan_entries(std::vector<ScanEntry>{{"a", "1"}, {"b", "2"}});
  Bytes reply = encode_packet(r);
  REQUIRE(parse(reply) == ParseError::kNone);
  d = reply;
  d[23] = std::byte{3};  // count 3, two entries
  expect(d, ParseError::kBadScanEntries);
  d = reply;
  d[23] = std::byte{1};  // count 1, two entries
  expect(d, ParseError::kBadScanEntries);
  d = reply;
  d[kHeaderBytes + 5] = std::byte{0x20};  // first value length past the area
  expect(d, ParseError::kBadScanEntries);
  d = reply;
  d[kHeaderBytes] = std::byte{0x04};  // first key length 1025+
  d[kHeaderBytes + 1] = std::byte{0x01};
  expect(d, ParseError::kBadScanEntries);

  // A visibility header with an unknown state, or nonzero padding.
  Packet v = p;
  v.visibility = forein::net::VisibilityHeader{7, forein::net::VisState::kStored, 0xABCD, 9, 0};
  const Bytes with_visibility = encode_packet(v);
  REQUIRE(parse(with_visibility) == ParseError::kNone);
  const std::size_t at = forein::net::visibility_offset(with_visibility);
  REQUIRE(at == with_visibility.size() - forein::net::kVisibilityHeaderBytes);
  d = with_visibility;
  d[at + 2] = std::byte{forein::net::kMaxVisState + 1};
  expect(d, ParseError::kBadVisibility);
  d = with_visibility;
  d[at + 3] = std::byte{1};
  expect(d, ParseError::kBadVisibility);

  CHECK(seen.size() == kParseErrors);
  std::set<std::string> names;
  for (ParseError e : seen) names.insert(forein::net::to_string(e));
  CHECK(names.size() == kParseErrors);
  CHECK(std::string(forein::net::to_string(ParseError::kTruncated)) == "truncated");
}

TEST_CASE("every truncation and extension of a valid packet is rejected", "[net][protocol]") {
  for (bool h : {false, true}) {
    for (bool f : {false, true}) {
      for (const Packet& p : samples(h, f)) {
        const Bytes d = encode_packet(p);
        for (std::size_t n = 0; n < d.size(); ++n) {
          Bytes cut(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(n));
          INFO("op " << static_cast<int>(p.op) << " length " << n << " of " << d.size());
          CHECK(parse(cut) == ParseError::kTruncated);
          Bytes copy = cut;
          CHECK_FALSE(set_hint_trailer(copy, hints(1, 1, 0, 0)));
          CHECK(copy == cut);
        }
        Bytes longer = d;
        longer.push_back(std::byte{0});
        CHECK(parse(longer) == ParseError::kTrailingBytes);
      }
    }
  }
}

TEST_CASE("random and mutated bytes never crash", "[net][protocol]") {
  std::mt19937_64 rng(forein::testing::test_seed("protocol random bytes"));
  std::vector<Bytes> valid;
  for (bool h : {false, true}) {
    for (bool f : {false, true}) {
      for (const Packet& p : samples(h, f)) valid.push_back(encode_packet(p));
    }
  }
  std::size_t parsed = 0;
  for (int i = 0; i < 200000; ++i) {
    Bytes d;
    if (i % 2 == 0) {
      d.resize(rng() % 80);
      for (std::byte& b : d) b = static_cast<std::byte>(rng());
      if (d.size() >= 3 && rng() % 2 == 0) {  // get past magic and version
        d[0] = std::byte{0xF0};
        d[1] = std::byte{0xE1};
        d[2] = std::byte{1};
      }
    } else {
      d = valid[rng() % valid.size()];
      for (int k = 1 + static_cast<int>(rng() % 4); k > 0; --k) {
        d[rng() % d.size()] = static_cast<std::byte>(rng());
      }
      if (rng() % 4 == 0) d.resize(rng() % (d.size() + 1));
    }
    Packet q;
    ParseError e = parse_packet(d, &q);
    REQUIRE(check_datagram(d) == e);
    if (e != ParseError::kNone) continue;
    ++parsed;
    Packet again;
    REQUIRE(parse(encode_packet(q), &again) == ParseError::kNone);
    REQUIRE(same(q, again));
    Bytes h = d;
    REQUIRE(set_hint_trailer(h, hints(9, 9, 9, 9)));
    REQUIRE(parse(h) == ParseError::kNone);
    (void)decode_scan_entries(q.value);
  }
  CHECK(parsed > 0);
}

TEST_CASE("set_hint_trailer and set_fattree_header rewrite in place", "[net][protocol]") {
  const StartHints hh = hints(0xCAFEBABE, 2, 0x1234, 1);
  const FattreeHeader ff{0x0102030405060708ull, 3, 2};
  for (bool h : {false, true}) {
    for (bool f : {false, true}) {
      for (const Packet& p : samples(h, f)) {
        Bytes d = encode_packet(p);
        REQUIRE(set_hint_trailer(d, hh));
        Packet want = p;
        want.hints = hh;
        CHECK(d == encode_packet(want));
        REQUIRE(set_fattree_header(d, ff));
        want.fattree = ff;
        CHECK(d == encode_packet(want));
        // Replacing again leaves the size alone.
        std::size_t size = d.size();
        REQUIRE(set_hint_trailer(d, hints(5, 0, 0, 0)));
        REQUIRE(set_fattree_header(d, FattreeHeader{9, 9, 9}));
        CHECK(d.size() == size);
        Packet q;
        REQUIRE(parse(d, &q) == ParseError::kNone);
        CHECK(q.key == p.key);
        CHECK(q.value == p.value);
        CHECK(q.hints->primary.node == 5);
        CHECK(q.fattree == FattreeHeader{9, 9, 9});
      }
    }
  }

  // The fattree header first, then the hint: the hint still goes before it.
  Packet p;
  p.key = "k";
  Bytes d = encode_packet(p);
  REQUIRE(set_fattree_header(d, ff));
  REQUIRE(set_hint_trailer(d, hh));
  p.hints = hh;
  p.fattree = ff;
  CHECK(d == encode_packet(p));
}

TEST_CASE("set_hint_trailer_in_place writes into the buffer's room, or leaves it", "[net][protocol]") {
  const StartHints hh = hints(0xCAFEBABE, 2, 0x1234, 1);
  for (bool f : {false, true}) {
    for (const Packet& p : samples(false, f)) {
      const Bytes d = encode_packet(p);
      Packet want = p;
      want.hints = hh;
      // Room for the trailer: the datagram with the hint, as encode_packet writes it.
      Bytes room = d;
      room.resize(d.size() + kHintTrailerBytes, std::byte{0xEE});
      REQUIRE(forein::net::set_hint_trailer_in_place(room, d.size(), hh) == d.size() + kHintTrailerBytes);
      CHECK(room == encode_packet(want));
      // A hint already there is replaced without growing.
      REQUIRE(forein::net::set_hint_trailer_in_place(room, room.size(), hints(5, 0, 0, 0)) == room.size());
      // No room: 0 and nothing written.
      Bytes tight = d;
      CHECK(forein::net::set_hint_trailer_in_place(tight, d.size(), hh) == 0);
      CHECK(tight == d);
      // A length beyond the buffer, or junk: 0.
      CHECK(forein::net::set_hint_trailer_in_place(tight, d.size() + 1, hh) == 0);
    }
  }
  Bytes junk = bytes({1, 2, 3});
  junk.resize(3 + kHintTrailerBytes);
  CHECK(forein::net::set_hint_trailer_in_place(junk, 3, hh) == 0);
}

TEST_CASE("trailer rewrites refuse invalid and oversized datagrams", "[net][protocol]") {
  Bytes junk = bytes({1, 2, 3});
  CHECK_FALSE(set_hint_trailer(junk, StartHints{}));
  CHECK_FALSE(set_fattree_header(junk, FattreeHeader{}));
  CHECK(junk == bytes({1, 2, 3}));

  // A packet at kMaxDatagram - 8 bytes has no room for either trailer.
  Packet p;
  p.op = Op::kPut;
  p.key = "k";
  p.value.assign(kMaxDatagram - 8 - kHeaderBytes - 1, 'v');
  Bytes d = encode_packet(p);
  REQUIRE(d.size() == kMaxDatagram - 8);
  const Bytes before = d;
  CHECK_FALSE(set_hint_trailer(d, StartHints{}));
  CHECK_FALSE(set_fattree_header(d, FattreeHeader{}));
  CHECK(d == before);
  // ... but one already there can be replaced.
  p.value.resize(p.value.size() - kHintTrailerBytes);
  p.hints = StartHints{};
  d = encode_packet(p);
  REQUIRE(set_hint_trailer(d, hints(1, 1, 1, 1)));
  CHECK(d.size() == kMaxDatagram - 8);
}

TEST_CASE("encode_packet rejects what the parser would", "[net][protocol]") {
  Packet p;
  p.key.assign(kMaxKeyBytes + 1, 'k');
  CHECK_THROWS_AS(encode_packet(p), InvalidArgument);
  p.key = "k";
  p.value.assign(kMaxDatagram, 'v');
  CHECK_THROWS_AS(encode_packet(p), InvalidArgument);
  p.value.assign(kMaxDatagram - kHeaderBytes - 1, 'v');
  CHECK(encode_packet(p).size() == kMaxDatagram);
  p.hints = StartHints{};
  CHECK_THROWS_AS(encode_packet(p), InvalidArgument);

  Packet r;
  r.op = Op::kReply;
  r.count = 2;
  r.value = encode_scan_entries(std::vector<ScanEntry>{{"a", "1"}});
  CHECK_THROWS_AS(encode_packet(r), InvalidArgument);

  Packet bad;
  bad.op = static_cast<Op>(0);
  CHECK_THROWS_AS(encode_packet(bad), InvalidArgument);
  bad.op = static_cast<Op>(static_cast<std::uint8_t>(forein::net::kLastOp) + 1);
  CHECK_THROWS_AS(encode_packet(bad), InvalidArgument);
  bad.op = Op::kClear;
  bad.visibility = forein::net::VisibilityHeader{};
  bad.visibility->state = static_cast<forein::net::VisState>(forein::net::kMaxVisState + 1);
  CHECK_THROWS_AS(encode_packet(bad), InvalidArgument);
}

TEST_CASE("SCAN entries encode and decode", "[net][protocol]") {
  std::vector<ScanEntry> none;
  CHECK(encode_scan_entries(none).empty());
  REQUIRE(decode_scan_entries("").has_value());
  CHECK(decode_scan_entries("")->empty());

  std::mt19937_64 rng(forein::testing::test_seed("protocol scan entries"));
  std::vector<ScanEntry> entries;
  for (int i = 0; i < 50; ++i) {
    ScanEntry e;
    e.key.resize(rng() % 20);
    e.value.resize(rng() % 40);
    for (char& c : e.key) c = static_cast<char>(rng());
    for (char& c : e.value) c = static_cast<char>(rng());
    entries.push_back(e);
  }
  entries.push_back({std::string(kMaxKeyBytes, 'k'), ""});
  std::string enc = encode_scan_entries(entries);
  auto dec = decode_scan_entries(enc);
  REQUIRE(dec.has_value());
  REQUIRE(dec->size() == entries.size());
  for (std::size_t i = 0; i < entries.size(); ++i) {
    CHECK((*dec)[i].key == entries[i].key);
    CHECK((*dec)[i].value == entries[i].value);
  }

  // Every proper prefix that is not an entry boundary is rejected.
  std::set<std::size_t> boundaries = {0};
  std::size_t at = 0;
  for (const ScanEntry& e : entries) boundaries.insert(at += 6 + e.key.size() + e.value.size());
  for (std::size_t n = 0; n < enc.size(); ++n) {
    auto part = decode_scan_entries(std::string_view(enc).substr(0, n));
    CHECK(part.has_value() == (boundaries.count(n) == 1));
  }

  std::vector<ScanEntry> too_long = {{std::string(kMaxKeyBytes + 1, 'k'), "v"}};
  CHECK_THROWS_AS(encode_scan_entries(too_long), InvalidArgument);
  Bytes b = bytes({0x04, 0x01, 0, 0, 0, 0});
  std::string s(reinterpret_cast<const char*>(b.data()), b.size());
  s.append(1025, 'k');
  CHECK_FALSE(decode_scan_entries(s).has_value());

  // A SCAN reply carries them, count = entries.
  Packet r;
  r.op = Op::kReply;
  r.count = static_cast<std::uint32_t>(entries.size());
  r.value = enc;
  Packet q;
  REQUIRE(parse(encode_packet(r), &q) == ParseError::kNone);
  auto back = decode_scan_entries(q.value);
  REQUIRE(back.has_value());
  CHECK(back->size() == entries.size());
}

TEST_CASE("secondary index: entries, records and timestamps encode and decode", "[net][protocol]") {
  using namespace forein::net;
  const std::string entry = encode_sidx_entry("pk", "secondary");
  CHECK(entry == std::string("\x00\x02pk\x00\x09secondary", 15));
  const auto e = decode_sidx_entry(entry);
  REQUIRE(e.has_value());
  CHECK(e->primary == "pk");
  CHECK(e->secondary == "secondary");
  // The paper's keys (8 + 8 bytes) fit a slot's 96 bytes with room.
  CHECK(encode_sidx_entry(dataset_key(1), dataset_key(2)).size() == 20);
  // Every truncation and extension, empty keys: refused.
  for (std::size_t n = 0; n < entry.size(); ++n) CHECK_FALSE(decode_sidx_entry(entry.substr(0, n)).has_value());
  CHECK_FALSE(decode_sidx_entry(entry + "x").has_value());
  CHECK_FALSE(decode_sidx_entry(encode_sidx_entry("", "s")).has_value());
  CHECK_FALSE(decode_sidx_entry(encode_sidx_entry("p", "")).has_value());
  CHECK_FALSE(decode_sidx_entry(std::string("\xff\xff", 2)).has_value());

  const std::string record = encode_sidx_record("sk", "payload");
  const auto r = decode_sidx_record(record);
  REQUIRE(r.has_value());
  CHECK(r->secondary == "sk");
  CHECK(r->payload == "payload");
  CHECK(decode_sidx_record(encode_sidx_record("sk", ""))->payload.empty());
  CHECK_FALSE(decode_sidx_record("").has_value());
  CHECK_FALSE(decode_sidx_record(std::string("\x00\x00" "x", 3)).has_value());
  CHECK_FALSE(decode_sidx_record(std::string("\x00\x05" "abc", 5)).has_value());

  CHECK(encode_sidx_ts(0x01020304) == "\x01\x02\x03\x04");
  CHECK(decode_sidx_ts(encode_sidx_ts(0xFFFFFFFFu)) == 0xFFFFFFFFu);
  CHECK_FALSE(decode_sidx_ts("abc").has_value());

  // Secondary keys: deterministic, in range, spread (about keys/S each),
  // and a new version moves the key.
  constexpr std::uint64_t kS = 40;
  std::vector<int> hits(kS, 0);
  int moved = 0;
  for (std::uint64_t i = 0; i < 4000; ++i) {
    const std::uint64_t j = secondary_index_of(i, 0, kS);
    REQUIRE(j < kS);
    CHECK(secondary_key_of(i, 0, kS) == dataset_key(j));
    ++hits[j];
    if (secondary_index_of(i, 1, kS) != j) ++moved;
  }
  for (std::uint64_t j = 0; j < kS; ++j) {
    INFO("secondary key " << j);
    CHECK(hits[j] > 50);
    CHECK(hits[j] < 150);
  }
  CHECK(moved > 3800);
  CHECK(default_secondary_keys(100000000) == 4000000);
  CHECK(default_secondary_keys(10) == 1);
}

TEST_CASE("READ: the documented bytes, the header's checks and the switch's rewrite", "[net][protocol]") {
  using forein::net::decode_read_header;
  using forein::net::encode_read_header;
  using forein::net::kReadRewritten;
  using forein::net::kReadStart;
  using forein::net::load_read_header;
  using forein::net::ReadHeader;
  using forein::net::read_header_offset;
  using forein::net::store_read_header;
  Packet p;
  p.op = Op::kRead;
  p.seq = 1;
  p.key = std::string("\0\0\0\0\0\0\0\5", 8);
  p.value = encode_read_header(ReadHeader{0x7C5D3A8, 296, kReadStart});
  const std::vector<std::byte> d = encode_packet(p);
  // docs/protocol.md, "READ": the example, byte for byte.
  const std::vector<int> want = {0xF0, 0xE1, 0x01, 0x0F, 0x00, 0x00, 0x00, 0x08, 0, 0, 0, 0, 0, 0, 0, 1,
                                 0, 0, 0, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5,
                                 0, 0, 0, 0, 0x07, 0xC5, 0xD3, 0xA8, 0, 0, 0x01, 0x28, 0x00, 0x01, 0, 0};
  REQUIRE(d.size() == want.size());
  for (std::size_t i = 0; i < want.size(); ++i) CHECK(std::to_integer<int>(d[i]) == want[i]);

  // The switch's in-place rewrite: same length, the address and the flag.
  std::vector<std::byte> frame = d;
  const std::size_t at = read_header_offset(frame);
  REQUIRE(at == 32);
  ReadHeader h = load_read_header(frame.data() + at);
  CHECK(h == ReadHeader{0x7C5D3A8, 296, kReadStart});
  h.address = 0x1234560;
  h.flags |= kReadRewritten;
  store_read_header(frame.data() + at, h);
  Packet q;
  REQUIRE(parse_packet(frame, &q) == ParseError::kNone);
  CHECK(q.key == p.key);
  CHECK(decode_read_header(q.value) == std::optional<ReadHeader>(ReadHeader{0x1234560, 296, kReadStart | kReadRewritten}));

  // Not a READ, or not exactly one header: no offset.
  Packet get = p;
  get.op = Op::kGet;
  CHECK(read_header_offset(encode_packet(get)) == 0);
  Packet longer = p;
  longer.value += "x";
  CHECK(read_header_offset(encode_packet(longer)) == 0);
  CHECK(read_header_offset(std::vector<std::byte>(d.begin(), d.end() - 1)) == 0);
  // Unknown flags and a nonzero reserved field are refused; short values too.
  std::string v = encode_read_header(ReadHeader{8, 8, 0});
  CHECK(decode_read_header(v).has_value());
  v[12] = '\x80';
  CHECK_FALSE(decode_read_header(v).has_value());
  v = encode_read_header(ReadHeader{8, 8, 0});
  v[15] = '\x01';
  CHECK_FALSE(decode_read_header(v).has_value());
  CHECK_FALSE(decode_read_header(v.substr(0, 15)).has_value());
}

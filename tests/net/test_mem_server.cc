// forein-mem-server's memory node and its offload source (net/mem_server,
// docs/remote-read.md, issue 42 "Bad input and faults"), driven directly
// through MemoryNode::handle (encoded datagrams in, encoded replies out):
//   - a READ of the header, of every node and of records returns the
//     region's bytes behind the echoed READ header; a Walker whose READs go
//     through handle() finds every key in height + 1 READs;
//   - every malformed READ (address at or past the end, address + length
//     past the end, length above 32768, a value that is not one 16-byte
//     header, unknown flag bits, nonzero reserved field) gets its ERROR
//     status and is counted under its reason, and nothing else moves;
//     random READ headers against a model of those rules (seeded);
//   - malformed datagrams and REPLY/ERROR packets are dropped and counted;
//   - PUT updates and inserts (a Walker over Region::read finds the new
//     value), refuses a non-8-byte key or a value too long, fails cleanly
//     on a full region; random PUTs against a std::map model (seeded);
//     GET, SCAN, DELETE and the other ops: BAD_REQUEST; STATS;
//   - RegionIndexSource lists every node once with its level and [lo, hi)
//     (per level as the build's nodes_per_level, the intervals tiling the
//     key space), words ascending; after PUTs that split nodes the
//     on_nodes_changed hook fires (and only then) and the source sees the
//     new nodes; the key generation counts inserts, not updates;
//   - READs and walks on three threads while PUTs run (label concurrent:
//     also under ThreadSanitizer): every value read is one written at or
//     after the version acknowledged before the lookup began, no key that
//     was there is missed (a walk may give up: no answer, never a wrong one).
#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "mem_server/memory_node.h"
#include "mem_server/region_source.h"
#include "protocol/dataset.h"
#include "protocol/packet.h"
#include "remote/build.h"
#include "remote/node_layout.h"
#include "remote/region.h"
#include "remote/walk.h"
#include "support/seed.h"

namespace {

using namespace forein::net;
namespace rr = forein::net::remote;
using forein::net::mem::BadRead;
using forein::net::mem::MemoryNode;
using forein::net::mem::RegionIndexSource;

constexpr std::uint32_t kValueBytes = 40;

// A region built from keys (words) with dataset_long_value(key, 0, kValueBytes)
// values, as forein-mem-server builds its shard, plus `spare` bytes for PUTs.
struct Built {
  std::unique_ptr<rr::Region> region;
  rr::BuildStats stats;
  rr::BuildOptions options;
};

Built build_region(const std::vector<std::uint64_t>& keys, std::uint32_t fanout, double fill, std::uint64_t spare) {
  Built b;
  b.options.geometry = rr::geometry_for_fanout(fanout);
  b.options.fill = fill;
  b.region = std::make_unique<rr::Region>(rr::build_bytes(keys.size(), keys.size() * kValueBytes, b.options) + spare);
  b.stats = rr::build(
      *b.region, keys.size(),
      [&](std::uint64_t i, std::string& value) {
        value = dataset_long_value(keys[i], 0, kValueBytes);
        return keys[i];
      },
      b.options);
  return b;
}

std::vector<std::uint64_t> keys_step(std::uint64_t n, std::uint64_t step) {
  std::vector<std::uint64_t> k(n);
  for (std::uint64_t i = 0; i < n; ++i) k[i] = i * step;
  return k;
}

std::string raw_header(std::uint64_t address, std::uint32_t length, std::uint16_t flags, std::uint16_t reserved = 0) {
  std::string h = encode_read_header(ReadHeader{address, length, flags});
  h[14] = static_cast<char>(reserved >> 8);
  h[15] = static_cast<char>(reserved & 0xFF);
  return h;
}

Packet read_packet(std::string header_value, std::string key = dataset_key(1)) {
  Packet p;
  p.op = Op::kRead;
  p.key = std::move(key);
  p.value = std::move(header_value);
  return p;
}

Packet read_packet(std::uint64_t address, std::uint32_t length, std::uint16_t flags = 0,
                   std::string key = dataset_key(1)) {
  return read_packet(encode_read_header(ReadHeader{address, length, flags}), std::move(key));
}

std::atomic<std::uint64_t> next_seq{1};

// One request through handle(): encoded, served, the reply parsed back;
// it echoes the seq and fits a datagram.
Packet call(MemoryNode& node, Packet request) {
  request.seq = next_seq.fetch_add(1);
  const std::vector<std::byte> wire = encode_packet(request);
  const std::optional<std::vector<std::byte>> out = node.handle(wire);
  REQUIRE(out.has_value());
  REQUIRE(out->size() <= kMaxDatagram);
  Packet reply;
  REQUIRE(parse_packet(*out, &reply) == ParseError::kNone);
  REQUIRE(reply.seq == request.seq);
  REQUIRE((reply.op == Op::kReply || reply.op == Op::kError));
  return reply;
}

// call() without Catch2 assertions, for the concurrent readers.
std::optional<Packet> call_quiet(MemoryNode& node, Packet request) {
  request.seq = next_seq.fetch_add(1);
  const std::optional<std::vector<std::byte>> out = node.handle(encode_packet(request));
  if (!out) return std::nullopt;
  Packet reply;
  if (parse_packet(*out, &reply) != ParseError::kNone || reply.seq != request.seq) return std::nullopt;
  return reply;
}

std::vector<std::byte> region_bytes(const rr::Region& region, std::uint64_t address, std::size_t length) {
  std::vector<std::byte> out(length);
  REQUIRE(region.read(address, length, out.data()) == rr::ReadError::kOk);
  return out;
}

std::vector<std::byte> reply_bytes(const Packet& reply) {
  REQUIRE(reply.value.size() >= kReadHeaderBytes);
  const auto* p = reinterpret_cast<const std::byte*>(reply.value.data());
  return std::vector<std::byte>(p + kReadHeaderBytes, p + reply.value.size());
}

// A READ's bytes (REPLY, OK, the header echoed exactly).
std::vector<std::byte> read_ok(MemoryNode& node, std::uint64_t address, std::uint32_t length,
                               std::uint16_t flags = 0) {
  const Packet r = call(node, read_packet(address, length, flags));
  INFO("READ " << address << " + " << length << " flags " << flags);
  REQUIRE(r.op == Op::kReply);
  REQUIRE(r.status == Status::kOk);
  REQUIRE(r.value.size() == kReadHeaderBytes + length);
  const std::optional<ReadHeader> h = decode_read_header(r.value);
  REQUIRE(h.has_value());
  CHECK(*h == (ReadHeader{address, length, flags}));
  return reply_bytes(r);
}

// A Walker whose every READ is a READ datagram through handle().
rr::ReadFn node_reader(MemoryNode& node, std::uint64_t* reads = nullptr) {
  return [&node, reads](rr::Address a, std::size_t len, std::byte* out) {
    if (reads != nullptr) ++*reads;
    const std::optional<Packet> r =
        call_quiet(node, read_packet(a, static_cast<std::uint32_t>(len)));
    if (!r || r->op != Op::kReply || r->value.size() != kReadHeaderBytes + len) return false;
    std::memcpy(out, r->value.data() + kReadHeaderBytes, len);
    return true;
  };
}

rr::ReadFn region_reader(const rr::Region& region) {
  return [&region](rr::Address a, std::size_t len, std::byte* out) {
    return region.read(a, len, out) == rr::ReadError::kOk;
  };
}

std::uint64_t bad_reads(MemoryNode& node, BadRead r) { return node.stats().bad_reads(r); }

struct Counts {
  std::uint64_t reads = 0, bad_requests = 0;
  std::uint64_t bad[forein::net::mem::kBadReads] = {};
};

Counts counts(MemoryNode& node) {
  Counts c;
  c.reads = node.stats().reads();
  c.bad_requests = node.stats().bad_requests();
  for (std::size_t i = 0; i < forein::net::mem::kBadReads; ++i) c.bad[i] = bad_reads(node, static_cast<BadRead>(i));
  return c;
}

// The level-by-level view of a node list: per level, intervals sorted by lo.
std::map<int, std::vector<forein::NodeInterval>, std::greater<>> by_level(
    const std::vector<forein::NodeInterval>& nodes) {
  std::map<int, std::vector<forein::NodeInterval>, std::greater<>> levels;
  for (const auto& n : nodes) levels[n.level].push_back(n);
  for (auto& [level, v] : levels) {
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.lo < b.lo; });
  }
  return levels;
}

// Every node once, each level's intervals tiling [0, inf), each node
// readable at node_address(id) with the same level and fences.
void check_source(const rr::Region& region, const std::vector<forein::NodeInterval>& nodes,
                  std::uint32_t height, std::uint64_t index) {
  std::set<forein::PageId> ids;
  for (const auto& n : nodes) {
    INFO("node " << n.node);
    CHECK(ids.insert(n.node).second);
    CHECK(n.index == index);
    CHECK(n.node != forein::kNoPage);
  }
  const auto levels = by_level(nodes);
  REQUIRE(levels.size() == height);
  int expect = static_cast<int>(height) - 1;
  for (const auto& [level, v] : levels) {
    INFO("level " << level);
    CHECK(level == expect--);
    REQUIRE(!v.empty());
    CHECK(v.front().lo == 0);
    for (std::size_t i = 0; i + 1 < v.size(); ++i) {
      CHECK(!v[i].hi_inf);
      CHECK(v[i].hi == v[i + 1].lo);
    }
    CHECK(v.back().hi_inf);
    if (level == static_cast<int>(height) - 1) CHECK(v.size() == 1);
  }
  const rr::RegionHeader h = [&] {
    std::byte b[rr::kRegionHeaderBytes];
    rr::RegionHeader out;
    REQUIRE(region.read(0, sizeof b, b) == rr::ReadError::kOk);
    REQUIRE(rr::check_header(b, &out) == rr::Check::kOk);
    return out;
  }();
  std::vector<std::byte> buf(h.geometry.node_bytes);
  for (const auto& n : nodes) {
    const rr::Address a = rr::node_address(n.node);
    REQUIRE(region.read(a, buf.size(), buf.data()) == rr::ReadError::kOk);
    rr::NodeView v;
    REQUIRE(rr::check_node(buf, h.geometry, a, &v) == rr::Check::kOk);
    CHECK(v.level == n.level);
    CHECK(v.lo == n.lo);
    CHECK(v.hi_inf == n.hi_inf);
    if (!v.hi_inf) CHECK(v.hi == n.hi);
    CHECK(v.version == n.version);
  }
}

// A RegionIndexSource over region; its key generation from `generation`
// (the owner's count of inserts; 0 where a test does not need one).
std::unique_ptr<RegionIndexSource> make_source(const rr::Region& region, std::uint64_t index,
                                               std::function<std::uint64_t()> generation = {}) {
  if (!generation) generation = [] { return std::uint64_t{0}; };
  return std::make_unique<RegionIndexSource>(region, index, std::move(generation));
}

std::vector<std::uint64_t> words_of(const RegionIndexSource& source) {
  std::vector<std::uint64_t> words;
  source.for_each_word([&](forein::Word w) {
    words.push_back(w);
    return true;
  });
  return words;
}

}  // namespace

TEST_CASE("memory node: READs return the region's bytes behind the echoed header", "[mem_server]") {
  const std::vector<std::uint64_t> keys = keys_step(600, 1);
  for (const std::uint32_t fanout : {4u, 16u}) {
    DYNAMIC_SECTION("fanout " << fanout) {
      Built b = build_region(keys, fanout, 1.0, 4096);
      std::vector<std::uint64_t> sampled;
      MemoryNode::Hooks hooks;
      hooks.on_start_read = [&](std::uint64_t w) { sampled.push_back(w); };
      MemoryNode node(*b.region, hooks);

      // The header.
      {
        const std::vector<std::byte> bytes = read_ok(node, 0, rr::kRegionHeaderBytes);
        rr::RegionHeader h;
        REQUIRE(rr::check_header(bytes, &h) == rr::Check::kOk);
        CHECK(h.root == b.stats.root);
        CHECK(h.height == b.stats.height);
        CHECK(h.key_count == keys.size());
        CHECK(h.geometry.fanout == fanout);
      }
      // Every node, as the source lists it: the region's bytes, and they check.
      const std::vector<forein::NodeInterval> nodes = make_source(*b.region, 7)->nodes();
      std::uint64_t total = 0;
      for (const auto n : b.stats.nodes_per_level) total += n;
      REQUIRE(nodes.size() == total);
      const std::uint32_t nb = b.options.geometry.node_bytes;
      for (const auto& n : nodes) {
        const rr::Address a = rr::node_address(n.node);
        const std::vector<std::byte> bytes = read_ok(node, a, nb);
        CHECK(bytes == region_bytes(*b.region, a, nb));
        rr::NodeView v;
        REQUIRE(rr::check_node(bytes, b.options.geometry, a, &v) == rr::Check::kOk);
        CHECK(v.level == n.level);
      }
      // Any slice, any alignment, and the flags echoed.
      CHECK(read_ok(node, 3, 5) == region_bytes(*b.region, 3, 5));
      CHECK(read_ok(node, b.region->size() - 1, 1) == region_bytes(*b.region, b.region->size() - 1, 1));
      CHECK(read_ok(node, 64, static_cast<std::uint32_t>(std::min<std::uint64_t>(rr::kMaxReadBytes,
                                                                                  b.region->size() - 64))) ==
            region_bytes(*b.region, 64, std::min<std::uint64_t>(rr::kMaxReadBytes, b.region->size() - 64)));
      CHECK(read_ok(node, b.region->size(), 0).empty());  // zero bytes at the end: OK
      CHECK(read_ok(node, 8, 0).empty());
      CHECK(read_ok(node, b.stats.root, nb, kReadRewritten) == region_bytes(*b.region, b.stats.root, nb));
      CHECK(sampled.empty());
      // Start READs: echoed, counted, the key word sampled (an 8-byte key only).
      const std::uint64_t reads_before = node.stats().reads();
      CHECK(read_ok(node, b.stats.root, nb, kReadStart | kReadRewritten).size() == nb);
      {
        const Packet r = call(node, read_packet(b.stats.root, nb, kReadStart, dataset_key(321)));
        CHECK(r.op == Op::kReply);
        const Packet odd = call(node, read_packet(b.stats.root, nb, kReadStart, "short"));
        CHECK(odd.op == Op::kReply);
      }
      CHECK(node.stats().reads() == reads_before + 3);
      CHECK(sampled == std::vector<std::uint64_t>{1, 321});

      // A walk whose READs are datagrams through handle(): every key, the
      // dataset's value, height + 1 READs (the nodes and the record).
      std::uint64_t reads = 0;
      rr::Walker walker(node_reader(node, &reads));
      REQUIRE(walker.open());
      for (const std::uint64_t k : keys) {
        reads = 0;
        const rr::LookupResult r = walker.lookup(k);
        INFO("key " << k);
        REQUIRE(r.status == rr::LookupStatus::kFound);
        CHECK(r.value == dataset_long_value(k, 0, kValueBytes));
        CHECK(reads == b.stats.height + 1);
      }
      CHECK(walker.lookup(keys.back() + 1).status == rr::LookupStatus::kNotFound);
      // Nothing refused along the way.
      const Counts c = counts(node);
      for (const auto x : c.bad) CHECK(x == 0);
      CHECK(c.bad_requests == 0);
    }
  }
}

TEST_CASE("memory node: every malformed READ gets its error and is counted under its reason", "[mem_server]") {
  Built b = build_region(keys_step(300, 1), 16, 1.0, 4096);
  bool sampled = false;
  MemoryNode::Hooks hooks;
  hooks.on_start_read = [&](std::uint64_t) { sampled = true; };
  MemoryNode node(*b.region, hooks);
  const std::uint64_t size = b.region->size();
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();

  struct Case {
    const char* what;
    std::string value;  // the READ's value (normally one header)
    Status status;
    BadRead reason;
  };
  const std::vector<Case> cases = {
      {"address at the end, 1 byte", raw_header(size, 1, 0), Status::kBadAddress, BadRead::kOutOfRange},
      {"address past the end, 0 bytes", raw_header(size + 8, 0, 0), Status::kBadAddress, BadRead::kOutOfRange},
      {"address 2^64-1", raw_header(kMax, 8, 0), Status::kBadAddress, BadRead::kOutOfRange},
      {"address 2^63 (a start READ)", raw_header(std::uint64_t{1} << 63, 296, kReadStart), Status::kBadAddress,
       BadRead::kOutOfRange},
      {"address + length one past the end", raw_header(size - 8, 9, 0), Status::kBadAddress, BadRead::kPastEnd},
      {"address + length far past the end", raw_header(size - 1, 32768, 0), Status::kBadAddress,
       BadRead::kPastEnd},
      {"length 32769", raw_header(64, 32769, 0), Status::kBadAddress, BadRead::kTooLong},
      {"length 2^32-1", raw_header(64, 0xFFFFFFFFu, kReadStart), Status::kBadAddress, BadRead::kTooLong},
      {"length too long and address out of range", raw_header(kMax, 0x80000000u, 0), Status::kBadAddress,
       BadRead::kTooLong},
      {"empty value", std::string(), Status::kBadRequest, BadRead::kBadHeader},
      {"value of 15 bytes", raw_header(64, 8, 0).substr(0, 15), Status::kBadRequest, BadRead::kBadHeader},
      {"value of 17 bytes", raw_header(64, 8, 0) + "x", Status::kBadRequest, BadRead::kBadHeader},
      {"two headers", raw_header(64, 8, 0) + raw_header(64, 8, 0), Status::kBadRequest, BadRead::kBadHeader},
      {"flag bit 2", raw_header(64, 8, 1u << 2), Status::kBadRequest, BadRead::kBadHeader},
      {"flag bit 15 with start", raw_header(64, 8, 0x8000 | kReadStart), Status::kBadRequest, BadRead::kBadHeader},
      {"all flag bits", raw_header(64, 8, 0xFFFF), Status::kBadRequest, BadRead::kBadHeader},
      {"reserved 1", raw_header(64, 8, 0, 1), Status::kBadRequest, BadRead::kBadHeader},
      {"reserved 0x100 on a start READ", raw_header(64, 8, kReadStart, 0x100), Status::kBadRequest,
       BadRead::kBadHeader},
      {"reserved and too long", raw_header(kMax, 0xFFFFFFFFu, 0, 0xFFFF), Status::kBadRequest, BadRead::kBadHeader},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    const Counts before = counts(node);
    const Packet r = call(node, read_packet(c.value));
    CHECK(r.op == Op::kError);
    CHECK(r.status == c.status);
    if (c.status == Status::kBadAddress) {
      CHECK(r.value == c.value);  // which READ was refused: its header
    } else {
      CHECK(r.value.empty());
    }
    const Counts after = counts(node);
    for (std::size_t i = 0; i < forein::net::mem::kBadReads; ++i) {
      CHECK(after.bad[i] == before.bad[i] + (i == static_cast<std::size_t>(c.reason) ? 1 : 0));
    }
    CHECK(after.reads == before.reads);
    CHECK(after.bad_requests == before.bad_requests);
  }
  CHECK(!sampled);  // a refused start READ is no access
  CHECK(node.stats().bad_reads_total() == cases.size());
  CHECK(node.stats().bad_reads(BadRead::kOutOfRange) == 4);
  CHECK(node.stats().bad_reads(BadRead::kPastEnd) == 2);
  CHECK(node.stats().bad_reads(BadRead::kTooLong) == 3);
  CHECK(node.stats().bad_reads(BadRead::kBadHeader) == 10);
  // The JSON names them.
  forein::net::Json j = forein::net::Json::object();
  node.stats().add_json(j);
  CHECK(j["bad_reads"] == cases.size());
  CHECK(j["bad_reads_by_reason"]["out_of_range"] == 4);
  CHECK(j["bad_reads_by_reason"]["past_end"] == 2);
  CHECK(j["bad_reads_by_reason"]["too_long"] == 3);
  CHECK(j["bad_reads_by_reason"]["bad_header"] == 10);
  CHECK(j["reads"] == 0);

  // The node still serves after all that.
  const std::vector<std::byte> h = read_ok(node, 0, rr::kRegionHeaderBytes);
  rr::RegionHeader header;
  CHECK(rr::check_header(h, &header) == rr::Check::kOk);
  CHECK(read_ok(node, size - 8, 8) == region_bytes(*b.region, size - 8, 8));
}

TEST_CASE("memory node: random READ headers against the rules (seeded)", "[mem_server]") {
  Built b = build_region(keys_step(200, 3), 4, 0.75, 1024);
  MemoryNode node(*b.region, {});
  const std::uint64_t size = b.region->size();
  std::mt19937_64 rng(forein::testing::test_seed("mem_server random READs"));
  std::uint64_t expect[forein::net::mem::kBadReads] = {};
  std::uint64_t ok = 0;
  for (int i = 0; i < 3000; ++i) {
    const auto pick = [&](std::uint64_t n) { return std::uniform_int_distribution<std::uint64_t>(0, n - 1)(rng); };
    std::uint64_t address;
    switch (pick(4)) {
      case 0: address = pick(size + 1); break;
      case 1: address = size - std::min<std::uint64_t>(size, pick(64)); break;
      case 2: address = size + pick(64); break;
      default: address = rng(); break;
    }
    std::uint32_t length;
    switch (pick(4)) {
      case 0: length = static_cast<std::uint32_t>(pick(600)); break;
      case 1: length = static_cast<std::uint32_t>(rr::kMaxReadBytes - 4 + pick(8)); break;
      case 2: length = static_cast<std::uint32_t>(pick(std::uint64_t{1} << 32)); break;
      default: length = static_cast<std::uint32_t>(pick(rr::kMaxReadBytes + 1)); break;
    }
    const std::uint16_t flags = pick(4) == 0 ? static_cast<std::uint16_t>(rng()) : static_cast<std::uint16_t>(pick(4));
    const std::uint16_t reserved = pick(8) == 0 ? static_cast<std::uint16_t>(rng()) : 0;
    std::string value = raw_header(address, length, flags, reserved);
    if (pick(16) == 0) value.resize(pick(40));  // not one header
    INFO("READ " << address << " + " << length << " flags " << flags << " reserved " << reserved << ", value "
                 << value.size() << " bytes");
    const Packet r = call(node, read_packet(value, dataset_key(pick(1000))));
    // The model: the header's own checks first, then Region::read's.
    std::optional<BadRead> want;
    if (value.size() != kReadHeaderBytes || (flags & ~kReadKnownFlags) != 0 || reserved != 0) {
      want = BadRead::kBadHeader;
    } else if (length > rr::kMaxReadBytes) {
      want = BadRead::kTooLong;
    } else if (address > size || (address == size && length > 0)) {
      want = BadRead::kOutOfRange;
    } else if (length > size - address) {
      want = BadRead::kPastEnd;
    }
    if (!want) {
      ++ok;
      REQUIRE(r.op == Op::kReply);
      CHECK(r.value.substr(0, kReadHeaderBytes) == value);
      CHECK(reply_bytes(r) == region_bytes(*b.region, address, length));
      continue;
    }
    ++expect[static_cast<std::size_t>(*want)];
    REQUIRE(r.op == Op::kError);
    CHECK(r.status == (*want == BadRead::kBadHeader ? Status::kBadRequest : Status::kBadAddress));
    if (*want != BadRead::kBadHeader) CHECK(r.value == value);
  }
  CHECK(node.stats().reads() == ok);
  for (std::size_t i = 0; i < forein::net::mem::kBadReads; ++i) {
    INFO(forein::net::mem::to_string(static_cast<BadRead>(i)));
    CHECK(bad_reads(node, static_cast<BadRead>(i)) == expect[i]);
    CHECK(expect[i] > 0);  // every rule was exercised
  }
  CHECK(ok > 0);
}

TEST_CASE("memory node: malformed datagrams and replies are dropped and counted, never answered", "[mem_server]") {
  Built b = build_region(keys_step(100, 1), 16, 1.0, 0);
  MemoryNode node(*b.region, {});
  const std::vector<std::byte> good = encode_packet(read_packet(64, 8));
  CHECK(!node.handle({}).has_value());
  CHECK(node.stats().parse_errors(ParseError::kTruncated) == 1);
  for (std::size_t n = 1; n < good.size(); n += 5) {
    CHECK(!node.handle(std::span(good.data(), n)).has_value());
  }
  std::vector<std::byte> longer = good;
  longer.push_back(std::byte{0});
  CHECK(!node.handle(longer).has_value());
  CHECK(node.stats().parse_errors(ParseError::kTrailingBytes) == 1);
  std::vector<std::byte> magic = good;
  magic[0] = std::byte{0};
  CHECK(!node.handle(magic).has_value());
  CHECK(node.stats().parse_errors(ParseError::kBadMagic) == 1);
  std::vector<std::byte> op = good;
  op[3] = std::byte{99};
  CHECK(!node.handle(op).has_value());
  CHECK(node.stats().parse_errors(ParseError::kUnknownOp) == 1);
  for (const Op o : {Op::kReply, Op::kError}) {
    Packet p = read_packet(64, 8);
    p.op = o;
    CHECK(!node.handle(encode_packet(p)).has_value());
  }
  CHECK(node.stats().drops(forein::net::DropReason::kNotRequest) == 2);
  // Random bytes (seeded): no reply unless they parse as a request, and
  // then one that parses.
  std::mt19937_64 rng(forein::testing::test_seed("mem_server random datagrams"));
  for (int i = 0; i < 2000; ++i) {
    std::vector<std::byte> d = i % 2 == 0 ? good : std::vector<std::byte>(rng() % 80);
    for (int flips = 0; flips < 3 && !d.empty(); ++flips) d[rng() % d.size()] = static_cast<std::byte>(rng());
    Packet request;
    const bool parses = parse_packet(d, &request) == ParseError::kNone;
    const auto out = node.handle(d);
    if (!parses || request.op == Op::kReply || request.op == Op::kError) {
      CHECK(!out.has_value());
      continue;
    }
    REQUIRE(out.has_value());
    Packet r;
    REQUIRE(parse_packet(*out, &r) == ParseError::kNone);
    CHECK(r.seq == request.seq);
  }
  CHECK(node.stats().reads() + node.stats().bad_reads_total() + node.stats().bad_requests() > 0);
  // Still serving.
  CHECK(read_ok(node, 64, 8) == region_bytes(*b.region, 64, 8));
}

TEST_CASE("memory node: PUT updates and inserts; other ops refused; STATS", "[mem_server]") {
  Built b = build_region(keys_step(500, 2), 16, 0.75, 1 << 20);
  int changed = 0;
  MemoryNode::Hooks hooks;
  hooks.on_nodes_changed = [&] { ++changed; };
  hooks.stats_json = [] { return std::string("{\"program\":\"test\"}"); };
  MemoryNode node(*b.region, hooks);
  rr::Walker walker(region_reader(*b.region));

  const auto put = [&](std::string key, std::string value) {
    Packet p;
    p.op = Op::kPut;
    p.key = std::move(key);
    p.value = std::move(value);
    return call(node, p);
  };

  SECTION("update, insert, long values") {
    Packet r = put(dataset_key(10), dataset_long_value(10, 1, kValueBytes));
    CHECK(r.op == Op::kReply);
    CHECK(r.status == Status::kOk);
    rr::LookupResult l = walker.lookup(10);
    REQUIRE(l.status == rr::LookupStatus::kFound);
    CHECK(l.value == dataset_long_value(10, 1, kValueBytes));
    CHECK(l.record_version == 2);
    CHECK(node.writer_stats().updates == 1);

    r = put(dataset_key(11), "new");  // an odd key: an insert
    CHECK(r.status == Status::kOk);
    l = walker.lookup(11);
    REQUIRE(l.status == rr::LookupStatus::kFound);
    CHECK(l.value == "new");
    CHECK(node.writer_stats().inserts == 1);
    CHECK(node.header().key_count == 501);

    // A value longer than every one built (the walk's record READ grows).
    const std::string big = dataset_long_value(12, 3, rr::kMaxValueBytes);
    CHECK(put(dataset_key(12), big).status == Status::kOk);
    rr::Walker fresh(node_reader(node));
    l = fresh.lookup(12);
    REQUIRE(l.status == rr::LookupStatus::kFound);
    CHECK(l.value == big);
    CHECK(put(dataset_key(13), "").status == Status::kOk);
    l = fresh.lookup(13);
    REQUIRE(l.status == rr::LookupStatus::kFound);
    CHECK(l.value.empty());
    CHECK(changed == 0);  // 0.75 fill: no split yet
  }

  SECTION("bad PUTs: BAD_REQUEST, nothing written") {
    for (const std::string& key : {std::string(), std::string("1234567"), std::string("123456789"),
                                  std::string(1024, 'k')}) {
      INFO("key of " << key.size() << " bytes");
      const Packet r = put(key, "x");
      CHECK(r.op == Op::kError);
      CHECK(r.status == Status::kBadRequest);
    }
    const Packet r = put(dataset_key(20), std::string(rr::kMaxValueBytes + 1, 'v'));
    CHECK(r.op == Op::kError);
    CHECK(r.status == Status::kBadRequest);
    CHECK(node.stats().bad_requests() == 5);
    CHECK(node.writer_stats().updates + node.writer_stats().inserts == 0);
    CHECK(walker.lookup(20).value == dataset_long_value(20, 0, kValueBytes));
  }

  SECTION("GET, SCAN, DELETE and the other ops: BAD_REQUEST") {
    const std::vector<Op> ops = {Op::kGet,      Op::kDelete,   Op::kScan,     Op::kLogAppend, Op::kLogRead,
                                 Op::kLogFetch, Op::kMetaGet,  Op::kMetaPut,  Op::kMetaAsync, Op::kClear};
    for (const Op o : ops) {
      INFO("op " << static_cast<int>(o));
      Packet p;
      p.op = o;
      p.key = dataset_key(4);
      p.count = o == Op::kScan ? 10 : 0;
      const Packet r = call(node, p);
      CHECK(r.op == Op::kError);
      CHECK(r.status == Status::kBadRequest);
    }
    CHECK(node.stats().bad_requests() == ops.size());
    CHECK(node.stats().bad_reads_total() == 0);
  }

  SECTION("STATS") {
    Packet p;
    p.op = Op::kStats;
    const Packet r = call(node, p);
    CHECK(r.op == Op::kReply);
    CHECK(r.value == "{\"program\":\"test\"}");
    MemoryNode bare(*b.region, {});
    CHECK(call(bare, p).value == "{}");
    // The counters' own JSON.
    read_ok(node, 0, 64, kReadStart);
    (void)put(dataset_key(2), "v");
    (void)put("k", "v");
    forein::net::Json j = forein::net::Json::object();
    node.stats().add_json(j);
    for (const char* k : {"datagrams", "reads", "read_bytes", "start_reads", "rewritten_reads", "bad_reads",
                          "bad_reads_by_reason", "puts", "failed_puts", "bad_requests", "drops", "drops_by_reason"}) {
      INFO(k);
      CHECK(j.contains(k));
    }
    CHECK(j["datagrams"] == 4);
    CHECK(j["reads"] == 1);
    CHECK(j["read_bytes"] == 64);
    CHECK(j["start_reads"] == 1);
    CHECK(j["puts"] == 1);
    CHECK(j["bad_requests"] == 1);
  }
}

TEST_CASE("memory node: a full region fails PUTs cleanly and keeps serving", "[mem_server]") {
  Built b = build_region(keys_step(64, 2), 4, 1.0, 2048);
  MemoryNode node(*b.region, {});
  rr::Walker walker(node_reader(node));
  int ok = 0, full = 0;
  std::map<std::uint64_t, std::string> model;
  for (std::uint64_t k = 0; k < 128; ++k) model[k] = k % 2 == 0 ? dataset_long_value(k, 0, kValueBytes) : "";
  for (std::uint64_t k = 1; k < 128; k += 2) {
    Packet p;
    p.op = Op::kPut;
    p.key = dataset_key(k);
    p.value = dataset_long_value(k, 1, 200);
    const Packet r = call(node, p);
    if (r.op == Op::kReply) {
      ++ok;
      model[k] = p.value;
    } else {
      CHECK(r.status == Status::kServerError);
      ++full;
    }
  }
  CHECK(ok > 0);
  CHECK(full > 0);
  forein::net::Json j = forein::net::Json::object();
  node.stats().add_json(j);
  CHECK(j["failed_puts"] == full);
  CHECK(j["puts"] == ok);
  for (const auto& [k, v] : model) {
    INFO("key " << k);
    const rr::LookupResult r = walker.lookup(k);
    if (v.empty()) {
      CHECK(r.status == rr::LookupStatus::kNotFound);
    } else {
      REQUIRE(r.status == rr::LookupStatus::kFound);
      CHECK(r.value == v);
    }
  }
}

TEST_CASE("memory node: random PUTs against a model (seeded), splits fire on_nodes_changed", "[mem_server]") {
  const std::uint64_t seed = forein::testing::test_seed("mem_server random PUTs");
  std::mt19937_64 rng(seed);
  Built b = build_region(keys_step(400, 4), 4, 1.0, 8 << 20);
  const std::uint64_t index = kDatasetIndexId + 3;
  MemoryNode* owner = nullptr;  // the node below, once built
  const auto source_ptr = make_source(*b.region, index, [&owner] { return owner->key_generation(); });
  const RegionIndexSource& source = *source_ptr;
  int changed = 0;
  std::size_t nodes_in_hook = 0;
  MemoryNode::Hooks hooks;
  hooks.on_nodes_changed = [&] {
    ++changed;
    nodes_in_hook = source.nodes().size();  // as forein-mem-server does: the whole table again
  };
  MemoryNode node(*b.region, hooks);
  owner = &node;
  CHECK(source.key_generation() == 0);
  std::map<std::uint64_t, std::string> model;
  for (std::uint64_t i = 0; i < 400; ++i) model[i * 4] = dataset_long_value(i * 4, 0, kValueBytes);

  std::uint64_t initial = 0;
  for (const auto n : b.stats.nodes_per_level) initial += n;
  check_source(*b.region, source.nodes(), b.stats.height, index);

  rr::Walker walker(node_reader(node));
  for (int i = 0; i < 1500; ++i) {
    const std::uint64_t key = rng() % 2000;
    const std::string value = dataset_long_value(key, static_cast<std::uint32_t>(i + 1), 8 + rng() % 100);
    const rr::WriterStats before = node.writer_stats();
    const std::uint64_t generation_before = source.key_generation();
    const int changed_before = changed;
    Packet p;
    p.op = Op::kPut;
    p.key = dataset_key(key);
    p.value = value;
    const Packet r = call(node, p);
    REQUIRE(r.op == Op::kReply);
    model[key] = value;
    const rr::WriterStats after = node.writer_stats();
    // An insert changes the key set (the planner's words), an update does not.
    CHECK(source.key_generation() == generation_before + (after.inserts - before.inserts));
    // The hook fires exactly when the PUT split nodes.
    CHECK(changed == changed_before + (after.splits != before.splits ? 1 : 0));
    if (after.splits != before.splits) {
      CHECK(nodes_in_hook == initial + after.splits + after.root_splits);
    }
    if (i % 50 == 0) {
      const std::uint64_t probe = rng() % 2000;
      const rr::LookupResult l = walker.lookup(probe);
      const auto it = model.find(probe);
      INFO("probe " << probe);
      if (it == model.end()) {
        CHECK(l.status == rr::LookupStatus::kNotFound);
      } else {
        REQUIRE(l.status == rr::LookupStatus::kFound);
        CHECK(l.value == it->second);
      }
    }
  }
  const rr::WriterStats ws = node.writer_stats();
  CHECK(ws.splits > 0);
  CHECK(node.key_generation() == ws.inserts);
  CHECK(changed > 0);
  CHECK(changed < 1500);
  // Every key, through the node and straight from the region.
  rr::Walker direct(region_reader(*b.region));
  for (const auto& [k, v] : model) {
    INFO("key " << k);
    rr::LookupResult l = walker.lookup(k);
    REQUIRE(l.status == rr::LookupStatus::kFound);
    CHECK(l.value == v);
    l = direct.lookup(k);
    REQUIRE(l.status == rr::LookupStatus::kFound);
    CHECK(l.value == v);
  }
  // The source after the splits: every node once, the levels tiling the
  // key space, and every word in order.
  const rr::RegionHeader h = node.header();
  const std::vector<forein::NodeInterval> nodes = source.nodes();
  CHECK(nodes.size() == initial + ws.splits + ws.root_splits);
  check_source(*b.region, nodes, h.height, index);
  std::vector<std::uint64_t> want;
  for (const auto& [k, v] : model) want.push_back(k);
  CHECK(words_of(source) == want);
}

TEST_CASE("RegionIndexSource: every node once with its level and range, words ascending", "[mem_server]") {
  for (const std::uint32_t fanout : {4u, 16u, 509u}) {
    for (const double fill : {1.0, 0.7}) {
      for (const std::uint64_t n : {std::uint64_t{1}, std::uint64_t{17}, std::uint64_t{3000}}) {
        DYNAMIC_SECTION("fanout " << fanout << ", fill " << fill << ", " << n << " keys") {
          const std::vector<std::uint64_t> keys = keys_step(n, 5);
          Built b = build_region(keys, fanout, fill, 0);
          const auto source_ptr = make_source(*b.region, 42);
          const RegionIndexSource& source = *source_ptr;
          const std::vector<forein::NodeInterval> nodes = source.nodes();
          check_source(*b.region, nodes, b.stats.height, 42);
          // Per level, as many nodes as the build made.
          const auto levels = by_level(nodes);
          for (std::size_t level = 0; level < b.stats.nodes_per_level.size(); ++level) {
            INFO("level " << level);
            REQUIRE(levels.count(static_cast<int>(level)) == 1);
            CHECK(levels.at(static_cast<int>(level)).size() == b.stats.nodes_per_level[level]);
          }
          // The root is the one node of the top level.
          CHECK(rr::node_address(levels.begin()->second.front().node) == b.stats.root);
          // for_each_node lists the same, root first, level by level.
          std::vector<forein::NodeInterval> listed;
          source.for_each_node([&](const forein::NodeInterval& x) { listed.push_back(x); });
          REQUIRE(listed.size() == nodes.size());
          for (std::size_t i = 1; i < listed.size(); ++i) CHECK(listed[i].level <= listed[i - 1].level);
          CHECK(words_of(source) == keys);
          // A false from fn stops the words.
          int seen = 0;
          source.for_each_word([&](forein::Word) { return ++seen < 3; });
          CHECK(seen == std::min<int>(3, static_cast<int>(n)));
        }
      }
    }
  }
  SECTION("a region whose header does not check: no nodes, no words") {
    rr::Region empty(4096);
    const auto source = make_source(empty, 0);
    CHECK(source->nodes().empty());
    CHECK(words_of(*source).empty());
  }
}

TEST_CASE("memory node: READs and walks on three threads while PUTs run", "[mem_server][concurrent]") {
  constexpr std::uint64_t kKeys = 512;
  constexpr int kReaders = 3;
  constexpr std::uint64_t kLookups = 3000;  // at least, while the writer runs
  constexpr std::uint32_t kMaxRounds = 200;
  Built b = build_region(keys_step(kKeys, 2), 4, 1.0, 64 << 20);
  std::atomic<int> changed{0};
  MemoryNode::Hooks hooks;
  hooks.on_nodes_changed = [&] { changed.fetch_add(1); };
  std::atomic<std::uint64_t> sampled{0};
  hooks.on_start_read = [&](std::uint64_t) { sampled.fetch_add(1, std::memory_order_relaxed); };
  MemoryNode node(*b.region, hooks);
  // version[k]: the highest version of key k whose PUT was acknowledged;
  // round: the version the writer is writing now (the highest a reader may see).
  std::vector<std::atomic<std::uint32_t>> version(2 * kKeys);
  std::atomic<std::uint32_t> round{0};
  std::atomic<int> started{0};
  std::atomic<bool> done{false};
  std::atomic<std::uint64_t> bad{0}, found{0}, gave_up{0}, missing{0}, wrong{0};

  std::thread writer([&] {
    while (started.load(std::memory_order_acquire) < kReaders) std::this_thread::yield();
    // Round 1 inserts the odd keys (splits up to the root) and updates the
    // even ones; later rounds update the even ones, until the readers have
    // done their lookups.
    for (std::uint32_t r = 1; r <= kMaxRounds; ++r) {
      round.store(r, std::memory_order_release);
      for (std::uint64_t k = 0; k < 2 * kKeys; ++k) {
        if (k % 2 == 1 && r > 1) continue;
        Packet p;
        p.op = Op::kPut;
        p.key = dataset_key(k);
        p.value = dataset_long_value(k, r, 16 + k % 64);
        const auto reply = call_quiet(node, p);
        if (!reply || reply->op != Op::kReply) {
          bad.fetch_add(1);
          continue;
        }
        version[k].store(r, std::memory_order_release);
      }
      if (r >= 3 && found.load() + gave_up.load() >= kLookups) break;
    }
    done.store(true, std::memory_order_release);
  });
  std::vector<std::thread> readers;
  for (int t = 0; t < kReaders; ++t) {
    readers.emplace_back([&, t] {
      rr::Walker walker(node_reader(node));
      std::uint64_t x = 0x9E3779B97F4A7C15ull * (t + 1);
      started.fetch_add(1, std::memory_order_release);
      while (!done.load(std::memory_order_acquire)) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        const std::uint64_t k = (x >> 33) % (2 * kKeys);
        const std::uint32_t low = version[k].load(std::memory_order_acquire);
        const rr::LookupResult r = walker.lookup(k);
        const std::uint32_t high = round.load(std::memory_order_acquire);
        if (r.status == rr::LookupStatus::kGaveUp) {
          // Allowed: a writer preempted inside a node's seqlock write
          // leaves it odd for a while, and a walk that sees it odd on
          // every try gives up after its bounded READs (no answer, never
          // a wrong one).
          gave_up.fetch_add(1);
          continue;
        }
        if (r.status == rr::LookupStatus::kNotFound) {
          if (k % 2 == 0 || low > 0) missing.fetch_add(1);  // a key that was there, or acknowledged
          continue;
        }
        // The value is one written at or after the acknowledged version
        // and no later than the writer's round (odd keys: inserted once,
        // version 1; even keys: the built value, then one per round).
        bool ok = k % 2 == 0 && low == 0 && r.value == dataset_long_value(k, 0, kValueBytes);
        const std::uint32_t last = k % 2 == 0 ? high : 1;
        for (std::uint32_t v = std::max<std::uint32_t>(low, 1); v <= last && !ok; ++v) {
          ok = r.value == dataset_long_value(k, v, 16 + k % 64);
        }
        if (!ok) wrong.fetch_add(1);
        found.fetch_add(1, std::memory_order_relaxed);
        // A start READ of the header, for the sampling hook.
        (void)call_quiet(node, read_packet(0, rr::kRegionHeaderBytes, kReadStart, dataset_key(k)));
      }
    });
  }
  writer.join();
  for (auto& t : readers) t.join();
  INFO("lookups that gave up: " << gave_up.load() << ", rounds " << round.load());
  CHECK(bad.load() == 0);  // every PUT acknowledged
  CHECK(missing.load() == 0);
  CHECK(wrong.load() == 0);
  CHECK(found.load() > 0);
  CHECK(changed.load() > 0);
  CHECK(sampled.load() > 0);
  CHECK(node.stats().reads() > 0);
  CHECK(node.stats().bad_reads_total() == 0);
}

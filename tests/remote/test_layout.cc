// net/remote's bytes (docs/remote-read.md): the region's READ and its
// refusals, the node and record formats (round trips, the documented
// offsets, the checksum binding the address), the header, the in-place
// seqlock rewrite, and the sizes a build takes (reported, not timed).
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "forein/error.h"
#include "remote/build.h"
#include "remote/node_layout.h"
#include "remote/region.h"
#include "remote/remote_support.h"

namespace rr = forein::net::remote;
using namespace forein::testing::remote;

TEST_CASE("region READ copies any span inside and refuses the rest", "[remote]") {
  rr::Region region(1000);  // rounded up to 1000 (a multiple of 8)
  REQUIRE(region.size() == 1000);
  std::vector<std::byte> pattern(1000 - rr::kRegionHeaderBytes);
  for (std::size_t i = 0; i < pattern.size(); ++i) pattern[i] = static_cast<std::byte>(i * 7 + 3);
  region.write(rr::kRegionHeaderBytes, pattern);
  // Every unaligned start and length against the plain bytes.
  std::vector<std::byte> out(64);
  for (std::uint64_t a = rr::kRegionHeaderBytes; a < rr::kRegionHeaderBytes + 24; ++a) {
    for (std::size_t len = 0; len <= 40; ++len) {
      REQUIRE(region.read(a, len, out.data()) == rr::ReadError::kOk);
      REQUIRE(std::memcmp(out.data(), pattern.data() + (a - rr::kRegionHeaderBytes), len) == 0);
    }
  }
  REQUIRE(region.read(1000, 0, out.data()) == rr::ReadError::kOk);
  REQUIRE(region.read(1000, 1, out.data()) == rr::ReadError::kOutOfRange);
  REQUIRE(region.read(1001, 0, out.data()) == rr::ReadError::kOutOfRange);
  REQUIRE(region.read(~std::uint64_t{0}, 8, out.data()) == rr::ReadError::kOutOfRange);
  REQUIRE(region.read(990, 11, out.data()) == rr::ReadError::kPastEnd);
  REQUIRE(region.read(992, 8, out.data()) == rr::ReadError::kOk);
  std::vector<std::byte> big(rr::kMaxReadBytes + 1);
  REQUIRE(region.read(0, rr::kMaxReadBytes + 1, big.data()) == rr::ReadError::kTooLong);
  REQUIRE(std::string(rr::to_string(rr::ReadError::kPastEnd)) == "past_end");
  // A write inside a word keeps its neighbours.
  const std::byte b[3] = {std::byte{0xAA}, std::byte{0xBB}, std::byte{0xCC}};
  region.write(rr::kRegionHeaderBytes + 5, b);
  REQUIRE(region.read(rr::kRegionHeaderBytes, 16, out.data()) == rr::ReadError::kOk);
  REQUIRE(out[4] == pattern[4]);
  REQUIRE(out[5] == std::byte{0xAA});
  REQUIRE(out[7] == std::byte{0xCC});
  REQUIRE(out[8] == pattern[8]);
  REQUIRE_THROWS_AS(region.write(998, b), forein::InvalidArgument);
}

TEST_CASE("region allocation is 8-aligned after the header and stops when full", "[remote]") {
  rr::Region region(rr::kRegionHeaderBytes + 40);
  REQUIRE(region.allocate(3) == rr::kRegionHeaderBytes);
  REQUIRE(region.allocate(16) == rr::kRegionHeaderBytes + 8);
  REQUIRE(region.available() == 16);
  REQUIRE(region.allocate(17) == 0);
  REQUIRE(region.allocate(16) == rr::kRegionHeaderBytes + 24);
  REQUIRE(region.available() == 0);
}

TEST_CASE("geometry: 16 branches and 8 KiB pages", "[remote]") {
  const rr::Geometry g16 = rr::geometry_for_fanout(16);
  REQUIRE(g16.node_bytes == 296);
  const rr::Geometry page = rr::geometry_for_node_bytes(8192);
  REQUIRE(page.fanout == 509);
  REQUIRE(page.node_bytes == 8192);
  REQUIRE(rr::geometry_for_fanout(1024).node_bytes == 16424);
  REQUIRE_THROWS_AS(rr::geometry_for_fanout(3), forein::InvalidArgument);
  REQUIRE_THROWS_AS(rr::geometry_for_fanout(1025), forein::InvalidArgument);
  REQUIRE_THROWS_AS(rr::geometry_for_node_bytes(100), forein::InvalidArgument);
  std::cout << "remote node sizes: fanout 16 -> " << g16.node_bytes << " bytes; 8 KiB page -> fanout "
            << page.fanout << "\n";
}

TEST_CASE("a node round-trips at its documented offsets and checks only at its own address", "[remote]") {
  const rr::Geometry g = rr::geometry_for_fanout(4);
  rr::Node n;
  n.level = 1;
  n.hi_inf = false;
  n.version = 6;
  n.lo = 100;
  n.hi = 500;
  n.right = 4096;
  n.keys = {100, 200, 300};
  n.ptrs = {1000, 2000, 3000};
  std::vector<std::byte> b(g.node_bytes);
  rr::encode_node(n, g, 808, b.data());
  // docs/remote-read.md's table.
  REQUIRE(rr::load_le<std::uint16_t>(b.data()) == rr::kNodeMagic);
  REQUIRE(rr::load_le<std::uint8_t>(b.data() + 2) == 1);
  REQUIRE(rr::load_le<std::uint16_t>(b.data() + 4) == 3);
  REQUIRE(rr::load_le<std::uint32_t>(b.data() + 8) == 6);
  REQUIRE(rr::load_le<std::uint64_t>(b.data() + 16) == 100);
  REQUIRE(rr::load_le<std::uint64_t>(b.data() + 24) == 500);
  REQUIRE(rr::load_le<std::uint64_t>(b.data() + 32) == 4096);
  REQUIRE(rr::load_le<std::uint64_t>(b.data() + 40 + 8 * 2) == 300);
  REQUIRE(rr::load_le<std::uint64_t>(b.data() + 40 + 8 * 4 + 8 * 1) == 2000);
  rr::NodeView v;
  REQUIRE(rr::check_node(b, g, 808, &v) == rr::Check::kOk);
  REQUIRE(v.child_of(100) == 0);
  REQUIRE(v.child_of(299) == 1);
  REQUIRE(v.child_of(499) == 2);
  REQUIRE(v.above(500));
  const rr::Node back = v.to_node();
  REQUIRE(back.keys == n.keys);
  REQUIRE(back.ptrs == n.ptrs);
  REQUIRE(back.hi == 500);
  // The same bytes at another address, a flipped byte, an odd version,
  // a short buffer: rejected.
  REQUIRE(rr::check_node(b, g, 816, &v) == rr::Check::kBadChecksum);
  for (std::size_t i = 0; i < b.size(); ++i) {
    auto c = b;
    c[i] ^= std::byte{0x10};
    REQUIRE(rr::check_node(c, g, 808, &v) != rr::Check::kOk);
  }
  auto odd = b;
  rr::store_le<std::uint32_t>(odd.data() + 8, 7);
  REQUIRE(rr::check_node(odd, g, 808, &v) == rr::Check::kOddVersion);
  REQUIRE(rr::check_node(std::span<const std::byte>(b).first(g.node_bytes - 1), g, 808, &v) == rr::Check::kShort);
  // Shape: keys out of order or outside [lo, hi), an inner node whose
  // first key is not lo, a null pointer; each with a right checksum.
  auto shape = [&](rr::Node m) {
    rr::encode_node(m, g, 808, b.data());
    return rr::check_node(b, g, 808, &v);
  };
  rr::Node m = n;
  m.keys = {100, 300, 200};
  REQUIRE(shape(m) == rr::Check::kBadShape);
  m = n;
  m.keys = {100, 200, 500};
  REQUIRE(shape(m) == rr::Check::kBadShape);
  m = n;
  m.keys = {150, 200, 300};
  REQUIRE(shape(m) == rr::Check::kBadShape);
  m = n;
  m.ptrs[1] = 0;
  REQUIRE(shape(m) == rr::Check::kBadShape);
  m = n;
  m.lo = 500;
  m.keys = {500, 501, 502};
  REQUIRE(shape(m) == rr::Check::kBadShape);  // lo >= hi
  m.level = 0;
  m.hi_inf = true;
  REQUIRE(shape(m) == rr::Check::kOk);  // a leaf to +inf
  REQUIRE_THROWS_AS(rr::encode_node(rr::Node{.keys = {1, 2, 3, 4, 5}, .ptrs = {8, 8, 8, 8, 8}}, g, 808, b.data()),
                    forein::InvalidArgument);
}

TEST_CASE("a value record round-trips, reports its length when read short, binds key and address", "[remote]") {
  const std::string value(300, 'x');
  const auto b = rr::encode_record(42, 3, value, 1024);
  REQUIRE(b.size() == rr::record_bytes(300));
  REQUIRE(b.size() == 328);
  REQUIRE(rr::load_le<std::uint32_t>(b.data()) == rr::kRecordMagic);
  REQUIRE(rr::load_le<std::uint32_t>(b.data() + 4) == 300);
  REQUIRE(rr::load_le<std::uint64_t>(b.data() + 16) == 42);
  rr::RecordView v;
  REQUIRE(rr::check_record(b, 1024, &v) == rr::Check::kOk);
  REQUIRE(v.key == 42);
  REQUIRE(v.version == 3);
  REQUIRE(v.value == value);
  REQUIRE(rr::check_record(std::span<const std::byte>(b).first(100), 1024, &v) == rr::Check::kShort);
  REQUIRE(v.value_len == 300);
  REQUIRE(rr::check_record(b, 1032, &v) == rr::Check::kBadChecksum);
  auto c = b;
  c[rr::kRecordHeaderBytes + 17] ^= std::byte{1};
  REQUIRE(rr::check_record(c, 1024, &v) == rr::Check::kBadChecksum);
  REQUIRE_THROWS_AS(rr::encode_record(1, 1, std::string(rr::kMaxValueBytes + 1, 'y'), 64), forein::InvalidArgument);
}

TEST_CASE("the region header round-trips and rejects nonsense", "[remote]") {
  rr::RegionHeader h;
  h.geometry = rr::geometry_for_node_bytes(8192);
  h.root = 4160;
  h.height = 3;
  h.max_value_bytes = 1000;
  h.key_count = 77;
  h.region_bytes = 1 << 20;
  h.used_bytes = 9000;
  auto b = rr::encode_header(h);
  rr::RegionHeader back;
  REQUIRE(rr::check_header(b, &back) == rr::Check::kOk);
  REQUIRE(back.root == 4160);
  REQUIRE(back.geometry.fanout == 509);
  REQUIRE(back.key_count == 77);
  h.root = h.region_bytes;  // outside the region
  REQUIRE(rr::check_header(rr::encode_header(h), &back) == rr::Check::kBadShape);
  h.root = 4160;
  h.height = 0;
  REQUIRE(rr::check_header(rr::encode_header(h), &back) == rr::Check::kBadShape);
  b[40] ^= std::byte{1};
  REQUIRE(rr::check_header(b, &back) == rr::Check::kBadChecksum);
}

TEST_CASE("seqlock_write leaves the new image whole", "[remote]") {
  const rr::Geometry g = rr::geometry_for_fanout(16);
  rr::Region region(4096);
  const rr::Address a = region.allocate(g.node_bytes);
  rr::Node n;
  n.keys = {1, 2};
  n.ptrs = {64, 72};
  std::vector<std::byte> img(g.node_bytes), out(g.node_bytes);
  rr::encode_node(n, g, a, img.data());
  region.write(a, img);
  n.version = 2;
  n.keys.push_back(3);
  n.ptrs.push_back(80);
  rr::encode_node(n, g, a, img.data());
  rr::seqlock_write(region, a, img);
  REQUIRE(region.read(a, out.size(), out.data()) == rr::ReadError::kOk);
  REQUIRE(out == img);
}

TEST_CASE("build sizes: bytes per key for 16-branch nodes and 8 KiB pages (reported)", "[remote]") {
#ifdef FOREIN_REMOTE_SMALL
  const std::uint64_t n = 4000;
#else
  const std::uint64_t n = 20000;
#endif
  for (const rr::Geometry g : {rr::geometry_for_fanout(16), rr::geometry_for_node_bytes(8192)}) {
    rr::BuildOptions o;
    o.geometry = g;
    const Tree t = build_tree(key_range(n), o, 1000);
    REQUIRE(t.stats.used_bytes <= rr::build_bytes(n, n * 1000, o));
    REQUIRE(t.stats.record_bytes == n * rr::record_bytes(1000));
    REQUIRE(read_header(*t.region).key_count == n);
    std::cout << "remote build, " << n << " keys x 1000 B, node " << g.node_bytes << " B (fanout " << g.fanout
              << "): height " << t.stats.height << ", " << t.stats.node_bytes << " node bytes, "
              << t.stats.record_bytes << " record bytes, " << t.stats.used_bytes << " used; 2M keys would take "
              << rr::build_bytes(2000000, 2000000ull * 1000, o) << " bytes\n";
  }
}

// The paper's data set for real (hidden: run with '[remote-size]').
TEST_CASE("build 2M keys x 1000-byte values", "[.][remote-size]") {
  for (const rr::Geometry g : {rr::geometry_for_fanout(16), rr::geometry_for_node_bytes(8192)}) {
    rr::BuildOptions o;
    o.geometry = g;
    const std::uint64_t n = 2000000;
    const auto t0 = std::chrono::steady_clock::now();
    const Tree t = build_tree(key_range(n), o, 1000);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::cout << "remote build 2M x 1000 B, node " << g.node_bytes << " B: height " << t.stats.height
              << ", used " << t.stats.used_bytes << " bytes (nodes " << t.stats.node_bytes << "), " << s
              << " s\n";
    rr::Walker w(region_reader(*t.region));
    for (std::uint64_t k = 0; k < n; k += 99991) {
      const rr::LookupResult r = w.lookup(k);
      REQUIRE(r.status == rr::LookupStatus::kFound);
      REQUIRE(r.value == test_value(k, 1, 1000));
      REQUIRE(r.counters.reads == t.stats.height + 1 + (k == 0 ? 1 : 0));
    }
  }
}

// forein-kv-server's DPDK memif port (docs/network.md, "forein-kv-server"):
//
// 1. The port's frame code (net/kv_server/memif_frames.h) directly:
//    parsing, replies in one frame and as IPv4 fragments (checksums,
//    offsets, flags recomputed here independently), malformed frames.
// 2. Flag errors: exit 2 with a message.
// 3. End to end: forein-switch with a TAP client side and a memif server
//    side, forein-kv-server joining that socket (--memif) and mirroring
//    its image to the switch's agent, forein-load --verify through the
//    switch; STATS over the server's kernel UDP port; a SCAN whose reply
//    comes back as IPv4 fragments; a REPLY packet counted as not_request;
//    the switch restarted on the same socket and rejoined.
//    Needs root and /dev/net/tun (the TAP); skipped without them. No
//    sleeps as synchronization; children are killed on failure.
#include <arpa/inet.h>
#include <stdlib.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "child_process.h"
#include "kv_server/memif_frames.h"
#include "protocol/dataset.h"
#include "protocol/packet.h"
#include "tap_switch.h"
#include "udp_client.h"

namespace {

namespace kv = forein::net::kv;
using forein::testing::ChildProcess;
using forein::testing::TempDir;
using forein::testing::json_number;
using forein::testing::ready_port;

std::uint16_t be16(const std::byte* p) {
  return static_cast<std::uint16_t>((static_cast<unsigned>(p[0]) << 8) | static_cast<unsigned>(p[1]));
}
void set_be16(std::byte* p, std::uint16_t v) {
  p[0] = static_cast<std::byte>(v >> 8);
  p[1] = static_cast<std::byte>(v);
}

// RFC 1071, written out here again (not the code under test's).
std::uint16_t fold_sum(std::uint32_t sum, const std::byte* p, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) sum += (i % 2 == 0) ? static_cast<unsigned>(p[i]) << 8 : static_cast<unsigned>(p[i]);
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  return static_cast<std::uint16_t>(sum);
}
bool ip_header_ok(const std::byte* ip) { return fold_sum(0, ip, 20) == 0xFFFF; }
bool udp_ok(std::uint32_t src, std::uint32_t dst, const std::vector<std::byte>& segment) {
  const std::uint32_t pseudo = (src >> 16) + (src & 0xFFFF) + (dst >> 16) + (dst & 0xFFFF) + 17 +
                               static_cast<std::uint32_t>(segment.size());
  return fold_sum(pseudo, segment.data(), segment.size()) == 0xFFFF;
}
void fix_ip_checksum(std::vector<std::byte>& frame) {
  std::byte* ip = frame.data() + 14;
  set_be16(ip + 10, 0);
  set_be16(ip + 10, static_cast<std::uint16_t>(~fold_sum(0, ip, 20)));
}

const kv::UdpEndpoint kSwitch{{0x02, 0xF0, 0xE1, 0x5C, 0x00, 0x02}, 0x0A4D0102, 40000};  // 10.77.1.2
const kv::UdpEndpoint kServer{{0x02, 0x11, 0x22, 0x33, 0x44, 0x55}, 0x0A4D0101, 9000};   // 10.77.1.1

// A request frame as the switch sends it: from its .2 to the server's .1.
std::vector<std::byte> request_frame(const std::vector<std::byte>& datagram) {
  kv::Frames f;
  REQUIRE(kv::build_udp_frames(kSwitch, kServer, datagram, 7, &f));
  REQUIRE(f.sizes.size() == 1);
  return f.bytes;
}

// The "memif" object of the server's stats (it holds one nested object,
// dropped_by_reason, last).
std::string memif_object(const std::string& stats) {
  const std::size_t at = stats.find("\"memif\":{");
  return at == std::string::npos ? std::string() : stats.substr(at);
}

}  // namespace

TEST_CASE("memif frames: a request parsed, replies in one frame and as IPv4 fragments", "[memif]") {
  const std::vector<std::byte> get =
      forein::net::encode_packet(forein::testing::request(forein::net::Op::kGet, forein::net::dataset_key(3)));
  std::vector<std::byte> frame = request_frame(get);
  REQUIRE(frame.size() == 14 + 20 + 8 + get.size());

  kv::UdpFrame in;
  REQUIRE(kv::parse_udp_frame(frame, kServer.ip, &in) == kv::FrameVerdict::kDatagram);
  CHECK(in.from.ip == kSwitch.ip);
  CHECK(in.from.port == kSwitch.port);
  CHECK(in.from.mac == kSwitch.mac);
  CHECK(in.to.port == kServer.port);
  CHECK(std::vector<std::byte>(in.payload.begin(), in.payload.end()) == get);

  // Ethernet padding after the IPv4 datagram is ignored; any destination MAC is fine.
  std::vector<std::byte> padded = frame;
  padded.resize(frame.size() + 17, std::byte{0xEE});
  std::fill(padded.begin(), padded.begin() + 6, std::byte{0xFF});
  REQUIRE(kv::parse_udp_frame(padded, kServer.ip, &in) == kv::FrameVerdict::kDatagram);
  CHECK(in.payload.size() == get.size());
  // UDP checksum 0: none, accepted.
  std::vector<std::byte> no_sum = frame;
  set_be16(no_sum.data() + 14 + 20 + 6, 0);
  CHECK(kv::parse_udp_frame(no_sum, kServer.ip, &in) == kv::FrameVerdict::kDatagram);

  for (const std::size_t size : {std::size_t{0}, std::size_t{1}, std::size_t{100}, kv::kMaxUnfragmented,
                                 kv::kMaxUnfragmented + 1, std::size_t{2961}, std::size_t{10000},
                                 forein::net::kMaxDatagram}) {
    INFO("datagram of " << size << " bytes");
    std::vector<std::byte> datagram(size);
    std::mt19937 rng(static_cast<unsigned>(size));
    for (auto& b : datagram) b = static_cast<std::byte>(rng());
    kv::Frames out;
    REQUIRE(kv::build_udp_frames(kServer, kSwitch, datagram, 0x1234, &out));
    const std::size_t segment_size = 8 + size;
    const std::size_t expected_frames = segment_size + 20 <= 1500 ? 1 : (segment_size + 1479) / 1480;
    REQUIRE(out.sizes.size() == expected_frames);
    CHECK(out.fragments == (expected_frames > 1 ? expected_frames : 0));
    // Reassemble by offset and check every header on the way.
    std::vector<std::byte> segment(segment_size);
    std::size_t at = 0, covered = 0;
    for (std::size_t i = 0; i < out.sizes.size(); ++i) {
      const std::byte* f = out.bytes.data() + at;
      const std::size_t n = out.sizes[i];
      REQUIRE(n <= kv::kMaxFrameBytes);
      CHECK(std::memcmp(f, kSwitch.mac.data(), 6) == 0);
      CHECK(std::memcmp(f + 6, kServer.mac.data(), 6) == 0);
      CHECK(be16(f + 12) == 0x0800);
      const std::byte* ip = f + 14;
      CHECK(static_cast<unsigned>(ip[0]) == 0x45);
      CHECK(ip_header_ok(ip));
      CHECK(be16(ip + 2) == n - 14);
      CHECK(be16(ip + 4) == 0x1234);
      CHECK(static_cast<unsigned>(ip[9]) == 17);
      const std::uint16_t frag = be16(ip + 6);
      const std::size_t offset = static_cast<std::size_t>(frag & 0x1FFF) * 8;
      const bool more = (frag & 0x2000) != 0;
      CHECK(more == (i + 1 < out.sizes.size()));
      CHECK(offset == covered);
      if (more) CHECK((n - 34) % 8 == 0);
      REQUIRE(offset + (n - 34) <= segment.size());
      std::memcpy(segment.data() + offset, f + 34, n - 34);
      covered += n - 34;
      at += n;
    }
    CHECK(covered == segment_size);
    CHECK(at == out.bytes.size());
    CHECK(be16(segment.data()) == kServer.port);
    CHECK(be16(segment.data() + 2) == kSwitch.port);
    CHECK(be16(segment.data() + 4) == segment_size);
    if (expected_frames == 1) {
      CHECK(be16(segment.data() + 6) != 0);
      CHECK(udp_ok(kServer.ip, kSwitch.ip, segment));
    } else {
      CHECK(be16(segment.data() + 6) == 0);  // none: IPv4 fragments go without
    }
    CHECK(std::equal(datagram.begin(), datagram.end(), segment.begin() + 8));
  }
  kv::Frames out;
  CHECK_FALSE(kv::build_udp_frames(kServer, kSwitch, std::vector<std::byte>(forein::net::kMaxDatagram + 1), 1, &out));
}

TEST_CASE("memif frames: a reply frame written in place is build_udp_frames' frame of the encoded reply", "[memif]") {
  std::mt19937_64 rng(42);
  for (int round = 0; round < 400; ++round) {
    forein::net::Packet reply;
    reply.op = round % 5 == 0 ? forein::net::Op::kError : forein::net::Op::kReply;
    reply.status = round % 5 == 0 ? forein::net::Status::kServerError
                   : round % 3 == 0 ? forein::net::Status::kNotFound
                                    : forein::net::Status::kOk;
    reply.seq = rng();
    reply.key.resize(rng() % 40);
    for (char& c : reply.key) c = static_cast<char>(rng());
    // Values up to past one frame: the largest fit, the rest must be refused.
    reply.value.resize(round < 300 ? rng() % 300 : 1400 + rng() % 100);
    for (char& c : reply.value) c = static_cast<char>(rng());
    const std::vector<std::byte> datagram = forein::net::encode_packet(reply);
    kv::Frames want;
    REQUIRE(kv::build_udp_frames(kServer, kSwitch, datagram, static_cast<std::uint16_t>(round), &want));
    std::vector<std::byte> out(kv::kMaxFrameBytes + 64, std::byte{0xEE});
    const auto bytes = [](const std::string& x) { return std::as_bytes(std::span<const char>(x.data(), x.size())); };
    const std::size_t size = kv::write_reply_frame(out, kServer, kSwitch, static_cast<std::uint16_t>(round),
                                                   static_cast<std::uint8_t>(reply.op),
                                                   static_cast<std::uint8_t>(reply.status), reply.seq,
                                                   bytes(reply.key), bytes(reply.value));
    INFO("round " << round << ", datagram " << datagram.size() << " bytes");
    if (datagram.size() > kv::kMaxUnfragmented) {
      CHECK(size == 0);  // fragments: the caller's slow path
      CHECK(out[0] == std::byte{0xEE});
      continue;
    }
    REQUIRE(want.sizes.size() == 1);
    REQUIRE(size == want.bytes.size());
    CHECK(std::equal(want.bytes.begin(), want.bytes.end(), out.begin()));
    CHECK(out[size] == std::byte{0xEE});  // nothing written past the frame
    // Too small a buffer: refused, untouched.
    std::vector<std::byte> small(size - 1, std::byte{0xEE});
    CHECK(kv::write_reply_frame(small, kServer, kSwitch, 1, 5, 0, reply.seq, bytes(reply.key), bytes(reply.value)) == 0);
    CHECK(std::all_of(small.begin(), small.end(), [](std::byte b) { return b == std::byte{0xEE}; }));
  }
}

TEST_CASE("memif frames: malformed frames are refused, never read past", "[memif]") {
  const std::vector<std::byte> get =
      forein::net::encode_packet(forein::testing::request(forein::net::Op::kGet, forein::net::dataset_key(9)));
  const std::vector<std::byte> good = request_frame(get);
  kv::UdpFrame in;
  using V = kv::FrameVerdict;
  const auto verdict = [&](std::vector<std::byte> f) { return kv::parse_udp_frame(f, kServer.ip, &in); };

  // Every truncation (exact-size copies, so a sanitizer sees any overread).
  for (std::size_t n = 0; n < good.size(); ++n) {
    INFO("cut at " << n);
    CHECK(verdict(std::vector<std::byte>(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n))) !=
          V::kDatagram);
  }
  std::vector<std::byte> f = good;
  set_be16(f.data() + 12, 0x0806);
  CHECK(verdict(f) == V::kArp);
  set_be16(f.data() + 12, 0x88B5);
  CHECK(verdict(f) == V::kNotIpv4);
  f = good;
  f[14 + 10] ^= std::byte{0x01};  // IPv4 header checksum
  CHECK(verdict(f) == V::kBadIp);
  f = good;
  f[14] = std::byte{0x65};  // version 6
  fix_ip_checksum(f);
  CHECK(verdict(f) == V::kBadIp);
  f = good;
  set_be16(f.data() + 14 + 2, static_cast<std::uint16_t>(good.size()));  // longer than the frame
  fix_ip_checksum(f);
  CHECK(verdict(f) == V::kBadIp);
  f = good;
  f[14 + 19] = std::byte{9};  // to 10.77.1.9
  fix_ip_checksum(f);
  CHECK(verdict(f) == V::kNotForUs);
  f = good;
  set_be16(f.data() + 14 + 6, 0x2000);  // more fragments
  fix_ip_checksum(f);
  CHECK(verdict(f) == V::kFragment);
  set_be16(f.data() + 14 + 6, 0x0010);  // a later fragment
  fix_ip_checksum(f);
  CHECK(verdict(f) == V::kFragment);
  f = good;
  f[14 + 9] = std::byte{6};  // TCP
  fix_ip_checksum(f);
  CHECK(verdict(f) == V::kNotUdp);
  f = good;
  f.back() ^= std::byte{0x40};  // payload changed: the UDP checksum no longer holds
  CHECK(verdict(f) == V::kBadUdp);
  f = good;
  set_be16(f.data() + 34 + 4, static_cast<std::uint16_t>(get.size() + 7));  // UDP length too long
  CHECK(verdict(f) == V::kBadUdp);
  f = good;
  set_be16(f.data() + 34 + 4, 7);  // shorter than its header
  CHECK(verdict(f) == V::kBadUdp);

  // Random bytes, IPv4 ethertype kept: never a datagram by accident, never a crash.
  std::mt19937 rng(99);
  for (int i = 0; i < 2000; ++i) {
    std::vector<std::byte> r(rng() % 200);
    for (auto& b : r) b = static_cast<std::byte>(rng());
    if (r.size() >= 14) set_be16(r.data() + 12, 0x0800);
    (void)verdict(r);
  }
  // Bit flips of the good frame: each parses to something (often refused).
  for (std::size_t bit = 0; bit < good.size() * 8; bit += 3) {
    f = good;
    f[bit / 8] ^= static_cast<std::byte>(1u << (bit % 8));
    const V v = verdict(f);
    if (v == V::kDatagram) CHECK(in.payload.size() <= f.size());
  }
}

TEST_CASE("forein-kv-server: --memif flag errors exit 2", "[memif]") {
  const auto refused = [](std::vector<std::string> args, const std::string& text) {
    args.insert(args.begin(), {"--listen", "127.0.0.1:0", "--keys", "10"});
    ChildProcess server(FOREIN_KV_SERVER_BIN, args, true);
    const std::string err = server.read_stderr();
    INFO(err);
    CHECK(server.wait_exit() == 2);
    CHECK(err.find(text) != std::string::npos);
  };
  refused({"--memif", ""}, "--memif");
  refused({"--memif", "/tmp/a,b.sock"}, "under 108 bytes");
  refused({"--memif", "/tmp/a\"b.sock"}, "under 108 bytes");
  refused({"--memif", "/tmp/" + std::string(110, 'x')}, "under 108 bytes");
  refused({"--memif", "/tmp/s.sock", "--memif-net", "10.77"}, "A.B.C");
  refused({"--memif", "/tmp/s.sock", "--memif-net", "10.77.1.1"}, "A.B.C");
  refused({"--memif", "/tmp/s.sock", "--memif-net", "10.77.300"}, "A.B.C");
  refused({"--memif-net", "10.77.1"}, "--memif-net needs --memif");
  refused({"--memif-core", "1"}, "--memif-core needs --memif");
  refused({"--memif", "/tmp/s.sock", "--memif-core", "1024"}, "--memif-core");
  const TempDir dir;
  refused({"--memif", dir.path + "/none.sock"}, "no memif socket");
}

TEST_CASE("forein-kv-server --memif: load through forein-switch's memif server side", "[e2e][memif]") {
  if (!forein::testing::can_make_taps()) {
    WARN("the client side is a TAP device: skipped: " << forein::testing::no_taps_reason());
    return;
  }
  using forein::net::Op;
  using forein::net::Status;
  using forein::net::dataset_key;
  using forein::net::dataset_value;
  const forein::testing::TapNets nets("km", 0);
  const TempDir dir;
  const std::string socket = dir.path + "/s.sock";

  ChildProcess sw(FOREIN_SWITCH_BIN, {"--agent-listen", "127.0.0.1:0", "--client-iface", nets.client_iface,
                                      "--client-net", nets.client_net, "--server-port", "memif:" + socket,
                                      "--server-net", nets.server_net});
  const int agent_port = ready_port(sw);
  REQUIRE(agent_port > 0);
  ChildProcess server(FOREIN_KV_SERVER_BIN,
                      {"--listen", "127.0.0.1:0", "--memif", socket, "--memif-net", nets.server_net, "--keys",
                       "20000", "--backend", "switch_lpm", "--agent", "127.0.0.1:" + std::to_string(agent_port),
                       "--refresh-ms", "50"});
  const int server_port = ready_port(server);
  REQUIRE(server_port > 0);
  forein::testing::UdpClient direct(static_cast<std::uint16_t>(server_port));  // kernel UDP, loopback
  forein::testing::UdpClient via(9000, forein::testing::TapNets::addr(nets.client_net, 2));

  // A GET through the switch: retried until the memif link is up.
  const forein::net::Packet first = via.call(forein::testing::request(Op::kGet, dataset_key(3)));
  CHECK(first.op == Op::kReply);
  CHECK(first.status == Status::kOk);
  CHECK(first.value == dataset_value(3));

  // 1. A SCAN whose reply needs many frames: IPv4 fragments, reassembled
  // by the client's kernel behind the switch (before the load
  // writes new values).
  const forein::net::Packet scan = via.call(forein::testing::request(Op::kScan, dataset_key(100), {}, 1000));
  REQUIRE(scan.op == Op::kReply);
  REQUIRE(scan.status == Status::kOk);
  const auto entries = forein::net::decode_scan_entries(scan.value);
  REQUIRE(entries);
  REQUIRE(entries->size() == 1000);
  for (std::size_t i = 0; i < entries->size(); ++i) {
    CHECK((*entries)[i].key == dataset_key(100 + i));
    CHECK((*entries)[i].value == dataset_value(100 + i));
  }
  // 2. forein-load --verify through the switch; the switch hints.
  ChildProcess load(FOREIN_LOAD_BIN, {"--target", nets.client_net + ".2:9000", "--keys", "20000", "--workload", "b",
                                      "--dist", "zipf", "--zipf", "0.99", "--seconds", "2", "--outstanding", "8",
                                      "--timeout-ms", "500", "--retries", "5", "--verify", "--seed", "11"});
  const std::string json = forein::testing::exit_json(load);
  CHECK(json_number(json, "wrong") == 0);
  CHECK(json_number(json, "errors") == 0);
  CHECK(json_number(json, "verified") > 0);

  // A write through memif is the kernel port's tree too.
  CHECK(via.call(forein::testing::request(Op::kPut, "memif-key", "memif-value")).status == Status::kOk);
  const forein::net::Packet put_back = direct.call(forein::testing::request(Op::kGet, "memif-key"));
  CHECK(put_back.status == Status::kOk);
  CHECK(put_back.value == "memif-value");
  // A REPLY packet passes the switch (well formed) and is dropped by the
  // server as not_request; the GET after it proves it was handled.
  forein::net::Packet stray = forein::testing::request(Op::kReply, dataset_key(5));
  via.send_raw(forein::net::encode_packet(stray));
  CHECK(via.call(forein::testing::request(Op::kGet, "memif-key")).value == "memif-value");

  // 3. STATS over the kernel port: the memif requests counted with the rest.
  const std::string stats = forein::testing::server_stats(direct);
  INFO(stats);
  CHECK(json_number(stats, "requests") > 1000);
  CHECK(json_number(stats, "hint_hits") > 0);
  CHECK(json_number(stats, "not_request") >= 1);
  const std::string memif = memif_object(stats);
  REQUIRE_FALSE(memif.empty());
  CHECK(memif.find("\"socket\":\"" + socket + "\"") != std::string::npos);
  CHECK(memif.find("\"link\":\"up\"") != std::string::npos);
  CHECK(json_number(memif, "rx") > 1000);
  CHECK(json_number(memif, "tx") > 1000);
  CHECK(json_number(memif, "fragments_sent") > 1);
  CHECK(json_number(memif, "tx_full") == 0);

  const std::string counters = forein::testing::stop_json(sw);
  CHECK(json_number(forein::testing::json_object(counters, "server"), "forwarded") > 1000);
  CHECK(json_number(counters, "hinted") > 0);

  // 4. A new switch on the same socket: the server rejoins it (the link
  // down for a second, then the port restarted) and answers again.
  ChildProcess sw2(FOREIN_SWITCH_BIN, {"--agent-listen", "127.0.0.1:0", "--client-iface", nets.client_iface,
                                       "--client-net", nets.client_net, "--server-port", "memif:" + socket,
                                       "--server-net", nets.server_net});
  REQUIRE(ready_port(sw2) > 0);
  CHECK(via.call(forein::testing::request(Op::kGet, "memif-key")).value == "memif-value");

  const std::string exit_line = forein::testing::stop_json(server);
  CHECK(json_number(memif_object(exit_line), "rx") > json_number(memif, "rx"));
  CHECK(json_number(memif_object(exit_line), "fragments_sent") > 1);
  CHECK(json_number(memif_object(exit_line), "rejoins") >= 1);
  sw2.signal(SIGTERM);
  CHECK(sw2.wait_exit() == 0);
}

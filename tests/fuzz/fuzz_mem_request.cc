// libFuzzer target: forein-mem-server's request path (MemoryNode::handle,
// net/mem_server/memory_node.cc) on arbitrary datagrams, over a small
// region built once (rebuilt after a PUT changed it, so every input sees
// the same tree). No crash, no read outside a buffer (ASan), no undefined
// behaviour (UBSan), and:
//   - a reply exactly when the datagram parses as a request (not REPLY or
//     ERROR); the reply parses, echoes the seq, is REPLY or ERROR and fits
//     one datagram;
//   - a READ: REPLY only for one valid header that Region::read accepts,
//     its value the echoed header followed by exactly the bytes
//     Region::read gives at that address; BAD_REQUEST for a value that is
//     not one valid header; BAD_ADDRESS (the header echoed) when
//     Region::read refuses; each counted under its reason;
//   - a PUT: BAD_REQUEST for a key that is not 8 bytes or a value too
//     long; after a REPLY a walk finds the new value; SERVER_ERROR only
//     when the region is full;
//   - STATS answers; every other op gets BAD_REQUEST.
//
// The input's first byte's low two bits pick how the rest is used (its
// high bits tune mode 1):
//   0, 3: the datagram as given;
//   1: a READ built from the fields that follow (address u64, length u32,
//      flags u16, reserved u16, all host order; the rest is the key), the
//      address folded into the region, the length below 64 KiB and the
//      reserved field 0 unless bits 7, 6, 5 say otherwise;
//   2: a PUT whose key is the next 8 bytes and whose value is the rest.
//
// Built with -DFOREIN_MEM_REQUEST_SEED_MAIN instead, the same file writes
// a seed corpus (READs of the header, every node and records; PUTs; a
// STATS; malformed READs):
//   fuzz_mem_request_seeds <dir>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "mem_server/memory_node.h"
#include "protocol/dataset.h"
#include "protocol/packet.h"
#include "remote/build.h"
#include "remote/node_layout.h"
#include "remote/region.h"
#include "remote/walk.h"

namespace {

using namespace forein::net;
namespace rr = forein::net::remote;
using forein::net::mem::BadRead;
using forein::net::mem::MemoryNode;

constexpr std::uint64_t kKeys = 120;
constexpr std::uint32_t kValueBytes = 40;

// Keys 0, 3, 6, ... with fanout 4 (height 4) and room for a few PUTs.
struct Tree {
  std::unique_ptr<rr::Region> region;
  rr::BuildStats stats;
  std::unique_ptr<MemoryNode> node;
  std::string stats_json = "{\"fuzz\":1}";

  Tree() {
    rr::BuildOptions o;
    o.geometry = rr::geometry_for_fanout(4);
    o.fill = 0.75;
    region = std::make_unique<rr::Region>(rr::build_bytes(kKeys, kKeys * kValueBytes, o) + 6000);
    stats = rr::build(
        *region, kKeys,
        [](std::uint64_t i, std::string& value) {
          value = dataset_long_value(i * 3, 0, kValueBytes);
          return i * 3;
        },
        o);
    MemoryNode::Hooks hooks;
    hooks.stats_json = [this] { return stats_json; };
    hooks.on_start_read = [](std::uint64_t) {};
    hooks.on_nodes_changed = [] {};
    node = std::make_unique<MemoryNode>(*region, std::move(hooks));
  }
};

}  // namespace

#ifndef FOREIN_MEM_REQUEST_SEED_MAIN

namespace {

void require(bool ok) {
  if (!ok) std::abort();
}

std::unique_ptr<Tree> tree;

std::uint64_t bad_total(MemoryNode& n) { return n.stats().bad_reads_total(); }

void check_read(const Packet& request, const Packet& reply, MemoryNode& node, std::uint64_t reads_before,
                const std::uint64_t (&bad_before)[mem::kBadReads]) {
  const rr::Region& region = *tree->region;
  const std::optional<ReadHeader> h =
      request.value.size() == kReadHeaderBytes ? decode_read_header(request.value) : std::nullopt;
  const auto bad_now = [&](BadRead r) { return node.stats().bad_reads(r); };
  const auto counted = [&](std::optional<BadRead> which) {
    for (std::size_t i = 0; i < mem::kBadReads; ++i) {
      const bool is = which && static_cast<std::size_t>(*which) == i;
      require(bad_now(static_cast<BadRead>(i)) == bad_before[i] + (is ? 1 : 0));
    }
    require(node.stats().reads() == reads_before + (which ? 0 : 1));
  };
  if (!h) {
    require(reply.op == Op::kError && reply.status == Status::kBadRequest);
    counted(BadRead::kBadHeader);
    return;
  }
  std::vector<std::byte> want(std::min<std::size_t>(h->length, rr::kMaxReadBytes));
  const rr::ReadError e = region.read(h->address, h->length, want.data());
  if (e != rr::ReadError::kOk) {
    require(reply.op == Op::kError && reply.status == Status::kBadAddress);
    require(reply.value == request.value);
    counted(e == rr::ReadError::kOutOfRange ? BadRead::kOutOfRange
            : e == rr::ReadError::kPastEnd  ? BadRead::kPastEnd
                                            : BadRead::kTooLong);
    return;
  }
  require(reply.op == Op::kReply && reply.status == Status::kOk);
  require(reply.value.size() == kReadHeaderBytes + h->length);
  const std::optional<ReadHeader> echo = decode_read_header(reply.value);
  require(echo && *echo == *h);
  require(h->length == 0 || std::memcmp(reply.value.data() + kReadHeaderBytes, want.data(), h->length) == 0);
  counted(std::nullopt);
}

void check_put(const Packet& request, const Packet& reply) {
  std::uint64_t key = 0;
  if (!dataset_index(request.key, &key) || request.value.size() > rr::kMaxValueBytes) {
    require(reply.op == Op::kError && reply.status == Status::kBadRequest);
    return;
  }
  if (reply.op == Op::kError) {
    require(reply.status == Status::kServerError);  // the region is full
    return;
  }
  require(reply.op == Op::kReply && reply.status == Status::kOk);
  rr::Walker walker([](rr::Address a, std::size_t len, std::byte* out) {
    return tree->region->read(a, len, out) == rr::ReadError::kOk;
  });
  const rr::LookupResult r = walker.lookup(key);
  require(r.status == rr::LookupStatus::kFound && r.value == request.value);
}

void serve(std::span<const std::byte> datagram) {
  MemoryNode& node = *tree->node;
  const std::uint64_t reads_before = node.stats().reads();
  std::uint64_t bad_before[mem::kBadReads];
  for (std::size_t i = 0; i < mem::kBadReads; ++i) bad_before[i] = node.stats().bad_reads(static_cast<BadRead>(i));
  const std::uint64_t total_before = bad_total(node);

  const std::optional<std::vector<std::byte>> out = node.handle(datagram);
  Packet request;
  const ParseError pe = parse_packet(datagram, &request);
  if (pe != ParseError::kNone || request.op == Op::kReply || request.op == Op::kError) {
    require(!out.has_value());
    require(bad_total(node) == total_before && node.stats().reads() == reads_before);
    return;
  }
  require(out.has_value());
  require(out->size() <= kMaxDatagram);
  Packet reply;
  require(parse_packet(*out, &reply) == ParseError::kNone);
  require(reply.seq == request.seq);
  require(reply.op == Op::kReply || reply.op == Op::kError);
  switch (request.op) {
    case Op::kRead:
      check_read(request, reply, node, reads_before, bad_before);
      break;
    case Op::kPut:
      check_put(request, reply);
      // The next input sees the tree as built.
      if (reply.op == Op::kReply) tree = std::make_unique<Tree>();
      break;
    case Op::kStats:
      require(reply.op == Op::kReply && reply.value == tree->stats_json);
      break;
    default:
      require(reply.op == Op::kError && reply.status == Status::kBadRequest);
      break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (!tree) tree = std::make_unique<Tree>();
  if (size < 1) return 0;
  const auto* body = reinterpret_cast<const std::byte*>(data + 1);
  const std::size_t n = size - 1;
  switch (data[0] & 0x3) {
    case 0:
    case 3:
      serve(std::span(body, n));
      break;
    case 1: {
      if (n < 16) return 0;
      std::uint64_t address;
      std::uint32_t length;
      std::uint16_t flags, reserved;
      std::memcpy(&address, body, 8);
      std::memcpy(&length, body + 8, 4);
      std::memcpy(&flags, body + 12, 2);
      std::memcpy(&reserved, body + 14, 2);
      const std::uint64_t size_now = tree->region->size();
      if ((data[0] & 0x80) == 0) address %= size_now + 16;  // mostly inside
      if ((data[0] & 0x40) == 0) length %= 2 * rr::kMaxReadBytes;
      if ((data[0] & 0x20) == 0) reserved = 0;
      Packet p;
      p.op = Op::kRead;
      p.seq = address ^ length;
      p.key.assign(reinterpret_cast<const char*>(body + 16), std::min<std::size_t>(n - 16, kMaxKeyBytes));
      p.value = encode_read_header(ReadHeader{address, length, flags});
      p.value[14] = static_cast<char>(reserved >> 8);
      p.value[15] = static_cast<char>(reserved & 0xFF);
      serve(encode_packet(p));
      break;
    }
    default: {
      if (n < 8) return 0;
      Packet p;
      p.op = Op::kPut;
      p.seq = n;
      p.key.assign(reinterpret_cast<const char*>(body), 8);
      p.value.assign(reinterpret_cast<const char*>(body + 8), n - 8);
      serve(encode_packet(p));
      break;
    }
  }
  return 0;
}

#else

#include <cstdio>
#include <fstream>

namespace {

void write_seed(const std::string& dir, int& count, std::uint8_t mode, std::span<const std::byte> body) {
  std::string bytes(1, static_cast<char>(mode));
  bytes.append(reinterpret_cast<const char*>(body.data()), body.size());
  std::ofstream(dir + "/seed-" + std::to_string(count++), std::ios::binary) << bytes;
}

void write_packet(const std::string& dir, int& count, const Packet& p) {
  const std::vector<std::byte> d = encode_packet(p);
  write_seed(dir, count, 0, d);
}

Packet read_packet(std::uint64_t address, std::uint32_t length, std::uint16_t flags, std::uint64_t key) {
  Packet p;
  p.op = Op::kRead;
  p.seq = address + 1;
  p.key = dataset_key(key);
  p.value = encode_read_header(ReadHeader{address, length, flags});
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <corpus dir>\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  int count = 0;
  Tree t;
  const std::uint32_t nb = rr::geometry_for_fanout(4).node_bytes;
  // READs a real walk issues: the header, every node it visits, records.
  write_packet(dir, count, read_packet(0, rr::kRegionHeaderBytes, 0, 0));
  for (std::uint64_t key = 0; key < 3 * kKeys; key += 37) {
    std::vector<Packet> reads;
    rr::Walker walker([&](rr::Address a, std::size_t len, std::byte* out) {
      reads.push_back(read_packet(a, static_cast<std::uint32_t>(len), reads.empty() ? kReadStart : 0, key));
      return t.region->read(a, len, out) == rr::ReadError::kOk;
    });
    walker.lookup(key);
    for (const Packet& p : reads) write_packet(dir, count, p);
  }
  // The structured READ mode: a node, the end, past it.
  for (const std::uint64_t address : {t.stats.root, t.region->size() - 8, t.region->size() + 8}) {
    std::vector<std::byte> body(16 + 8);
    const std::uint32_t length = nb;
    const std::uint16_t flags = kReadStart;
    std::memcpy(body.data(), &address, 8);
    std::memcpy(body.data() + 8, &length, 4);
    std::memcpy(body.data() + 12, &flags, 2);
    const std::string key = dataset_key(7);
    std::memcpy(body.data() + 16, key.data(), 8);
    write_seed(dir, count, 1, body);
  }
  // Malformed READs: flags, reserved, short and long values, too long.
  Packet bad = read_packet(64, 8, 0x4, 1);
  write_packet(dir, count, bad);
  bad.value[15] = 1;
  bad.value[13] = 0;
  write_packet(dir, count, bad);
  bad.value.resize(15);
  write_packet(dir, count, bad);
  bad.value.resize(20);
  write_packet(dir, count, bad);
  write_packet(dir, count, read_packet(64, 40000, 0, 1));
  // PUTs (an update, an insert, a bad key) and the other ops.
  for (const std::uint64_t key : {std::uint64_t{3}, std::uint64_t{4}}) {
    Packet p;
    p.op = Op::kPut;
    p.seq = key;
    p.key = dataset_key(key);
    p.value = dataset_long_value(key, 1, 20);
    write_packet(dir, count, p);
    std::string body = p.key + p.value;
    write_seed(dir, count, 2, std::as_bytes(std::span(body.data(), body.size())));
  }
  Packet p;
  p.op = Op::kPut;
  p.key = "short";
  write_packet(dir, count, p);
  for (const Op op : {Op::kStats, Op::kGet, Op::kScan, Op::kDelete}) {
    Packet q;
    q.op = op;
    q.key = op == Op::kStats ? "" : dataset_key(9);
    write_packet(dir, count, q);
  }
  std::printf("%d seeds in %s\n", count, dir.c_str());
  return 0;
}

#endif

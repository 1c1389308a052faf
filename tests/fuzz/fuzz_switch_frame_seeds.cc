// Seed corpus for fuzz_switch_frame: whole, valid frames in its input
// format (mode byte, image length, image, frame), so a bounded run starts
// from packets the switch acts on instead of having to find Ethernet,
// IPv4, UDP and the protocol by chance. Covers Switch-delta's plane (the
// top bit of byte 2): every op from a client and every node reply it
// treats specially, table on and off; and a hinted GET on the hint path.
//
//   fuzz_switch_frame_seeds DIR   writes seed files into DIR
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "protocol/dataset.h"
#include "protocol/packet.h"
#include "protocol/secondary_index.h"
#include "protocol/visibility.h"

namespace {

namespace net = forein::net;
using Bytes = std::vector<std::uint8_t>;

// The addresses fuzz_switch_frame's init_sides gives side s: kernel
// 10.77.s.1, switch 10.77.s.2; MACs 02:00:00:00:00:0s+1 and 02:f0:e1:5c:00:0s+1.
std::uint32_t kernel_ip(int side) {
  return (10u << 24) | (77u << 16) | (static_cast<std::uint32_t>(side) << 8) | 1u;
}

void put16(Bytes& b, std::uint16_t v) {
  b.push_back(static_cast<std::uint8_t>(v >> 8));
  b.push_back(static_cast<std::uint8_t>(v));
}
void put32(Bytes& b, std::uint32_t v) {
  put16(b, static_cast<std::uint16_t>(v >> 16));
  put16(b, static_cast<std::uint16_t>(v));
}

// Ethernet + IPv4 + UDP around a datagram, from side's kernel to the switch.
Bytes frame(int side, std::uint16_t src_port, std::uint16_t dst_port, const std::vector<std::byte>& datagram) {
  Bytes f = {0x02, 0xF0, 0xE1, 0x5C, 0x00, static_cast<std::uint8_t>(side + 1),
             0x02, 0x00, 0x00, 0x00, 0x00, static_cast<std::uint8_t>(side + 1), 0x08, 0x00};
  const std::size_t udp_len = 8 + datagram.size();
  f.push_back(0x45);
  f.push_back(0);
  put16(f, static_cast<std::uint16_t>(20 + udp_len));
  put32(f, 0);  // id, no fragment
  f.push_back(64);
  f.push_back(17);  // UDP
  put16(f, 0);      // header checksum: the switch does not check it
  put32(f, kernel_ip(side));
  put32(f, kernel_ip(side) + 1);
  put16(f, src_port);
  put16(f, dst_port);
  put16(f, static_cast<std::uint16_t>(udp_len));
  put16(f, 0);
  for (std::byte b : datagram) f.push_back(static_cast<std::uint8_t>(b));
  return f;
}

// The fuzz input: mode byte (bit 6: arrives on the server side; bit 1:
// table off), no image, the visibility plane's bit, the frame.
Bytes input(bool visibility, int side, bool table_off, const Bytes& f) {
  Bytes in = {static_cast<std::uint8_t>((side << 6) | (table_off ? 2 : 0)), 0,
              static_cast<std::uint8_t>(visibility ? 0x80 : 0)};
  in.insert(in.end(), f.begin(), f.end());
  return in;
}

net::Packet visibility_packet(net::Op op, std::uint64_t key, std::uint32_t ts, std::string value,
                              net::VisState state = net::VisState::kNone) {
  net::Packet p;
  p.op = op;
  p.seq = key + 1;
  p.key = net::dataset_key(key);
  p.value = std::move(value);
  const net::SlotKey sk = net::slot_key(p.key);
  p.visibility = net::VisibilityHeader{sk.slot, state, sk.fingerprint, ts, 0};
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  constexpr std::uint16_t kService = 9000, kClient = 40000, kData = 7001, kMeta = 8001;
  const std::string location = net::encode_location({0, 5});
  std::vector<Bytes> seeds;
  for (bool off : {false, true}) {
    // From a client: every ordered-write op to the service port.
    for (net::Op op : {net::Op::kLogAppend, net::Op::kLogRead, net::Op::kMetaGet, net::Op::kMetaPut}) {
      const std::string value = op == net::Op::kLogAppend ? net::dataset_record(3, 1) : location;
      const auto request = net::encode_packet(visibility_packet(op, 3, 0, value));
      seeds.push_back(input(true, 0, off, frame(0, kClient, kService, request)));
    }
    // From the nodes: a data-write reply, a META_PUT reply, a META_GET
    // reply, a CLEAR, an error.
    net::Packet write = visibility_packet(net::Op::kReply, 3, 7, location);
    seeds.push_back(input(true, 1, off, frame(1, kData, kClient, net::encode_packet(write))));
    net::Packet put = visibility_packet(net::Op::kReply, 3, 9, "");
    seeds.push_back(input(true, 1, off, frame(1, kMeta, kClient, net::encode_packet(put))));
    const auto get_reply = net::encode_packet(visibility_packet(net::Op::kReply, 3, 7, location));
    seeds.push_back(input(true, 1, off, frame(1, kMeta, kClient, get_reply)));
    net::Packet clear = visibility_packet(net::Op::kClear, 3, 7, "");
    clear.key.clear();
    seeds.push_back(input(true, 1, off, frame(1, kMeta, kService, net::encode_packet(clear))));
    // A batched CLEAR: two more (slot, ts) pairs in the value.
    net::append_clear_entry(&clear.value, 3, 7);
    net::append_clear_entry(&clear.value, 0xFFFF, 1);
    seeds.push_back(input(true, 1, off, frame(1, kMeta, kService, net::encode_packet(clear))));
    // Switch-crash recovery: SYNC probes, from a client (readiness) and
    // from each metadata node, first naming no epoch, then the switch's
    // (fuzz_switch_frame.cc fixes it): the plane leaves recovering.
    net::Packet sync;
    sync.op = net::Op::kSync;
    sync.seq = 17;
    sync.visibility = net::VisibilityHeader{0, net::VisState::kNone, 0, 0, 0};
    seeds.push_back(input(true, 0, off, frame(0, kClient, kService, net::encode_packet(sync))));
    seeds.push_back(input(true, 1, off, frame(1, kMeta, kService, net::encode_packet(sync))));
    sync.visibility->aux = 0x5EED5EED;
    for (std::uint16_t port : {kMeta, std::uint16_t(kMeta + 1), std::uint16_t(kMeta + 2)}) {
      seeds.push_back(input(true, 1, off, frame(1, port, kService, net::encode_packet(sync))));
    }
    // Partial writes (III-C, the secondary-index case study): a partial
    // data-write reply, then a SIDX_READ of the same slot (forwarded with
    // the partial entry attached) and its reply.
    const std::string entry = net::encode_sidx_entry(net::dataset_key(9), net::dataset_key(3));
    net::Packet partial = visibility_packet(net::Op::kReply, 3, 11, entry, net::VisState::kPartial);
    partial.key = net::dataset_key(9);
    seeds.push_back(input(true, 1, off, frame(1, kData, kClient, net::encode_packet(partial))));
    net::Packet sidx_read = visibility_packet(net::Op::kSidxRead, 3, 0, "");
    sidx_read.count = 10;
    seeds.push_back(input(true, 0, off, frame(0, kClient, kService, net::encode_packet(sidx_read))));
    net::Packet sidx_reply = visibility_packet(net::Op::kReply, 3, 0, "");
    const std::vector<net::ScanEntry> listed{{net::dataset_key(9), net::encode_sidx_ts(11)}};
    sidx_reply.value = net::encode_scan_entries(listed);
    sidx_reply.count = 1;
    seeds.push_back(input(true, 1, off, frame(1, kMeta, kClient, net::encode_packet(sidx_reply))));
    net::Packet error;
    error.op = net::Op::kError;
    error.status = net::Status::kBadRequest;
    error.value = "no";
    seeds.push_back(input(true, 1, off, frame(1, kMeta, kClient, net::encode_packet(error))));
  }
  // The hint path: a GET from the client side, and a reply.
  net::Packet get;
  get.op = net::Op::kGet;
  get.key = net::dataset_key(42);
  seeds.push_back(input(false, 0, false, frame(0, kClient, kService, net::encode_packet(get))));
  net::Packet reply;
  reply.op = net::Op::kReply;
  reply.key = get.key;
  reply.value = net::dataset_value(42);
  seeds.push_back(input(false, 1, false, frame(1, 9001, kClient, net::encode_packet(reply))));

  for (std::size_t i = 0; i < seeds.size(); ++i) {
    const std::string path = std::string(argv[1]) + "/seed-" + std::to_string(i);
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(seeds[i].data()), static_cast<std::streamsize>(seeds[i].size()));
    if (!out) {
      std::fprintf(stderr, "cannot write %s\n", path.c_str());
      return 1;
    }
  }
  std::printf("%zu seeds in %s\n", seeds.size(), argv[1]);
  return 0;
}

// libFuzzer target: the wire protocol's parser (net/protocol/packet.h,
// docs/protocol.md) on any bytes. No crash, no read outside the datagram
// (ASan), no undefined behaviour (UBSan); a packet that parses re-encodes
// to bytes that parse to an equal Packet, and the switch's trailer
// rewrites keep it valid.
//
// Each input is tried twice: as it is, and with magic and version forced,
// so most mutations reach the checks behind them.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string_view>
#include <vector>

#include "protocol/packet.h"

namespace {

using namespace forein::net;

void require(bool ok) {
  if (!ok) std::abort();
}

bool same(const Packet& a, const Packet& b) {
  bool hints = a.hints.has_value() == b.hints.has_value();
  if (hints && a.hints) {
    hints = a.hints->primary.node == b.hints->primary.node &&
            a.hints->primary.level == b.hints->primary.level &&
            a.hints->secondary.node == b.hints->secondary.node &&
            a.hints->secondary.level == b.hints->secondary.level;
  }
  return hints && a.op == b.op && a.status == b.status && a.more == b.more && a.seq == b.seq &&
         a.count == b.count && a.key == b.key && a.value == b.value && a.fattree == b.fattree;
}

void one(std::vector<std::byte> d) {
  Packet p;
  ParseError e = parse_packet(d, &p);
  require(check_datagram(d) == e);
  // Arbitrary bytes as a SCAN value area: must not crash either way.
  std::string_view raw(reinterpret_cast<const char*>(d.data()), d.size());
  (void)decode_scan_entries(raw);
  forein::StartHints h;
  h.primary.node = 7;
  h.primary.level = 1;
  bool set = set_hint_trailer(d, h);
  if (e != ParseError::kNone) {
    require(!set && packet_key(d).empty());
    return;
  }
  require(packet_key(d).size() == p.key.size());
  if (p.op == Op::kReply && p.count > 0) require(decode_scan_entries(p.value).has_value());
  if (encoded_size(p) <= kMaxDatagram) {
    Packet q;
    require(parse_packet(encode_packet(p), &q) == ParseError::kNone);
    require(same(p, q));
  }
  if (set) {
    Packet q;
    require(parse_packet(d, &q) == ParseError::kNone);
    p.hints = h;
    require(same(p, q));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto* b = reinterpret_cast<const std::byte*>(data);
  std::vector<std::byte> d(b, b + size);
  one(d);
  if (d.size() >= 3) {
    d[0] = std::byte{0xF0};
    d[1] = std::byte{0xE1};
    d[2] = std::byte{kVersion};
    one(d);
  }
  return 0;
}

// libFuzzer target: forein-data-node's handler (net/data_node/handler.h,
// docs/network.md "forein-data-node") on arbitrary datagrams and request
// sequences. No crash, no read outside a buffer (ASan), no undefined
// behaviour (UBSan), and:
//   - every datagram serve() answers parses back to a REPLY or ERROR with
//     the request's seq and fits one datagram;
//   - an accepted LOG_APPEND reads back (LOG_READ kOk, the same record;
//     another key: kMismatch), its timestamp is its slot's counter and its
//     log id the log's last;
//   - a LOG_FETCH reply holds consecutive log ids from the first asked,
//     at most 256, with the more flag exactly when entries remain.
//
// The input is a sequence of chunks (u8 length, then that many bytes); a
// chunk's first byte picks what to make of the rest: a raw datagram (also
// tried with magic and version forced), a LOG_APPEND with a correct
// visibility header, or a LOG_FETCH / LOG_READ with arbitrary fields.
// The log is shared across inputs and replaced every 1,024 of them.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "data_node/handler.h"
#include "data_node/log.h"
#include "data_node/stats.h"
#include "protocol/packet.h"
#include "protocol/visibility.h"

namespace {

using namespace forein::net;
using namespace forein::net::data_node;

void require(bool ok) {
  if (!ok) std::abort();
}

struct State {
  NodeId id;
  DataLog log;
  DataNodeStats stats;
  Handler handler;
  explicit State(NodeId node) : id(node), log(), stats(), handler(log, node, stats) {}
};

std::unique_ptr<State> state;
std::uint64_t inputs = 0;

// handle() plus the checks every reply must pass.
Packet call(const Packet& request) {
  const Packet r = state->handler.handle(request);
  require(r.seq == request.seq);
  require(r.op == Op::kReply || r.op == Op::kError);
  require(encoded_size(r) <= kMaxDatagram);
  Packet back;
  require(parse_packet(encode_packet(r), &back) == ParseError::kNone);
  return r;
}

void raw(std::vector<std::byte> d) {
  const auto out = state->handler.serve(d);
  Packet request;
  const ParseError e = parse_packet(d, &request);
  if (e != ParseError::kNone || request.op == Op::kReply || request.op == Op::kError) {
    require(!out);
    return;
  }
  require(out.has_value());
  require(out->size() <= kMaxDatagram);
  Packet r;
  require(parse_packet(*out, &r) == ParseError::kNone);
  require(r.seq == request.seq);
  require(r.op == Op::kReply || r.op == Op::kError);
}

void append(std::string_view bytes) {
  // First byte: key length (mod what is there); the rest: the record.
  const std::size_t k = bytes.empty() ? 0 : static_cast<unsigned char>(bytes[0]) % bytes.size();
  const std::string key(bytes.substr(bytes.empty() ? 0 : 1, k));
  const std::string record(bytes.substr(std::min(bytes.size(), 1 + k)));
  const SlotKey sk = slot_key(key);
  Packet p;
  p.op = Op::kLogAppend;
  p.seq = inputs;
  p.key = key;
  p.value = record;
  p.visibility = VisibilityHeader{sk.slot, VisState::kNone, sk.fingerprint, 0, 0};
  const Packet r = call(p);
  if (!state->id.owns(sk.slot)) {
    require(r.op == Op::kError && r.status == Status::kBadRequest);
    return;
  }
  require(r.op == Op::kReply && r.status == Status::kOk);
  const auto at = decode_location(r.value);
  require(at && at->node == state->id.index && at->log_id == state->log.entries());
  require(r.visibility && r.visibility->slot == sk.slot && r.visibility->fingerprint == sk.fingerprint);
  require(r.visibility->ts != 0 && r.visibility->ts == state->log.slot_ts(sk.slot));
  Packet read;
  read.op = Op::kLogRead;
  read.key = key;
  read.value = r.value;
  const Packet back = call(read);
  require(back.op == Op::kReply && back.status == Status::kOk && back.value == record);
  read.key = key + "x";
  require(call(read).status == Status::kMismatch);
}

std::uint32_t u32(std::string_view s, std::size_t at) {
  std::uint32_t v = 0;
  for (std::size_t i = at; i < at + 4; ++i) v = (v << 8) | (i < s.size() ? static_cast<unsigned char>(s[i]) : 0u);
  return v;
}

void fetch_or_read(std::string_view bytes) {
  const std::uint64_t entries = state->log.entries();
  const bool fetch = !bytes.empty() && (static_cast<unsigned char>(bytes[0]) & 1) != 0;
  Packet p;
  p.seq = inputs;
  if (fetch) {
    p.op = Op::kLogFetch;
    // Small first ids most of the time, so the log's entries come back.
    std::uint32_t first = u32(bytes, 1);
    if ((first & 0x80000000u) == 0) first %= static_cast<std::uint32_t>(entries + 2);
    p.value = std::string(bytes.substr(std::min<std::size_t>(bytes.size(), 1), 4));
    if (p.value.size() == 4) {
      for (int b = 0; b < 4; ++b) p.value[static_cast<std::size_t>(b)] = static_cast<char>(first >> (24 - 8 * b));
    }
    p.count = u32(bytes, 5) % 600;
    p.key = std::string(bytes.substr(std::min<std::size_t>(bytes.size(), 9)));
    if (p.key.size() > kMaxKeyBytes) p.key.resize(kMaxKeyBytes);
    const Packet r = call(p);
    if (p.value.size() != 4) {
      require(r.op == Op::kError && r.status == Status::kBadRequest);
      return;
    }
    require(r.op == Op::kReply && r.status == Status::kOk && r.count <= kMaxFetchEntries);
    require(r.count <= (p.count == 0 ? kDefaultFetchEntries : p.count));
    const auto got = decode_scan_entries(r.value);
    require(got && got->size() == r.count);
    const std::uint64_t start = first == 0 ? 1 : first;
    std::uint64_t id = start;
    for (const ScanEntry& e : *got) {
      const auto s = decode_stamped(e.value);
      require(s && s->location.log_id == id && s->location.node == state->id.index);
      const auto entry = state->log.entry(static_cast<std::uint32_t>(id));
      require(entry && entry->key == e.key && entry->ts == s->ts);
      ++id;
    }
    require(r.more == (id <= entries));
  } else {
    p.op = Op::kLogRead;
    p.value = std::string(bytes.substr(std::min<std::size_t>(bytes.size(), 1), 6));
    if (p.value.size() == 6 && entries > 0) {
      // Mostly a location in the log.
      const std::uint32_t id = 1 + u32(bytes, 3) % static_cast<std::uint32_t>(entries + 1);
      if ((static_cast<unsigned char>(bytes[0]) & 2) != 0) {
        p.value = encode_location({static_cast<std::uint16_t>(state->id.index), id});
      }
    }
    p.key = std::string(bytes.substr(std::min<std::size_t>(bytes.size(), 7)));
    if (p.key.size() > kMaxKeyBytes) p.key.resize(kMaxKeyBytes);
    const Packet r = call(p);
    const auto at = decode_location(p.value);
    if (!at || at->node != state->id.index) {
      require(r.op == Op::kError && r.status == Status::kBadRequest);
      return;
    }
    require(r.op == Op::kReply);
    const auto entry = state->log.entry(at->log_id);
    if (!entry) {
      require(r.status == Status::kNotFound);
    } else if (entry->key != p.key) {
      require(r.status == Status::kMismatch);
    } else {
      require(r.status == Status::kOk && r.value == entry->record);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (state == nullptr || inputs % 1024 == 0 || state->log.bytes() > (std::size_t{64} << 20)) {
    // Alternate between owning every slot and owning a third of them.
    const NodeId id = (inputs / 1024) % 2 == 0 ? NodeId{0, 1} : NodeId{1, 3};
    state.reset();
    state = std::make_unique<State>(id);
  }
  ++inputs;
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  std::size_t at = 0;
  while (at < in.size()) {
    const std::size_t n = std::min<std::size_t>(static_cast<unsigned char>(in[at]), in.size() - at - 1);
    const std::string_view chunk = in.substr(at + 1, n);
    at += 1 + n;
    if (chunk.empty()) continue;
    const std::string_view rest = chunk.substr(1);
    switch (static_cast<unsigned char>(chunk[0]) % 3) {
      case 0: {
        auto* b = reinterpret_cast<const std::byte*>(rest.data());
        std::vector<std::byte> d(b, b + rest.size());
        raw(d);
        if (d.size() >= 3) {
          d[0] = std::byte{0xF0};
          d[1] = std::byte{0xE1};
          d[2] = std::byte{kVersion};
          raw(d);
        }
        break;
      }
      case 1:
        append(rest);
        break;
      default:
        fetch_or_read(rest);
        break;
    }
  }
  // The whole input as one datagram too (what a socket would see).
  auto* b = reinterpret_cast<const std::byte*>(data);
  raw(std::vector<std::byte>(b, b + size));
  return 0;
}

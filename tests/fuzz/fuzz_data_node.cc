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
//     at most 256, with the more flag exactly when entries remain; with a
//     key range, only that range's entries, the key naming the last id
//     examined, every unlisted id up to it another range's (a range that
//     is not one of its shards refused);
//   - a backup (Role::kBackup, replication, section V-D) given LOG_REPLICATE
//     packets (well-formed, ids out of order and repeated, fields mangled):
//     an ACKed one is in its log at that id with that timestamp, key and
//     record; a refused one changed nothing; its LOG_FETCH returns
//     ascending ids of entries that are there; it refuses LOG_APPEND;
//   - a --secondary-index node (LogMode::kSecondaryIndex): an accepted
//     LOG_APPEND answers encode_sidx_entry(primary, secondary) in state
//     partial with the one counter's next timestamp and reads back by key
//     (the newest record); a value that is not a SidxRecord is refused
//     (nothing appended); LOG_FETCH entries are the location, timestamp
//     and the entry's secondary key; a multi-read (LOG_READ, count > 0)
//     answers a prefix of the keys asked, in order, each with what a read
//     by key returns ("" for not found), within kMaxSidxMultiReadBytes
//     unless it holds one entry, the more flag exactly when keys are left
//     out; a malformed one (count off, a value, an empty key, count over
//     kMaxSidxReadCount) is refused.
//
// The input is a sequence of chunks (u8 length, then that many bytes); a
// chunk's first byte picks what to make of the rest: a raw datagram (also
// tried with magic and version forced), a LOG_APPEND with a correct
// visibility header, a LOG_FETCH / LOG_READ with arbitrary fields, or a
// LOG_REPLICATE (or a raw datagram) for the backup, or a request to the
// --secondary-index node.
// The log is shared across inputs and replaced every 1,024 of them.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "data_node/handler.h"
#include "data_node/log.h"
#include "data_node/stats.h"
#include "protocol/log_fetch.h"
#include "protocol/packet.h"
#include "protocol/secondary_index.h"
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
  DataLog backup_log;
  DataNodeStats backup_stats;
  Handler backup;
  DataLog sidx_log{DataLog::kMaxLogId, LogMode::kSecondaryIndex};
  DataNodeStats sidx_stats;
  Handler sidx{sidx_log, NodeId{}, sidx_stats};  // one data node (--secondary-index allows no other)
  explicit State(NodeId node)
      : id(node), log(), stats(), handler(log, node, stats), backup(backup_log, node, backup_stats, {}, Role::kBackup) {}
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

// A LOG_FETCH with a key range (several metadata nodes,
// protocol/log_fetch.h): refused unless shard < shards; else only the
// range's entries, ascending, each the log's, the key naming the last id
// examined; every id up to it not listed is another range's; at most
// kMaxFetchScan ids examined; more exactly when ids are left.
void fetch_key_range(Packet p, std::uint32_t first, std::string_view bytes) {
  const std::uint64_t entries = state->log.entries();
  LogFetchShard range;
  range.shard = bytes.size() > 9 ? static_cast<unsigned char>(bytes[9]) % 5 : 0;
  range.shards = bytes.size() > 10 ? static_cast<unsigned char>(bytes[10]) % 5 : 1;
  range.keys = u32(bytes, 11) % 100000;
  p.value = encode_log_fetch_value({first, range});
  const Packet r = call(p);
  if (range.shards == 0 || range.shard >= range.shards) {
    require(r.op == Op::kError && r.status == Status::kBadRequest);
    return;
  }
  require(r.op == Op::kReply && r.status == Status::kOk && r.count <= kMaxFetchEntries && r.key.size() == 4);
  const std::uint64_t scanned = u32(r.key, 0);
  const std::uint64_t start = first == 0 ? 1 : first;
  require(scanned + 1 >= start && scanned <= std::max<std::uint64_t>(entries, start - 1));
  require(scanned + 1 - start <= kMaxFetchScan);
  const auto got = decode_scan_entries(r.value);
  require(got && got->size() == r.count);
  std::uint64_t id = start;
  for (const ScanEntry& e : *got) {
    const auto s = decode_stamped(e.value);
    require(s && s->location.log_id >= id && s->location.log_id <= scanned && range.owns(e.key));
    for (; id < s->location.log_id; ++id) {  // passed over: another range's
      const auto other = state->log.entry(static_cast<std::uint32_t>(id));
      require(other && !range.owns(other->key));
    }
    const auto entry = state->log.entry(static_cast<std::uint32_t>(id));
    require(entry && entry->key == e.key && entry->ts == s->ts);
    ++id;
  }
  for (; id <= scanned; ++id) {
    const auto other = state->log.entry(static_cast<std::uint32_t>(id));
    require(other && !range.owns(other->key));
  }
  require(r.more == (scanned < entries));
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
    if (p.value.size() == 4 && (static_cast<unsigned char>(bytes[0]) & 2) != 0) {
      fetch_key_range(p, first, bytes);
      return;
    }
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

// A LOG_REPLICATE for the backup: u32 log id (mostly near the log's end),
// u32 ts, u8 mangle, u8 key length, key, record.
void replicate(std::string_view bytes) {
  DataLog& log = state->backup_log;
  const std::uint64_t entries = log.entries();
  std::uint32_t id = u32(bytes, 0);
  if ((id & 0x80000000u) == 0) id = 1 + id % static_cast<std::uint32_t>(entries + 8);
  const std::uint32_t ts = u32(bytes, 4);
  const unsigned mangle = bytes.size() > 8 ? static_cast<unsigned char>(bytes[8]) : 0;
  const std::size_t k = bytes.size() > 9 ? static_cast<unsigned char>(bytes[9]) : 0;
  const std::string_view rest = bytes.substr(std::min<std::size_t>(bytes.size(), 10));
  const std::string key(rest.substr(0, std::min(k, rest.size())));
  const std::string record(rest.substr(std::min(k, rest.size())));
  Packet p = log_replicate_request(inputs, id, ts, key, record);
  switch (mangle % 8) {
    case 1: p.visibility->fingerprint ^= 1; break;
    case 2: p.visibility->slot ^= static_cast<std::uint16_t>(mangle); break;
    case 3: p.visibility.reset(); break;
    case 4: p.visibility->state = VisState::kStored; break;
    default: break;
  }
  const std::optional<DataLog::Entry> before = log.entry(id);
  const Packet r = state->backup.handle(p);
  require(r.seq == p.seq);
  require(encoded_size(r) <= kMaxDatagram);
  const std::optional<DataLog::Entry> after = log.entry(id);
  if (r.op == Op::kReply) {
    require(r.status == Status::kOk);
    require(mangle % 8 == 0 || mangle % 8 >= 5);
    require(after && after->key == key && after->record == record && after->ts == ts);
    require(log.slot_ts(slot_key(key).slot) >= ts);
  } else {
    require(r.op == Op::kError && r.status == Status::kBadRequest);
    require(before.has_value() == after.has_value());
    if (before) require(before->key == after->key && before->record == after->record && before->ts == after->ts);
  }
  // The backup's fetch: ascending ids of entries that are there.
  Packet f;
  f.op = Op::kLogFetch;
  f.seq = inputs;
  f.value = std::string(4, '\0');
  f.count = 256;
  const Packet fr = state->backup.handle(f);
  require(fr.op == Op::kReply && fr.status == Status::kOk);
  const auto got = decode_scan_entries(fr.value);
  require(got && got->size() == fr.count);
  std::uint32_t last = 0;
  for (const ScanEntry& e : *got) {
    const auto s = decode_stamped(e.value);
    require(s && s->location.log_id > last);
    last = s->location.log_id;
    const auto entry = log.entry(last);
    require(entry && entry->key == e.key && entry->ts == s->ts);
  }
  // A backup takes no client writes.
  Packet a = p;
  a.op = Op::kLogAppend;
  a.visibility = VisibilityHeader{slot_key(key).slot, VisState::kNone, slot_key(key).fingerprint, 0, 0};
  require(state->backup.handle(a).status == Status::kBadRequest);
}

void backup_raw(std::string_view bytes) {
  auto* b = reinterpret_cast<const std::byte*>(bytes.data());
  std::vector<std::byte> d(b, b + bytes.size());
  if (d.size() >= 4) {
    d[0] = std::byte{0xF0};
    d[1] = std::byte{0xE1};
    d[2] = std::byte{kVersion};
    d[3] = static_cast<std::byte>(Op::kLogReplicate);
  }
  const auto out = state->backup.serve(d);
  if (out) {
    Packet r;
    require(parse_packet(*out, &r) == ParseError::kNone);
    require(r.op == Op::kReply || r.op == Op::kError);
  }
}

// A request to the --secondary-index node: u8 what, then (append) u8
// primary key length, u8 secondary key length, keys, payload; (raw
// append) u8 key length, key, value as it comes; (read) the key; (fetch)
// u32 first id, u8 count; (multi-read) u8 mangle, then keys, each u8
// length (high bit set: the key of a log entry picked by the low bits),
// then its bytes.
void sidx(std::string_view bytes) {
  DataLog& log = state->sidx_log;
  const unsigned what = bytes.empty() ? 0 : static_cast<unsigned char>(bytes[0]);
  const std::string_view rest = bytes.substr(std::min<std::size_t>(bytes.size(), 1));
  const auto handle = [&](const Packet& p) {
    const Packet r = state->sidx.handle(p);
    require(r.seq == p.seq);
    require(r.op == Op::kReply || r.op == Op::kError);
    require(encoded_size(r) <= kMaxDatagram);
    return r;
  };
  const auto read_by_key = [&](const std::string& key) {
    Packet p;
    p.op = Op::kLogRead;
    p.seq = inputs;
    p.key = key;
    return handle(p);
  };
  switch (what % 5) {
    case 0:
    case 1: {
      const std::size_t pk = rest.size() > 0 ? static_cast<unsigned char>(rest[0]) : 0;
      const std::size_t sk = rest.size() > 1 ? static_cast<unsigned char>(rest[1]) : 0;
      const std::string_view tail = rest.substr(std::min<std::size_t>(rest.size(), 2));
      const std::string primary(tail.substr(0, std::min(pk, tail.size())));
      const std::string_view after = tail.substr(primary.size());
      std::string secondary(after.substr(0, std::min(sk, after.size())));
      const std::string payload(after.substr(secondary.size()));
      Packet p;
      p.op = Op::kLogAppend;
      p.seq = inputs;
      p.key = primary;
      if (what % 5 == 0) {
        p.value = encode_sidx_record(secondary, payload);
      } else {
        p.value = std::string(tail);  // whatever it is
      }
      const std::optional<SidxRecord> record = decode_sidx_record(p.value);
      const SlotKey slot = slot_key(record ? record->secondary : secondary);
      p.visibility = VisibilityHeader{slot.slot, VisState::kNone, slot.fingerprint, 0, static_cast<std::uint32_t>(what)};
      const std::uint64_t before = log.entries();
      const Packet r = handle(p);
      if (!record || primary.empty()) {
        require(r.op == Op::kError && r.status == Status::kBadRequest);
        require(log.entries() == before);
        return;
      }
      require(r.op == Op::kReply && r.status == Status::kOk);
      require(r.key == primary && r.value == encode_sidx_entry(primary, record->secondary));
      require(r.visibility && r.visibility->state == VisState::kPartial && r.visibility->slot == slot.slot &&
              r.visibility->fingerprint == slot.fingerprint && r.visibility->aux == what);
      // One counter: the timestamp is the log id, for every slot.
      require(log.entries() == before + 1 && r.visibility->ts == log.entries() && log.slot_ts(0) == r.visibility->ts);
      const Packet back = read_by_key(primary);
      require(back.op == Op::kReply && back.status == Status::kOk && back.value == p.value);
      return;
    }
    case 2: {
      std::string key(rest);
      if (key.size() > kMaxKeyBytes) key.resize(kMaxKeyBytes);
      const Packet r = read_by_key(key);
      require(r.op == Op::kReply);
      if (r.status == Status::kOk) {
        require(decode_sidx_record(r.value).has_value());
      } else {
        require(r.status == Status::kNotFound && r.value.empty());
      }
      return;
    }
    case 4: {
      const unsigned mangle = rest.empty() ? 0 : static_cast<unsigned char>(rest[0]);
      std::vector<ScanEntry> asked;
      for (std::size_t at = 1; at < rest.size();) {
        const unsigned n = static_cast<unsigned char>(rest[at++]);
        if ((n & 0x80) != 0 && log.entries() > 0) {
          const auto entry = log.entry(1 + static_cast<std::uint32_t>((n & 0x7F) % log.entries()));
          asked.push_back({entry ? entry->key : std::string(), std::string()});
        } else {
          const std::size_t k = std::min<std::size_t>(n & 0x7F, rest.size() - at);
          asked.push_back({std::string(rest.substr(at, k)), std::string()});
          at += k;
        }
      }
      if (asked.empty()) asked.push_back({std::string("k"), std::string()});
      Packet p;
      p.op = Op::kLogRead;
      p.seq = inputs;
      p.key = asked.front().key;
      p.count = static_cast<std::uint32_t>(asked.size());
      switch (mangle % 8) {
        case 1: p.count += 1 + mangle / 8; break;
        case 2: asked.front().value = "v"; break;
        case 3: p.count = kMaxSidxReadCount + 1 + mangle; break;
        default: break;
      }
      p.value = encode_scan_entries(asked);
      const bool empty_key =
          std::any_of(asked.begin(), asked.end(), [](const ScanEntry& e) { return e.key.empty(); });
      const Packet r = handle(p);
      if (mangle % 8 == 1 || mangle % 8 == 2 || mangle % 8 == 3 || empty_key) {
        require(r.op == Op::kError && r.status == Status::kBadRequest);
        return;
      }
      require(r.op == Op::kReply && r.status == Status::kOk && r.key == p.key);
      const auto got = decode_scan_entries(r.value);
      require(got && got->size() == r.count && !got->empty() && got->size() <= asked.size());
      require(r.more == (got->size() < asked.size()));
      require(got->size() == 1 || encoded_size(r) <= kMaxSidxMultiReadBytes);
      for (std::size_t k = 0; k < got->size(); ++k) {
        require((*got)[k].key == asked[k].key);
        const Packet one = read_by_key(asked[k].key);
        require(one.op == Op::kReply);
        require(one.status == Status::kOk ? (*got)[k].value == one.value
                                          : one.status == Status::kNotFound && (*got)[k].value.empty());
      }
      return;
    }
    default: {
      const std::uint64_t entries = log.entries();
      const std::uint32_t first = u32(rest, 0) % static_cast<std::uint32_t>(entries + 2);
      Packet p;
      p.op = Op::kLogFetch;
      p.seq = inputs;
      p.value = std::string(4, '\0');
      for (int b = 0; b < 4; ++b) p.value[static_cast<std::size_t>(b)] = static_cast<char>(first >> (24 - 8 * b));
      p.count = rest.size() > 4 ? static_cast<unsigned char>(rest[4]) : 0;
      const Packet r = handle(p);
      require(r.op == Op::kReply && r.status == Status::kOk);
      const auto got = decode_scan_entries(r.value);
      require(got && got->size() == r.count);
      std::uint64_t id = first == 0 ? 1 : first;
      for (const ScanEntry& e : *got) {
        require(e.value.size() >= kStampedLocationBytes);
        const auto s = decode_stamped(std::string_view(e.value).substr(0, kStampedLocationBytes));
        require(s && s->location.log_id == id && s->ts == id);
        const auto entry = log.entry(static_cast<std::uint32_t>(id));
        require(entry && entry->key == e.key);
        const auto record = decode_sidx_record(entry->record);
        require(record && e.value.substr(kStampedLocationBytes) == record->secondary);
        ++id;
      }
      require(r.more == (id <= entries));
      return;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (state == nullptr || inputs % 1024 == 0 || state->log.bytes() > (std::size_t{64} << 20) ||
      state->backup_log.bytes() > (std::size_t{64} << 20) || state->sidx_log.bytes() > (std::size_t{64} << 20)) {
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
    switch (static_cast<unsigned char>(chunk[0]) % 6) {
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
      case 3:
        replicate(rest);
        break;
      case 4:
        backup_raw(rest);
        break;
      case 5:
        sidx(rest);
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

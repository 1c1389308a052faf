// Switch-delta's ordered writes on forein's wire (docs/protocol.md,
// "Switch-delta"; paper 002, sections III-IV): what each op carries, the
// key's 48-bit hash (16-bit slot + 32-bit fingerprint), the metadata that
// says where a value lives, and the 128-byte records the load client
// writes and checks.
//
//   op          from -> to              key   value                      visibility header
//   LOG_APPEND  client -> data node     key   record                     slot, fingerprint
//     reply     data node -> client     key   metadata (where it lives)  slot, fingerprint, ts; state set by the switch
//   LOG_READ    client -> data node     key   metadata                   slot
//     reply                             key   record (kMismatch: another key is there)
//   LOG_FETCH   metadata -> data node   -     u32 first log id; count = most entries
//     reply                             -     entries: key, FetchedEntry (more: entries remain)
//   META_GET    client -> metadata      key   -                          slot, fingerprint
//     reply     (node or switch)        key   metadata (kNotFound: none)  state kSwitchRead if the switch answered
//   META_PUT    client -> metadata      key   metadata                   slot, fingerprint, ts
//     reply                             key   -                          slot, ts (the switch holds it while the slot is older)
//   META_ASYNC  switch -> metadata      key   metadata                   slot, fingerprint, ts
//   CLEAR       metadata -> switch      -     -                          slot, ts
//
// A data node stamps each append with a timestamp from its counter for
// the key's slot (non-zero, increasing): keys that share a slot share a
// data node (slot % data nodes), so one counter orders every write that
// can meet in a slot, as section III-B requires.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

namespace forein::net {

// Section IV-B: 2^16 slots; metadata up to 96 bytes.
inline constexpr std::uint32_t kVisibilitySlots = 65536;
inline constexpr std::size_t kMaxSlotMetadataBytes = 96;

struct SlotKey {
  std::uint16_t slot = 0;
  std::uint32_t fingerprint = 0;  // never 0: 0 marks an empty slot
};

// The key's 48-bit hash: FNV-1a 64 over its bytes, then a SplitMix64
// finaliser so 8-byte big-endian keys spread; slot = low 16 bits,
// fingerprint = the next 32 (0 becomes 1).
inline SlotKey slot_key(std::string_view key) {
  std::uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : key) h = (h ^ c) * 0x100000001B3ull;
  h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ull;
  h = (h ^ (h >> 27)) * 0x94D049BB133111EBull;
  h ^= h >> 31;
  SlotKey k;
  k.slot = static_cast<std::uint16_t>(h);
  k.fingerprint = static_cast<std::uint32_t>(h >> 16);
  if (k.fingerprint == 0) k.fingerprint = 1;
  return k;
}

// The data node owning a slot.
inline std::uint32_t data_node_of(std::uint16_t slot, std::uint32_t data_nodes) {
  return data_nodes == 0 ? 0 : slot % data_nodes;
}

// Metadata: where a value lives (section II, Table I: key -> log id).
// 6 bytes, big-endian: data node u16, log id u32 (ids start at 1).
struct LogLocation {
  std::uint16_t node = 0;
  std::uint32_t log_id = 0;

  bool operator==(const LogLocation&) const = default;
};
inline constexpr std::size_t kLogLocationBytes = 6;

inline std::string encode_location(const LogLocation& l) {
  std::string out(kLogLocationBytes, '\0');
  out[0] = static_cast<char>(l.node >> 8);
  out[1] = static_cast<char>(l.node);
  for (int b = 0; b < 4; ++b) out[static_cast<std::size_t>(2 + b)] = static_cast<char>(l.log_id >> (24 - 8 * b));
  return out;
}

inline std::optional<LogLocation> decode_location(std::string_view s) {
  if (s.size() != kLogLocationBytes) return std::nullopt;
  const auto u = [&](std::size_t i) { return static_cast<std::uint32_t>(static_cast<unsigned char>(s[i])); };
  LogLocation l;
  l.node = static_cast<std::uint16_t>((u(0) << 8) | u(1));
  l.log_id = (u(2) << 24) | (u(3) << 16) | (u(4) << 8) | u(5);
  if (l.log_id == 0) return std::nullopt;
  return l;
}

// What the metadata node keeps per key (its tree's value) and what a
// LOG_FETCH entry carries: the location and the write's timestamp.
// 10 bytes: location, then ts u32 big-endian.
struct StampedLocation {
  LogLocation location;
  std::uint32_t ts = 0;
};
inline constexpr std::size_t kStampedLocationBytes = kLogLocationBytes + 4;

inline std::string encode_stamped(const StampedLocation& s) {
  std::string out = encode_location(s.location);
  for (int b = 0; b < 4; ++b) out.push_back(static_cast<char>(s.ts >> (24 - 8 * b)));
  return out;
}

inline std::optional<StampedLocation> decode_stamped(std::string_view s) {
  if (s.size() != kStampedLocationBytes) return std::nullopt;
  auto l = decode_location(s.substr(0, kLogLocationBytes));
  if (!l) return std::nullopt;
  StampedLocation out;
  out.location = *l;
  for (std::size_t i = kLogLocationBytes; i < s.size(); ++i) out.ts = (out.ts << 8) | static_cast<unsigned char>(s[i]);
  return out;
}

// A batched CLEAR (docs/protocol.md): the visibility header holds the
// first (slot, ts); the value holds further pairs, kClearEntryBytes each:
// slot u16, ts u32, big-endian. A metadata node packs at most
// kMaxClearsPerDatagram pairs (1 + 199 x 6 = 1,194 value bytes: the
// datagram, 1,234 bytes, fits one 1,500-byte frame, so never IP
// fragments, which the switch's data plane does not reassemble).
inline constexpr std::size_t kClearEntryBytes = 6;
inline constexpr std::size_t kMaxClearsPerDatagram = 200;

inline void append_clear_entry(std::string* value, std::uint16_t slot, std::uint32_t ts) {
  value->push_back(static_cast<char>(slot >> 8));
  value->push_back(static_cast<char>(slot));
  for (int b = 0; b < 4; ++b) value->push_back(static_cast<char>(ts >> (24 - 8 * b)));
}

// The load client's records (paper V-A: 128 bytes): "r", 16 hex digits of
// the data set index, "-", 8 hex digits of the version, "-", then filler
// derived from both, so a reader can tell which write it got and that the
// bytes are whole.
inline constexpr std::size_t kRecordBytes = 128;

inline std::string dataset_record(std::uint64_t i, std::uint32_t version, std::size_t bytes = kRecordBytes) {
  char head[32];
  std::snprintf(head, sizeof head, "r%016llx-%08x-", static_cast<unsigned long long>(i), version);
  std::string out(head);
  std::uint64_t z = i * 0x9E3779B97F4A7C15ull + version;
  while (out.size() < bytes) {
    z = (z ^ (z >> 31)) * 0xBF58476D1CE4E5B9ull + 0x632BE59BD9B4E019ull;
    out.push_back(static_cast<char>('a' + (z >> 59) % 26));
  }
  out.resize(bytes);
  return out;
}

// The version of a record written by dataset_record(i, version, size),
// or nullopt if the bytes are anything else.
inline std::optional<std::uint32_t> record_version(std::string_view record, std::uint64_t i) {
  if (record.size() < 27 || record[0] != 'r') return std::nullopt;
  std::uint32_t version = 0;
  for (std::size_t p = 18; p < 26; ++p) {
    const char c = record[p];
    const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) return std::nullopt;
    version = (version << 4) | static_cast<std::uint32_t>(d);
  }
  if (record != dataset_record(i, version, record.size())) return std::nullopt;
  return version;
}

}  // namespace forein::net

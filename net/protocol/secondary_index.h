// Switch-delta's secondary-index case study (paper 002, section VI-B) on
// forein's wire, with the partial writes of section III-C
// (docs/protocol.md, "Secondary index"). The data node keeps the records
// and the primary index (primary key -> its newest record); the metadata
// node keeps the secondary index, composite keys (secondary key,
// timestamp, primary key) in the engine tree. A write changes one member
// of a secondary key's entry (the list of its primary keys), so the
// switch stores only that member, a partial entry, in the slot of the
// secondary key, and never answers a read from it: a SIDX_READ that finds
// it is forwarded with the partial entry attached and the metadata node
// merges it into its answer.
//
//   op          from -> to              key          value                 visibility header
//   LOG_APPEND  client -> data node     primary key  SidxRecord            slot, fp of the secondary key
//     reply     data node -> client     primary key  SidxEntry             slot, fp, ts, state kPartial (the switch
//                                                                          replaces it: kStored / kFallback)
//   META_PUT    client -> metadata      primary key  SidxEntry             slot, fp, ts (phase 2, as for the KV store)
//   META_ASYNC  switch -> metadata      primary key  SidxEntry             slot, fp, ts
//   SIDX_READ   client -> metadata      secondary    - (the switch may     slot, fp of the secondary key;
//               count = most keys       key          attach a SidxEntry)   attached: state kPartial, ts = CurTs
//     reply     metadata -> client      secondary    scan entries:         slot, fp
//               count = entries         key          primary key -> ts
//                                                    (u32); kFlagMore if
//                                                    more follow
//   LOG_READ    client -> data node     primary key  empty                 slot, fp
//     reply                             primary key  its newest SidxRecord (kNotFound: none)
//   LOG_READ    client -> data node     first        scan entries:         slot, fp of the first key
//   (multi-read, count = n keys)        primary key  primary key -> ""     (routing only)
//     reply     data node -> client     first        scan entries, same
//               count = m <= n          primary key  order: primary key ->
//                                                    newest SidxRecord (""
//                                                    = none); kFlagMore
//                                                    if m < n
//
// A multi-read is SLIK's multiRead (RAMCloud): the reader fetches the
// records of the keys SIDX_READ listed in one round trip instead of one
// LOG_READ each. Its reply holds at most kMaxSidxMultiReadBytes (always
// at least one entry); the reader asks again for the keys left out.
//
// Timestamps of a --secondary-index data node come from one counter for
// every write (the paper's one data node), so a primary key's writes are
// ordered by them whatever secondary keys they name; the metadata node
// keeps, per primary key, only the composite key of its newest write.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "protocol/dataset.h"
#include "protocol/visibility.h"

namespace forein::net {

// Most primary keys one SIDX_READ may ask for (the paper's reads return
// the first 10; the reply of 256 8-byte keys fits one datagram).
inline constexpr std::uint32_t kMaxSidxReadCount = 256;
// Bytes of a SIDX_READ reply entry's value: the composite key's timestamp.
inline constexpr std::size_t kSidxTsBytes = 4;
// A multi-read's datagrams (the reply, and the load client's requests)
// hold at most this many bytes, so each fits one 1,500-byte Ethernet
// frame (1,400 + 8 UDP + 20 IPv4 = 1,428, room left for IP options or a
// tunnel) and is never IP-fragmented: the DPDK switch does not reassemble
// fragments (the reasoning of kMaxClearsPerDatagram,
// protocol/visibility.h). A reply holds at least one entry even when that
// one is larger (a record of up to kMaxRecordBytes still fits a datagram).
inline constexpr std::size_t kMaxSidxMultiReadBytes = 1400;
// A scan entry's bytes besides its key and value (u16 key length, u32
// value length; protocol/packet.h).
inline constexpr std::size_t kSidxMultiReadEntryOverhead = 6;

namespace sidx_detail {
inline void put_u16(std::string* out, std::size_t v) {
  out->push_back(static_cast<char>(v >> 8));
  out->push_back(static_cast<char>(v));
}
inline std::size_t get_u16(std::string_view s, std::size_t at) {
  return (static_cast<std::size_t>(static_cast<unsigned char>(s[at])) << 8) | static_cast<unsigned char>(s[at + 1]);
}
}  // namespace sidx_detail

// What a write changes in the secondary index (the partial metadata
// entry; the switch's slot holds it, so at most 96 bytes): u16 primary
// key length, primary key, u16 secondary key length, secondary key. The
// write's timestamp travels in the visibility header.
struct SidxEntry {
  std::string primary;
  std::string secondary;

  bool operator==(const SidxEntry&) const = default;
};

inline std::string encode_sidx_entry(std::string_view primary, std::string_view secondary) {
  std::string out;
  out.reserve(4 + primary.size() + secondary.size());
  sidx_detail::put_u16(&out, primary.size());
  out.append(primary);
  sidx_detail::put_u16(&out, secondary.size());
  out.append(secondary);
  return out;
}

// nullopt unless the bytes are exactly one entry with non-empty keys of
// at most kMaxKeyBytes... (the caller checks its own limits).
inline std::optional<SidxEntry> decode_sidx_entry(std::string_view s) {
  if (s.size() < 2) return std::nullopt;
  const std::size_t p = sidx_detail::get_u16(s, 0);
  if (p == 0 || s.size() < 2 + p + 2) return std::nullopt;
  const std::size_t k = sidx_detail::get_u16(s, 2 + p);
  if (k == 0 || s.size() != 4 + p + k) return std::nullopt;
  return SidxEntry{std::string(s.substr(2, p)), std::string(s.substr(4 + p, k))};
}

// A record as a --secondary-index data node stores it (LOG_APPEND's
// value): u16 secondary key length, the secondary key, then the payload
// (the load client's dataset_record). A reader validates a record it
// found through the secondary index by its secondary key (section VI-B).
struct SidxRecord {
  std::string secondary;
  std::string payload;
};

inline std::string encode_sidx_record(std::string_view secondary, std::string_view payload) {
  std::string out;
  out.reserve(2 + secondary.size() + payload.size());
  sidx_detail::put_u16(&out, secondary.size());
  out.append(secondary);
  out.append(payload);
  return out;
}

inline std::optional<SidxRecord> decode_sidx_record(std::string_view s) {
  if (s.size() < 2) return std::nullopt;
  const std::size_t k = sidx_detail::get_u16(s, 0);
  if (k == 0 || s.size() < 2 + k) return std::nullopt;
  return SidxRecord{std::string(s.substr(2, k)), std::string(s.substr(2 + k))};
}

// The load client's secondary keys (section VI-B: each primary key gets a
// random secondary key, about 25 primary keys per secondary key): write
// `version` of primary key i names secondary key j = hash(i, version) mod
// secondary_keys, sent as dataset_key(j). Every write moves the key to a
// new random secondary key, so reads meet stale composite keys, which
// the validation step filters out.
inline std::uint64_t secondary_index_of(std::uint64_t i, std::uint32_t version, std::uint64_t secondary_keys) {
  std::uint64_t z = i * 0xD1B54A32D192ED03ull + (static_cast<std::uint64_t>(version) + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return secondary_keys == 0 ? 0 : z % secondary_keys;
}

inline std::string secondary_key_of(std::uint64_t i, std::uint32_t version, std::uint64_t secondary_keys) {
  return dataset_key(secondary_index_of(i, version, secondary_keys));
}

// The paper's ratio: 100M primary keys, 4M secondary keys.
inline std::uint64_t default_secondary_keys(std::uint64_t keys) { return keys / 25 == 0 ? 1 : keys / 25; }

// A SIDX_READ reply entry's value: the composite key's timestamp, u32
// big-endian.
inline std::string encode_sidx_ts(std::uint32_t ts) {
  std::string out(kSidxTsBytes, '\0');
  for (int b = 0; b < 4; ++b) out[static_cast<std::size_t>(b)] = static_cast<char>(ts >> (24 - 8 * b));
  return out;
}

inline std::optional<std::uint32_t> decode_sidx_ts(std::string_view s) {
  if (s.size() != kSidxTsBytes) return std::nullopt;
  std::uint32_t ts = 0;
  for (unsigned char c : s) ts = (ts << 8) | c;
  return ts;
}

}  // namespace forein::net

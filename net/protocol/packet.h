// forein's wire protocol (docs/protocol.md): one UDP datagram per request
// or reply, as in FOREIN's testbed (paper section VI: OP, SEQ, KEY, VALUE,
// and the 8-byte node pointer the switch appends), plus what the other
// backends carry (Fat-B+Tree's temporary header: the current node address
// and the server id).
//
// Layout, version 1, multi-byte fields in network byte order (big-endian):
//
//   offset size field
//   0      2    magic 0xF0E1
//   2      1    version (1)
//   3      1    op (Op)
//   4      1    flags (kFlag*)
//   5      1    status (Status; 0 in requests)
//   6      2    key length K (<= kMaxKeyBytes)
//   8      8    seq (the client's; echoed in the reply)
//   16     4    value length V
//   20     4    count: SCAN requests: the most entries wanted; SCAN
//               replies: entries in the value area; else 0 (a REPLY
//               with count > 0 must hold exactly count entries)
//   24     K    key
//   24+K   V    value (SCAN replies: entries, each u16 key length, u32
//               value length, key, value)
//   then, in this order and only when its flag is set:
//          16   hint trailer (kFlagHint): primary node u32, primary level
//               u16, 0 u16, secondary node u32, secondary level u16, 0 u16
//          16   fattree header (kFlagFattree): current address u64,
//               server id u16, levels resolved u16, 0 u32
//
// The datagram's length must be exactly what the header and flags say.
// Parsers check every length against the datagram and never read outside
// it; a packet that fails is dropped and counted by its ParseError.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "forein/node_interval.h"

namespace forein::net {

inline constexpr std::uint16_t kMagic = 0xF0E1;
inline constexpr std::uint8_t kVersion = 1;
inline constexpr std::size_t kHeaderBytes = 24;
inline constexpr std::size_t kHintTrailerBytes = 16;
inline constexpr std::size_t kFattreeHeaderBytes = 16;
inline constexpr std::size_t kMaxDatagram = 65507;  // UDP over IPv4
inline constexpr std::size_t kMaxKeyBytes = 1024;

enum class Op : std::uint8_t {
  kGet = 1,
  kPut = 2,
  kDelete = 3,
  kScan = 4,
  kReply = 5,
  kError = 6,
  kStats = 7,  // server counters, as JSON in the reply's value
};

enum class Status : std::uint8_t {
  kOk = 0,
  kNotFound = 1,
  kBadRequest = 2,  // well-formed packet the server cannot serve (key too long ...)
  kTooLarge = 3,    // the reply would not fit one datagram
  kServerError = 4,
};

inline constexpr std::uint8_t kFlagHint = 1u << 0;     // hint trailer present
inline constexpr std::uint8_t kFlagFattree = 1u << 1;  // fattree header present
inline constexpr std::uint8_t kFlagMore = 1u << 2;     // SCAN reply: more entries follow the last key
inline constexpr std::uint8_t kKnownFlags = kFlagHint | kFlagFattree | kFlagMore;

// Fat-B+Tree's temporary header (section III-D): where the switches' walk
// got to and which server holds the key.
struct FattreeHeader {
  std::uint64_t address = 0;
  std::uint16_t server = 0;
  std::uint16_t resolved = 0;

  bool operator==(const FattreeHeader&) const = default;
};

struct Packet {
  Op op = Op::kGet;
  Status status = Status::kOk;
  bool more = false;  // kFlagMore
  std::uint64_t seq = 0;
  std::uint32_t count = 0;
  std::string key;
  std::string value;
  std::optional<StartHints> hints;
  std::optional<FattreeHeader> fattree;
};

enum class ParseError : std::uint8_t {
  kNone = 0,
  kTruncated,       // shorter than the header, or than its lengths say
  kBadMagic,
  kUnknownVersion,
  kUnknownOp,
  kUnknownFlags,
  kKeyTooLong,
  kTrailingBytes,   // longer than its lengths say
  kBadScanEntries,  // a SCAN reply's entries do not add up to the value area
};
inline constexpr std::size_t kParseErrors = 9;
const char* to_string(ParseError e);

// Decodes a datagram. On error *out is unspecified.
ParseError parse_packet(std::span<const std::byte> datagram, Packet* out);
// The same checks without decoding (a switch's fast path).
ParseError check_datagram(std::span<const std::byte> datagram);

// Encodes p; throws InvalidArgument if a field is out of bounds (key too
// long, datagram over kMaxDatagram).
std::vector<std::byte> encode_packet(const Packet& p);
std::size_t encoded_size(const Packet& p);

// SCAN replies' value area.
struct ScanEntry {
  std::string key;
  std::string value;
};
std::string encode_scan_entries(std::span<const ScanEntry> entries);
// nullopt if the bytes are not a whole number of well-formed entries.
std::optional<std::vector<ScanEntry>> decode_scan_entries(std::string_view bytes);

// In-place rewrites for a switch forwarding a datagram it has checked with
// parse_packet (or check_datagram): sets or replaces the hint trailer /
// fattree header, growing the datagram by its size if absent. Return false
// (datagram unchanged) if it is not a valid packet or would pass kMaxDatagram.
bool set_hint_trailer(std::vector<std::byte>& datagram, const StartHints& hints);
// The same in place, for a switch writing into the frame it forwards:
// buffer holds the datagram in its first `length` bytes and has room for
// the trailer after it. Returns the new length, or 0 (buffer unchanged)
// if the datagram is not valid or the trailer does not fit (buffer or
// kMaxDatagram).
std::size_t set_hint_trailer_in_place(std::span<std::byte> buffer, std::size_t length, const StartHints& hints);
bool set_fattree_header(std::vector<std::byte>& datagram, const FattreeHeader& header);

// The key of a valid datagram without copying it (empty on error).
std::string_view packet_key(std::span<const std::byte> datagram);

}  // namespace forein::net

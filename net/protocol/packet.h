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
//          16   visibility header (kFlagVisibility, Switch-delta): slot
//               u16, state u8 (VisState), 0 u8, fingerprint u32,
//               timestamp u32, aux u32 (protocol/visibility.h)
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
  // Switch-delta's ordered writes (docs/protocol.md, "Switch-delta";
  // protocol/visibility.h has the fields each one carries).
  kLogAppend = 8,   // client -> data node: append (key, record) to the log
  kLogRead = 9,     // client -> data node: the record at a log location, key checked
  kLogFetch = 10,   // metadata node -> data node: log entries from a log id (recovery)
  kMetaGet = 11,    // client -> metadata node (or the switch's slot): key -> location
  kMetaPut = 12,    // client -> metadata node: phase 2 of a write the switch did not take
  kMetaAsync = 13,  // switch -> metadata node: the copy of a write the switch took
  kClear = 14,      // metadata node -> switch: clear a slot if it still holds this timestamp
  // Remote node reads (docs/remote-read.md): client -> memory node, one
  // READ of a region's bytes; key = the key being looked up (for the
  // switch: routing, and the start READ's rewrite), value = ReadHeader.
  kRead = 15,
  // Switch-delta's replication (section V-D) and switch-crash recovery
  // (section III-E, V-F): docs/protocol.md, "Switch-delta".
  kLogReplicate = 16,  // primary data node -> backup: install a log entry at its id and timestamp
  kSync = 17,          // metadata node <-> switch: recovery after a switch restart
  // Switch-delta's secondary-index case study (section VI-B) with partial
  // writes (section III-C): protocol/secondary_index.h.
  kSidxRead = 18,  // client -> metadata node: the primary keys of a secondary key
};
inline constexpr Op kLastOp = Op::kSidxRead;

enum class Status : std::uint8_t {
  kOk = 0,
  kNotFound = 1,
  kBadRequest = 2,  // well-formed packet the server cannot serve (key too long ...)
  kTooLarge = 3,    // the reply would not fit one datagram
  kServerError = 4,
  kMismatch = 5,  // LOG_READ: the entry at that location holds another key (retry the read)
  kBadAddress = 6,  // READ: address or length outside the region, or longer than it serves
};

inline constexpr std::uint8_t kFlagHint = 1u << 0;     // hint trailer present
inline constexpr std::uint8_t kFlagFattree = 1u << 1;  // fattree header present
inline constexpr std::uint8_t kFlagMore = 1u << 2;     // SCAN reply: more entries follow the last key
inline constexpr std::uint8_t kFlagVisibility = 1u << 3;  // visibility header present
inline constexpr std::uint8_t kKnownFlags = kFlagHint | kFlagFattree | kFlagMore | kFlagVisibility;
inline constexpr std::size_t kVisibilityHeaderBytes = 16;

// Switch-delta's header (section IV-A: hash index, fingerprint and
// timestamp of the operation) and what the switch did with the packet.
enum class VisState : std::uint8_t {
  kNone = 0,      // as the host sent it
  kStored = 1,    // data-write reply: the switch stored it; the write is committed
  kFallback = 2,  // data-write reply: the slot was busy; the client runs phase 2
  kSwitchRead = 3,  // META_GET reply answered from the switch's slot
  kHeld = 4,      // META_PUT reply turned back to the metadata node: the slot
                  // still holds an older write (aux: its timestamp; value:
                  // its metadata); resend once the slot clears
  kPartial = 5,   // a partial write (section III-C; protocol/secondary_index.h):
                  // in a data-write reply from a --secondary-index data
                  // node, "store this as a partial entry" (the switch
                  // replaces it with kStored or kFallback); in a SIDX_READ
                  // the switch forwards, "the value holds the slot's partial
                  // entry, ts its CurTs" (the metadata node merges it)
};
inline constexpr std::uint8_t kMaxVisState = 5;

struct VisibilityHeader {
  std::uint16_t slot = 0;
  VisState state = VisState::kNone;
  std::uint32_t fingerprint = 0;
  std::uint32_t ts = 0;
  std::uint32_t aux = 0;

  bool operator==(const VisibilityHeader&) const = default;
};

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
  std::optional<VisibilityHeader> visibility;
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
  kBadVisibility,   // a visibility header with an unknown state or nonzero padding
};
inline constexpr std::size_t kParseErrors = 10;
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

// Where a valid datagram's visibility header starts, or 0 (not valid, or
// no header): a switch reads and rewrites the header in the frame.
std::size_t visibility_offset(std::span<const std::byte> datagram);
VisibilityHeader load_visibility(const std::byte* p);
void store_visibility(std::byte* p, const VisibilityHeader& v);

// A READ's header (docs/protocol.md, "READ"): the request's whole value,
// and the first 16 bytes of its reply's value (the bytes read follow):
//
//   offset size field
//   0      8    address: the region byte offset to read
//   8      4    length: bytes wanted (the reply's bytes, on success)
//   12     2    flags (kReadStart, kReadRewritten)
//   14     2    reserved, 0
inline constexpr std::size_t kReadHeaderBytes = 16;
// The client's first READ of a lookup: a switch may replace the address
// with the node its image names for the key (Fat-B+Tree's RoCE `va`
// rewrite; FOREIN's hinted node).
inline constexpr std::uint16_t kReadStart = 1u << 0;
// Set by the switch that replaced the address (the reply echoes it).
inline constexpr std::uint16_t kReadRewritten = 1u << 1;
inline constexpr std::uint16_t kReadKnownFlags = kReadStart | kReadRewritten;

struct ReadHeader {
  std::uint64_t address = 0;
  std::uint32_t length = 0;
  std::uint16_t flags = 0;

  bool operator==(const ReadHeader&) const = default;
};

// 16 bytes.
std::string encode_read_header(const ReadHeader& h);
// nullopt unless `bytes` starts with a header whose flags are known and
// reserved field is 0 (the caller checks the length it needs).
std::optional<ReadHeader> decode_read_header(std::string_view bytes);
// For a switch rewriting a start READ in the frame: where a valid
// datagram's READ header starts (its value, exactly 16 bytes), or 0 (not
// valid, not a READ, or another value length).
std::size_t read_header_offset(std::span<const std::byte> datagram);
ReadHeader load_read_header(const std::byte* p);
void store_read_header(std::byte* p, const ReadHeader& h);

// The key of a valid datagram without copying it (empty on error).
std::string_view packet_key(std::span<const std::byte> datagram);

}  // namespace forein::net

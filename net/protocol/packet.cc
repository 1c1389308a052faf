#include "protocol/packet.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "forein/error.h"

namespace forein::net {

namespace {

// Big-endian loads and stores through memcpy: any alignment, any bytes.
template <typename T>
T load_be(const std::byte* p) {
  unsigned char b[sizeof(T)];
  std::memcpy(b, p, sizeof b);
  std::uint64_t v = 0;
  for (unsigned char c : b) v = (v << 8) | c;
  return static_cast<T>(v);
}

template <typename T>
void store_be(std::byte* p, T v) {
  unsigned char b[sizeof(T)];
  auto x = static_cast<std::uint64_t>(v);
  for (std::size_t i = sizeof(T); i-- > 0;) {
    b[i] = static_cast<unsigned char>(x);
    x >>= 8;
  }
  std::memcpy(p, b, sizeof b);
}

constexpr std::size_t kEntryHeaderBytes = 6;  // u16 key length, u32 value length

bool known_op(std::uint8_t op) {
  return op >= static_cast<std::uint8_t>(Op::kGet) && op <= static_cast<std::uint8_t>(kLastOp);
}

// Walks SCAN entries in [p, p + n); calls f(key, value) for each. Returns
// the number of entries, or -1 if the bytes are not whole, well-formed
// entries. The loop is bounded by n / 6, whatever the lengths say.
template <typename F>
std::int64_t walk_entries(const std::byte* p, std::size_t n, F&& f) {
  std::size_t pos = 0;
  std::int64_t entries = 0;
  while (pos < n) {
    if (n - pos < kEntryHeaderBytes) return -1;
    std::size_t k = load_be<std::uint16_t>(p + pos);
    std::size_t v = load_be<std::uint32_t>(p + pos + 2);
    pos += kEntryHeaderBytes;
    if (k > kMaxKeyBytes || n - pos < k || n - pos - k < v) return -1;
    f(std::string_view(reinterpret_cast<const char*>(p + pos), k),
      std::string_view(reinterpret_cast<const char*>(p + pos + k), v));
    pos += k + v;
    ++entries;
  }
  return entries;
}

// Where a checked datagram's parts lie.
struct Layout {
  std::uint8_t flags = 0;
  std::size_t key_len = 0;
  std::size_t value_len = 0;
  std::size_t value_end = 0;  // kHeaderBytes + K + V: where the trailers start
  std::size_t visibility = 0;  // where the visibility header starts (0: none)
};

ParseError check(std::span<const std::byte> d, Layout* l) {
  if (d.size() < kHeaderBytes) return ParseError::kTruncated;
  const std::byte* p = d.data();
  if (load_be<std::uint16_t>(p) != kMagic) return ParseError::kBadMagic;
  // The version comes first: a later version may change everything after it.
  if (load_be<std::uint8_t>(p + 2) != kVersion) return ParseError::kUnknownVersion;
  auto op = load_be<std::uint8_t>(p + 3);
  if (!known_op(op)) return ParseError::kUnknownOp;
  l->flags = load_be<std::uint8_t>(p + 4);
  if ((l->flags & ~kKnownFlags) != 0) return ParseError::kUnknownFlags;
  l->key_len = load_be<std::uint16_t>(p + 6);
  if (l->key_len > kMaxKeyBytes) return ParseError::kKeyTooLong;
  l->value_len = load_be<std::uint32_t>(p + 16);
  // In 64 bits: K < 2^16 and V < 2^32, so no sum overflows.
  std::uint64_t total = std::uint64_t{kHeaderBytes} + l->key_len + l->value_len;
  l->value_end = static_cast<std::size_t>(total);
  if ((l->flags & kFlagHint) != 0) total += kHintTrailerBytes;
  if ((l->flags & kFlagFattree) != 0) total += kFattreeHeaderBytes;
  if ((l->flags & kFlagVisibility) != 0) {
    l->visibility = static_cast<std::size_t>(total);
    total += kVisibilityHeaderBytes;
  }
  if (d.size() < total) return ParseError::kTruncated;
  if (d.size() > total) return ParseError::kTrailingBytes;
  if (l->visibility != 0 && (load_be<std::uint8_t>(p + l->visibility + 2) > kMaxVisState ||
                             load_be<std::uint8_t>(p + l->visibility + 3) != 0)) {
    return ParseError::kBadVisibility;
  }
  auto count = load_be<std::uint32_t>(p + 20);
  if (op == static_cast<std::uint8_t>(Op::kReply) && count > 0) {
    std::int64_t n = walk_entries(p + kHeaderBytes + l->key_len, l->value_len,
                                  [](std::string_view, std::string_view) {});
    if (n != static_cast<std::int64_t>(count)) return ParseError::kBadScanEntries;
  }
  return ParseError::kNone;
}

void store_hints(std::byte* p, const StartHints& h) {
  store_be<std::uint32_t>(p, h.primary.node);
  store_be<std::uint16_t>(p + 4, h.primary.level);
  store_be<std::uint16_t>(p + 6, 0);
  store_be<std::uint32_t>(p + 8, h.secondary.node);
  store_be<std::uint16_t>(p + 12, h.secondary.level);
  store_be<std::uint16_t>(p + 14, 0);
}

// The wire has no version: hints come back with version 0.
StartHints load_hints(const std::byte* p) {
  StartHints h;
  h.primary.node = load_be<std::uint32_t>(p);
  h.primary.level = load_be<std::uint16_t>(p + 4);
  h.secondary.node = load_be<std::uint32_t>(p + 8);
  h.secondary.level = load_be<std::uint16_t>(p + 12);
  return h;
}

void store_fattree(std::byte* p, const FattreeHeader& f) {
  store_be<std::uint64_t>(p, f.address);
  store_be<std::uint16_t>(p + 8, f.server);
  store_be<std::uint16_t>(p + 10, f.resolved);
  store_be<std::uint32_t>(p + 12, 0);
}

FattreeHeader load_fattree(const std::byte* p) {
  FattreeHeader f;
  f.address = load_be<std::uint64_t>(p);
  f.server = load_be<std::uint16_t>(p + 8);
  f.resolved = load_be<std::uint16_t>(p + 10);
  return f;
}

}  // namespace

VisibilityHeader load_visibility(const std::byte* p) {
  VisibilityHeader v;
  v.slot = load_be<std::uint16_t>(p);
  v.state = static_cast<VisState>(load_be<std::uint8_t>(p + 2));
  v.fingerprint = load_be<std::uint32_t>(p + 4);
  v.ts = load_be<std::uint32_t>(p + 8);
  v.aux = load_be<std::uint32_t>(p + 12);
  return v;
}

void store_visibility(std::byte* p, const VisibilityHeader& v) {
  store_be<std::uint16_t>(p, v.slot);
  store_be<std::uint8_t>(p + 2, static_cast<std::uint8_t>(v.state));
  store_be<std::uint8_t>(p + 3, 0);
  store_be<std::uint32_t>(p + 4, v.fingerprint);
  store_be<std::uint32_t>(p + 8, v.ts);
  store_be<std::uint32_t>(p + 12, v.aux);
}

std::size_t visibility_offset(std::span<const std::byte> datagram) {
  Layout l;
  if (check(datagram, &l) != ParseError::kNone) return 0;
  return l.visibility;
}

const char* to_string(ParseError e) {
  switch (e) {
    case ParseError::kNone: return "none";
    case ParseError::kTruncated: return "truncated";
    case ParseError::kBadMagic: return "bad_magic";
    case ParseError::kUnknownVersion: return "unknown_version";
    case ParseError::kUnknownOp: return "unknown_op";
    case ParseError::kUnknownFlags: return "unknown_flags";
    case ParseError::kKeyTooLong: return "key_too_long";
    case ParseError::kTrailingBytes: return "trailing_bytes";
    case ParseError::kBadScanEntries: return "bad_scan_entries";
    case ParseError::kBadVisibility: return "bad_visibility";
  }
  return "unknown";
}

ParseError check_datagram(std::span<const std::byte> datagram) {
  Layout l;
  return check(datagram, &l);
}

ParseError parse_packet(std::span<const std::byte> datagram, Packet* out) {
  Layout l;
  if (ParseError e = check(datagram, &l); e != ParseError::kNone) return e;
  const std::byte* p = datagram.data();
  out->op = static_cast<Op>(load_be<std::uint8_t>(p + 3));
  out->status = static_cast<Status>(load_be<std::uint8_t>(p + 5));
  out->more = (l.flags & kFlagMore) != 0;
  out->seq = load_be<std::uint64_t>(p + 8);
  out->count = load_be<std::uint32_t>(p + 20);
  const char* c = reinterpret_cast<const char*>(p);
  out->key.assign(c + kHeaderBytes, l.key_len);
  out->value.assign(c + kHeaderBytes + l.key_len, l.value_len);
  std::size_t at = l.value_end;
  out->hints.reset();
  out->fattree.reset();
  out->visibility.reset();
  if ((l.flags & kFlagHint) != 0) {
    out->hints = load_hints(p + at);
    at += kHintTrailerBytes;
  }
  if ((l.flags & kFlagFattree) != 0) out->fattree = load_fattree(p + at);
  if (l.visibility != 0) out->visibility = load_visibility(p + l.visibility);
  return ParseError::kNone;
}

std::size_t encoded_size(const Packet& p) {
  return kHeaderBytes + p.key.size() + p.value.size() + (p.hints ? kHintTrailerBytes : 0) +
         (p.fattree ? kFattreeHeaderBytes : 0) + (p.visibility ? kVisibilityHeaderBytes : 0);
}

std::vector<std::byte> encode_packet(const Packet& p) {
  if (!known_op(static_cast<std::uint8_t>(p.op))) throw InvalidArgument("encode_packet: unknown op");
  if (p.visibility && static_cast<std::uint8_t>(p.visibility->state) > kMaxVisState) {
    throw InvalidArgument("encode_packet: unknown visibility state");
  }
  if (p.key.size() > kMaxKeyBytes) throw InvalidArgument("encode_packet: key too long");
  std::size_t size = encoded_size(p);
  if (size > kMaxDatagram) throw InvalidArgument("encode_packet: packet over kMaxDatagram");
  // What the parser would reject must not leave here.
  if (p.op == Op::kReply && p.count > 0) {
    std::int64_t n = walk_entries(reinterpret_cast<const std::byte*>(p.value.data()),
                                  p.value.size(), [](std::string_view, std::string_view) {});
    if (n != static_cast<std::int64_t>(p.count)) {
      throw InvalidArgument("encode_packet: reply count does not match its SCAN entries");
    }
  }
  std::uint8_t flags = (p.hints ? kFlagHint : 0) | (p.fattree ? kFlagFattree : 0) |
                       (p.more ? kFlagMore : 0) | (p.visibility ? kFlagVisibility : 0);
  std::vector<std::byte> out(size);
  std::byte* b = out.data();
  store_be<std::uint16_t>(b, kMagic);
  store_be<std::uint8_t>(b + 2, kVersion);
  store_be<std::uint8_t>(b + 3, static_cast<std::uint8_t>(p.op));
  store_be<std::uint8_t>(b + 4, flags);
  store_be<std::uint8_t>(b + 5, static_cast<std::uint8_t>(p.status));
  store_be<std::uint16_t>(b + 6, static_cast<std::uint16_t>(p.key.size()));
  store_be<std::uint64_t>(b + 8, p.seq);
  store_be<std::uint32_t>(b + 16, static_cast<std::uint32_t>(p.value.size()));
  store_be<std::uint32_t>(b + 20, p.count);
  std::size_t at = kHeaderBytes;
  if (!p.key.empty()) std::memcpy(b + at, p.key.data(), p.key.size());
  at += p.key.size();
  if (!p.value.empty()) std::memcpy(b + at, p.value.data(), p.value.size());
  at += p.value.size();
  if (p.hints) {
    store_hints(b + at, *p.hints);
    at += kHintTrailerBytes;
  }
  if (p.fattree) {
    store_fattree(b + at, *p.fattree);
    at += kFattreeHeaderBytes;
  }
  if (p.visibility) store_visibility(b + at, *p.visibility);
  return out;
}

std::string encode_scan_entries(std::span<const ScanEntry> entries) {
  std::size_t size = 0;
  for (const ScanEntry& e : entries) {
    if (e.key.size() > kMaxKeyBytes) throw InvalidArgument("encode_scan_entries: key too long");
    if (e.value.size() > std::numeric_limits<std::uint32_t>::max()) {
      throw InvalidArgument("encode_scan_entries: value too long");
    }
    size += kEntryHeaderBytes + e.key.size() + e.value.size();
  }
  std::string out(size, '\0');
  auto* b = reinterpret_cast<std::byte*>(out.data());
  for (const ScanEntry& e : entries) {
    store_be<std::uint16_t>(b, static_cast<std::uint16_t>(e.key.size()));
    store_be<std::uint32_t>(b + 2, static_cast<std::uint32_t>(e.value.size()));
    b += kEntryHeaderBytes;
    if (!e.key.empty()) std::memcpy(b, e.key.data(), e.key.size());
    b += e.key.size();
    if (!e.value.empty()) std::memcpy(b, e.value.data(), e.value.size());
    b += e.value.size();
  }
  return out;
}

std::optional<std::vector<ScanEntry>> decode_scan_entries(std::string_view bytes) {
  std::vector<ScanEntry> out;
  std::int64_t n = walk_entries(reinterpret_cast<const std::byte*>(bytes.data()), bytes.size(),
                                [&out](std::string_view k, std::string_view v) {
                                  out.push_back(ScanEntry{std::string(k), std::string(v)});
                                });
  if (n < 0) return std::nullopt;
  return out;
}

std::size_t set_hint_trailer_in_place(std::span<std::byte> buffer, std::size_t length, const StartHints& hints) {
  Layout l;
  if (length > buffer.size() || check(buffer.first(length), &l) != ParseError::kNone) return 0;
  if ((l.flags & kFlagHint) == 0) {
    if (length + kHintTrailerBytes > std::min(buffer.size(), kMaxDatagram)) return 0;
    // Before a fattree header, if there is one: the trailers' order is fixed.
    std::memmove(buffer.data() + l.value_end + kHintTrailerBytes, buffer.data() + l.value_end,
                 length - l.value_end);
    store_be<std::uint8_t>(buffer.data() + 4, l.flags | kFlagHint);
    length += kHintTrailerBytes;
  }
  store_hints(buffer.data() + l.value_end, hints);
  return length;
}

bool set_hint_trailer(std::vector<std::byte>& datagram, const StartHints& hints) {
  const std::size_t length = datagram.size();
  datagram.resize(length + kHintTrailerBytes);
  const std::size_t n = set_hint_trailer_in_place(datagram, length, hints);
  datagram.resize(n != 0 ? n : length);
  return n != 0;
}

bool set_fattree_header(std::vector<std::byte>& datagram, const FattreeHeader& header) {
  Layout l;
  if (check(datagram, &l) != ParseError::kNone) return false;
  // The fattree header goes before a visibility header, if there is one.
  const std::size_t tail = l.visibility != 0 ? kVisibilityHeaderBytes : 0;
  if ((l.flags & kFlagFattree) == 0) {
    if (datagram.size() + kFattreeHeaderBytes > kMaxDatagram) return false;
    const std::size_t at = datagram.size() - tail;
    datagram.insert(datagram.begin() + static_cast<std::ptrdiff_t>(at), kFattreeHeaderBytes, std::byte{0});
    store_be<std::uint8_t>(datagram.data() + 4, l.flags | kFlagFattree);
  }
  store_fattree(datagram.data() + datagram.size() - tail - kFattreeHeaderBytes, header);
  return true;
}

std::string encode_read_header(const ReadHeader& h) {
  std::string out(kReadHeaderBytes, '\0');
  store_read_header(reinterpret_cast<std::byte*>(out.data()), h);
  return out;
}

std::optional<ReadHeader> decode_read_header(std::string_view bytes) {
  if (bytes.size() < kReadHeaderBytes) return std::nullopt;
  const auto* p = reinterpret_cast<const std::byte*>(bytes.data());
  const ReadHeader h = load_read_header(p);
  if ((h.flags & ~kReadKnownFlags) != 0 || load_be<std::uint16_t>(p + 14) != 0) return std::nullopt;
  return h;
}

std::size_t read_header_offset(std::span<const std::byte> datagram) {
  Layout l;
  if (check(datagram, &l) != ParseError::kNone) return 0;
  if (static_cast<Op>(static_cast<std::uint8_t>(datagram[3])) != Op::kRead || l.value_len != kReadHeaderBytes) return 0;
  return kHeaderBytes + l.key_len;
}

ReadHeader load_read_header(const std::byte* p) {
  ReadHeader h;
  h.address = load_be<std::uint64_t>(p);
  h.length = load_be<std::uint32_t>(p + 8);
  h.flags = load_be<std::uint16_t>(p + 12);
  return h;
}

void store_read_header(std::byte* p, const ReadHeader& h) {
  store_be<std::uint64_t>(p, h.address);
  store_be<std::uint32_t>(p + 8, h.length);
  store_be<std::uint16_t>(p + 12, h.flags);
  store_be<std::uint16_t>(p + 14, 0);
}

std::string_view packet_key(std::span<const std::byte> datagram) {
  Layout l;
  if (check(datagram, &l) != ParseError::kNone) return {};
  return std::string_view(reinterpret_cast<const char*>(datagram.data()) + kHeaderBytes, l.key_len);
}

}  // namespace forein::net

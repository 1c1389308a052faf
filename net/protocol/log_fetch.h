// LOG_FETCH's request value (docs/protocol.md, op 10): the first log id
// wanted, and, from a metadata node that owns one key range of several
// (forein-kv-server --mode metadata --shard I/K --keys N), that range, so
// the data node sends only its entries: K nodes then fetch each entry
// once between them instead of K times. The reply to a filtered fetch
// names in its key the last log id up to which every entry was either sent
// or is another range's (u32 big-endian): the node moves its cursor past
// those without seeing them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "protocol/dataset.h"

namespace forein::net {

// The key range of shard `shard` of `shards` over `keys` dataset keys, as
// shard_of() draws it (protocol/dataset.h).
struct LogFetchShard {
  std::uint32_t shard = 0;
  std::uint32_t shards = 1;
  std::uint64_t keys = 0;

  bool owns(std::string_view key) const { return shards <= 1 || shard_of(key, shards, keys) == shard; }
};

struct LogFetchValue {
  std::uint32_t first = 0;
  std::optional<LogFetchShard> shard;  // none: every entry
};

// A data node examines at most this many log ids per LOG_FETCH with a key
// range (the shared lock is held meanwhile), so a range with few entries
// in a long log is paged through; the id a reply names is never further
// than this past the first asked for.
inline constexpr std::uint32_t kMaxLogFetchScan = 4096;

// Value bytes: first (u32), then optionally shard (u32), shards (u32),
// keys (u64); all big-endian.
inline constexpr std::size_t kLogFetchValueBytes = 4;
inline constexpr std::size_t kLogFetchShardValueBytes = 4 + 4 + 4 + 8;

namespace log_fetch_detail {
inline void put(std::string& out, std::uint64_t v, int bytes) {
  for (int b = bytes - 1; b >= 0; --b) out.push_back(static_cast<char>(v >> (8 * b)));
}
inline std::uint64_t get(std::string_view in, std::size_t at, int bytes) {
  std::uint64_t v = 0;
  for (int b = 0; b < bytes; ++b) v = (v << 8) | static_cast<unsigned char>(in[at + static_cast<std::size_t>(b)]);
  return v;
}
}  // namespace log_fetch_detail

inline std::string encode_log_fetch_value(const LogFetchValue& v) {
  std::string out;
  log_fetch_detail::put(out, v.first, 4);
  if (v.shard) {
    log_fetch_detail::put(out, v.shard->shard, 4);
    log_fetch_detail::put(out, v.shard->shards, 4);
    log_fetch_detail::put(out, v.shard->keys, 8);
  }
  return out;
}

// nullopt, with why in *error, for a value of another length or a shard
// that is not one of shards (shard < shards, shards >= 1).
inline std::optional<LogFetchValue> decode_log_fetch_value(std::string_view in, std::string* error) {
  if (in.size() != kLogFetchValueBytes && in.size() != kLogFetchShardValueBytes) {
    *error = "LOG_FETCH needs the first log id (u32 big-endian) as its value, optionally followed by a key range "
             "(shard u32, shards u32, keys u64): 4 or 20 bytes, not " +
             std::to_string(in.size());
    return std::nullopt;
  }
  LogFetchValue v;
  v.first = static_cast<std::uint32_t>(log_fetch_detail::get(in, 0, 4));
  if (in.size() == kLogFetchShardValueBytes) {
    LogFetchShard s;
    s.shard = static_cast<std::uint32_t>(log_fetch_detail::get(in, 4, 4));
    s.shards = static_cast<std::uint32_t>(log_fetch_detail::get(in, 8, 4));
    s.keys = log_fetch_detail::get(in, 12, 8);
    if (s.shards == 0 || s.shard >= s.shards) {
      *error = "LOG_FETCH key range: shard " + std::to_string(s.shard) + " of " + std::to_string(s.shards) +
               " (needs shards >= 1 and shard < shards)";
      return std::nullopt;
    }
    v.shard = s;
  }
  return v;
}

}  // namespace forein::net

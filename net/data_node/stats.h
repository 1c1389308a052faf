// forein-data-node's counters: requests, what the log served, replies by
// status, drops by reason; rendered as one JSON object (the STATS reply's
// value and the exit line; fields in docs/network.md, "forein-data-node").
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

#include "protocol/packet.h"

namespace forein::net::data_node {

// Drops that are not parse errors.
enum class DropReason : std::uint8_t {
  kNotRequest,  // a well-formed REPLY or ERROR packet sent to the data node
  kSendFailed,  // the reply could not be encoded or sent
  kOversized,   // the datagram was larger than the receive buffer
};
inline constexpr std::size_t kDropReasons = 3;

enum class Counter : std::uint8_t {
  kDatagrams,       // datagrams received
  kRequests,        // requests handled (every op but REPLY/ERROR)
  kStats,           // STATS requests
  kOther,           // requests that are not data-node requests (GET, PUT, META_* ...)
  kAppends,         // LOG_APPENDs appended
  kReads,           // LOG_READs answered with the record
  kMismatches,      // LOG_READs answered kMismatch
  kNotFound,        // LOG_READs past the end of the log
  kFetches,         // LOG_FETCHes answered
  kFetchedEntries,  // entries in those answers
  kLogFull,         // LOG_APPENDs refused: no log id left
  kOk,              // replies by status
  kBadRequest,
  kTooLarge,
  kServerError,
};
inline constexpr std::size_t kCounters = 15;

class DataNodeStats {
 public:
  void count(Counter c) { bump(counters_[static_cast<std::size_t>(c)]); }
  void add(Counter c, std::uint64_t n) {
    counters_[static_cast<std::size_t>(c)].fetch_add(n, std::memory_order_relaxed);
  }
  void count_reply(Status status);
  void count_parse_error(ParseError e) { bump(parse_errors_[static_cast<std::size_t>(e) % kParseErrors]); }
  void count_drop(DropReason r) { bump(drops_[static_cast<std::size_t>(r)]); }

  std::uint64_t get(Counter c) const { return counters_[static_cast<std::size_t>(c)].load(); }
  std::uint64_t parse_errors(ParseError e) const {
    return parse_errors_[static_cast<std::size_t>(e) % kParseErrors].load();
  }
  std::uint64_t drops(DropReason r) const { return drops_[static_cast<std::size_t>(r)].load(); }

  // Everything as one JSON object, `extra` (pre-rendered `"name":value`
  // members, may be empty) appended at the end.
  std::string json(const std::string& extra) const;

 private:
  static void bump(std::atomic<std::uint64_t>& c) { c.fetch_add(1, std::memory_order_relaxed); }

  std::array<std::atomic<std::uint64_t>, kCounters> counters_{};
  std::array<std::atomic<std::uint64_t>, kParseErrors> parse_errors_{};
  std::array<std::atomic<std::uint64_t>, kDropReasons> drops_{};
};

}  // namespace forein::net::data_node

// forein-kv-server's counters: requests by op, replies by status, drops by
// reason, and the tree's hint counters; rendered as one JSON object (the
// STATS reply's value and the exit line; fields in docs/network.md).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

#include "forein/node_interval.h"
#include "protocol/packet.h"

namespace forein::net::kv {

// Drops that are not parse errors.
enum class DropReason : std::uint8_t {
  kNotRequest,   // a well-formed REPLY or ERROR packet sent to the server
  kSendFailed,   // the reply could not be sent
  kOversized,    // the datagram was larger than the receive buffer
};
inline constexpr std::size_t kDropReasons = 3;

class ServerStats {
 public:
  void count_request(Op op) { bump(requests_[static_cast<std::size_t>(op) % kOpSlots]); }
  void count_hinted() { bump(hinted_); }
  void count_reply(Op op, Status status);
  void count_parse_error(ParseError e) { bump(parse_errors_[static_cast<std::size_t>(e) % kParseErrors]); }
  void count_drop(DropReason r) { bump(drops_[static_cast<std::size_t>(r)]); }
  void count_datagram() { bump(datagrams_); }

  std::uint64_t requests(Op op) const { return requests_[static_cast<std::size_t>(op) % kOpSlots].load(); }
  std::uint64_t parse_errors(ParseError e) const {
    return parse_errors_[static_cast<std::size_t>(e) % kParseErrors].load();
  }

  // Everything as one JSON object: the counters here, the tree's hint
  // counters and `extra` (pre-rendered `"name":value` members, may be
  // empty) appended at the end.
  std::string json(const TreeStats& tree, const std::string& extra) const;

 private:
  static void bump(std::atomic<std::uint64_t>& c) { c.fetch_add(1, std::memory_order_relaxed); }

  std::atomic<std::uint64_t> datagrams_{0};
  static constexpr std::size_t kOpSlots = 16;
  std::array<std::atomic<std::uint64_t>, kOpSlots> requests_{};  // by Op value
  std::atomic<std::uint64_t> hinted_{0};                   // requests with a hint trailer
  std::atomic<std::uint64_t> ok_{0}, not_found_{0}, bad_request_{0}, too_large_{0},
      server_error_{0};
  std::array<std::atomic<std::uint64_t>, kParseErrors> parse_errors_{};
  std::array<std::atomic<std::uint64_t>, kDropReasons> drops_{};
};

// A JSON string literal for s (quotes and escapes).
std::string json_string(const std::string& s);

}  // namespace forein::net::kv

// What forein-kv-server and forein-data-node both count and print the same
// way: datagrams dropped, by parse error and by the other reasons, and
// their members of the STATS object ("drops", "drops_by_reason"; fields
// in docs/network.md).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "common/json.h"
#include "protocol/packet.h"

namespace forein::net {

// Drops that are not parse errors.
enum class DropReason : std::uint8_t {
  kNotRequest,  // a well-formed REPLY or ERROR packet sent to the server
  kSendFailed,  // the reply could not be encoded or sent
  kOversized,   // the datagram was larger than the receive buffer
};
inline constexpr std::size_t kDropReasons = 3;

// A server's stats: the drop counters (relaxed atomics, any thread) and
// the helpers its JSON object is built with.
class DropCounters {
 public:
  void count_parse_error(ParseError e) { bump(parse_errors_[static_cast<std::size_t>(e) % kParseErrors]); }
  void count_drop(DropReason r) { bump(drops_[static_cast<std::size_t>(r)]); }

  std::uint64_t parse_errors(ParseError e) const {
    return parse_errors_[static_cast<std::size_t>(e) % kParseErrors].load();
  }
  std::uint64_t drops(DropReason r) const { return drops_[static_cast<std::size_t>(r)].load(); }

 protected:
  static void bump(std::atomic<std::uint64_t>& c) { c.fetch_add(1, std::memory_order_relaxed); }
  static std::uint64_t load(const std::atomic<std::uint64_t>& c) { return c.load(std::memory_order_relaxed); }

  // Appends "drops" (every drop) and "drops_by_reason" (by parse error,
  // then not_request, send_failed, oversized) to `out`.
  void add_drops_json(Json& out) const {
    std::uint64_t total = 0;
    for (const auto& c : parse_errors_) total += load(c);
    for (const auto& c : drops_) total += load(c);
    out["drops"] = total;
    Json& by_reason = out["drops_by_reason"] = Json::object();
    for (std::size_t i = 1; i < kParseErrors; ++i) {
      by_reason[to_string(static_cast<ParseError>(i))] = load(parse_errors_[i]);
    }
    by_reason["not_request"] = load(drops_[static_cast<std::size_t>(DropReason::kNotRequest)]);
    by_reason["send_failed"] = load(drops_[static_cast<std::size_t>(DropReason::kSendFailed)]);
    by_reason["oversized"] = load(drops_[static_cast<std::size_t>(DropReason::kOversized)]);
  }

 private:
  std::array<std::atomic<std::uint64_t>, kParseErrors> parse_errors_{};
  std::array<std::atomic<std::uint64_t>, kDropReasons> drops_{};
};

}  // namespace forein::net

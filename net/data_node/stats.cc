#include "data_node/stats.h"

namespace forein::net::data_node {

namespace {

void member(std::string& out, const char* name, std::uint64_t v) {
  if (out.back() != '{') out += ',';
  out += '"';
  out += name;
  out += "\":";
  out += std::to_string(v);
}

std::uint64_t load(const std::atomic<std::uint64_t>& c) { return c.load(std::memory_order_relaxed); }

// Field names of Counter's values, in order.
constexpr const char* kCounterNames[kCounters] = {
    "datagrams", "requests", "stats",    "other",    "appends",     "reads",      "mismatches",   "not_found",
    "fetches",   "fetched_entries",      "log_full", "ok",          "bad_request", "too_large",  "server_error"};

}  // namespace

void DataNodeStats::count_reply(Status status) {
  switch (status) {
    case Status::kOk: count(Counter::kOk); break;
    case Status::kBadRequest: count(Counter::kBadRequest); break;
    case Status::kTooLarge: count(Counter::kTooLarge); break;
    case Status::kServerError: count(Counter::kServerError); break;
    case Status::kNotFound: count(Counter::kNotFound); break;  // only LOG_READ answers these
    case Status::kMismatch: count(Counter::kMismatches); break;
  }
}

std::string DataNodeStats::json(const std::string& extra) const {
  std::string out = "{";
  for (std::size_t i = 0; i < kCounters; ++i) member(out, kCounterNames[i], load(counters_[i]));
  std::uint64_t drops = 0;
  for (const auto& c : parse_errors_) drops += load(c);
  for (const auto& c : drops_) drops += load(c);
  member(out, "drops", drops);
  out += ",\"drops_by_reason\":{";
  for (std::size_t i = 1; i < kParseErrors; ++i) {
    member(out, to_string(static_cast<ParseError>(i)), load(parse_errors_[i]));
  }
  member(out, "not_request", load(drops_[static_cast<std::size_t>(DropReason::kNotRequest)]));
  member(out, "send_failed", load(drops_[static_cast<std::size_t>(DropReason::kSendFailed)]));
  member(out, "oversized", load(drops_[static_cast<std::size_t>(DropReason::kOversized)]));
  out += '}';
  if (!extra.empty()) {
    out += ',';
    out += extra;
  }
  return out + "}";
}

}  // namespace forein::net::data_node

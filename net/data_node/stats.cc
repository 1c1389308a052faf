#include "data_node/stats.h"

namespace forein::net::data_node {

namespace {

// Field names of Counter's values, in order.
constexpr const char* kCounterNames[kCounters] = {
    "datagrams", "requests", "stats",    "other",    "appends",     "reads",      "mismatches",   "not_found",
    "fetches",   "fetched_entries",      "log_full", "ok",          "bad_request", "too_large",  "server_error",
    "backup_refused", "installed", "install_duplicates", "replicate_refused", "replicate_sent", "replicate_resent",
    "acks", "acks_late", "replicate_errors", "replicate_gave_up", "replicate_backlog",
    "multi_reads", "multi_read_keys", "fetch_passed_over"};

}  // namespace

void DataNodeStats::count_reply(Status status) {
  switch (status) {
    case Status::kOk: count(Counter::kOk); break;
    case Status::kBadRequest: count(Counter::kBadRequest); break;
    case Status::kTooLarge: count(Counter::kTooLarge); break;
    case Status::kServerError: count(Counter::kServerError); break;
    case Status::kNotFound: count(Counter::kNotFound); break;  // only LOG_READ answers these
    case Status::kMismatch: count(Counter::kMismatches); break;
    case Status::kBadAddress: break;  // a memory node's reply; a data node never sends it
  }
}

Json DataNodeStats::json() const {
  Json out = Json::object();
  for (std::size_t i = 0; i < kCounters; ++i) out[kCounterNames[i]] = load(counters_[i]);
  add_drops_json(out);
  return out;
}

}  // namespace forein::net::data_node

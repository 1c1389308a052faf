#include "kv_server/stats.h"

#include <cstdio>

namespace forein::net::kv {

namespace {

void member(std::string& out, const char* name, std::uint64_t v) {
  if (out.back() != '{') out += ',';
  out += '"';
  out += name;
  out += "\":";
  out += std::to_string(v);
}

std::uint64_t load(const std::atomic<std::uint64_t>& c) { return c.load(std::memory_order_relaxed); }


}  // namespace

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

void ServerStats::count_reply(Op op, Status status) {
  (void)op;
  switch (status) {
    case Status::kOk: bump(ok_); break;
    case Status::kNotFound: bump(not_found_); break;
    case Status::kBadRequest: bump(bad_request_); break;
    case Status::kTooLarge: bump(too_large_); break;
    case Status::kServerError: bump(server_error_); break;
    case Status::kMismatch: break;  // a data node's reply; a KV server never sends it
  }
}

std::string ServerStats::json(const TreeStats& tree, const std::string& extra) const {
  std::string out = "{";
  member(out, "datagrams", load(datagrams_));
  std::uint64_t total = 0;
  for (const auto& c : requests_) total += load(c);
  member(out, "requests", total);
  const auto req = [&](Op op) { return load(requests_[static_cast<std::size_t>(op)]); };
  member(out, "get", req(Op::kGet));
  member(out, "put", req(Op::kPut));
  member(out, "delete", req(Op::kDelete));
  member(out, "scan", req(Op::kScan));
  member(out, "stats", req(Op::kStats));
  member(out, "hinted", load(hinted_));
  member(out, "hint_hits", tree.hint_hits);
  member(out, "secondary_hits", tree.secondary_hits);
  member(out, "fallbacks", tree.fallbacks);
  member(out, "tree_hinted", tree.hinted);
  member(out, "tree_operations", tree.operations);
  member(out, "nodes_visited", tree.nodes_visited);
  member(out, "move_rights", tree.move_rights);
  member(out, "ok", load(ok_));
  member(out, "not_found", load(not_found_));
  member(out, "bad_request", load(bad_request_));
  member(out, "too_large", load(too_large_));
  member(out, "server_error", load(server_error_));
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

}  // namespace forein::net::kv

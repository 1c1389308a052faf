#include "kv_server/stats.h"

namespace forein::net::kv {

void ServerStats::count_reply(Op op, Status status) {
  (void)op;
  switch (status) {
    case Status::kOk: bump(ok_); break;
    case Status::kNotFound: bump(not_found_); break;
    case Status::kBadRequest: bump(bad_request_); break;
    case Status::kTooLarge: bump(too_large_); break;
    case Status::kServerError: bump(server_error_); break;
    case Status::kMismatch: break;  // a data node's reply; a KV server never sends it
    case Status::kBadAddress: break;  // a memory node's reply; a KV server never sends it
  }
}

Json ServerStats::json(const TreeStats& tree) const {
  Json out = Json::object();
  out["datagrams"] = load(datagrams_);
  std::uint64_t total = 0;
  for (const auto& c : requests_) total += load(c);
  out["requests"] = total;
  const auto req = [&](Op op) { return load(requests_[static_cast<std::size_t>(op)]); };
  out["get"] = req(Op::kGet);
  out["put"] = req(Op::kPut);
  out["delete"] = req(Op::kDelete);
  out["scan"] = req(Op::kScan);
  out["stats"] = req(Op::kStats);
  out["hinted"] = load(hinted_);
  out["hint_hits"] = tree.hint_hits;
  out["secondary_hits"] = tree.secondary_hits;
  out["fallbacks"] = tree.fallbacks;
  out["tree_hinted"] = tree.hinted;
  out["tree_operations"] = tree.operations;
  out["nodes_visited"] = tree.nodes_visited;
  out["move_rights"] = tree.move_rights;
  out["ok"] = load(ok_);
  out["not_found"] = load(not_found_);
  out["bad_request"] = load(bad_request_);
  out["too_large"] = load(too_large_);
  out["server_error"] = load(server_error_);
  add_drops_json(out);
  return out;
}

Json offload_json(const std::string& backend, const offload::ManagerStats& manager,
                  const offload::BackendUsage& usage) {
  Json offload = Json::object();
  offload["backend"] = backend;
  offload["refreshes"] = manager.refreshes;
  offload["plans"] = manager.plans;
  // What the planner costs the host (its CPU time, summed) and how far
  // apart max_refresh_share spaces the refreshes now.
  offload["refresh_cpu_us"] = manager.refresh_cpu_us;
  offload["refresh_interval_ms"] = manager.refresh_interval_ms;
  offload["sampled_accesses"] = manager.sampled_accesses;
  offload["live_nodes"] = manager.live_nodes;
  offload["entries_installed"] = manager.entries_installed;
  offload["entries_removed"] = manager.entries_removed;
  offload["failed_installs"] = manager.failed_installs;
  offload["used"] = usage.used;
  offload["capacity"] = usage.capacity;
  offload["unit"] = usage.unit;
  return offload;
}

}  // namespace forein::net::kv

// forein-kv-server's counters: requests by op, replies by status, drops by
// reason, and the tree's hint counters; rendered as one JSON object (the
// STATS reply's value and the exit line; fields in docs/network.md).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

#include "common/stats_json.h"
#include "forein/node_interval.h"
#include "forein/offload/backend.h"
#include "forein/offload/manager.h"
#include "protocol/packet.h"

namespace forein::net::kv {

// Shared with forein-data-node (net/common/stats_json.h).
using forein::net::DropReason;

class ServerStats : public DropCounters {
 public:
  void count_request(Op op) { bump(requests_[static_cast<std::size_t>(op) % kOpSlots]); }
  void count_hinted() { bump(hinted_); }
  void count_reply(Op op, Status status);
  void count_datagram() { bump(datagrams_); }

  std::uint64_t requests(Op op) const { return requests_[static_cast<std::size_t>(op) % kOpSlots].load(); }

  // Everything as one JSON object: the counters here, the tree's hint
  // counters and the drops; the server appends its own members.
  Json json(const TreeStats& tree) const;

 private:
  std::atomic<std::uint64_t> datagrams_{0};
  static constexpr std::size_t kOpSlots = 16;
  std::array<std::atomic<std::uint64_t>, kOpSlots> requests_{};  // by Op value
  std::atomic<std::uint64_t> hinted_{0};                   // requests with a hint trailer
  std::atomic<std::uint64_t> ok_{0}, not_found_{0}, bad_request_{0}, too_large_{0},
      server_error_{0};
};

// A server's "offload" object (forein-kv-server's and forein-mem-server's):
// its backend, its manager's refreshes, samples, live nodes and entries,
// the device's usage.
Json offload_json(const std::string& backend, const offload::ManagerStats& manager,
                  const offload::BackendUsage& usage);

}  // namespace forein::net::kv

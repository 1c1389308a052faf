// forein-kv-server's request handling: one parsed request in, one reply
// out. Thread-safe (the tree and the manager are); no sockets here.
#pragma once

#include <functional>
#include <string>

#include "forein/tree.h"
#include "protocol/packet.h"
#include "kv_server/stats.h"

namespace forein::offload {
class OffloadManager;
}

namespace forein::net::kv {

class RequestHandler {
 public:
  // manager may be null (no offload). stats_json renders the STATS reply.
  RequestHandler(Tree& tree, offload::OffloadManager* manager, ServerStats& stats,
                 std::function<std::string()> stats_json);

  // The reply to `request` (a GET, PUT, DELETE, SCAN or STATS packet):
  // REPLY with kOk / kNotFound, or ERROR with kBadRequest, kTooLarge or
  // kServerError and a message in the value. Counts the request and the
  // reply.
  Packet handle(const Packet& request);

 private:
  Packet reply_to(const Packet& request, Op op, Status status) const;
  Packet scan(const Packet& request, const StartHints* hints);

  Tree& tree_;
  offload::OffloadManager* manager_;
  ServerStats& stats_;
  std::function<std::string()> stats_json_;
};

}  // namespace forein::net::kv

// forein-kv-server's request handling: one parsed request in, one reply
// out. Thread-safe (the tree and the manager are); no sockets here.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "forein/tree.h"
#include "protocol/packet.h"
#include "kv_server/stats.h"

namespace forein::offload {
class OffloadManager;
}

namespace forein::net::kv {

// The keys a server answers for (--shard): [lower, upper), either end
// open. A request for another key gets ERROR kBadRequest naming the shard.
struct OwnedRange {
  std::optional<std::string> lower;  // inclusive
  std::optional<std::string> upper;  // exclusive
  std::string name;                  // "shard I/K", for the error message

  bool owns(std::string_view key) const {
    return (!lower || key >= std::string_view(*lower)) && (!upper || key < std::string_view(*upper));
  }
};

// One parsed request in, one reply out: what the UDP workers and the memif
// port call. RequestHandler serves from the engine tree;
// HoneycombHandler (honeycomb_handler.h) from Honeycomb's store.
// A reply to request: its seq and key, the op and status given.
Packet make_reply(const Packet& request, Op op, Status status);
// The STATS reply: stats_json() ("{}" without one) in one datagram, or
// ERROR kTooLarge.
Packet stats_reply(const Packet& request, const std::function<std::string()>& stats_json);

class PacketHandler {
 public:
  virtual ~PacketHandler() = default;
  virtual Packet handle(const Packet& request) = 0;
};

class RequestHandler final : public PacketHandler {
 public:
  // manager may be null (no offload). stats_json renders the STATS reply.
  RequestHandler(Tree& tree, offload::OffloadManager* manager, ServerStats& stats,
                 std::function<std::string()> stats_json, OwnedRange owned = {});

  // The reply to `request` (a GET, PUT, DELETE, SCAN or STATS packet):
  // REPLY with kOk / kNotFound, or ERROR with kBadRequest, kTooLarge or
  // kServerError and a message in the value. Counts the request and the
  // reply.
  Packet handle(const Packet& request) override;

 private:
  Packet scan(const Packet& request, const StartHints* hints);

  Tree& tree_;
  offload::OffloadManager* manager_;
  ServerStats& stats_;
  std::function<std::string()> stats_json_;
  OwnedRange owned_;
};

}  // namespace forein::net::kv

// forein-kv-server's request handling: one parsed request in, one reply
// out. Thread-safe (the tree and the manager are); no sockets here.
#pragma once

#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "forein/error.h"
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

// What every handler does around its own operations: counts the request
// and its reply, answers STATS, and turns InvalidArgument into kBadRequest
// and any other exception into kServerError. serve(reply, fail) answers
// every other op, into reply (REPLY kOk on entry) or by calling
// fail(status, message).
template <typename Serve>
Packet serve_request(const Packet& request, ServerStats& stats,
                     const std::function<std::string()>& stats_json, Serve serve) {
  stats.count_request(request.op);
  Packet reply = make_reply(request, Op::kReply, Status::kOk);
  const auto fail = [&](Status status, std::string message) {
    reply = make_reply(request, Op::kError, status);
    reply.value = std::move(message);
  };
  try {
    if (request.op == Op::kStats) {
      reply = stats_reply(request, stats_json);
    } else {
      serve(reply, fail);
    }
  } catch (const InvalidArgument& e) {
    fail(Status::kBadRequest, e.what());
  } catch (const std::exception& e) {
    fail(Status::kServerError, e.what());
  }
  stats.count_reply(reply.op, reply.status);
  return reply;
}

class PacketHandler {
 public:
  virtual ~PacketHandler() = default;
  virtual Packet handle(const Packet& request) = 0;
  // The memif port's run-to-completion GET: when this handler serves
  // request (a GET) without building a reply Packet, it does so, counts
  // it as handle() would, sets *op, *status and *value (a buffer the
  // caller reuses) and returns true. False: nothing done or counted; the
  // caller uses handle().
  virtual bool serve_get(const Packet& request, Op* op, Status* status, std::string* value) {
    (void)request, (void)op, (void)status, (void)value;
    return false;
  }
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
  // A GET of a key this server owns and the tree allows, answered as
  // handle() answers it (same counters, hints filtered, accesses sampled)
  // into *value; anything else: false.
  bool serve_get(const Packet& request, Op* op, Status* status, std::string* value) override;

 private:
  Packet scan(const Packet& request, const StartHints* hints);

  Tree& tree_;
  offload::OffloadManager* manager_;
  ServerStats& stats_;
  std::function<std::string()> stats_json_;
  OwnedRange owned_;
};

}  // namespace forein::net::kv

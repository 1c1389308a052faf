// forein-data-node's request handling: one parsed request in, one reply
// out (LOG_APPEND, LOG_READ, LOG_FETCH, STATS; docs/network.md,
// "forein-data-node"), and serve(): one datagram in, the encoded reply or
// nothing. No sockets here, so tests and the fuzzer drive it directly.
// Thread-safe (the log and the counters are).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "data_node/log.h"
#include "data_node/stats.h"
#include "protocol/packet.h"

namespace forein::net::data_node {

// LOG_FETCH: count 0 asks for this many entries; more are never sent.
inline constexpr std::uint32_t kDefaultFetchEntries = 64;
inline constexpr std::uint32_t kMaxFetchEntries = 256;

// Data node `index` of `count`: it owns slot s when data_node_of(s, count) == index.
struct NodeId {
  std::uint32_t index = 0;
  std::uint32_t count = 1;

  bool owns(std::uint16_t slot) const;
  std::string name() const;  // "I/D"
};

// --keys N: appends dataset_record(i, 0, record_bytes) for every
// dataset_key(i), i < keys, whose slot `node` owns, in key order. Returns
// how many; throws std::runtime_error if the log fills up.
std::uint64_t preload(DataLog& log, NodeId node, std::uint64_t keys, std::size_t record_bytes);

class Handler {
 public:
  // extra_json: more members for the STATS object, appended in their
  // order (an object; may be empty or null).
  Handler(DataLog& log, NodeId node, DataNodeStats& stats, std::function<Json()> extra_json = {});

  // The reply to `request`: REPLY (kOk; LOG_READ also kNotFound and
  // kMismatch) or ERROR (kBadRequest, kTooLarge, kServerError) with a
  // message in the value. Counts the request and the reply.
  Packet handle(const Packet& request);

  // A received datagram: counted, parsed (malformed: dropped and counted
  // by parse error), REPLY and ERROR packets dropped (not_request), else
  // handled. The encoded reply, or nullopt when there is none to send.
  std::optional<std::vector<std::byte>> serve(std::span<const std::byte> datagram);

  // The counters as one JSON object (STATS and the exit line).
  std::string stats_json() const;

  const NodeId& node() const { return node_; }

 private:
  Packet log_append(const Packet& request);
  Packet log_read(const Packet& request);
  Packet log_fetch(const Packet& request);

  DataLog& log_;
  NodeId node_;
  DataNodeStats& stats_;
  std::function<Json()> extra_json_;
};

}  // namespace forein::net::data_node

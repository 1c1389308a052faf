// forein-data-node's request handling: one parsed request in, one reply
// out (LOG_APPEND, LOG_READ, LOG_FETCH, LOG_REPLICATE, STATS;
// docs/network.md, "forein-data-node"), and serve(): one datagram in, the
// encoded reply or nothing. No sockets here, so tests and the fuzzer drive
// it directly. A --secondary-index data node is one whose log is a
// LogMode::kSecondaryIndex log (protocol/secondary_index.h: LOG_APPEND
// takes a SidxRecord and answers a partial entry; LOG_READ with an empty
// value reads the key's newest record, and with count > 0 the newest
// records of several keys, a multi-read; LOG_FETCH entries carry the
// secondary key). A primary's replication (waiting for the backups' ACKs) is
// the server's: it calls begin_append() and commit_append() instead of
// handle() for LOG_APPEND. Thread-safe (the log and the counters are).
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
#include "protocol/log_fetch.h"
#include "protocol/packet.h"
#include "protocol/visibility.h"

namespace forein::net::data_node {

// LOG_FETCH: count 0 asks for this many entries; more are never sent.
inline constexpr std::uint32_t kDefaultFetchEntries = 64;
inline constexpr std::uint32_t kMaxFetchEntries = 256;
// LOG_FETCH with a key range: log ids examined per request at most
// (protocol/log_fetch.h).
inline constexpr std::size_t kMaxFetchScan = kMaxLogFetchScan;

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
// --keys N on a --secondary-index data node (a LogMode::kSecondaryIndex
// log; one data node, so every key): appends, for i < keys in key order,
// primary key dataset_key(i) with the record encode_sidx_record(
// secondary_key_of(i, 0, secondary_keys), dataset_record(i, 0,
// record_bytes)). Returns how many; throws std::runtime_error if the log
// fills up.
std::uint64_t preload_secondary_index(DataLog& log, std::uint64_t keys, std::size_t record_bytes,
                                      std::uint64_t secondary_keys);

// What a data node is in replication (paper section V-D).
enum class Role : std::uint8_t {
  kAlone,    // no replication: LOG_APPEND appends and answers at once
  kPrimary,  // --backups: LOG_APPEND goes through begin_append / commit_append (the server)
  kBackup,   // --backup: installs LOG_REPLICATE, refuses LOG_APPEND
};

// LOG_REPLICATE (primary -> backup), the entry in the fields it already
// has: key, value = the record, visibility header {slot, kNone,
// fingerprint, ts = the entry's timestamp, aux = its log id}. Its ACK is
// a REPLY kOk with the same seq.
Packet log_replicate_request(std::uint64_t seq, std::uint32_t log_id, std::uint32_t ts, std::string key,
                             std::string record);

class Handler {
 public:
  // extra_json: more members for the STATS object, appended in their
  // order (an object; may be empty or null).
  Handler(DataLog& log, NodeId node, DataNodeStats& stats, std::function<Json()> extra_json = {},
          Role role = Role::kAlone);

  // A primary's LOG_APPEND, first half: the request checked and its entry
  // reserved in the log (id and timestamp taken, not yet readable). On
  // success returns the LOG_REPLICATE to send (seq 0: the server numbers
  // it) and sets *reply to the OK reply to send once enough ACKs are in
  // (then commit_append(log id)); otherwise nullopt and *reply is the
  // error to send now. Counts the request; the server counts the reply
  // (stats().count_reply) when it sends it.
  std::optional<Packet> begin_append(const Packet& request, Packet* reply);
  // Second half: the entry at log_id becomes readable.
  void commit_append(std::uint32_t log_id);

  // The reply to `request`: REPLY (kOk; LOG_READ also kNotFound and
  // kMismatch) or ERROR (kBadRequest, kTooLarge, kServerError) with a
  // message in the value. Counts the request and the reply.
  Packet handle(const Packet& request);

  // A received datagram: counted, parsed (malformed: dropped and counted
  // by parse error), REPLY and ERROR packets dropped (not_request), else
  // handled. The encoded reply, or nullopt when there is none to send.
  std::optional<std::vector<std::byte>> serve(std::span<const std::byte> datagram);
  // serve()'s halves: the parsed request, or nullopt (malformed, REPLY or
  // ERROR: counted); and a reply encoded (nullopt: counted as a failed send).
  std::optional<Packet> parse_request(std::span<const std::byte> datagram);
  std::optional<std::vector<std::byte>> encode_reply(const Packet& reply);

  // The counters as one JSON object (STATS and the exit line).
  std::string stats_json() const;

  const NodeId& node() const { return node_; }
  Role role() const { return role_; }
  DataNodeStats& stats() { return stats_; }

 private:
  // reserve: a primary's (begin_append): the entry stays pending and
  // *replicate gets its LOG_REPLICATE.
  Packet log_append(const Packet& request, bool reserve = false, std::optional<Packet>* replicate = nullptr);
  // LOG_APPEND on a --secondary-index data node (its log's mode).
  Packet sidx_append(const Packet& request);
  // The refusal when the request's visibility header is not sk's (whose:
  // "key's", "secondary key's") or this node does not own sk's slot.
  std::optional<Packet> check_slot(const Packet& request, const SlotKey& sk, const char* whose) const;
  Packet log_replicate(const Packet& request);
  Packet log_read(const Packet& request);
  // LOG_READ with count > 0: a --secondary-index data node's multi-read.
  Packet sidx_multi_read(const Packet& request);
  Packet log_fetch(const Packet& request);

  DataLog& log_;
  NodeId node_;
  DataNodeStats& stats_;
  std::function<Json()> extra_json_;
  Role role_;
};

}  // namespace forein::net::data_node

// Switch-delta's ordered writes and reads as the load client runs them
// (paper 002, sections II-B and III-A/B; protocol/visibility.h has what
// each op carries). Every request goes to one address, the switch's
// service address, which routes LOG_* to the data node owning the key's
// slot and META_* to the metadata node.
//
//   write(i, v): LOG_APPEND(key, dataset_record(i, v), {slot, fp}) -> kOk,
//     value = the record's location, visibility {slot, state, fp, ts}.
//     state kStored: the switch took the metadata, committed after one
//     round trip. kFallback (the slot was busy) or kNone (no switch
//     visibility on the path): phase 2, META_PUT(key, location, {slot,
//     fp, ts}); committed by its kOk reply (the switch may hold that
//     reply while the slot holds an older write: latency, not an error).
//   read(i): META_GET(key, {slot, fp}) -> kOk, value = location (state
//     kSwitchRead when the switch answered from its slot); then
//     LOG_READ(key, location, {slot, fp}) -> kOk, value = the record, or
//     kMismatch: the location belonged to another key sharing the slot
//     (III-B), so the read starts again from META_GET, at most
//     max_retries times.
//
// Each is a small state machine the engine drives: start() is the first
// request; on_reply() takes the reply to the request last sent and says
// what comes next. Requests carry seq 0: the engine numbers each one (a
// new SEQ per phase) and resends it on timeout. Kept free of sockets so
// the steps are tested with hand-built replies (tests/net/test_load.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "protocol/packet.h"
#include "protocol/visibility.h"

namespace forein::net::load {

// Mismatches a read tolerates before it is counted as an error.
inline constexpr std::uint32_t kMaxReadRetries = 100;

struct Step {
  enum class Kind : std::uint8_t {
    kSend,    // send `request` next (the operation's next phase)
    kRetry,   // send `request` next: the read starts again (a mismatch)
    kDone,    // the write is committed / the read has its record
    kFailed,  // an error reply: the operation ends; `why` says what
  };
  Kind kind = Kind::kFailed;
  Packet request;
  std::string why;
};
const char* to_string(Step::Kind k);

// Shared by the ordered and the secondary-index state machines
// (load/sidx_ops.h):
// the status as a word for error messages;
const char* status_name(Status s);
// what is wrong with `reply` as the answer to `op` for `key` (not a REPLY,
// or another key echoed), or nullopt;
std::optional<std::string> reply_problem(const Packet& reply, const std::string& key, const char* op);
// a request carrying a visibility header {slot, kNone, fingerprint, ts}.
Packet visibility_request(Op op, const std::string& key, std::string value, const SlotKey& slot, std::uint32_t ts);

class OrderedWrite {
 public:
  enum class Phase : std::uint8_t { kAppend, kMetaPut, kCommitted, kFailed };

  OrderedWrite(std::uint64_t index, std::uint32_t version, std::size_t record_bytes = kRecordBytes);

  // LOG_APPEND of dataset_record(index, version, record_bytes).
  Packet start() const;
  Step on_reply(const Packet& reply);

  Phase phase() const { return phase_; }
  bool one_rtt() const { return one_rtt_; }             // committed by the switch
  const std::string& location() const { return location_; }  // encoded, from the append's reply
  std::uint32_t ts() const { return ts_; }
  std::uint64_t index() const { return index_; }
  std::uint32_t version() const { return version_; }

 private:
  Step fail(std::string why);

  std::uint64_t index_;
  std::uint32_t version_;
  std::size_t record_bytes_;
  std::string key_;
  SlotKey slot_;
  Phase phase_ = Phase::kAppend;
  bool one_rtt_ = false;
  std::string location_;
  std::uint32_t ts_ = 0;
};

class OrderedRead {
 public:
  enum class Phase : std::uint8_t { kMetaGet, kLogRead, kDone, kFailed };

  explicit OrderedRead(std::uint64_t index, std::uint32_t max_retries = kMaxReadRetries);

  // META_GET of the key.
  Packet start() const;
  Step on_reply(const Packet& reply);

  Phase phase() const { return phase_; }
  std::uint32_t retries() const { return retries_; }    // mismatches so far
  bool from_switch() const { return from_switch_; }     // the last META_GET was the switch's answer
  const std::string& record() const { return record_; }  // kDone: LOG_READ's value
  std::uint64_t index() const { return index_; }

 private:
  Step fail(std::string why);

  std::uint64_t index_;
  std::uint32_t max_retries_;
  std::string key_;
  SlotKey slot_;
  Phase phase_ = Phase::kMetaGet;
  std::uint32_t retries_ = 0;
  bool from_switch_ = false;
  std::string record_;
};

}  // namespace forein::net::load

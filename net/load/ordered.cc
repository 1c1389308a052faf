#include "load/ordered.h"

#include <optional>
#include <utility>

#include "protocol/dataset.h"

namespace forein::net::load {

namespace {

Step failed_step(std::string why) {
  Step s;
  s.kind = Step::Kind::kFailed;
  s.why = std::move(why);
  return s;
}

// The location a reply's value names: the 6-byte LogLocation, or a
// StampedLocation (10 bytes) whose location part is taken.
std::optional<LogLocation> location_of(const std::string& value) {
  if (auto l = decode_location(value)) return l;
  if (auto s = decode_stamped(value)) return s->location;
  return std::nullopt;
}

}  // namespace

const char* status_name(Status s) {
  switch (s) {
    case Status::kOk: return "ok";
    case Status::kNotFound: return "not found";
    case Status::kBadRequest: return "bad request";
    case Status::kTooLarge: return "too large";
    case Status::kServerError: return "server error";
    case Status::kMismatch: return "mismatch";
    case Status::kBadAddress: return "bad address";
  }
  return "unknown status";
}

// A reply to a request for `key`: a REPLY whose key, when echoed, is key.
std::optional<std::string> reply_problem(const Packet& reply, const std::string& key, const char* op) {
  if (reply.op != Op::kReply) {
    return std::string(op) + ": answered with op " + std::to_string(static_cast<int>(reply.op));
  }
  if (!reply.key.empty() && reply.key != key) return std::string(op) + ": reply for another key";
  return std::nullopt;
}

Packet visibility_request(Op op, const std::string& key, std::string value, const SlotKey& slot, std::uint32_t ts) {
  Packet p;
  p.op = op;
  p.key = key;
  p.value = std::move(value);
  VisibilityHeader v;
  v.slot = slot.slot;
  v.state = VisState::kNone;
  v.fingerprint = slot.fingerprint;
  v.ts = ts;
  p.visibility = v;
  return p;
}

const char* to_string(Step::Kind k) {
  switch (k) {
    case Step::Kind::kSend: return "send";
    case Step::Kind::kRetry: return "retry";
    case Step::Kind::kDone: return "done";
    case Step::Kind::kFailed: return "failed";
  }
  return "?";
}

OrderedWrite::OrderedWrite(std::uint64_t index, std::uint32_t version, std::size_t record_bytes)
    : index_(index),
      version_(version),
      record_bytes_(record_bytes),
      key_(dataset_key(index)),
      slot_(slot_key(key_)) {}

Packet OrderedWrite::start() const {
  return visibility_request(Op::kLogAppend, key_, dataset_record(index_, version_, record_bytes_), slot_, 0);
}

Step OrderedWrite::fail(std::string why) {
  phase_ = Phase::kFailed;
  return failed_step(std::move(why));
}

Step OrderedWrite::on_reply(const Packet& reply) {
  switch (phase_) {
    case Phase::kAppend: {
      if (auto p = reply_problem(reply, key_, "LOG_APPEND")) return fail(*p);
      if (reply.status != Status::kOk) return fail(std::string("LOG_APPEND: ") + status_name(reply.status));
      const auto loc = location_of(reply.value);
      if (!loc) return fail("LOG_APPEND: the reply's value is not a log location");
      if (!reply.visibility) return fail("LOG_APPEND: the reply has no visibility header");
      location_ = encode_location(*loc);
      ts_ = reply.visibility->ts;
      switch (reply.visibility->state) {
        case VisState::kStored: {
          phase_ = Phase::kCommitted;
          one_rtt_ = true;
          Step s;
          s.kind = Step::Kind::kDone;
          return s;
        }
        case VisState::kFallback:
        case VisState::kNone: {
          phase_ = Phase::kMetaPut;
          Step s;
          s.kind = Step::Kind::kSend;
          s.request = visibility_request(Op::kMetaPut, key_, location_, slot_, ts_);
          return s;
        }
        case VisState::kSwitchRead:
        case VisState::kHeld:
        case VisState::kPartial:  // a --secondary-index data node's reply: not this workload's
          break;
      }
      return fail("LOG_APPEND: unexpected visibility state " +
                  std::to_string(static_cast<int>(reply.visibility->state)));
    }
    case Phase::kMetaPut: {
      if (auto p = reply_problem(reply, key_, "META_PUT")) return fail(*p);
      if (reply.status != Status::kOk) return fail(std::string("META_PUT: ") + status_name(reply.status));
      // Any kOk commits the write, whatever the switch did to the header
      // on the way (it may have held the reply until the slot cleared).
      phase_ = Phase::kCommitted;
      Step s;
      s.kind = Step::Kind::kDone;
      return s;
    }
    case Phase::kCommitted:
    case Phase::kFailed:
      break;
  }
  return fail("a reply after the write ended");
}

OrderedRead::OrderedRead(std::uint64_t index, std::uint32_t max_retries)
    : index_(index), max_retries_(max_retries), key_(dataset_key(index)), slot_(slot_key(key_)) {}

Packet OrderedRead::start() const { return visibility_request(Op::kMetaGet, key_, std::string(), slot_, 0); }

Step OrderedRead::fail(std::string why) {
  phase_ = Phase::kFailed;
  return failed_step(std::move(why));
}

Step OrderedRead::on_reply(const Packet& reply) {
  switch (phase_) {
    case Phase::kMetaGet: {
      if (auto p = reply_problem(reply, key_, "META_GET")) return fail(*p);
      if (reply.status == Status::kNotFound) return fail("META_GET: not found (every data set key exists)");
      if (reply.status != Status::kOk) return fail(std::string("META_GET: ") + status_name(reply.status));
      const auto loc = location_of(reply.value);
      if (!loc) return fail("META_GET: the reply's value is not a log location");
      from_switch_ = reply.visibility && reply.visibility->state == VisState::kSwitchRead;
      phase_ = Phase::kLogRead;
      Step s;
      s.kind = Step::Kind::kSend;
      s.request = visibility_request(Op::kLogRead, key_, encode_location(*loc), slot_, 0);
      return s;
    }
    case Phase::kLogRead: {
      if (auto p = reply_problem(reply, key_, "LOG_READ")) return fail(*p);
      if (reply.status == Status::kOk) {
        record_ = reply.value;
        phase_ = Phase::kDone;
        Step s;
        s.kind = Step::Kind::kDone;
        return s;
      }
      if (reply.status == Status::kMismatch) {
        // Another key's location (a shared slot): read again, the slot
        // may have cleared or now hold this key's write.
        if (retries_ >= max_retries_) {
          return fail("LOG_READ: " + std::to_string(retries_ + 1) + " mismatches in a row");
        }
        ++retries_;
        phase_ = Phase::kMetaGet;
        from_switch_ = false;
        Step s;
        s.kind = Step::Kind::kRetry;
        s.request = start();
        return s;
      }
      return fail(std::string("LOG_READ: ") + status_name(reply.status));
    }
    case Phase::kDone:
    case Phase::kFailed:
      break;
  }
  return fail("a reply after the read ended");
}

}  // namespace forein::net::load

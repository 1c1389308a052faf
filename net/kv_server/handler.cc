#include "kv_server/handler.h"

#include <exception>
#include <utility>
#include <vector>

#include "forein/error.h"
#include "forein/offload/manager.h"

namespace forein::net::kv {

namespace {

constexpr std::size_t kScanEntryOverhead = 6;  // u16 key length, u32 value length

}  // namespace

RequestHandler::RequestHandler(Tree& tree, offload::OffloadManager* manager, ServerStats& stats,
                               std::function<std::string()> stats_json, OwnedRange owned)
    : tree_(tree),
      manager_(manager),
      stats_(stats),
      stats_json_(std::move(stats_json)),
      owned_(std::move(owned)) {}

Packet make_reply(const Packet& request, Op op, Status status) {
  Packet reply;
  reply.op = op;
  reply.status = status;
  reply.seq = request.seq;
  reply.key = request.key;
  return reply;
}

Packet stats_reply(const Packet& request, const std::function<std::string()>& stats_json) {
  Packet reply = make_reply(request, Op::kReply, Status::kOk);
  reply.value = stats_json ? stats_json() : std::string("{}");
  if (encoded_size(reply) > kMaxDatagram) {
    reply = make_reply(request, Op::kError, Status::kTooLarge);
    reply.value = "stats too large";
  }
  return reply;
}

Packet RequestHandler::handle(const Packet& request) {
  return serve_request(request, stats_, stats_json_, [&](Packet& reply, const auto& fail) {
    StartHints hints;
    const StartHints* hint_ptr = nullptr;
    if (request.hints) {
      stats_.count_hinted();
      hints = manager_ != nullptr ? manager_->filter(*request.hints) : *request.hints;
      hint_ptr = &hints;
    }
    if (request.key.size() > tree_.max_key_size()) {
      fail(Status::kBadRequest, "key longer than " + std::to_string(tree_.max_key_size()) + " bytes");
      return;
    }
    if (!owned_.owns(request.key)) {
      fail(Status::kBadRequest, "key not owned by this server (" + owned_.name + ")");
      return;
    }
    if (manager_ != nullptr) manager_->sample_access(word_of(request.key));
    switch (request.op) {
      case Op::kGet:
        if (!tree_.get(request.key, &reply.value, hint_ptr)) {
          reply.status = Status::kNotFound;
          reply.value.clear();
        }
        break;
      case Op::kPut:
        if (request.value.size() > tree_.max_value_size()) {
          fail(Status::kBadRequest,
               "value longer than " + std::to_string(tree_.max_value_size()) + " bytes");
        } else {
          tree_.put(request.key, request.value, hint_ptr);
        }
        break;
      case Op::kDelete:
        if (!tree_.erase(request.key, hint_ptr)) reply.status = Status::kNotFound;
        break;
      case Op::kScan:
        reply = scan(request, hint_ptr);
        break;
      default:
        fail(Status::kBadRequest, "not a request");
        break;
    }
  });
}

bool RequestHandler::serve_get(const Packet& request, Op* op, Status* status, std::string* value) {
  if (request.op != Op::kGet || request.key.size() > tree_.max_key_size() || !owned_.owns(request.key)) {
    return false;
  }
  stats_.count_request(Op::kGet);
  StartHints hints;
  const StartHints* hint_ptr = nullptr;
  if (request.hints) {
    stats_.count_hinted();
    hints = manager_ != nullptr ? manager_->filter(*request.hints) : *request.hints;
    hint_ptr = &hints;
  }
  *op = Op::kReply;
  *status = Status::kOk;
  try {
    if (manager_ != nullptr) manager_->sample_access(word_of(request.key));
    if (!tree_.get(request.key, value, hint_ptr)) {
      *status = Status::kNotFound;
      value->clear();
    }
  } catch (const std::exception& e) {
    *op = Op::kError;
    *status = Status::kServerError;
    *value = e.what();
  }
  stats_.count_reply(*op, *status);
  return true;
}

// Entries from the request's key (inclusive) in key order, at most count
// of them (0: no limit but the datagram), as many as fit one datagram;
// kFlagMore when the datagram filled up before count was reached and
// entries remained, or when the scan reached the end of this server's
// range (--shard) short of count: the next shard's server holds the rest.
Packet RequestHandler::scan(const Packet& request, const StartHints* hints) {
  Packet reply = make_reply(request, Op::kReply, Status::kOk);
  const std::size_t budget = kMaxDatagram - kHeaderBytes - reply.key.size();
  std::vector<ScanEntry> entries;
  std::size_t used = 0;
  bool more = false;
  ScanSpec spec;
  spec.lower = KeyBound{request.key, true};
  if (owned_.upper) spec.upper = KeyBound{*owned_.upper, false};
  // The callback sees one entry more than it keeps (to stop).
  if (request.count != 0) spec.expected_rows = std::size_t{request.count} + 1;
  tree_.scan(
      spec,
      [&](std::string_view key, std::string_view value) {
        if (request.count != 0 && entries.size() >= request.count) return false;
        const std::size_t need = kScanEntryOverhead + key.size() + value.size();
        if (used + need > budget) {
          more = true;
          return false;
        }
        used += need;
        entries.push_back({std::string(key), std::string(value)});
        return true;
      },
      hints);
  if (entries.empty() && more) {
    reply.op = Op::kError;
    reply.status = Status::kTooLarge;
    reply.value = "entry larger than a datagram";
    return reply;
  }
  if (owned_.upper && (request.count == 0 || entries.size() < request.count)) more = true;
  reply.count = static_cast<std::uint32_t>(entries.size());
  reply.more = more;
  reply.value = encode_scan_entries(entries);
  return reply;
}

}  // namespace forein::net::kv

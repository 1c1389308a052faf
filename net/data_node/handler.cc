#include "data_node/handler.h"

#include <algorithm>
#include <exception>
#include <stdexcept>
#include <utility>

#include "data_node/options.h"
#include "protocol/dataset.h"
#include "protocol/log_fetch.h"
#include "protocol/secondary_index.h"
#include "protocol/visibility.h"

namespace forein::net::data_node {

namespace {

// A fetched entry in the reply's value area: u16 key length, u32 value
// length, key, then the 10-byte StampedLocation.
constexpr std::size_t kFetchEntryOverhead = 6 + kStampedLocationBytes;

Packet reply_to(const Packet& request, Op op, Status status) {
  Packet reply;
  reply.op = op;
  reply.status = status;
  reply.seq = request.seq;
  reply.key = request.key;
  return reply;
}

Packet error(const Packet& request, Status status, std::string message) {
  Packet reply = reply_to(request, Op::kError, status);
  reply.value = std::move(message);
  return reply;
}

}  // namespace

bool NodeId::owns(std::uint16_t slot) const { return data_node_of(slot, count) == index; }

std::string NodeId::name() const { return std::to_string(index) + "/" + std::to_string(count); }

std::uint64_t preload(DataLog& log, NodeId node, std::uint64_t keys, std::size_t record_bytes) {
  std::uint64_t appended = 0;
  for (std::uint64_t i = 0; i < keys; ++i) {
    const std::string key = dataset_key(i);
    const SlotKey sk = slot_key(key);
    if (!node.owns(sk.slot)) continue;
    DataLog::Appended a;
    const DataLog::AppendError e = log.append(sk.slot, key, dataset_record(i, 0, record_bytes), &a);
    if (e == DataLog::AppendError::kFull) throw std::runtime_error("--keys: the log has no log id left");
    if (e != DataLog::AppendError::kNone) throw std::runtime_error("--keys: record too large");
    ++appended;
  }
  return appended;
}

std::uint64_t preload_secondary_index(DataLog& log, std::uint64_t keys, std::size_t record_bytes,
                                      std::uint64_t secondary_keys) {
  for (std::uint64_t i = 0; i < keys; ++i) {
    const std::string secondary = secondary_key_of(i, 0, secondary_keys);
    // The slot only names a counter, and this log has one.
    DataLog::Appended a;
    const DataLog::AppendError e = log.append(slot_key(secondary).slot, dataset_key(i),
                                              encode_sidx_record(secondary, dataset_record(i, 0, record_bytes)), &a);
    if (e == DataLog::AppendError::kFull) throw std::runtime_error("--keys: the log has no log id left");
    if (e != DataLog::AppendError::kNone) throw std::runtime_error("--keys: record too large");
  }
  return keys;
}

Packet log_replicate_request(std::uint64_t seq, std::uint32_t log_id, std::uint32_t ts, std::string key,
                             std::string record) {
  const SlotKey sk = slot_key(key);
  Packet p;
  p.op = Op::kLogReplicate;
  p.seq = seq;
  p.key = std::move(key);
  p.value = std::move(record);
  p.visibility = VisibilityHeader{sk.slot, VisState::kNone, sk.fingerprint, ts, log_id};
  return p;
}

Handler::Handler(DataLog& log, NodeId node, DataNodeStats& stats, std::function<Json()> extra_json, Role role)
    : log_(log), node_(node), stats_(stats), extra_json_(std::move(extra_json)), role_(role) {}

std::optional<Packet> Handler::begin_append(const Packet& request, Packet* reply) {
  stats_.count(Counter::kRequests);
  std::optional<Packet> replicate;
  try {
    *reply = log_append(request, true, &replicate);
  } catch (const std::exception& e) {
    *reply = error(request, Status::kServerError, e.what());
    replicate.reset();
  }
  return replicate;
}

void Handler::commit_append(std::uint32_t log_id) {
  log_.commit(log_id);
  stats_.count(Counter::kAppends);
}

Packet Handler::handle(const Packet& request) {
  stats_.count(Counter::kRequests);
  Packet reply;
  try {
    switch (request.op) {
      case Op::kLogAppend:
        if (role_ == Role::kBackup) {
          stats_.count(Counter::kBackupRefused);
          reply = error(request, Status::kBadRequest,
                        "this data node is a backup (--backup): it takes LOG_REPLICATE from its primary, not "
                        "LOG_APPEND; send writes to the primary");
        } else if (role_ == Role::kPrimary) {
          // The server's workers call begin_append(); handle() cannot wait for ACKs.
          reply = error(request, Status::kServerError, "a primary's LOG_APPEND is served by its workers");
        } else if (log_.mode() == LogMode::kSecondaryIndex) {
          reply = sidx_append(request);
        } else {
          reply = log_append(request);
        }
        break;
      case Op::kLogReplicate:
        reply = log_replicate(request);
        break;
      case Op::kLogRead:
        reply = log_read(request);
        break;
      case Op::kLogFetch:
        reply = log_fetch(request);
        break;
      case Op::kStats:
        stats_.count(Counter::kStats);
        reply = reply_to(request, Op::kReply, Status::kOk);
        reply.value = stats_json();
        if (encoded_size(reply) > kMaxDatagram) reply = error(request, Status::kTooLarge, "stats too large");
        break;
      default:
        stats_.count(Counter::kOther);
        reply = error(request, Status::kBadRequest, "not a data-node request");
        break;
    }
  } catch (const std::exception& e) {
    reply = error(request, Status::kServerError, e.what());
  }
  stats_.count_reply(reply.status);
  return reply;
}

std::optional<Packet> Handler::check_slot(const Packet& request, const SlotKey& sk, const char* whose) const {
  const VisibilityHeader& v = *request.visibility;
  if (v.slot != sk.slot || v.fingerprint != sk.fingerprint) {
    return error(request, Status::kBadRequest,
                 "visibility header slot " + std::to_string(v.slot) + " fingerprint " + std::to_string(v.fingerprint) +
                     " is not the " + whose + " (slot " + std::to_string(sk.slot) + " fingerprint " +
                     std::to_string(sk.fingerprint) + ")");
  }
  if (!node_.owns(sk.slot)) {
    return error(request, Status::kBadRequest,
                 "slot " + std::to_string(sk.slot) + " not owned by data node " + node_.name());
  }
  return std::nullopt;
}

Packet Handler::log_append(const Packet& request, bool reserve, std::optional<Packet>* replicate) {
  if (log_.mode() == LogMode::kSecondaryIndex) {
    // parse_options refuses --backups with --secondary-index.
    return error(request, Status::kServerError, "replication is not supported on a --secondary-index data node");
  }
  if (!request.visibility) {
    return error(request, Status::kBadRequest, "LOG_APPEND needs the visibility header (slot, fingerprint)");
  }
  const SlotKey sk = slot_key(request.key);
  if (auto refused = check_slot(request, sk, "key's")) return *refused;
  if (request.value.size() > kMaxRecordBytes) {
    return error(request, Status::kBadRequest,
                 "record of " + std::to_string(request.value.size()) + " bytes; at most " +
                     std::to_string(kMaxRecordBytes));
  }
  DataLog::Appended a;
  const DataLog::AppendError appended = reserve ? log_.reserve(sk.slot, request.key, request.value, &a)
                                                : log_.append(sk.slot, request.key, request.value, &a);
  switch (appended) {
    case DataLog::AppendError::kNone:
      break;
    case DataLog::AppendError::kFull:
      stats_.count(Counter::kLogFull);
      return error(request, Status::kServerError, "log full: no log id left (ids are u32)");
    case DataLog::AppendError::kTooLarge:
      return error(request, Status::kBadRequest, "key or record too large");
  }
  if (reserve) {
    // Counted as an append by commit_append().
    *replicate = log_replicate_request(0, a.log_id, a.ts, request.key, request.value);
  } else {
    stats_.count(Counter::kAppends);
  }
  Packet reply = reply_to(request, Op::kReply, Status::kOk);
  reply.value = encode_location({static_cast<std::uint16_t>(node_.index), a.log_id});
  // aux echoed: the switch's epoch (switch-crash recovery; a reply of a
  // request an earlier switch forwarded is never stored by a later one).
  reply.visibility = VisibilityHeader{sk.slot, VisState::kNone, sk.fingerprint, a.ts, request.visibility->aux};
  return reply;
}

// The secondary-index case study's data write (protocol/secondary_index.h):
// the record names the secondary key, whose slot the visibility header
// carries (the switch keeps the partial entry there). The reply's
// SidxEntry may be over kMaxSlotMetadataBytes (long keys): it goes out all
// the same and the switch, which cannot store it, answers kFallback.
Packet Handler::sidx_append(const Packet& request) {
  if (!request.visibility) {
    return error(request, Status::kBadRequest,
                 "LOG_APPEND needs the visibility header (slot, fingerprint of the record's secondary key)");
  }
  const std::optional<SidxRecord> record = decode_sidx_record(request.value);
  if (!record) {
    return error(request, Status::kBadRequest,
                 "LOG_APPEND to a --secondary-index data node needs a secondary-index record "
                 "(protocol/secondary_index.h)");
  }
  if (request.key.empty()) {
    return error(request, Status::kBadRequest,
                 "LOG_APPEND to a --secondary-index data node needs a primary key (the packet's key)");
  }
  if (record->secondary.size() > kMaxKeyBytes) {
    return error(request, Status::kBadRequest,
                 "secondary key of " + std::to_string(record->secondary.size()) + " bytes; at most " +
                     std::to_string(kMaxKeyBytes) + " (a SIDX_READ's key)");
  }
  if (record->payload.size() > kMaxRecordBytes) {
    return error(request, Status::kBadRequest,
                 "record payload of " + std::to_string(record->payload.size()) + " bytes; at most " +
                     std::to_string(kMaxRecordBytes));
  }
  const SlotKey sk = slot_key(record->secondary);
  if (auto refused = check_slot(request, sk, "secondary key's")) return *refused;
  DataLog::Appended a;
  switch (log_.append(sk.slot, request.key, request.value, &a)) {
    case DataLog::AppendError::kNone:
      break;
    case DataLog::AppendError::kFull:
      stats_.count(Counter::kLogFull);
      return error(request, Status::kServerError, "log full: no log id left (ids are u32)");
    case DataLog::AppendError::kTooLarge:
      return error(request, Status::kBadRequest, "key or record too large");
  }
  stats_.count(Counter::kAppends);
  Packet reply = reply_to(request, Op::kReply, Status::kOk);
  reply.value = encode_sidx_entry(request.key, record->secondary);
  // aux echoed: the switch's epoch, as for a full write.
  reply.visibility = VisibilityHeader{sk.slot, VisState::kPartial, sk.fingerprint, a.ts, request.visibility->aux};
  return reply;
}

Packet Handler::log_replicate(const Packet& request) {
  const auto refuse = [&](std::string message) {
    stats_.count(Counter::kReplicateRefused);
    return error(request, Status::kBadRequest, "LOG_REPLICATE: " + std::move(message));
  };
  if (role_ != Role::kBackup) return refuse("this data node is not a backup (start it with --backup)");
  if (!request.visibility) {
    return refuse("needs the visibility header (slot, fingerprint, ts = the entry's timestamp, aux = its log id)");
  }
  const VisibilityHeader& v = *request.visibility;
  const SlotKey sk = slot_key(request.key);
  if (v.slot != sk.slot || v.fingerprint != sk.fingerprint) {
    return refuse("visibility header slot " + std::to_string(v.slot) + " fingerprint " +
                  std::to_string(v.fingerprint) + " is not the key's (slot " + std::to_string(sk.slot) +
                  " fingerprint " + std::to_string(sk.fingerprint) + ")");
  }
  if (v.state != VisState::kNone) return refuse("visibility state must be 0");
  if (v.ts == 0 || v.aux == 0) return refuse("timestamp (ts) and log id (aux) must be > 0");
  if (!node_.owns(sk.slot)) {
    return refuse("slot " + std::to_string(sk.slot) + " not owned by data node " + node_.name() +
                  " (a backup takes its primary's --node I/D)");
  }
  if (request.value.size() > kMaxRecordBytes) {
    return refuse("record of " + std::to_string(request.value.size()) + " bytes; at most " +
                  std::to_string(kMaxRecordBytes));
  }
  switch (log_.install(v.aux, v.ts, sk.slot, request.key, request.value)) {
    case DataLog::InstallResult::kInstalled:
      stats_.count(Counter::kInstalled);
      break;
    case DataLog::InstallResult::kDuplicate:
      stats_.count(Counter::kInstallDuplicates);  // a resend: ACK it again
      break;
    case DataLog::InstallResult::kConflict:
      return refuse("log id " + std::to_string(v.aux) + " holds another entry");
    case DataLog::InstallResult::kFull:
      stats_.count(Counter::kLogFull);
      return refuse("log id " + std::to_string(v.aux) + " past the log's last id");
    case DataLog::InstallResult::kTooFarAhead:
      return refuse("log id " + std::to_string(v.aux) + " more than " + std::to_string(DataLog::kMaxInstallAhead) +
                    " past the last id " + std::to_string(log_.entries()));
    case DataLog::InstallResult::kTooLarge:
      return refuse("key or record too large");
  }
  return reply_to(request, Op::kReply, Status::kOk);
}

Packet Handler::log_read(const Packet& request) {
  if (request.count != 0) return sidx_multi_read(request);
  if (request.value.empty() && log_.mode() == LogMode::kSecondaryIndex) {
    // By key (the primary index): the reader found the key through the
    // secondary index and has no location.
    Packet reply = reply_to(request, Op::kReply, Status::kOk);
    if (log_.read_newest(request.key, &reply.value)) {
      stats_.count(Counter::kReads);
    } else {
      reply.status = Status::kNotFound;
    }
    return reply;
  }
  const std::optional<LogLocation> at = decode_location(request.value);
  if (!at) {
    return error(request, Status::kBadRequest,
                 "LOG_READ needs a 6-byte log location (data node u16, log id u32 >= 1) as its value");
  }
  if (at->node != node_.index) {
    return error(request, Status::kBadRequest,
                 "location on data node " + std::to_string(at->node) + ", not on data node " + node_.name());
  }
  Packet reply = reply_to(request, Op::kReply, Status::kOk);
  switch (log_.read(at->log_id, request.key, &reply.value)) {
    case DataLog::ReadResult::kOk:
      stats_.count(Counter::kReads);
      break;
    case DataLog::ReadResult::kNotFound:
      reply.status = Status::kNotFound;
      break;
    case DataLog::ReadResult::kMismatch:
      reply.status = Status::kMismatch;
      break;
  }
  return reply;
}

// SLIK's multiRead (protocol/secondary_index.h): the newest records of
// the keys SIDX_READ listed, in one round trip. The packet's key only
// routes the request (the switch sends it by its slot); the keys are the
// value's entries.
Packet Handler::sidx_multi_read(const Packet& request) {
  if (log_.mode() != LogMode::kSecondaryIndex) {
    return error(request, Status::kBadRequest,
                 "LOG_READ with count " + std::to_string(request.count) +
                     " is a multi-read, served only by a --secondary-index data node; a LOG_READ of one "
                     "location has count 0");
  }
  if (request.count > kMaxSidxReadCount) {
    return error(request, Status::kBadRequest,
                 "multi-read of " + std::to_string(request.count) + " keys; at most " +
                     std::to_string(kMaxSidxReadCount));
  }
  const auto asked = decode_scan_entries(request.value);
  if (!asked || asked->size() != request.count) {
    return error(request, Status::kBadRequest,
                 "a multi-read's value must be count (" + std::to_string(request.count) +
                     ") scan entries, one per primary key (protocol/secondary_index.h)");
  }
  std::vector<std::string> keys;
  keys.reserve(asked->size());
  for (const ScanEntry& e : *asked) {
    if (e.key.empty() || e.key.size() > kMaxKeyBytes || !e.value.empty()) {
      return error(request, Status::kBadRequest,
                   "a multi-read's entries need a primary key of 1.." + std::to_string(kMaxKeyBytes) +
                       " bytes and an empty value");
    }
    keys.push_back(e.key);
  }
  Packet reply = reply_to(request, Op::kReply, Status::kOk);
  const std::size_t bare = encoded_size(reply);
  const std::size_t budget = bare >= kMaxSidxMultiReadBytes ? 0 : kMaxSidxMultiReadBytes - bare;
  std::vector<std::string> records;
  const std::size_t answered = log_.read_newest_many(keys, kSidxMultiReadEntryOverhead, budget, &records);
  std::vector<ScanEntry> entries;
  entries.reserve(answered);
  for (std::size_t k = 0; k < answered; ++k) entries.push_back({std::move(keys[k]), std::move(records[k])});
  reply.count = static_cast<std::uint32_t>(answered);
  reply.more = answered < keys.size();
  reply.value = encode_scan_entries(entries);
  stats_.count(Counter::kMultiReads);
  stats_.add(Counter::kMultiReadKeys, answered);
  return reply;
}

Packet Handler::log_fetch(const Packet& request) {
  std::string why;
  const std::optional<LogFetchValue> value = decode_log_fetch_value(request.value, &why);
  if (!value) return error(request, Status::kBadRequest, why);
  Packet reply = reply_to(request, Op::kReply, Status::kOk);
  const std::uint32_t wanted =
      request.count == 0 ? kDefaultFetchEntries : std::min(request.count, kMaxFetchEntries);
  bool more = false;
  std::vector<FetchedEntry> got;
  if (value->shard) {
    // One key range's entries; the key says how far the others were
    // passed over (protocol/log_fetch.h).
    const LogFetchShard shard = *value->shard;
    std::uint32_t scanned = 0;
    std::size_t passed_over = 0;
    reply.key.assign(4, '\0');
    got = log_.fetch_filtered(value->first, wanted, kFetchEntryOverhead, kMaxDatagram - kHeaderBytes - reply.key.size(),
                              [&shard](std::string_view key) { return shard.owns(key); }, kMaxFetchScan, &more,
                              &scanned, &passed_over);
    for (int b = 0; b < 4; ++b) reply.key[static_cast<std::size_t>(b)] = static_cast<char>(scanned >> (24 - 8 * b));
    stats_.add(Counter::kFetchPassedOver, passed_over);
  } else {
    got = log_.fetch(value->first, wanted, kFetchEntryOverhead, kMaxDatagram - kHeaderBytes - reply.key.size(), &more);
  }
  std::vector<ScanEntry> entries;
  entries.reserve(got.size());
  for (const FetchedEntry& e : got) {
    // A --secondary-index log's entries: the secondary key after the
    // location (the metadata node rebuilds its composite keys from them).
    entries.push_back(
        {e.key, encode_stamped({{static_cast<std::uint16_t>(node_.index), e.log_id}, e.ts}) + e.secondary});
  }
  reply.count = static_cast<std::uint32_t>(entries.size());
  reply.more = more;
  reply.value = encode_scan_entries(entries);
  stats_.count(Counter::kFetches);
  stats_.add(Counter::kFetchedEntries, entries.size());
  return reply;
}

std::optional<Packet> Handler::parse_request(std::span<const std::byte> datagram) {
  stats_.count(Counter::kDatagrams);
  Packet request;
  const ParseError e = parse_packet(datagram, &request);
  if (e != ParseError::kNone) {
    stats_.count_parse_error(e);
    return std::nullopt;
  }
  if (request.op == Op::kReply || request.op == Op::kError) {
    stats_.count_drop(DropReason::kNotRequest);
    return std::nullopt;
  }
  return request;
}

std::optional<std::vector<std::byte>> Handler::encode_reply(const Packet& reply) {
  try {
    return encode_packet(reply);
  } catch (const std::exception&) {
    stats_.count_drop(DropReason::kSendFailed);
    return std::nullopt;
  }
}

std::optional<std::vector<std::byte>> Handler::serve(std::span<const std::byte> datagram) {
  const std::optional<Packet> request = parse_request(datagram);
  if (!request) return std::nullopt;
  return encode_reply(handle(*request));
}

std::string Handler::stats_json() const {
  Json out = stats_.json();
  out["log_entries"] = log_.entries();
  out["log_bytes"] = log_.bytes();
  out["log_gaps"] = log_.gaps();
  out["role"] = role_ == Role::kPrimary ? "primary" : role_ == Role::kBackup ? "backup" : "alone";
  out["node"] = node_.index;
  out["nodes"] = node_.count;
  out["secondary_index"] = log_.mode() == LogMode::kSecondaryIndex;
  out["primary_keys"] = log_.primary_keys();
  if (extra_json_) {
    const Json more = extra_json_();
    if (more.is_object()) out.update(more);
  }
  return json_line(out);
}

}  // namespace forein::net::data_node

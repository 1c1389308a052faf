#include "load/sidx_ops.h"

#include <algorithm>
#include <unordered_set>
#include <utility>

#include "protocol/dataset.h"
#include "protocol/secondary_index.h"

namespace forein::net::load {

namespace {

Step step(Step::Kind kind, Packet request = {}) {
  Step s;
  s.kind = kind;
  s.request = std::move(request);
  return s;
}

}  // namespace

SidxWrite::SidxWrite(std::uint64_t index, std::uint32_t version, std::uint64_t secondary_keys,
                     std::size_t record_bytes)
    : index_(index),
      version_(version),
      record_bytes_(record_bytes),
      secondary_index_(secondary_index_of(index, version, secondary_keys)),
      key_(dataset_key(index)),
      secondary_(dataset_key(secondary_index_)),
      slot_(slot_key(secondary_)) {}

Packet SidxWrite::start() const {
  return visibility_request(Op::kLogAppend, key_,
                            encode_sidx_record(secondary_, dataset_record(index_, version_, record_bytes_)), slot_, 0);
}

Step SidxWrite::fail(std::string why) {
  phase_ = Phase::kFailed;
  Step s;
  s.kind = Step::Kind::kFailed;
  s.why = std::move(why);
  return s;
}

Step SidxWrite::on_reply(const Packet& reply) {
  switch (phase_) {
    case Phase::kAppend: {
      if (auto p = reply_problem(reply, key_, "LOG_APPEND")) return fail(*p);
      if (reply.status != Status::kOk) return fail(std::string("LOG_APPEND: ") + status_name(reply.status));
      const auto entry = decode_sidx_entry(reply.value);
      if (!entry || entry->primary != key_ || entry->secondary != secondary_) {
        return fail("LOG_APPEND: the reply's value is not this write's secondary-index entry (is the data node "
                    "running --secondary-index?)");
      }
      if (!reply.visibility) return fail("LOG_APPEND: the reply has no visibility header");
      ts_ = reply.visibility->ts;
      switch (reply.visibility->state) {
        case VisState::kStored:
          phase_ = Phase::kCommitted;
          one_rtt_ = true;
          return step(Step::Kind::kDone);
        case VisState::kFallback:
        case VisState::kPartial:  // no visibility table on the path: the data node's state as sent
        case VisState::kNone:
          phase_ = Phase::kMetaPut;
          return step(Step::Kind::kSend, visibility_request(Op::kMetaPut, key_, reply.value, slot_, ts_));
        case VisState::kSwitchRead:
        case VisState::kHeld:
          break;
      }
      return fail("LOG_APPEND: unexpected visibility state " +
                  std::to_string(static_cast<int>(reply.visibility->state)));
    }
    case Phase::kMetaPut:
      if (auto p = reply_problem(reply, key_, "META_PUT")) return fail(*p);
      if (reply.status != Status::kOk) return fail(std::string("META_PUT: ") + status_name(reply.status));
      phase_ = Phase::kCommitted;
      return step(Step::Kind::kDone);
    case Phase::kCommitted:
    case Phase::kFailed:
      break;
  }
  return fail("a reply after the write ended");
}

SidxRead::SidxRead(std::uint64_t secondary_index, std::uint32_t count)
    : secondary_index_(secondary_index),
      count_(count),
      secondary_(dataset_key(secondary_index)),
      slot_(slot_key(secondary_)) {}

Packet SidxRead::start() const {
  Packet p = visibility_request(Op::kSidxRead, secondary_, std::string(), slot_, 0);
  p.count = count_;
  return p;
}

Step SidxRead::fail(std::string why) {
  phase_ = Phase::kFailed;
  Step s;
  s.kind = Step::Kind::kFailed;
  s.why = std::move(why);
  return s;
}

std::optional<SidxRead::Looked> SidxRead::take_looked() {
  if (looked_.empty()) return std::nullopt;
  Looked out = std::move(looked_.front());
  looked_.pop_front();
  return out;
}

Step SidxRead::next() {
  if (at_ == listed_.size()) {
    phase_ = Phase::kDone;
    return step(Step::Kind::kDone);
  }
  phase_ = Phase::kLogRead;
  const std::string first = dataset_key(listed_[at_]);
  Packet p = visibility_request(Op::kLogRead, first, std::string(), slot_key(first), 0);
  // The request, like its reply, fits one frame (kMaxSidxMultiReadBytes):
  // a long list goes in several multi-reads.
  std::size_t bytes = encoded_size(p);
  std::vector<ScanEntry> keys;
  for (std::size_t k = at_; k < listed_.size() && keys.size() < kMaxSidxReadCount; ++k) {
    std::string key = dataset_key(listed_[k]);
    const std::size_t entry = kSidxMultiReadEntryOverhead + key.size();
    if (!keys.empty() && bytes + entry > kMaxSidxMultiReadBytes) break;
    bytes += entry;
    keys.push_back({std::move(key), std::string()});
  }
  asked_ = keys.size();
  p.count = static_cast<std::uint32_t>(asked_);
  p.value = encode_scan_entries(keys);
  ++multi_reads_;
  return step(Step::Kind::kSend, std::move(p));
}

Step SidxRead::on_multi_read(const Packet& reply) {
  if (auto p = reply_problem(reply, dataset_key(listed_[at_]), "LOG_READ")) return fail(*p);
  if (reply.status != Status::kOk) return fail(std::string("LOG_READ (multi-read): ") + status_name(reply.status));
  const auto entries = decode_scan_entries(reply.value);
  if (!entries || entries->size() != reply.count) {
    return fail("LOG_READ (multi-read): the reply's entries do not match its count " + std::to_string(reply.count) +
                " (is the data node running --secondary-index?)");
  }
  if (entries->empty() || entries->size() > asked_) {
    return fail("LOG_READ (multi-read): " + std::to_string(entries->size()) + " entries for " +
                std::to_string(asked_) + " keys");
  }
  if (entries->size() < asked_ && !reply.more) {
    return fail("LOG_READ (multi-read): " + std::to_string(entries->size()) + " entries for " +
                std::to_string(asked_) + " keys without the more flag");
  }
  for (std::size_t k = 0; k < entries->size(); ++k) {
    const std::uint64_t i = listed_[at_ + k];
    const ScanEntry& e = (*entries)[k];
    if (e.key != dataset_key(i)) {
      return fail("LOG_READ (multi-read): entry " + std::to_string(k) + " is not key " + std::to_string(i) +
                  ", the key asked there");
    }
    if (e.value.empty()) {  // the data node has no record of the key
      ++not_found_;
      ++dropped_;
      continue;
    }
    auto record = decode_sidx_record(e.value);
    if (!record) return fail("LOG_READ: key " + std::to_string(i) + "'s record is no secondary-index record");
    const auto version = record_version(record->payload, i);
    if (record->secondary == secondary_ && version) {
      kept_.push_back(Member{i, *version});
    } else {
      ++dropped_;
    }
    looked_.push_back(Looked{i, std::move(record->secondary), std::move(record->payload)});
  }
  at_ += entries->size();
  return next();
}

Step SidxRead::on_reply(const Packet& reply) {
  looked_.clear();
  switch (phase_) {
    case Phase::kSidxRead: {
      if (auto p = reply_problem(reply, secondary_, "SIDX_READ")) return fail(*p);
      if (reply.status == Status::kNotFound) return next();  // no primary key names it
      if (reply.status != Status::kOk) return fail(std::string("SIDX_READ: ") + status_name(reply.status));
      const auto entries = decode_scan_entries(reply.value);
      if (!entries || entries->size() != reply.count) {
        return fail("SIDX_READ: the reply's entries do not match its count " + std::to_string(reply.count));
      }
      if (entries->size() > count_) {
        return fail("SIDX_READ: " + std::to_string(entries->size()) + " entries for a count of " +
                    std::to_string(count_));
      }
      std::unordered_set<std::uint64_t> seen;
      for (const ScanEntry& e : *entries) {
        std::uint64_t i = 0;
        if (!dataset_index(e.key, &i) || !decode_sidx_ts(e.value)) {
          return fail("SIDX_READ: an entry is not (8-byte primary key, 4-byte timestamp)");
        }
        // A key that moved away and back may briefly have two composite
        // keys under one secondary key (the old one's removal is in the
        // background): read it once.
        if (seen.insert(i).second) listed_.push_back(i);
      }
      listed_entries_ = entries->size();
      truncated_ = reply.more || entries->size() >= count_;
      return next();
    }
    case Phase::kLogRead:
      return on_multi_read(reply);
    case Phase::kDone:
    case Phase::kFailed:
      break;
  }
  return fail("a reply after the read ended");
}

}  // namespace forein::net::load

// forein-kv-server --mode metadata --secondary-index: the metadata node's
// requests over the secondary index (secondary_index.h; paper 002, VI-B
// and III-C; protocol/secondary_index.h). MetadataNode::handle dispatches
// here in this mode; the deferred batch, catch-up, sync step and held
// replies are metadata_node.cc's, with the apply rule of SecondaryIndex.
#include <exception>
#include <utility>

#include "kv_server/metadata_node.h"
#include "protocol/secondary_index.h"

namespace forein::net::kv {

void MetadataNode::refuse(const Packet& request, const UdpAddress& from, const std::string& why) {
  Packet r;
  r.op = Op::kError;
  r.status = Status::kBadRequest;
  r.seq = request.seq;
  r.key = request.key;
  r.value = why;
  reply(r, from);
}

bool MetadataNode::check_sidx_update(const Packet& request, MetaUpdate* out, std::string* error) const {
  if (!request.visibility) {
    *error = "needs the visibility header (the secondary key's slot and fingerprint, ts)";
    return false;
  }
  std::optional<SidxEntry> entry = decode_sidx_entry(request.value);
  if (!entry) {
    *error =
        "value is not a SidxEntry (u16 primary key length, primary key, u16 secondary key length, secondary key; "
        "both non-empty)";
    return false;
  }
  if (entry->primary != request.key) {
    *error = "the SidxEntry's primary key is not the packet's key";
    return false;
  }
  if (const std::string why = sidx_->too_long(entry->primary, entry->secondary); !why.empty()) {
    *error = why;
    return false;
  }
  // The write used the secondary key's slot (the switch stores the
  // partial entry there); the header carries it, the packet's key is the
  // primary key's.
  const VisibilityHeader& v = *request.visibility;
  const SlotKey sk = slot_key(entry->secondary);
  if (v.slot != sk.slot || v.fingerprint != sk.fingerprint) {
    *error = "visibility header slot " + std::to_string(v.slot) + " fingerprint " + std::to_string(v.fingerprint) +
             " is not the secondary key's (slot " + std::to_string(sk.slot) + " fingerprint " +
             std::to_string(sk.fingerprint) + ")";
    return false;
  }
  if (v.ts == 0) {
    *error = "timestamp 0 (data nodes stamp writes from 1)";
    return false;
  }
  out->key = std::move(entry->primary);
  out->secondary = std::move(entry->secondary);
  out->stamped = StampedLocation{LogLocation{}, v.ts};
  out->slot = v.slot;
  out->fingerprint = v.fingerprint;
  out->seq = request.seq;
  return true;
}

ApplyResult MetadataNode::sidx_apply(const MetaUpdate& u, std::string* stale) {
  const ApplyResult r = sidx_->apply(u.key, u.secondary, u.stamped.ts, stale);
  sidx_processed_.mark(u.stamped.ts);
  return r;
}

void MetadataNode::sidx_processed(const MetaUpdate& u) { sidx_processed_.mark(u.stamped.ts); }

void MetadataNode::sidx_meta_put(const Packet& request, const UdpAddress& from) {
  ++counters_.meta_put;
  MetaUpdate u;
  std::string error;
  if (!check_sidx_update(request, &u, &error)) {
    refuse(request, from, "META_PUT: " + error);
    return;
  }
  // The critical path: the new composite key and the reverse entry now;
  // the composite key the write made stale after the reply (erase_stale).
  std::string stale;
  count_apply(sidx_apply(u, &stale));
  if (!stale.empty()) stale_.push_back(std::move(stale));
  Packet r;
  r.op = Op::kReply;
  r.status = Status::kOk;
  r.seq = request.seq;
  r.key = request.key;
  r.visibility = VisibilityHeader{u.slot, VisState::kNone, u.fingerprint, u.stamped.ts, 0};
  reply(r, from);
}

void MetadataNode::sidx_meta_async(const Packet& request, const UdpAddress& from) {
  ++counters_.meta_async;
  MetaUpdate u;
  std::string error;
  if (!check_sidx_update(request, &u, &error)) {
    ++counters_.bad_async;  // the switch's copy: no reply goes back
    return;
  }
  switch_ = from;
  u.from = from;
  if (!options_.deferred) {
    count_apply(sidx_apply(u, nullptr));
    queue(clear_packet(u.slot, u.fingerprint, u.stamped.ts, u.seq), u.from);
    ++counters_.clears_sent;
    ++counters_.clear_datagrams;
    return;
  }
  deferred_.push(std::move(u));
  if (deferred_.full()) flush_deferred();
}

bool MetadataNode::sidx_slot_applied(const Packet& held) {
  const std::optional<SidxEntry> entry = decode_sidx_entry(held.value);
  if (!entry) return false;
  const std::optional<SecondaryIndex::Newest> newest = sidx_->lookup(entry->primary);
  return newest && newest->ts >= held.visibility->aux;
}

void MetadataNode::erase_stale() {
  for (const std::string& composite : stale_) sidx_->erase_stale(composite);
  stale_.clear();
}

void MetadataNode::sidx_read(const Packet& request, const UdpAddress& from) {
  ++counters_.sidx_reads;
  if (request.key.empty() || !sidx_->too_long(std::string_view("p", 1), request.key).empty()) {
    refuse(request, from, "SIDX_READ: the key must be a secondary key the index can hold (1 byte or more)");
    return;
  }
  if (request.count == 0 || request.count > kMaxSidxReadCount) {
    refuse(request, from,
           "SIDX_READ: count " + std::to_string(request.count) + ": ask for 1.." +
               std::to_string(kMaxSidxReadCount) + " primary keys");
    return;
  }
  if (request.visibility && request.visibility->state == VisState::kPartial) {
    // Section III-C: the switch's slot holds a partial entry of this
    // secondary key (a write it committed whose copy may not have been
    // applied yet): applied first, then the whole entry is the answer.
    const std::optional<SidxEntry> partial = decode_sidx_entry(request.value);
    if (!partial || request.visibility->ts == 0 || !sidx_->too_long(partial->primary, partial->secondary).empty()) {
      refuse(request, from,
             "SIDX_READ: the attached partial entry (state partial) is not a SidxEntry the index can hold with a "
             "timestamp > 0");
      return;
    }
    // Not marked processed: its slot is cleared by its META_ASYNC copy,
    // or by the catch-up when that copy is lost.
    if (sidx_->apply(partial->primary, partial->secondary, request.visibility->ts) == ApplyResult::kApplied) {
      ++counters_.applied;
      ++counters_.sidx_partial_merged;
    } else {
      ++counters_.ignored_older;
    }
  }
  // A phase-2 META_PUT's stale composite key may still be waiting (its
  // primary key listed twice under one secondary key): gone first.
  erase_stale();
  bool more = false;
  const std::vector<SecondaryIndex::Member> members = sidx_->read(request.key, request.count, &more);
  Packet r;
  r.op = Op::kReply;
  r.status = Status::kOk;
  r.seq = request.seq;
  r.key = request.key;
  if (request.visibility) {
    const VisibilityHeader& v = *request.visibility;
    r.visibility = VisibilityHeader{v.slot, VisState::kNone, v.fingerprint, 0, 0};
  }
  // Entries while the datagram holds them (long primary keys): the rest
  // is announced by the more flag.
  std::vector<ScanEntry> entries;
  entries.reserve(members.size());
  std::size_t bytes = encoded_size(r);
  for (const SecondaryIndex::Member& m : members) {
    const std::size_t entry_bytes = 6 + m.primary.size() + kSidxTsBytes;
    if (bytes + entry_bytes > kMaxDatagram) {
      more = true;
      break;
    }
    bytes += entry_bytes;
    entries.push_back({m.primary, encode_sidx_ts(m.ts)});
  }
  r.count = static_cast<std::uint32_t>(entries.size());
  r.value = encode_scan_entries(entries);
  r.more = more;
  reply(r, from);
}

}  // namespace forein::net::kv

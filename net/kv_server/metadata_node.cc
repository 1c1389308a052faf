#include "kv_server/metadata_node.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <exception>
#include <utility>

#include "protocol/dataset.h"

namespace forein::net::kv {

namespace {

constexpr std::size_t kReceiveBuffer = 65536;
constexpr std::size_t kSendBurst = 64;  // datagrams per sendmmsg
constexpr std::size_t kReceiveBurst = 32;  // datagrams per recvmmsg

std::vector<std::pair<std::string, std::uint16_t>> node_list(const ServerOptions& o) {
  std::vector<std::pair<std::string, std::uint16_t>> out;
  for (const HostPort& hp : o.data_nodes) out.emplace_back(hp.host, hp.port);
  return out;
}

VisibilityHeader vis(std::uint16_t slot, std::uint32_t fingerprint, std::uint32_t ts) {
  VisibilityHeader v;
  v.slot = slot;
  v.state = VisState::kNone;
  v.fingerprint = fingerprint;
  v.ts = ts;
  v.aux = 0;
  return v;
}

}  // namespace

MetadataNode::MetadataNode(const ServerOptions& options, Tree& tree, ServerStats& stats,
                           std::function<std::string()> stats_json)
    : options_(options),
      stats_(stats),
      stats_json_(std::move(stats_json)),
      index_(tree),
      catchup_(node_list(options), std::chrono::microseconds(options.visibility_timeout_us),
               LogFetchShard{options.shard, options.shards, options.keys}),
      deferred_(options.batch) {
  if (options_.secondary_index) {
    sidx_ = std::make_unique<SecondaryIndex>(tree);
    catchup_.follow_secondary_index(
        [this](const FetchedLogEntry& e) { return sidx_processed_.contains(e.stamped.ts); });
  }
  if (options_.switch_given) {
    try {
      configured_switch_ = resolve_udp(options_.switch_address.host, options_.switch_address.port, AF_UNSPEC);
    } catch (const std::exception& e) {
      throw std::runtime_error("--switch " + options_.switch_address.text() + ": " + e.what());
    }
    switch_ = configured_switch_;
  }
}

MetadataNode::~MetadataNode() = default;

bool MetadataNode::owns(std::string_view key) const { return catchup_.owns(key); }

std::string MetadataNode::not_owned_text() const {
  return "the key is not this metadata node's (--shard " + std::to_string(options_.shard) + "/" +
         std::to_string(options_.shards) + " of --keys " + std::to_string(options_.keys) +
         "): the switch routes each key to its owner";
}

void MetadataNode::recover() {
  // Only this node's keys reach the callback (the others move the cursor).
  counters_.replayed = catchup_.replay([this](std::uint16_t node, const FetchedLogEntry& e) {
    apply_log_entry(node, e);
  });
}

void MetadataNode::count_apply(ApplyResult r) {
  if (r == ApplyResult::kApplied) {
    ++counters_.applied;
  } else {
    ++counters_.ignored_older;
  }
}

void MetadataNode::apply_update(std::uint16_t node, std::string_view key, const StampedLocation& s) {
  if (key.size() > index_.max_key_size()) {
    ++counters_.skipped;  // a log entry the tree cannot hold (updates are checked before)
  } else {
    count_apply(index_.apply(key, s));
  }
  catchup_.mark_applied(node, s.location.log_id);
}

void MetadataNode::apply_log_entry(std::uint16_t node, const FetchedLogEntry& e) {
  if (!sidx_) {
    apply_update(node, e.key, e.stamped);
    return;
  }
  if (!sidx_->too_long(e.key, e.secondary).empty()) {
    ++counters_.skipped;  // a log entry the tree cannot hold
  } else {
    MetaUpdate u;
    u.key = e.key;
    u.secondary = e.secondary;
    u.stamped = e.stamped;
    count_apply(sidx_apply(u, nullptr));
  }
  catchup_.mark_applied(node, e.stamped.location.log_id);
}

SlotKey MetadataNode::entry_slot(const FetchedLogEntry& e) const {
  return slot_key(sidx_ ? std::string_view(e.secondary) : std::string_view(e.key));
}

Packet MetadataNode::clear_packet(std::uint16_t slot, std::uint32_t fingerprint, std::uint32_t ts,
                                  std::uint64_t seq) const {
  Packet p;
  p.op = Op::kClear;
  p.seq = seq;
  p.visibility = vis(slot, fingerprint, ts);
  return p;
}

void MetadataNode::queue(const Packet& p, const UdpAddress& to) {
  if (to.empty()) return;
  try {
    out_.push_back({encode_packet(p), to});
  } catch (const std::exception&) {
    stats_.count_drop(DropReason::kSendFailed);
  }
}

void MetadataNode::reply(const Packet& p, const UdpAddress& to) {
  stats_.count_reply(p.op, p.status);
  queue(p, to);
}

void MetadataNode::send_queued() {
  std::size_t done = 0;
  while (done < out_.size()) {
    const std::size_t n = std::min(kSendBurst, out_.size() - done);
    mmsghdr msgs[kSendBurst] = {};
    iovec iovs[kSendBurst] = {};
    for (std::size_t i = 0; i < n; ++i) {
      Outgoing& o = out_[done + i];
      iovs[i].iov_base = o.bytes.data();
      iovs[i].iov_len = o.bytes.size();
      msgs[i].msg_hdr.msg_name = &o.to.storage;
      msgs[i].msg_hdr.msg_namelen = o.to.length;
      msgs[i].msg_hdr.msg_iov = &iovs[i];
      msgs[i].msg_hdr.msg_iovlen = 1;
    }
    const int sent = ::sendmmsg(fd_, msgs, static_cast<unsigned>(n), 0);
    ++counters_.send_calls;
    if (sent < 0) {
      if (errno == EINTR) continue;
      // This datagram cannot go (no route, wrong family ...): count it and
      // go on with the next.
      stats_.count_drop(DropReason::kSendFailed);
      ++done;
      continue;
    }
    done += static_cast<std::size_t>(sent);
    counters_.datagrams_sent += static_cast<std::uint64_t>(sent);
  }
  out_.clear();
}

bool MetadataNode::check_update(const Packet& request, MetaUpdate* out, std::string* error) const {
  if (request.key.size() > index_.max_key_size()) {
    *error = "key longer than " + std::to_string(index_.max_key_size()) + " bytes";
    return false;
  }
  if (!request.visibility) {
    *error = "needs the visibility header (slot, fingerprint, ts)";
    return false;
  }
  const std::optional<LogLocation> location = decode_location(request.value);
  if (!location) {
    *error = "value is not a location (6 bytes: data node u16, log id u32 > 0)";
    return false;
  }
  const std::uint32_t nodes = catchup_.data_nodes();
  if (location->node >= nodes) {
    *error = "location names data node " + std::to_string(location->node) + " of " + std::to_string(nodes);
    return false;
  }
  const VisibilityHeader& v = *request.visibility;
  const SlotKey sk = slot_key(request.key);
  if (v.slot != sk.slot || v.fingerprint != sk.fingerprint) {
    *error = "visibility header slot " + std::to_string(v.slot) + " fingerprint " + std::to_string(v.fingerprint) +
             " is not the key's (slot " + std::to_string(sk.slot) + " fingerprint " +
             std::to_string(sk.fingerprint) + ")";
    return false;
  }
  if (data_node_of(sk.slot, nodes) != location->node) {
    *error = "the key's slot belongs to data node " + std::to_string(data_node_of(sk.slot, nodes)) +
             ", the location names data node " + std::to_string(location->node);
    return false;
  }
  if (v.ts == 0) {
    *error = "timestamp 0 (data nodes stamp writes from 1)";
    return false;
  }
  if (!owns(request.key)) {
    *error = not_owned_text();
    return false;
  }
  out->key = request.key;
  out->stamped = {*location, v.ts};
  out->slot = v.slot;
  out->fingerprint = v.fingerprint;
  out->seq = request.seq;
  return true;
}

void MetadataNode::meta_get(const Packet& request, const UdpAddress& from) {
  ++counters_.meta_get;
  Packet r;
  r.op = Op::kReply;
  r.seq = request.seq;
  r.key = request.key;
  if (request.key.size() > index_.max_key_size() || !owns(request.key)) {
    r.op = Op::kError;
    r.status = Status::kBadRequest;
    if (!owns(request.key)) {
      ++counters_.not_owned;
      r.value = not_owned_text();
    } else {
      r.value = "key longer than " + std::to_string(index_.max_key_size()) + " bytes";
    }
    reply(r, from);
    return;
  }
  const std::optional<StampedLocation> stored = index_.lookup(request.key);
  if (stored) {
    r.value = encode_location(stored->location);
  } else {
    r.status = Status::kNotFound;
  }
  if (request.visibility) {
    r.visibility = vis(request.visibility->slot, request.visibility->fingerprint, stored ? stored->ts : 0);
  }
  reply(r, from);
}

void MetadataNode::meta_put(const Packet& request, const UdpAddress& from) {
  ++counters_.meta_put;
  MetaUpdate u;
  std::string error;
  Packet r;
  r.seq = request.seq;
  r.key = request.key;
  if (!check_update(request, &u, &error)) {
    if (!owns(request.key)) ++counters_.not_owned;
    r.op = Op::kError;
    r.status = Status::kBadRequest;
    r.value = "META_PUT: " + error;
    reply(r, from);
    return;
  }
  // The critical path: applied now, never deferred.
  apply_update(u.stamped.location.node, u.key, u.stamped);
  r.op = Op::kReply;
  r.status = Status::kOk;
  r.visibility = vis(u.slot, u.fingerprint, u.stamped.ts);
  reply(r, from);
}

void MetadataNode::meta_async(const Packet& request, const UdpAddress& from) {
  ++counters_.meta_async;
  MetaUpdate u;
  std::string error;
  if (!check_update(request, &u, &error)) {
    if (!owns(request.key)) ++counters_.not_owned;
    ++counters_.bad_async;  // the switch's copy: no reply goes back
    return;
  }
  switch_ = from;
  u.from = from;
  if (!options_.deferred) {
    apply_update(u.stamped.location.node, u.key, u.stamped);
    queue(clear_packet(u.slot, u.fingerprint, u.stamped.ts, u.seq), u.from);
    ++counters_.clears_sent;
    ++counters_.clear_datagrams;
    return;
  }
  deferred_.push(std::move(u));
  if (deferred_.full()) flush_deferred();
}

void MetadataNode::flush_deferred() {
  if (deferred_.empty()) return;
  const std::size_t n = deferred_.size();
  // The batch's CLEARs share datagrams (protocol/visibility.h): the first
  // (slot, ts) in the header, up to kMaxClearsPerDatagram - 1 more in the
  // value; a new datagram when the sender (the switch) changes.
  Packet clear;
  UdpAddress clear_to;
  std::size_t entries = 0;
  const auto close = [&] {
    if (entries == 0) return;
    queue(clear, clear_to);
    ++counters_.clear_datagrams;
    entries = 0;
  };
  const auto done = [&](const MetaUpdate& u) {
    if (sidx_) {
      sidx_processed(u);  // the batch's combined updates too
    } else {
      catchup_.mark_applied(u.stamped.location.node, u.stamped.location.log_id);
    }
    if (entries == kMaxClearsPerDatagram || (entries > 0 && !(u.from == clear_to))) close();
    if (entries == 0) {
      clear = clear_packet(u.slot, u.fingerprint, u.stamped.ts, u.seq);
      clear_to = u.from;
    } else {
      append_clear_entry(&clear.value, u.slot, u.stamped.ts);
    }
    ++entries;
    ++counters_.clears_sent;
  };
  const BatchOutcome b =
      sidx_ ? deferred_.apply([this](const MetaUpdate& u) { sidx_->prefetch(u.key); },
                              [this](const MetaUpdate& u) { return sidx_apply(u, nullptr); }, done)
            : deferred_.apply(index_, done);
  close();
  ++counters_.batches;
  counters_.batched_updates += n;
  counters_.applied += b.applied;
  counters_.ignored_older += b.ignored_older;
  counters_.combined += b.combined;
  send_queued();
}

void MetadataNode::held_bounce(const Packet& held, const UdpAddress& from) {
  ++counters_.held_bounces;
  switch_ = from;
  // The slot's write may be among the deferred updates: apply them first,
  // so its CLEAR goes out now rather than after another bounce.
  flush_deferred();
  const VisibilityHeader& v = *held.visibility;
  const std::optional<LogLocation> slot_write = sidx_ ? std::nullopt : decode_location(held.value);
  if (sidx_ ? sidx_slot_applied(held) : slot_write && catchup_.applied(slot_write->node, slot_write->log_id)) {
    // One of this node's keys, applied, yet the slot still holds it: its
    // CLEAR was lost (or is behind this reply). CLEAR with the slot's
    // CurTs, carried in aux; the slot's key is not in the reply, so the
    // fingerprint is 0. A slot write of another node's key (a slot shared
    // by keys of two owners) is never cleared from here, applied by its
    // owner or not: the held reply just goes round again.
    queue(clear_packet(v.slot, 0, v.aux, held.seq), from);
    ++counters_.clears_sent;
    ++counters_.clear_datagrams;
  }
  Packet again = held;
  again.visibility->state = VisState::kNone;
  again.visibility->aux = 0;
  again.value.clear();
  try {
    resends_.push_back({Clock::now() + kResendDelay, {encode_packet(again), from}});
  } catch (const std::exception&) {
    stats_.count_drop(DropReason::kSendFailed);
  }
}

void MetadataNode::send_sync_probe() {
  if (configured_switch_.empty() || fd_ < 0) return;
  Packet p;
  p.op = Op::kSync;
  p.seq = ++counters_.sync_probes;
  p.visibility = vis(0, 0, 0);
  p.visibility->aux = synced_epoch_;
  try {
    const std::vector<std::byte> bytes = encode_packet(p);
    // Straight out, not counted as a drop when it cannot go: while the
    // switch is down its network may be too.
    (void)::sendto(fd_, bytes.data(), bytes.size(), MSG_DONTWAIT,
                   reinterpret_cast<const sockaddr*>(&configured_switch_.storage), configured_switch_.length);
  } catch (const std::exception&) {
  }
}

void MetadataNode::sync_step(const Packet& answer, const UdpAddress& from) {
  const std::uint32_t epoch = answer.visibility->aux;
  if (epoch == 0 || epoch == synced_epoch_) return;
  // Section III-E: "all metadata nodes pause and drain their existing
  // request queues. Then ... perform a synchronization step with all data
  // nodes to retrieve the state of the most recently committed
  // operations." A write the old switch committed (kStored) is in its data
  // node's log; its META_ASYNC copy may have died with the switch.
  const Clock::time_point start = Clock::now();
  flush_deferred();
  std::uint64_t applied = 0;
  try {
    applied = catchup_.replay(
        [this, &from](std::uint16_t node, const FetchedLogEntry& e) {
          apply_log_entry(node, e);
          // As in catch-up: a slot it may have left valid is cleared by
          // its timestamp (a newer write in the slot stays).
          const SlotKey sk = entry_slot(e);
          queue(clear_packet(sk.slot, sk.fingerprint, e.stamped.ts, 0), from);
          ++counters_.clears_sent;
        },
        true);
  } catch (const RecoveryError&) {
    ++counters_.sync_failed;  // a data node did not answer: tried again at the next probe's answer
    return;
  }
  counters_.sync_applied += applied;
  ++counters_.syncs;
  counters_.last_sync_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  synced_epoch_ = epoch;
  send_queued();
  send_sync_probe();  // names the epoch: the switch counts this node synced
  next_probe_ = Clock::now() + kSyncProbeInterval;
}

void MetadataNode::handle(const Packet& request, const UdpAddress& from) {
  switch (request.op) {
    case Op::kSync:
      // The switch's answer to a probe (ts 1); anything else is not ours.
      if (request.visibility && request.visibility->ts == 1) {
        sync_step(request, from);
      } else {
        stats_.count_drop(DropReason::kNotRequest);
      }
      break;
    case Op::kMetaGet:
      stats_.count_request(request.op);
      if (sidx_) {
        ++counters_.meta_get;
        refuse(request, from,
               "META_GET is not served with --secondary-index: read a secondary key's primary keys with SIDX_READ");
      } else {
        meta_get(request, from);
      }
      break;
    case Op::kMetaPut:
      stats_.count_request(request.op);
      if (sidx_) {
        sidx_meta_put(request, from);
      } else {
        meta_put(request, from);
      }
      break;
    case Op::kMetaAsync:
      stats_.count_request(request.op);
      if (sidx_) {
        sidx_meta_async(request, from);
      } else {
        meta_async(request, from);
      }
      break;
    case Op::kSidxRead:
      stats_.count_request(request.op);
      if (sidx_) {
        sidx_read(request, from);
      } else {
        refuse(request, from,
               "SIDX_READ needs a metadata node started with --secondary-index (this one maps key -> location: "
               "META_GET)");
      }
      break;
    case Op::kStats: {
      stats_.count_request(request.op);
      Packet r;
      r.op = Op::kReply;
      r.seq = request.seq;
      r.key = request.key;
      r.value = stats_json_ ? stats_json_() : std::string("{}");
      if (encoded_size(r) > kMaxDatagram) {
        r.op = Op::kError;
        r.status = Status::kTooLarge;
        r.value = "stats too large";
      }
      reply(r, from);
      break;
    }
    case Op::kReply:
      if (request.visibility && request.visibility->state == VisState::kHeld) {
        held_bounce(request, from);
      } else {
        stats_.count_drop(DropReason::kNotRequest);
      }
      break;
    case Op::kError:
      stats_.count_drop(DropReason::kNotRequest);
      break;
    default: {
      stats_.count_request(request.op);
      Packet r;
      r.op = Op::kError;
      r.status = Status::kBadRequest;
      r.seq = request.seq;
      r.key = request.key;
      r.value = "not a metadata-node request";
      reply(r, from);
      break;
    }
  }
  send_queued();
}

void MetadataNode::run_timers(Clock::time_point now) {
  while (!resends_.empty() && resends_.front().due <= now) {
    out_.push_back(std::move(resends_.front().datagram));
    resends_.pop_front();
    ++counters_.resent;
  }
  if (now >= catchup_.next_due()) catchup_.tick(now);
  if (!configured_switch_.empty() && now >= next_probe_) {
    send_sync_probe();
    next_probe_ = now + kSyncProbeInterval;
  }
  send_queued();
}

void MetadataNode::run(int fd, int stop_fd) {
  fd_ = fd;
  // recvmmsg: up to kReceiveBurst datagrams per call into their own buffers.
  std::vector<std::byte> buf(kReceiveBuffer * kReceiveBurst);
  mmsghdr msgs[kReceiveBurst];
  iovec iovs[kReceiveBurst];
  UdpAddress froms[kReceiveBurst];
  pollfd fds[3] = {{fd, POLLIN, 0}, {catchup_.fd(), POLLIN, 0}, {stop_fd, POLLIN, 0}};
  Packet request;
  // Only entries of this node's keys come here (LogCatchup passes the
  // others over): apply, then CLEAR.
  const auto catch_up = [this](std::uint16_t node, const FetchedLogEntry& e) {
    apply_log_entry(node, e);
    // Its META_ASYNC copy was lost, so the switch's slot may still hold
    // it: clear it by its timestamp (a newer write in the slot stays).
    // With no switch known yet nothing reached a switch.
    if (!switch_.empty()) {
      const SlotKey sk = entry_slot(e);
      queue(clear_packet(sk.slot, sk.fingerprint, e.stamped.ts, 0), switch_);
      ++counters_.clears_sent;
      ++counters_.clear_datagrams;
    }
  };
  for (;;) {
    Clock::time_point now = Clock::now();
    run_timers(now);
    Clock::time_point due = catchup_.next_due();
    if (!resends_.empty()) due = std::min(due, resends_.front().due);
    if (!configured_switch_.empty()) due = std::min(due, next_probe_);
    const auto wait = std::chrono::duration_cast<std::chrono::nanoseconds>(std::max(due - now, Clock::duration(0)));
    timespec ts{};
    ts.tv_sec = static_cast<std::time_t>(wait.count() / 1'000'000'000);
    ts.tv_nsec = static_cast<long>(wait.count() % 1'000'000'000);
    const int r = ::ppoll(fds, 3, &ts, nullptr);
    if (r < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[2].revents != 0) break;
    if (fds[0].revents != 0) {
      // Critical-path requests are answered as they come; META_ASYNC
      // copies wait in the deferred batch until it is full or the socket
      // is drained.
      for (int got = 0; got < kDrainLimit;) {
        for (std::size_t i = 0; i < kReceiveBurst; ++i) {
          froms[i] = UdpAddress{};
          iovs[i] = {buf.data() + i * kReceiveBuffer, kReceiveBuffer};
          msgs[i] = {};
          msgs[i].msg_hdr.msg_name = &froms[i].storage;
          msgs[i].msg_hdr.msg_namelen = sizeof froms[i].storage;
          msgs[i].msg_hdr.msg_iov = &iovs[i];
          msgs[i].msg_hdr.msg_iovlen = 1;
        }
        const int n = ::recvmmsg(fd, msgs, kReceiveBurst, MSG_DONTWAIT, nullptr);
        ++counters_.recv_calls;
        if (n < 0) {
          if (errno == EINTR) continue;
          break;  // EAGAIN: drained
        }
        if (n == 0) break;
        got += n;
        for (int i = 0; i < n; ++i) {
          stats_.count_datagram();
          if ((msgs[i].msg_hdr.msg_flags & MSG_TRUNC) != 0) {
            stats_.count_drop(DropReason::kOversized);
            continue;
          }
          froms[i].length = msgs[i].msg_hdr.msg_namelen;
          const ParseError e =
              parse_packet(std::span<const std::byte>(buf.data() + static_cast<std::size_t>(i) * kReceiveBuffer,
                                                      msgs[i].msg_len),
                           &request);
          if (e != ParseError::kNone) {
            stats_.count_parse_error(e);
            continue;
          }
          handle(request, froms[i]);
        }
        if (static_cast<std::size_t>(n) < kReceiveBurst) break;  // drained
      }
      flush_deferred();
      erase_stale();  // after the drain's replies went out
    }
    if (fds[1].revents != 0) {
      catchup_.receive(Clock::now(), catch_up);
      send_queued();
    }
  }
  // Stopping: what is buffered is applied (its CLEARs go out); held
  // replies not yet resent are dropped (their clients retry).
  flush_deferred();
  erase_stale();
}

Json MetadataNode::json() const {
  const CatchupCounters& c = catchup_.counters();
  Json out = Json::object();
  out["mode"] = "metadata";
  out["meta_get"] = counters_.meta_get;
  out["meta_put"] = counters_.meta_put;
  out["meta_async"] = counters_.meta_async;
  out["bad_async"] = counters_.bad_async;
  out["clears_sent"] = counters_.clears_sent;
  out["clear_datagrams"] = counters_.clear_datagrams;
  out["recv_calls"] = counters_.recv_calls;
  out["send_calls"] = counters_.send_calls;
  out["datagrams_sent"] = counters_.datagrams_sent;
  out["batches"] = counters_.batches;
  out["batched_updates"] = counters_.batched_updates;
  out["combined"] = counters_.combined;
  out["applied"] = counters_.applied;
  out["ignored_older"] = counters_.ignored_older;
  out["held_bounces"] = counters_.held_bounces;
  out["resent"] = counters_.resent;
  out["caught_up"] = c.caught_up;
  out["foreign_entries"] = c.foreign;
  out["not_owned"] = counters_.not_owned;
  out["replayed"] = counters_.replayed;
  out["switch_epoch"] = synced_epoch_;
  out["sync_probes"] = counters_.sync_probes;
  out["syncs"] = counters_.syncs;
  out["sync_failed"] = counters_.sync_failed;
  out["sync_applied"] = counters_.sync_applied;
  out["last_sync_ms"] = counters_.last_sync_ms;
  out["skipped"] = counters_.skipped;
  out["secondary_index"] = options_.secondary_index;
  if (sidx_) {
    out["sidx_reads"] = counters_.sidx_reads;
    out["sidx_partial_merged"] = counters_.sidx_partial_merged;
    out["sidx_stale_deleted"] = sidx_->stale_deleted();
    out["composites"] = sidx_->composites();
    out["primary_keys"] = sidx_->primaries();
    out["other_format_entries"] = c.other_format;
  }
  out["fetches"] = c.fetches;
  out["fetch_replies"] = c.fetch_replies;
  out["fetch_timeouts"] = c.fetch_timeouts;
  out["fetch_errors"] = c.fetch_errors;
  out["data_nodes"] = catchup_.data_nodes();
  out["deferred"] = options_.deferred;
  out["batch"] = options_.batch;
  out["visibility_timeout_us"] = options_.visibility_timeout_us;
  out["switch"] = switch_.empty() ? std::string() : switch_.text();
  // Per data node (up to 64 of them: the STATS reply is one datagram).
  if (catchup_.data_nodes() <= 64) out["logs"] = catchup_.json();
  return out;
}

}  // namespace forein::net::kv

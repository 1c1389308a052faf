#include "kv_server/log_catchup.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "kv_server/stats.h"

namespace forein::net::kv {

namespace {

constexpr std::size_t kReceiveBuffer = 65536;
// Start-up: a request unanswered this long is sent again with the wait
// doubled, kReplayTries times in all (0.1 + 0.2 + 0.4 + 0.8 + 1.6 s).
constexpr std::chrono::milliseconds kReplayFirstWait{100};
constexpr int kReplayTries = 5;
// Catch-up: an outstanding fetch is given up after this many timeouts
// (and at least kMinFetchLost), so a lost request or reply does not stop
// the node's catch-up.
constexpr int kFetchLostTimeouts = 8;
constexpr std::chrono::milliseconds kMinFetchLost{100};

}  // namespace

void AppliedLog::mark(std::uint32_t id) {
  if (id <= through_) return;
  if (id != through_ + 1) {
    above_.insert(id);
    return;
  }
  ++through_;
  while (!above_.empty() && *above_.begin() == through_ + 1) {
    above_.erase(above_.begin());
    ++through_;
  }
}

Packet log_fetch_request(std::uint64_t seq, std::uint32_t first, std::uint32_t count,
                         const std::optional<LogFetchShard>& shard) {
  Packet p;
  p.op = Op::kLogFetch;
  p.seq = seq;
  p.count = count;
  p.value = encode_log_fetch_value({first, shard});
  return p;
}

std::optional<std::vector<FetchedLogEntry>> decode_log_fetch(const Packet& reply, std::uint16_t node,
                                                             std::uint32_t data_nodes, std::uint32_t first,
                                                             std::string* error, LogFormat format,
                                                             std::uint32_t* scanned) {
  if (reply.op == Op::kError) {
    *error = "LOG_FETCH answered with an error: " + reply.value;
    return std::nullopt;
  }
  if (reply.op != Op::kReply || reply.status != Status::kOk) {
    *error = "LOG_FETCH answered with something other than REPLY ok";
    return std::nullopt;
  }
  if (scanned != nullptr) {
    std::uint32_t through = 0;
    for (unsigned char c : reply.key) through = (through << 8) | c;
    // At least the id before the first asked for, at most kMaxLogFetchScan
    // past it (a garbage id must not move the cursor over unseen entries).
    const std::uint64_t start = std::max<std::uint32_t>(first, 1);
    if (reply.key.size() != 4 || through + 1ULL < start || through + 1ULL > start + kMaxLogFetchScan) {
      *error = "a LOG_FETCH reply to a request with a key range must name in its key (u32) the log id through which "
               "the other ranges' entries were passed over: from the first asked for less one to " +
               std::to_string(kMaxLogFetchScan) + " past it";
      return std::nullopt;
    }
    *scanned = through;
  }
  const std::optional<std::vector<ScanEntry>> entries = decode_scan_entries(reply.value);
  if (!entries || entries->size() != reply.count) {
    *error = "LOG_FETCH reply entries are malformed";
    return std::nullopt;
  }
  std::vector<FetchedLogEntry> out;
  out.reserve(entries->size());
  std::uint32_t last = 0;
  for (const ScanEntry& e : *entries) {
    std::string_view stamped = e.value;
    std::string_view secondary;
    if (format == LogFormat::kSecondaryIndex) {
      // StampedLocation then the secondary key; anything else is skipped
      // by the caller (a data node without --secondary-index, say), with
      // its id when the first bytes name one so the cursor moves past it.
      stamped = stamped.substr(0, std::min(stamped.size(), kStampedLocationBytes));
      secondary = e.value.size() > kStampedLocationBytes ? std::string_view(e.value).substr(kStampedLocationBytes)
                                                         : std::string_view();
      const std::optional<StampedLocation> s = decode_stamped(stamped);
      if (!s || secondary.empty() || s->location.node != node) {
        FetchedLogEntry skip{e.key, s ? *s : StampedLocation{}, std::string(), true};
        if (s && s->location.node != node) skip.stamped = StampedLocation{};  // not this log's id
        if (skip.stamped.location.log_id != 0) {
          if (skip.stamped.location.log_id < first || skip.stamped.location.log_id <= last) {
            *error = "LOG_FETCH entries are not in ascending log-id order from the id asked for";
            return std::nullopt;
          }
          last = skip.stamped.location.log_id;
        }
        out.push_back(std::move(skip));
        continue;
      }
    }
    const std::optional<StampedLocation> s = decode_stamped(stamped);
    if (!s) {
      *error = "a LOG_FETCH entry's value is not a stamped location (10 bytes, log id > 0)";
      return std::nullopt;
    }
    if (s->location.node != node || data_node_of(slot_key(e.key).slot, data_nodes) != node) {
      *error = "LOG_FETCH returned an entry of data node " + std::to_string(s->location.node) + " (key slot " +
               std::to_string(slot_key(e.key).slot) + ") from the node at position " + std::to_string(node) +
               " of " + std::to_string(data_nodes) +
               ": --data-nodes must list data node i (forein-data-node --node i/D) at position i, D of them";
      return std::nullopt;
    }
    if (s->location.log_id < first || s->location.log_id <= last) {
      *error = "LOG_FETCH entries are not in ascending log-id order from the id asked for";
      return std::nullopt;
    }
    last = s->location.log_id;
    out.push_back({e.key, *s, std::string(secondary), false});
  }
  return out;
}

LogCatchup::LogCatchup(const std::vector<std::pair<std::string, std::uint16_t>>& data_nodes,
                       std::chrono::microseconds timeout, std::optional<LogFetchShard> shard)
    : shard_(shard), timeout_(timeout), buffer_(kReceiveBuffer) {
  int family = AF_UNSPEC;
  for (const auto& [host, port] : data_nodes) {
    DataNode n;
    n.name = host + ":" + std::to_string(port);
    try {
      n.address = resolve_udp(host, port, family);
    } catch (const std::exception& e) {
      throw std::runtime_error("--data-nodes " + n.name + ": " + e.what() +
                               (family == AF_UNSPEC ? "" : " (all data nodes must share the first one's family)"));
    }
    family = n.address.family();
    nodes_.push_back(std::move(n));
  }
  fd_ = ::socket(family, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd_ < 0) throw std::runtime_error(std::string("LOG_FETCH socket: ") + std::strerror(errno));
  const int rcvbuf = 4 << 20;
  (void)::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);  // best effort
  next_tick_ = Clock::now() + timeout_;
}

LogCatchup::~LogCatchup() {
  if (fd_ >= 0) ::close(fd_);
}

void LogCatchup::send(const DataNode& node, const Packet& request) {
  const std::vector<std::byte> wire = encode_packet(request);
  // A failed send is a lost request: the caller's timeout covers it.
  (void)::sendto(fd_, wire.data(), wire.size(), 0, node.address.get(), node.address.length);
}

bool LogCatchup::receive_one(Packet* out) {
  for (;;) {
    const ssize_t n = ::recv(fd_, buffer_.data(), buffer_.size(), MSG_DONTWAIT | MSG_TRUNC);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return false;
      continue;  // ECONNREFUSED from an ICMP and the like: nothing to read here
    }
    if (static_cast<std::size_t>(n) > buffer_.size()) continue;
    if (parse_packet(std::span<const std::byte>(buffer_.data(), static_cast<std::size_t>(n)), out) !=
        ParseError::kNone) {
      continue;
    }
    return true;
  }
}

bool LogCatchup::pass_other_format(DataNode& node, const FetchedLogEntry& e) {
  if (!e.other_format) return false;
  const std::uint32_t id = e.stamped.location.log_id;
  if (id != 0 && node.applied.contains(id)) return true;  // counted when first seen
  if (id != 0) node.applied.mark(id);
  ++counters_.other_format;
  return true;
}

std::uint64_t LogCatchup::pass_unlisted(DataNode& node, std::uint32_t first, std::uint32_t scanned,
                                        const std::vector<FetchedLogEntry>& listed) {
  std::uint64_t passed = 0;
  auto next = listed.begin();  // ids ascending (decode_log_fetch)
  for (std::uint64_t id = std::max<std::uint64_t>(first, node.applied.through() + 1ULL); id <= scanned; ++id) {
    while (next != listed.end() && next->stamped.location.log_id < id) ++next;
    if (next != listed.end() && next->stamped.location.log_id == id) continue;
    const auto i = static_cast<std::uint32_t>(id);
    if (node.applied.contains(i)) continue;
    node.applied.mark(i);
    ++passed;
  }
  counters_.foreign += passed;
  return passed;
}

void LogCatchup::mark_applied(std::uint16_t node, std::uint32_t log_id) {
  if (node >= nodes_.size()) return;
  DataNode& n = nodes_[node];
  n.applied.mark(log_id);
  n.owned_applied.mark(log_id);
  active_ = true;
  if (!n.missing.empty()) n.missing.erase(log_id);
}

std::uint64_t LogCatchup::replay(const std::function<void(std::uint16_t node, const FetchedLogEntry&)>& apply,
                                 bool from_cursor) {
  std::uint64_t replayed = 0;
  for (std::uint16_t i = 0; i < nodes_.size(); ++i) {
    DataNode& node = nodes_[i];
    std::uint32_t first = from_cursor ? node.applied.through() + 1 : 1;
    node.outstanding_seq = 0;  // a catch-up fetch's answer is read (and passed over) below
    for (;;) {
      const std::uint64_t seq = next_seq_++;
      const Packet request = log_fetch_request(seq, first, kFetchEntries, fetch_filter());
      std::optional<Packet> reply;
      auto wait = std::chrono::duration_cast<Clock::duration>(kReplayFirstWait);
      for (int attempt = 0; attempt < kReplayTries && !reply; ++attempt, wait *= 2) {
        send(node, request);
        const Clock::time_point deadline = Clock::now() + wait;
        while (!reply) {
          const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
          if (left.count() <= 0) break;
          pollfd p{fd_, POLLIN, 0};
          const int rc = ::poll(&p, 1, static_cast<int>(left.count()));
          if (rc < 0 && errno != EINTR) throw RecoveryError(std::string("poll: ") + std::strerror(errno));
          Packet got;
          while (!reply && receive_one(&got)) {
            if (got.seq == seq) reply = std::move(got);  // else a late answer to an earlier try
          }
        }
      }
      if (!reply) {
        throw RecoveryError("data node " + std::to_string(i) + " (" + node.name +
                            ") did not answer LOG_FETCH from log id " + std::to_string(first) + " (" +
                            std::to_string(kReplayTries) +
                            " tries over 3.1 s): the index is rebuilt from every data node's log before the "
                            "metadata node serves; start the data nodes first");
      }
      std::string error;
      std::uint32_t scanned = 0;
      const auto entries = decode_log_fetch(*reply, i, data_nodes(), first, &error, format_,
                                            fetch_filter() ? &scanned : nullptr);
      if (!entries) throw RecoveryError("data node " + std::to_string(i) + " (" + node.name + "): " + error);
      std::uint32_t last = 0;  // the reply's last id (entries of another format may have none)
      for (const FetchedLogEntry& e : *entries) {
        const std::uint32_t id = e.stamped.location.log_id;
        last = std::max(last, id);
        if (pass_other_format(node, e)) continue;
        if (from_cursor && node.applied.contains(id)) continue;
        if (owns(e.key)) {
          apply(i, e);
          mark_applied(i, id);
          ++replayed;
        } else {
          node.applied.mark(id);  // another metadata node's key: passed over
          ++counters_.foreign;
        }
      }
      if (fetch_filter()) pass_unlisted(node, first, scanned, *entries);
      last = std::max(last, scanned);
      if (!reply->more) break;
      if (last < first) {
        throw RecoveryError("data node " + std::to_string(i) + " (" + node.name +
                            "): LOG_FETCH said more entries remain but returned none" +
                            (entries->empty() ? "" : " with a log id") + " and passed none over");
      }
      first = last + 1;
    }
  }
  next_tick_ = Clock::now() + timeout_;
  return replayed;
}

void LogCatchup::tick(Clock::time_point now) {
  const Clock::duration lost = std::max<Clock::duration>(timeout_ * kFetchLostTimeouts, kMinFetchLost);
  for (DataNode& node : nodes_) {
    if (node.outstanding_seq != 0) {
      if (now - node.outstanding_since < lost) continue;
      ++counters_.fetch_timeouts;
      node.outstanding_seq = 0;
    }
    node.outstanding_seq = next_seq_++;
    node.outstanding_first = node.applied.through() + 1;
    node.outstanding_since = now;
    send(node, log_fetch_request(node.outstanding_seq, node.outstanding_first, kFetchEntries, fetch_filter()));
    ++counters_.fetches;
  }
  interval_ = active_ ? Clock::duration(timeout_) : std::min<Clock::duration>(interval_ * 2, timeout_ * 64);
  active_ = false;
  next_tick_ = now + interval_;
}

void LogCatchup::receive(Clock::time_point now,
                         const std::function<void(std::uint16_t node, const FetchedLogEntry&)>& catch_up) {
  Packet reply;
  while (receive_one(&reply)) {
    const auto it = std::find_if(nodes_.begin(), nodes_.end(), [&](const DataNode& n) {
      return n.outstanding_seq != 0 && n.outstanding_seq == reply.seq;
    });
    if (it == nodes_.end()) continue;  // an answer to a fetch given up (or to start-up's tries)
    DataNode& node = *it;
    const auto index = static_cast<std::uint16_t>(it - nodes_.begin());
    node.outstanding_seq = 0;
    ++counters_.fetch_replies;
    std::string error;
    std::uint32_t scanned = 0;
    const auto entries = decode_log_fetch(reply, index, data_nodes(), node.outstanding_first, &error, format_,
                                          fetch_filter() ? &scanned : nullptr);
    if (!entries) {
      ++counters_.fetch_errors;
      continue;
    }
    // Other ranges' entries the data node passed over: cursor only, as
    // for a listed one below.
    if (fetch_filter() && pass_unlisted(node, node.outstanding_first, scanned, *entries) > 0) active_ = true;
    for (const FetchedLogEntry& e : *entries) {
      const std::uint32_t id = e.stamped.location.log_id;
      if (pass_other_format(node, e)) continue;
      if (node.applied.contains(id)) continue;
      active_ = true;
      if (!owns(e.key)) {
        // Another metadata node's key: its owner applies it and clears
        // its slot; here it only moves the cursor on.
        node.applied.mark(id);
        ++counters_.foreign;
        continue;
      }
      if (known_ && known_(e)) {
        // Applied through its META_PUT or META_ASYNC (which name no log
        // id): not a lost copy.
        mark_applied(index, id);
        continue;
      }
      const auto [at, inserted] = node.missing.try_emplace(id, now);
      if (inserted || now - at->second < timeout_) continue;
      // Missing for a whole timeout: its META_ASYNC copy was lost.
      catch_up(index, e);
      mark_applied(index, id);
      ++counters_.caught_up;
    }
  }
}

Json LogCatchup::json() const {
  Json out = Json::array();
  for (const DataNode& n : nodes_) {
    Json node = Json::object();
    node["address"] = n.name;
    node["applied_through"] = n.applied.through();
    node["applied_above"] = n.applied.above();
    node["missing"] = n.missing.size();
    out.push_back(std::move(node));
  }
  return out;
}

}  // namespace forein::net::kv

// The metadata node following the data nodes' logs (paper 002, section
// III-E): LOG_FETCH on a socket of its own, for
//   - start-up, which is also the metadata node's crash recovery: every
//     entry of every log, from id 1, applied before the node serves (the
//     data nodes keep each write's metadata with the write, so the index
//     is rebuilt from them);
//   - catch-up: every visibility timeout, each log from the first id the
//     index has not applied; an entry still missing one timeout later is
//     a META_ASYNC copy the network lost, and is applied, with a CLEAR of
//     the slot it left valid in the switch.
// With several metadata nodes (--shard I/K) each one owns a key range and
// follows every log, but applies (and may clear the slot of) only the
// entries of keys it owns; an entry of another node's key only advances
// the log's cursor, at once. Its LOG_FETCHes name its range, so the data
// nodes send only its own entries and the id up to which the others were
// passed over (protocol/log_fetch.h); the cursor moves past those unseen. Per log, two records: the cursor (AppliedLog:
// every id processed, owned or not) and the ids owned and applied (a
// bitset: the test a held bounce's CLEAR needs).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/json.h"
#include "common/udp_address.h"
#include "protocol/log_fetch.h"
#include "protocol/packet.h"
#include "protocol/visibility.h"

namespace forein::net::kv {

// A data node that does not answer at start-up, or answers with something
// that is not its log: the program exits 1.
class RecoveryError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The ids of one log the index has applied: every id <= through(), plus
// the ones in a set above it (updates arrive out of id order).
class AppliedLog {
 public:
  bool contains(std::uint32_t id) const { return id <= through_ || above_.count(id) != 0; }
  void mark(std::uint32_t id);
  std::uint32_t through() const { return through_; }
  std::size_t above() const { return above_.size(); }

 private:
  std::uint32_t through_ = 0;
  std::set<std::uint32_t> above_;
};

// The ids of one log whose entries this node owns and has applied, one
// bit per id (a held reply names a log location, not a key).
class OwnedApplied {
 public:
  bool contains(std::uint32_t id) const {
    const std::size_t w = id / 64;
    return w < words_.size() && (words_[w] >> (id % 64) & 1) != 0;
  }
  void mark(std::uint32_t id) {
    const std::size_t w = id / 64;
    if (w >= words_.size()) words_.resize(std::max<std::size_t>(w + 1, words_.size() * 2), 0);
    words_[w] |= std::uint64_t{1} << (id % 64);
  }

 private:
  std::vector<std::uint64_t> words_;
};

// What a LOG_FETCH entry's value holds: a StampedLocation (10 bytes), or,
// from a --secondary-index data node, a StampedLocation followed by the
// write's secondary key (protocol/secondary_index.h).
enum class LogFormat : std::uint8_t { kLocation, kSecondaryIndex };

// One entry of a LOG_FETCH reply.
struct FetchedLogEntry {
  std::string key;
  StampedLocation stamped;
  std::string secondary;      // LogFormat::kSecondaryIndex: the write's secondary key
  bool other_format = false;  // kSecondaryIndex: a value of another format (skipped;
                              // stamped holds its id when its first 10 bytes name one, else 0)
};

// LOG_FETCH: value = the first id (u32 big-endian), count = the most entries.
// shard: only that key range's entries (several metadata nodes).
Packet log_fetch_request(std::uint64_t seq, std::uint32_t first, std::uint32_t count,
                         const std::optional<LogFetchShard>& shard = std::nullopt);

// The entries of a REPLY to log_fetch_request(first) from data node
// `node` of `data_nodes`: well formed, ids ascending from >= first, each
// the node's own (location.node == node, the key's slot % data_nodes ==
// node: --data-nodes lists data node i at position i). nullopt with the
// reason in *error otherwise. kSecondaryIndex: an entry whose value is not
// a StampedLocation plus a non-empty secondary key comes back marked
// other_format (not an error: the caller skips and counts it).
// scanned (a request with a key range): set to the id the reply names in
// its key, up to which every entry not listed is another range's (from
// first - 1 to first - 1 + kMaxLogFetchScan; a reply without it, or
// naming another id, is an error).
std::optional<std::vector<FetchedLogEntry>> decode_log_fetch(const Packet& reply, std::uint16_t node,
                                                             std::uint32_t data_nodes, std::uint32_t first,
                                                             std::string* error,
                                                             LogFormat format = LogFormat::kLocation,
                                                             std::uint32_t* scanned = nullptr);

struct CatchupCounters {
  std::uint64_t fetches = 0;         // catch-up LOG_FETCH requests sent
  std::uint64_t fetch_replies = 0;   // ... answered
  std::uint64_t fetch_timeouts = 0;  // ... given up unanswered
  std::uint64_t fetch_errors = 0;    // ... answered with an error or a reply that is not the log
  std::uint64_t caught_up = 0;       // entries applied because they stayed missing a timeout
  std::uint64_t foreign = 0;         // entries of keys another metadata node owns: cursor only
  std::uint64_t other_format = 0;    // kSecondaryIndex: entries of another format, skipped
};

class LogCatchup {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::uint32_t kFetchEntries = 256;  // per LOG_FETCH (the data node's most)

  // Resolves the data nodes (node i at position i; all in the first one's
  // address family) and opens the fetch socket. Throws std::runtime_error.
  LogCatchup(const std::vector<std::pair<std::string, std::uint16_t>>& data_nodes,
             std::chrono::microseconds timeout, std::optional<LogFetchShard> shard = std::nullopt);
  ~LogCatchup();
  LogCatchup(const LogCatchup&) = delete;
  LogCatchup& operator=(const LogCatchup&) = delete;

  int fd() const { return fd_; }
  std::uint32_t data_nodes() const { return static_cast<std::uint32_t>(nodes_.size()); }
  const std::string& name(std::uint16_t node) const { return nodes_[node].name; }

  // Whether this metadata node owns a key: shard, the constructor's
  // (--shard I/K --keys N: LogFetchShard{I, K, N}); none: every key.
  bool owns(std::string_view key) const { return !shard_ || shard_->owns(key); }

  // Whether the index already holds an entry through its META_PUT or
  // META_ASYNC (which name no log id): the catch-up then marks it applied
  // instead of taking it for a lost copy.
  using Known = std::function<bool(const FetchedLogEntry&)>;
  // --secondary-index: LOG_FETCH entries carry the secondary key
  // (LogFormat::kSecondaryIndex); known tells the entries already applied.
  void follow_secondary_index(Known known) {
    format_ = LogFormat::kSecondaryIndex;
    known_ = std::move(known);
  }

  // Start-up: every entry of every log from id 1, in id order; the owned
  // ones passed to apply and marked applied, the others passed over
  // (cursor only). A request unanswered is sent again with a doubled wait
  // (5 tries, 3.1 s); then, or on a reply that is not the node's log,
  // RecoveryError. Returns the entries replayed (applied).
  // from_cursor: the switch-crash recovery's sync step (section III-E):
  // each log from the first id not processed to its end, at once (no
  // timeout wait); the entries already applied are passed over.
  std::uint64_t replay(const std::function<void(std::uint16_t node, const FetchedLogEntry&)>& apply,
                       bool from_cursor = false);

  // Whether the entry at (node, log_id) is one of this node's keys and
  // applied: the only entries whose slot it may clear.
  bool applied(std::uint16_t node, std::uint32_t log_id) const {
    return node < nodes_.size() && nodes_[node].owned_applied.contains(log_id);
  }
  // An owned entry applied (the caller checked the key).
  void mark_applied(std::uint16_t node, std::uint32_t log_id);

  // When tick() is next due: one timeout after the last one while writes
  // arrive or entries are missing; idle, the interval doubles up to 64
  // timeouts, so an idle node does not keep the data nodes busy.
  Clock::time_point next_due() const { return next_tick_; }
  // Sends each data node a LOG_FETCH from its first unapplied id (one
  // outstanding per node; one unanswered for 8 timeouts, at least 100 ms,
  // is given up).
  void tick(Clock::time_point now);
  // Reads the fetch socket until it is empty. Of each reply's entries not
  // processed, those of keys another node owns advance the cursor at once
  // (never applied, never cleared from here); of the owned ones, those
  // already missing a timeout ago go to catch_up (which applies them and
  // clears their slot; they are marked applied), the others are recorded
  // missing from now.
  void receive(Clock::time_point now,
               const std::function<void(std::uint16_t node, const FetchedLogEntry&)>& catch_up);

  const CatchupCounters& counters() const { return counters_; }
  // Per data node: address, applied_through, applied_above, missing; a
  // JSON array.
  Json json() const;

 private:
  struct DataNode {
    std::string name;  // HOST:PORT as given
    UdpAddress address;
    AppliedLog applied;           // the cursor: every id processed, owned or not
    OwnedApplied owned_applied;   // the owned ids applied
    std::map<std::uint32_t, Clock::time_point> missing;  // log id -> when first seen unapplied
    std::uint64_t outstanding_seq = 0;                   // 0: none
    std::uint32_t outstanding_first = 0;
    Clock::time_point outstanding_since{};
  };

  void send(const DataNode& node, const Packet& request);
  // An entry of another format: counted, and the cursor moved past it
  // when its id is known. True for such an entry.
  bool pass_other_format(DataNode& node, const FetchedLogEntry& e);
  // A filtered fetch's reply: the ids in [first, scanned] it did not list
  // are other ranges' entries, marked processed (cursor only); how many
  // were new.
  std::uint64_t pass_unlisted(DataNode& node, std::uint32_t first, std::uint32_t scanned,
                              const std::vector<FetchedLogEntry>& listed);
  // The key range sent with every LOG_FETCH (several metadata nodes).
  std::optional<LogFetchShard> fetch_filter() const {
    return shard_ && shard_->shards > 1 ? shard_ : std::nullopt;
  }
  // A datagram from the fetch socket parsed into *out; false when empty.
  bool receive_one(Packet* out);

  std::vector<DataNode> nodes_;
  std::optional<LogFetchShard> shard_;
  LogFormat format_ = LogFormat::kLocation;
  Known known_;
  std::chrono::microseconds timeout_;
  Clock::duration interval_{timeout_};  // the current tick interval (idle back-off)
  bool active_ = false;                 // since the last tick: something applied or found missing
  int fd_ = -1;
  std::uint64_t next_seq_ = 1;
  Clock::time_point next_tick_{};
  CatchupCounters counters_;
  std::vector<std::byte> buffer_;
};

}  // namespace forein::net::kv

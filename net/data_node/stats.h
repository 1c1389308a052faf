// forein-data-node's counters: requests, what the log served, replies by
// status, drops by reason; rendered as one JSON object (the STATS reply's
// value and the exit line; fields in docs/network.md, "forein-data-node").
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

#include "common/stats_json.h"
#include "protocol/packet.h"

namespace forein::net::data_node {

// Shared with forein-kv-server (net/common/stats_json.h).
using forein::net::DropReason;

enum class Counter : std::uint8_t {
  kDatagrams,       // datagrams received
  kRequests,        // requests handled (every op but REPLY/ERROR)
  kStats,           // STATS requests
  kOther,           // requests that are not data-node requests (GET, PUT, META_* ...)
  kAppends,         // LOG_APPENDs appended
  kReads,           // LOG_READs answered with the record
  kMismatches,      // LOG_READs answered kMismatch
  kNotFound,        // LOG_READs past the end of the log
  kFetches,         // LOG_FETCHes answered
  kFetchedEntries,  // entries in those answers
  kLogFull,         // LOG_APPENDs refused: no log id left
  kOk,              // replies by status
  kBadRequest,
  kTooLarge,
  kServerError,
  // Replication (section V-D; docs/network.md, "forein-data-node").
  kBackupRefused,      // backup: LOG_APPENDs refused (a backup takes no client writes)
  kInstalled,          // backup: LOG_REPLICATEs installed
  kInstallDuplicates,  // backup: LOG_REPLICATEs of an entry already there (resends), ACKed again
  kReplicateRefused,   // backup (or not a backup): LOG_REPLICATEs refused with BAD_REQUEST
  kReplicateSent,      // primary: LOG_REPLICATE datagrams sent (every backup, every try)
  kReplicateResent,    // primary: of those, resends after a timeout
  kAcks,               // primary: first ACKs from a backup for an entry
  kAcksLate,           // primary: ACKs for entries already answered or given up (or repeated)
  kReplicateErrors,    // primary: ERROR answers or unparsable datagrams from backups
  kReplicateGaveUp,    // primary: writes answered SERVER_ERROR after the last resend
  kReplicateBacklog,   // primary: writes refused (SERVER_ERROR) with kMaxPendingWrites waiting
  kMultiReads,         // --secondary-index: multi-reads (LOG_READ, count > 0) answered
  kMultiReadKeys,      // the keys those answers held (found or not)
  kFetchPassedOver,    // LOG_FETCHes with a key range: entries of other ranges not sent
};
inline constexpr std::size_t kCounters = 29;

class DataNodeStats : public DropCounters {
 public:
  void count(Counter c) { bump(counters_[static_cast<std::size_t>(c)]); }
  void add(Counter c, std::uint64_t n) {
    counters_[static_cast<std::size_t>(c)].fetch_add(n, std::memory_order_relaxed);
  }
  void count_reply(Status status);

  std::uint64_t get(Counter c) const { return counters_[static_cast<std::size_t>(c)].load(); }

  // Everything as one JSON object: the counters and the drops; the
  // handler appends its own members.
  Json json() const;

 private:
  std::array<std::atomic<std::uint64_t>, kCounters> counters_{};
};

}  // namespace forein::net::data_node

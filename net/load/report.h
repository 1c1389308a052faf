// What a run measured, and its JSON line (docs/network.md, "forein-load").
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "load/histogram.h"
#include "load/options.h"
#include "load/workload.h"

namespace forein::net::load {

struct RunReport {
  LoadOptions options;
  double elapsed_s = 0;                        // first send to last answer
  std::uint64_t ops = 0;                       // operations completed (answered, any status)
  std::array<std::uint64_t, kOpKinds> per_op{};  // completed, by OpKind
  std::uint64_t requests = 0;                  // datagrams sent (first attempts)
  std::uint64_t retries = 0;                   // resends after a timeout
  std::uint64_t timeouts = 0;                  // operations given up after all retries
  // The key range the timed-out operations fell in (a dead server shows
  // as its shard's range); meaningful only when timeouts > 0.
  std::uint64_t timeout_key_min = ~std::uint64_t{0};
  std::uint64_t timeout_key_max = 0;
  std::uint64_t errors = 0;                    // ERROR replies, bad status, unparsable or mismatched replies
  std::uint64_t not_found = 0;                 // GET answered not found
  std::uint64_t late_replies = 0;              // replies to a SEQ no longer waited for
  std::uint64_t send_failures = 0;             // send() refused (counted, then retried on timeout)
  std::uint64_t wrong = 0;                     // --verify: answers no allowed state explains
  std::uint64_t verified = 0;                  // --verify: answers checked
  std::uint64_t hinted = 0;                    // requests sent with a hint trailer (--agent)
  std::uint64_t agent_fetches = 0;             // --agent: image fetches that succeeded
  std::uint64_t agent_errors = 0;              // --agent: fetches that failed
  LatencyHistogram latency;                    // per completed operation
  // write-only / write-heavy (Switch-delta's ordered writes, load/ordered.h):
  std::uint64_t writes_one_rtt = 0;            // writes the switch committed (LOG_APPEND reply kStored)
  std::uint64_t writes_two_phase = 0;          // writes committed by META_PUT (phase 2)
  std::uint64_t reads_from_switch = 0;         // reads whose record came by a location the switch answered
  std::uint64_t read_retries = 0;              // LOG_READ mismatches: the read started again from META_GET
  LatencyHistogram write_latency;              // LOG_APPEND's first send to commit, per committed write
  LatencyHistogram read_latency;               // META_GET's first send to the record, per read that got one
  // secondary-index (load/sidx_ops.h; its writes count in writes_one_rtt /
  // writes_two_phase, one round trip when the switch stored the partial
  // entry; read_latency is SIDX_READ's first send to the last multi-read's reply):
  std::uint64_t sidx_keys_listed = 0;          // primary keys the SIDX_READ replies listed
  std::uint64_t sidx_keys_kept = 0;            // ... whose record still named the secondary key read
  std::uint64_t sidx_keys_dropped = 0;         // ... dropped by validation (moved on, or not found)
  std::uint64_t sidx_reads_truncated = 0;      // reads whose reply had the more flag or filled the count
  // --remote-read (load/remote_read.h):
  std::uint64_t reads = 0;                     // READs sent (first attempts; start READs and header READs included)
  std::uint64_t start_reads = 0;               // lookups' first READs, marked for the switch
  std::uint64_t rewritten = 0;                 // start READs whose address a switch replaced
  std::uint64_t hint_hits = 0;                 // lookups that went on from the rewritten node
  std::uint64_t fallbacks = 0;                 // the start node did not check: walked from the root
  std::uint64_t walk_restarts = 0;             // restarts from the root after the start node was taken
  std::uint64_t torn_reads = 0;                // nodes read mid-write (odd version, bad checksum)
  std::uint64_t read_failures = 0;             // READs that got no reply after all attempts, or BAD_ADDRESS
  std::uint64_t gave_up = 0;                   // lookups with no checked answer within their READ budget
  std::uint32_t remote_height = 0;             // the tree's height (shard 0's header)

  double ops_per_s() const { return elapsed_s > 0 ? static_cast<double>(ops) / elapsed_s : 0; }
};

// Human-readable lines (histogram included), ending with the JSON line.
std::string format_report(const RunReport& r);
// The one JSON object (no newline).
std::string report_json(const RunReport& r);

}  // namespace forein::net::load

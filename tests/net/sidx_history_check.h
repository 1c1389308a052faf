// The check of forein-load --workload secondary-index --history files
// (net/load/history.h, SW and SR lines): "reads see every acknowledged
// write", sound with concurrent writes of one primary key.
//
// Each primary key i holds one record at a time; a write (i, v) replaces
// it with version v, naming secondary key j = secondary_index_of(i, v, S);
// the preloaded record is version 0, written at time 0. Writes of one key
// in flight together may land in either order (the data node's
// timestamps, not the client's versions, order them), so, as in
// forein-load --verify (load/verify.h), a write W is SUPERSEDED at time t
// if another write of i was invoked after W was settled (acknowledged,
// never resent) and acknowledged before t. Failed, pending and resent
// writes are never settled (a late copy may land at any time). A write W
// is POSSIBLY CURRENT during a read R if W was invoked before R ended and
// is not superseded when R started. For an ok read R of secondary key j:
//
//   (1) every member (i, v) R kept names a write of i with version v that
//       names j and is possibly current during R (not a version never
//       written, not one overwritten before R started);
//   (2) unless R's listing was truncated, every primary key i whose
//       possibly-current writes all name j is a member of R: a missed
//       acknowledged write (the newest write acknowledged before R started
//       is always possibly current, so the rule applies only when some
//       write naming j was acknowledged before R, or i was preloaded
//       there and not written since).
//
// The corrupt_sidx_* functions make negative controls from a real
// history: each changes one read so that rule (1) or (2) fails, or says
// (nullopt) that the history has no read to change that way.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "load/history.h"

namespace forein::testing {

using net::load::HistoryOp;

// "keys=N" and "secondary_keys=S" from a history's header line.
struct SidxRun {
  std::uint64_t keys = 0;
  std::uint64_t secondary_keys = 0;
};
// nullopt unless the header names both (forein-load --workload
// secondary-index writes them).
std::optional<SidxRun> sidx_run_of(const std::string& header);
// Whether the history holds SW or SR lines.
bool is_sidx_history(const std::vector<HistoryOp>& ops);

struct SidxCheck {
  bool ok = false;
  std::string explanation;  // the first violations, one a line
  std::uint64_t violations = 0;
  std::uint64_t writes = 0, failed_writes = 0, resent_writes = 0;
  std::uint64_t reads = 0, truncated_reads = 0, members = 0;
  std::uint64_t required = 0;  // (read, primary key) pairs rule (2) required, all found
  double seconds = 0;
  std::string summary() const;  // one line
};

SidxCheck check_sidx_history(const std::vector<HistoryOp>& ops, const SidxRun& run);

// Rule (2)'s control: an untruncated ok read loses a member that every
// possibly-current write of its key put there (a read missing an
// acknowledged member). Prefers reads listed "all"; else marks a
// truncated read "all" too.
std::optional<std::string> corrupt_sidx_missing_member(std::vector<HistoryOp>* ops, const SidxRun& run);
// Rule (1)'s control: an ok read of j gets (i, v) for a write (i, v)
// naming j that was superseded before the read started (a member
// overwritten before the read).
std::optional<std::string> corrupt_sidx_overwritten_member(std::vector<HistoryOp>* ops, const SidxRun& run);
// Rule (1)'s control: a member's version replaced by one no write has.
std::optional<std::string> corrupt_sidx_unwritten_version(std::vector<HistoryOp>* ops);

}  // namespace forein::testing

// The linearizability check of forein-load --history files (Switch-delta's
// ordered writes and reads; net/load/history.h has the format). Each key
// is a register: a write is an UPSERT of its version, a read a GET that
// returned a version, every key starts at version 0 (the data nodes'
// preloaded dataset_record(i, 0)). Failed and pending writes may take
// effect at any time after their invocation, or never; a resent write
// may, besides, take effect a second time later (a late copy of its
// LOG_APPEND appended again: a pending duplicate); failed and pending
// reads are dropped. The search is tests/fpga/linearizability.h's
// (Wing & Gong / Lowe / Porcupine with memoization), one key at a time
// (linearizability is local).
//
// The corrupt_* functions make negative controls from a real history:
// each changes one operation so that no linearization can exist, or says
// (nullopt) that the history has no operation to change that way.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "load/history.h"

namespace forein::testing {

using net::load::HistoryOp;

struct LoadHistory {
  std::string header;  // the first '#' line, without "# "
  std::vector<HistoryOp> ops;
};

// Throws std::runtime_error naming the path and line on a malformed file.
LoadHistory read_history(const std::string& path);

struct HistoryCheck {
  bool linearizable = false;
  bool unknown = false;  // the search gave up (step bound)
  std::string explanation;  // not linearizable: the failing key's prefix and what cannot come next
  std::uint64_t ops = 0, writes = 0, reads = 0, keys = 0;
  std::uint64_t failed_writes = 0;  // failed or pending: may or may not have taken effect
  std::uint64_t resent_writes = 0;  // resent: may take effect again later
  std::uint64_t steps = 0;
  double seconds = 0;  // the search's wall time
  std::string summary() const;  // one line
};

// Secondary-index lines (SW, SR) are left out: sidx_history_check.h
// checks those.
HistoryCheck check_history(const std::vector<HistoryOp>& ops, std::uint64_t max_steps = 50'000'000);

// A stale read: an ok read R of key k gets the version of an ok write W1
// of k, never resent, that was superseded before R was invoked (an ok write W2 of k was
// invoked after W1's response and answered before R's invocation). Picks
// the first such read in the history (W1 the most recent such write);
// with no real W1 but an ok write of k answered before R's invocation, the
// preloaded version 0 is used (said in the description).
std::optional<std::string> corrupt_stale_read(std::vector<HistoryOp>* ops);
// A missed write: an ok write W of k and an ok read R of k invoked during
// W that returned a version written (ok, never resent) wholly before W
// was invoked, or
// version 0; W's response is moved to just before R's invocation, so R
// now misses a write acknowledged before it started.
std::optional<std::string> corrupt_missed_write(std::vector<HistoryOp>* ops);
// An ok read's version replaced by one no write in the history has.
std::optional<std::string> corrupt_unwritten_version(std::vector<HistoryOp>* ops);

}  // namespace forein::testing

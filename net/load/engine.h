// The request engine: a closed loop of K operations in flight over one
// non-blocking UDP socket. Each slot runs one operation (a read-modify-
// write is a GET then a PUT; write-only / write-heavy run Switch-delta's
// ordered writes and reads, load/ordered.h, each phase a new request with
// its own SEQ); a request waits for the reply with its SEQ
// up to --timeout-ms, is resent with the same SEQ up to --retries times,
// then given up (a timeout). Replies to SEQs no longer waited for (late
// duplicates) are ignored. The thread sleeps in poll() until a reply or
// the next deadline: no busy spinning.
#pragma once

#include <string>

#include "load/hints.h"
#include "load/options.h"
#include "load/report.h"

namespace forein::net::load {

// Runs the load; throws std::runtime_error if it cannot start (address
// not resolvable, socket errors). With hints, every request (first
// attempt; resends repeat it) carries the trailer hints->hint(key) names,
// if any; the report counts them and the source's fetches and errors.
RunReport run_load(const LoadOptions& options, const HintSource* hints = nullptr);

}  // namespace forein::net::load

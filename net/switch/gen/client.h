// forein-switch-gen --mode client (docs/network.md, "memif ports and
// forein-switch-gen"): the generator as the switch's client. It joins only
// the switch's client-side memif socket, sends GETs to the switch's
// client-side A.B.C.2 with a bounded window, and checks the REPLYs that a
// forein-kv-server --memif behind the switch sends back through it: frame
// and datagram well-formed, seq outstanding, status ok, value ==
// dataset_value(key). --scan N: SCANs wanting N entries instead, each
// reply exactly the data set's entries from the drawn key on. Unanswered requests are lost after --timeout-ms and
// free their window slot. One JSON line: counts, ops/s, latency
// percentiles, CPU seconds of the roles, the server's STATS deltas.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "frames.h"
#include "options.h"
#include "ports.h"

namespace forein::net::swgen {

struct ClientTally {
  std::uint64_t sent = 0;       // GETs the memif port took
  std::uint64_t replies = 0;    // REPLYs matched to an outstanding request
  std::uint64_t ok = 0;         // of those: status ok, the key's dataset value (SCAN: every entry right)
  std::uint64_t entries = 0;    // --scan: the entries in the right replies
  std::uint64_t wrong = 0;      // everything else that came back (bad frames, unmatched seqs, wrong values)
  std::uint64_t unmatched = 0;  // of wrong: a well-formed REPLY with no outstanding request of its seq
  std::uint64_t lost = 0;       // unanswered after the timeout
};

// The probes (and, with --wait-hints and --server-stats, until the server
// counts them hinted), the run, the report on stdout. The exit code.
int run_client(const GenOptions& o, const Ports& ports, const Addresses& addresses);

}  // namespace forein::net::swgen

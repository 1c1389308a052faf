// forein-switch-gen's command line (docs/network.md, "memif ports and
// forein-switch-gen").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "load/options.h"

namespace forein::net::swgen {

// forward: both sockets, GETs counted as they leave the switch's server
// side (the switch's forwarding rate); client: only the client socket, a
// forein-kv-server on the server socket answers, REPLYs checked
// (client.h).
enum class Mode { kForward, kClient };

struct GenOptions {
  Mode mode = Mode::kForward;
  std::string socket[2];  // the switch's memif sockets: [0] client side, [1] server side
  std::string net[2] = {"10.77.0", "10.77.1"};  // as forein-switch's --client-net / --server-net
  std::uint16_t service_port = 9000;            // UDP destination of the requests
  std::uint64_t keys = 100000;                  // GET keys: dataset_key(0 .. keys-1)
  load::Distribution dist = load::Distribution::kUniform;
  double theta = 0.99;
  std::uint64_t seed = 1;
  double seconds = 5;        // the measured window (unless count > 0)
  std::uint64_t count = 0;   // > 0: send exactly this many GETs, then drain
  unsigned burst = 32;       // frames per tx burst
  unsigned window = 512;     // most GETs in flight (sent, not yet back); 0: open loop
  bool wait_hints = false;   // probes must come back hinted before the run
  std::uint32_t probe_timeout_ms = 20000;
  std::uint32_t connect_timeout_ms = 10000;
  unsigned garbage = 0;      // before the run: this many frames of each garbage kind
  int switch_pid = 0;        // > 0: report the switch's CPU time and rate per core
  // --mode client:
  int server_pid = 0;              // > 0: report the server's CPU time
  std::string server_stats;        // HOST:PORT of the server's kernel UDP port: STATS deltas, --wait-hints
  std::uint32_t timeout_ms = 200;  // a request unanswered this long is lost (its window slot freed)
  // --scan N (> 0): SCANs wanting N entries from the drawn key instead of
  // GETs, each reply checked entry by entry against the data set
  // (1..kMaxScanEntries). 0: GETs.
  std::uint32_t scan = 0;
  std::vector<std::string> eal;  // after `--`: replaces the default EAL options
  bool eal_given = false;
};

// What --help prints.
std::string usage_text();

// Fills *o from argv. Returns the exit code when the process should end now
// (0 after --help, 2 on a bad argument, after a message).
std::optional<int> parse_options(int argc, char** argv, GenOptions* o);

// The memif sockets joined: 2 (forward), 1 (client: the client side only).
inline int sides(const GenOptions& o) { return o.mode == Mode::kClient ? 1 : 2; }

// The EAL's argv: the defaults (or the user's after `--`) plus the memif
// client vdevs, net_memif0 on the client socket, net_memif1 on the
// server's (forward mode).
std::vector<std::string> eal_args(const GenOptions& o);

}  // namespace forein::net::swgen

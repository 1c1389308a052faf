// forein-switch-gen's command line (docs/network.md, "memif ports and
// forein-switch-gen").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "load/options.h"

namespace forein::net::swgen {

struct GenOptions {
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
  std::vector<std::string> eal;  // after `--`: replaces the default EAL options
  bool eal_given = false;
};

void usage(std::FILE* out);

// Fills *o from argv. Returns the exit code when the process should end now
// (0 after --help, 2 on a bad argument, after a message).
std::optional<int> parse_options(int argc, char** argv, GenOptions* o);

// The EAL's argv: the defaults (or the user's after `--`) plus the two
// memif client vdevs, net_memif0 on the client socket, net_memif1 on the
// server's.
std::vector<std::string> eal_args(const GenOptions& o);

}  // namespace forein::net::swgen

// forein-switch's command line (docs/network.md, "forein-switch").
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "protocol/dataset.h"

namespace forein::net::sw {

struct Options {
  std::string agent_listen = "127.0.0.1:50052";
  std::string token;
  std::uint64_t index = kDatasetIndexId;
  std::string iface[2] = {"fswc0", "fsws0"};  // [0] client side, [1] server side
  std::string net[2] = {"10.77.0", "10.77.1"};
  std::vector<std::string> eal;  // after `--`: replaces the default EAL options
  bool eal_given = false;
};

void usage(std::FILE* out);

// Fills *o from argv (and $FOREIN_AGENT_TOKEN). Returns the exit code when
// the process should end now (0 after --help, 2 on a bad argument).
std::optional<int> parse_options(int argc, char** argv, Options* o);

// The EAL's argv: the defaults (or the user's after `--`) plus the two TAP
// vdevs, net_tap0 on the client interface and net_tap1 on the server's.
std::vector<std::string> eal_args(const Options& o);

}  // namespace forein::net::sw

#include "options.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "common/cli.h"
#include "dpdk/eal.h"
#include "gen_limits.h"

namespace forein::net::swgen {
namespace {

bool parse_double(const char* text, double min, double max, double* out) {
  char* end = nullptr;
  const double v = std::strtod(text, &end);
  if (end == text || *end != '\0' || !(v >= min && v <= max)) return false;
  *out = v;
  return true;
}

// A socket path the memif PMD takes (absolute), usable in a vdev argument
// (no ',' or '=') and as a Unix socket address (under 108 bytes).
bool socket_path_ok(std::string_view p) {
  return p.starts_with('/') && p.size() < 108 && p.find_first_of(",=") == std::string_view::npos;
}

}  // namespace

namespace {

// A number in [min, max].
CLI::Option* real(CLI::App& app, const std::string& flag, double* out, double min, double max,
                  const std::string& help) {
  return cli::value(
             app, flag, "X", [out, min, max](const std::string& v) { return parse_double(v.c_str(), min, max, out); },
             "a number from " + CLI::detail::to_string(min) + " to " + CLI::detail::to_string(max), help)
      ->default_str(CLI::detail::to_string(*out));
}

// Every flag, once: what --help prints and what parse_options takes.
void declare(CLI::App& app, GenOptions* o) {
  cli::configure(app);
  app.description(
      "forein-switch-gen: joins forein-switch's two memif sockets as their client, sends protocol GETs from the "
      "client side's A.B.C.1 to the switch's A.B.C.2 and receives what the switch forwards on the server side "
      "(--mode forward), or only the client socket with forein-kv-server --memif behind the switch, every REPLY "
      "checked (--mode client); prints one JSON line");
  cli::choice<Mode>(app, "--mode", &o->mode, {{"forward", Mode::kForward}, {"client", Mode::kClient}},
                    "forward: both sockets, the switch's forwarding rate; client: the client socket only, "
                    "every REPLY checked, latency per request")
      ->default_str("forward");
  for (int side = 0; side < 2; ++side) {
    const std::string name = side == 0 ? "client" : "server";
    cli::value(
        app, "--" + name + "-socket", "PATH",
        [o, side](const std::string& v) {
          if (!socket_path_ok(v)) return false;
          o->socket[side] = v;
          return true;
        },
        "an absolute path under 108 bytes without ',' or '='",
        side == 0 ? "the switch's client-side memif socket (--client-port memif:PATH)"
                  : "the switch's server-side memif socket (forward mode)");
  }
  cli::net24(app, "--client-net", &o->net[0], nullptr, "as the switch's --client-net");
  cli::net24(app, "--server-net", &o->net[1], nullptr, "as the switch's --server-net");
  cli::address(app, "--server-stats", &o->server_stats, 1,
               "client: the server's kernel UDP port; STATS before and after the run (deltas reported); needed for "
               "--wait-hints");
  cli::number<int>(app, "--server-pid", &o->server_pid, 1, 1 << 30, "client: report the server's CPU seconds")
      ->type_name("PID")
      ->default_str("");
  cli::number<std::uint32_t>(app, "--timeout-ms", &o->timeout_ms, 1, 3600000,
                             "client: a request unanswered after MS is lost")
      ->type_name("MS");
  cli::value(
      app, "--scan", "N", [o](const std::string& v) { return parse_number<std::uint32_t>(v, 1, kMaxScanEntries, &o->scan); },
      "a whole number from 1 to " + std::to_string(kMaxScanEntries) +
          " (a reply of more data-set entries does not fit one 1500-byte frame, and the generator does not "
          "reassemble IPv4 fragments)",
      "client: send SCANs wanting N entries from the drawn key instead of GETs, every reply checked against the "
      "data set (the keys from it on, as many as --keys holds)")
      ->default_str("");
  cli::number<std::uint16_t>(app, "--service-port", &o->service_port, 1, 65535, "UDP destination port of the GETs")
      ->type_name("P");
  cli::number<std::uint64_t>(app, "--keys", &o->keys, 1, std::uint64_t{1} << 40, "keys dataset_key(0 .. N-1)");
  cli::choice<load::Distribution>(app, "--dist", &o->dist,
                                  {{"uniform", load::Distribution::kUniform}, {"zipf", load::Distribution::kZipf}},
                                  "key distribution")
      ->default_str("uniform");
  real(app, "--zipf", &o->theta, 0.01, 0.999, "Zipf exponent")->type_name("THETA");
  cli::number<std::uint64_t>(app, "--seed", &o->seed, 0, UINT64_MAX, "key draw seed")->type_name("S");
  real(app, "--seconds", &o->seconds, 0.01, 3600, "measured window")->type_name("S");
  cli::number<std::uint64_t>(app, "--count", &o->count, 1, std::uint64_t{1} << 40,
                             "instead: send exactly N GETs, then wait for them")
      ->default_str("");
  cli::number<unsigned>(app, "--burst", &o->burst, 1, 256, "frames per burst")->type_name("B");
  cli::number<unsigned>(app, "--window", &o->window, 0, 1u << 20,
                        "most GETs in flight, 0 = open loop (under the memif ring of 1024 so nothing is lost to a "
                        "full ring)")
      ->type_name("W");
  app.add_flag("--wait-hints", o->wait_hints,
               "before the run, probe GETs (keys spread over N) must come back hinted, i.e. the switch holds the "
               "image; without it they need only come back (client: the server's STATS hinted grew by a whole "
               "probe round)");
  cli::number<std::uint32_t>(app, "--probe-timeout-ms", &o->probe_timeout_ms, 1, 3600000,
                             "give up probing after MS (exit 1)")
      ->type_name("MS");
  cli::number<std::uint32_t>(app, "--connect-timeout-ms", &o->connect_timeout_ms, 1, 3600000,
                             "wait this long for the memif links (exit 1)")
      ->type_name("MS");
  cli::number<unsigned>(app, "--garbage", &o->garbage, 0, 1000,
                        "forward: before the probes, N random frames and N truncated IPv4 frames into each port and "
                        "N GETs of a wrong protocol version into the client side (the switch must drop and count "
                        "them)");
  cli::number<int>(app, "--switch-pid", &o->switch_pid, 1, 1 << 30,
                   "report the switch's CPU seconds and forwarded frames per CPU second (its rate per core)")
      ->type_name("PID")
      ->default_str("");
  app.footer(
      "  -- EAL ARGS...            replace the default EAL options (--no-huge --no-pci -m 256\n"
      "                            --file-prefix forein-switch-gen-PID -l 0); the vdevs are added\n"
      "Exit 0; 1 if the EAL, a link or the probes fail; 2 on bad flags.\n");
}

// The checks across flags: the message, or "" when they agree.
std::string check(const GenOptions& o) {
  if (o.mode == Mode::kClient) {
    const char* bad = o.socket[0].empty()    ? "--client-socket is required"
                      : !o.socket[1].empty() ? "--server-socket is for --mode forward (the server joins it)"
                      : o.garbage > 0        ? "--garbage is for --mode forward"
                      : o.window == 0        ? "--window must be > 0 (requests are tracked per window slot)"
                      : o.wait_hints && o.server_stats.empty() ? "--wait-hints needs --server-stats"
                                                               : nullptr;
    if (bad != nullptr) return std::string("--mode client: ") + bad;
  } else if (o.scan > 0) {
    return "--scan is for --mode client (the replies are checked there)";
  } else if (o.socket[0].empty() || o.socket[1].empty() || o.socket[0] == o.socket[1]) {
    return "--client-socket and --server-socket are required and must differ";
  }
  if (o.net[0] == o.net[1]) return "the client and server networks must differ (--client-net, --server-net)";
  return "";
}

}  // namespace

std::string usage_text() {
  GenOptions o;
  CLI::App app{"", "forein-switch-gen"};
  declare(app, &o);
  return app.help();
}

std::optional<int> parse_options(int argc, char** argv, GenOptions* o) {
  const int ours = cli::split_eal(argc, argv, &o->eal, &o->eal_given);
  CLI::App app{"", "forein-switch-gen"};
  declare(app, o);
  if (const auto exit_code = cli::run(app, ours, argv)) return *exit_code;
  if (const std::string why = check(*o); !why.empty()) return cli::refuse("forein-switch-gen", why);
  return std::nullopt;
}

std::vector<std::string> eal_args(const GenOptions& o) {
  std::vector<std::string> eal = {"forein-switch-gen"};
  if (o.eal_given) {
    eal.insert(eal.end(), o.eal.begin(), o.eal.end());
  } else {
    eal = dpdk::default_eal_args("forein-switch-gen", "forein-switch-gen");
  }
  for (int side = 0; side < sides(o); ++side) {
    // The memif client of the switch's socket; a fixed locally administered
    // MAC, the source the switch learns.
    eal.push_back("--vdev");
    eal.push_back("net_memif" + std::to_string(side) + ",role=client,id=0,socket-abstract=no,socket=" + o.socket[side] +
                  ",mac=02:f0:e1:6e:00:0" + std::to_string(side + 1));
  }
  return eal;
}

}  // namespace forein::net::swgen

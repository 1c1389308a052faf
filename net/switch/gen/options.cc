#include "options.h"

#include "common/parse.h"
#include "dpdk/eal.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string_view>

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

void usage(std::FILE* out) {
  std::fprintf(out,
               "usage: forein-switch-gen [--mode forward] --client-socket PATH --server-socket PATH\n"
               "                         [--client-net A.B.C] [--server-net A.B.C] [--service-port P]\n"
               "                         [--keys N] [--dist uniform|zipf] [--zipf THETA] [--seed S]\n"
               "                         [--seconds S | --count N] [--burst B] [--window W]\n"
               "                         [--wait-hints] [--probe-timeout-ms MS] [--connect-timeout-ms MS]\n"
               "                         [--garbage N] [--switch-pid PID] [-- EAL ARGS...]\n"
               "       forein-switch-gen --mode client --client-socket PATH [--server-stats HOST:PORT]\n"
               "                         [--server-pid PID] [--timeout-ms MS] [same traffic flags]\n"
               "Joins forein-switch's two memif sockets as their client, sends protocol GETs from the\n"
               "client side's A.B.C.1 to the switch's A.B.C.2 and receives what the switch forwards on\n"
               "the server side; prints one JSON line.\n"
               "  --mode forward|client     forward (default): as above; client: join only the client\n"
               "                            socket, a forein-kv-server --memif behind the switch answers;\n"
               "                            every REPLY is checked (seq outstanding, status ok, value =\n"
               "                            dataset_value(key)); latency per request\n"
               "  --server-stats HOST:PORT  client: the server's kernel UDP port; STATS before and after\n"
               "                            the run (deltas reported); needed for --wait-hints\n"
               "  --server-pid PID          client: report the server's CPU seconds\n"
               "  --timeout-ms MS           client: a request unanswered after MS is lost (default 200)\n"
               "  --client-socket PATH      the switch's client-side memif socket (--client-port memif:PATH;\n"
               "                            absolute)\n"
               "  --server-socket PATH      the switch's server-side memif socket\n"
               "  --client-net A.B.C        as the switch's --client-net (default 10.77.0)\n"
               "  --server-net A.B.C        as the switch's --server-net (default 10.77.1)\n"
               "  --service-port P          UDP destination port of the GETs (default 9000)\n"
               "  --keys N                  keys dataset_key(0 .. N-1) (default 100000)\n"
               "  --dist uniform|zipf       key distribution (default uniform); --zipf THETA (default 0.99)\n"
               "  --seed S                  key draw seed (default 1)\n"
               "  --seconds S               measured window (default 5)\n"
               "  --count N                 instead: send exactly N GETs, then wait for them\n"
               "  --burst B                 frames per burst, 1..256 (default 32)\n"
               "  --window W                most GETs in flight, 0 = open loop (default 512, under the\n"
               "                            memif ring of 1024 so nothing is lost to a full ring)\n"
               "  --wait-hints              before the run, probe GETs (keys spread over N) must come back\n"
               "                            hinted, i.e. the switch holds the image; without it they\n"
               "                            need only come back (client: the server's STATS hinted\n"
               "                            grew by a whole probe round)\n"
               "  --probe-timeout-ms MS     give up probing after MS (default 20000; exit 1)\n"
               "  --connect-timeout-ms MS   wait this long for both memif links (default 10000; exit 1)\n"
               "  --garbage N               before the probes: N random frames and N truncated IPv4\n"
               "                            frames into each port and N GETs of a wrong protocol version\n"
               "                            into the client side (the switch must drop and count them)\n"
               "  --switch-pid PID          report the switch's CPU seconds and forwarded frames per\n"
               "                            CPU second (its rate per core)\n"
               "  -- EAL ARGS               replace the default EAL options (--no-huge --no-pci -m 256\n"
               "                            --file-prefix forein-switch-gen-PID -l 0); the vdevs are added\n"
               "Exit 0; 1 if the EAL, a link or the probes fail; 2 on bad flags.\n");
}

std::optional<int> parse_options(int argc, char** argv, GenOptions* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      usage(stdout);
      return 0;
    }
    if (arg == "--") {
      o->eal_given = true;
      for (++i; i < argc; ++i) o->eal.emplace_back(argv[i]);
      break;
    }
    if (arg == "--wait-hints") {
      o->wait_hints = true;
      continue;
    }
    bool ok = false;
    if (i + 1 < argc) {
      const char* v = argv[++i];
      std::uint64_t n = 0;
      std::uint32_t base = 0;
      if (arg == "--mode") {
        ok = std::string_view(v) == "forward" || std::string_view(v) == "client";
        o->mode = std::string_view(v) == "client" ? Mode::kClient : Mode::kForward;
      } else if (arg == "--server-stats") {
        const std::string_view hp(v);
        ok = hp.rfind(':') != std::string_view::npos && hp.rfind(':') > 0 && hp.rfind(':') + 1 < hp.size();
        if (ok) o->server_stats = v;
      } else if (arg == "--server-pid") {
        ok = parse_number<std::uint64_t>(v, 1, 1u << 30, &n);
        o->server_pid = static_cast<int>(n);
      } else if (arg == "--timeout-ms") {
        ok = parse_number<std::uint64_t>(v, 1, 3600000, &n);
        o->timeout_ms = static_cast<std::uint32_t>(n);
      } else if (arg == "--client-socket" || arg == "--server-socket") {
        ok = socket_path_ok(v);
        if (ok) o->socket[arg == "--client-socket" ? 0 : 1] = v;
      } else if (arg == "--client-net" || arg == "--server-net") {
        ok = parse_net(v, &base);
        if (ok) o->net[arg == "--client-net" ? 0 : 1] = v;
      } else if (arg == "--service-port") {
        ok = parse_number<std::uint64_t>(v, 1, 65535, &n);
        o->service_port = static_cast<std::uint16_t>(n);
      } else if (arg == "--keys") {
        ok = parse_number<std::uint64_t>(v, 1, std::uint64_t{1} << 40, &o->keys);
      } else if (arg == "--dist") {
        ok = std::string_view(v) == "uniform" || std::string_view(v) == "zipf";
        o->dist = std::string_view(v) == "zipf" ? load::Distribution::kZipf : load::Distribution::kUniform;
      } else if (arg == "--zipf") {
        ok = parse_double(v, 0.01, 0.999, &o->theta);
      } else if (arg == "--seed") {
        ok = parse_number<std::uint64_t>(v, 0, UINT64_MAX, &o->seed);
      } else if (arg == "--seconds") {
        ok = parse_double(v, 0.01, 3600, &o->seconds);
      } else if (arg == "--count") {
        ok = parse_number<std::uint64_t>(v, 1, std::uint64_t{1} << 40, &o->count);
      } else if (arg == "--burst") {
        ok = parse_number<std::uint64_t>(v, 1, 256, &n);
        o->burst = static_cast<unsigned>(n);
      } else if (arg == "--window") {
        ok = parse_number<std::uint64_t>(v, 0, 1u << 20, &n);
        o->window = static_cast<unsigned>(n);
      } else if (arg == "--probe-timeout-ms") {
        ok = parse_number<std::uint64_t>(v, 1, 3600000, &n);
        o->probe_timeout_ms = static_cast<std::uint32_t>(n);
      } else if (arg == "--connect-timeout-ms") {
        ok = parse_number<std::uint64_t>(v, 1, 3600000, &n);
        o->connect_timeout_ms = static_cast<std::uint32_t>(n);
      } else if (arg == "--garbage") {
        ok = parse_number<std::uint64_t>(v, 0, 1000, &n);
        o->garbage = static_cast<unsigned>(n);
      } else if (arg == "--switch-pid") {
        ok = parse_number<std::uint64_t>(v, 1, 1u << 30, &n);
        o->switch_pid = static_cast<int>(n);
      }
      if (!ok) --i;
    }
    if (!ok) {
      std::fprintf(stderr, "forein-switch-gen: unknown, incomplete or bad argument '%s'%s%s\n", argv[i],
                   i + 1 < argc ? " " : "", i + 1 < argc ? argv[i + 1] : "");
      usage(stderr);
      return 2;
    }
  }
  if (o->mode == Mode::kClient) {
    const char* bad = o->socket[0].empty()       ? "--client-socket is required"
                      : !o->socket[1].empty()    ? "--server-socket is for --mode forward (the server joins it)"
                      : o->garbage > 0           ? "--garbage is for --mode forward"
                      : o->window == 0           ? "--window must be > 0 (requests are tracked per window slot)"
                      : o->wait_hints && o->server_stats.empty() ? "--wait-hints needs --server-stats"
                                                                 : nullptr;
    if (bad != nullptr) {
      std::fprintf(stderr, "forein-switch-gen: --mode client: %s\n", bad);
      return 2;
    }
  } else if (o->socket[0].empty() || o->socket[1].empty() || o->socket[0] == o->socket[1]) {
    std::fprintf(stderr, "forein-switch-gen: --client-socket and --server-socket are required and must differ\n");
    return 2;
  }
  if (o->net[0] == o->net[1]) {
    std::fprintf(stderr, "forein-switch-gen: the client and server networks must differ\n");
    return 2;
  }
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
    eal.push_back("net_memif" + std::to_string(side) + ",role=client,id=0,socket-abstract=no,socket=" +
                  o.socket[side] + ",mac=02:f0:e1:6e:00:0" + std::to_string(side + 1));
  }
  return eal;
}

}  // namespace forein::net::swgen

#include "options.h"

#include <unistd.h>

#include <cstdlib>
#include <string_view>

namespace forein::net::sw {

void usage(std::FILE* out) {
  std::fprintf(out,
               "usage: forein-switch [--agent-listen HOST:PORT] [--agent-token T] [--index ID]\n"
               "                     [--client-iface NAME] [--server-iface NAME]\n"
               "                     [--client-net A.B.C] [--server-net A.B.C] [-- EAL ARGS...]\n"
               "  --agent-listen HOST:PORT  the in-process agent's gRPC address (default 127.0.0.1:50052)\n"
               "  --agent-token T           bearer token (default $FOREIN_AGENT_TOKEN)\n"
               "  --index ID                the agent's index whose image hints requests (default 0)\n"
               "  --client-iface NAME       TAP device of the client side (default fswc0)\n"
               "  --server-iface NAME       TAP device of the server side (default fsws0)\n"
               "  --client-net A.B.C        client side /24: kernel A.B.C.1, switch A.B.C.2 (default 10.77.0)\n"
               "  --server-net A.B.C        server side /24: kernel A.B.C.1 (the server), switch A.B.C.2\n"
               "                            (default 10.77.1)\n"
               "  -- EAL ARGS               replace the default EAL options (--no-huge --no-pci -m 256\n"
               "                            --file-prefix forein-switch-PID -l 0); the two --vdev are added\n"
               "Prints `listening HOST:PORT` and `ready` when serving; SIGINT/SIGTERM stop it and print\n"
               "its counters as one JSON line.\n");
}

std::optional<int> parse_options(int argc, char** argv, Options* o) {
  if (const char* env = std::getenv("FOREIN_AGENT_TOKEN"); env != nullptr) o->token = env;
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
    if (i + 1 < argc) {
      std::string* dst = nullptr;
      if (arg == "--agent-listen") dst = &o->agent_listen;
      else if (arg == "--agent-token") dst = &o->token;
      else if (arg == "--client-iface") dst = &o->iface[0];
      else if (arg == "--server-iface") dst = &o->iface[1];
      else if (arg == "--client-net") dst = &o->net[0];
      else if (arg == "--server-net") dst = &o->net[1];
      if (dst != nullptr) {
        *dst = argv[++i];
        continue;
      }
      if (arg == "--index") {
        char* end = nullptr;
        o->index = std::strtoull(argv[++i], &end, 10);
        if (end != nullptr && *end == '\0') continue;
      }
    }
    std::fprintf(stderr, "forein-switch: unknown or incomplete argument '%s'\n", argv[i]);
    usage(stderr);
    return 2;
  }
  return std::nullopt;
}

std::vector<std::string> eal_args(const Options& o) {
  std::vector<std::string> eal = {"forein-switch"};
  if (o.eal_given) {
    eal.insert(eal.end(), o.eal.begin(), o.eal.end());
  } else {
    eal.insert(eal.end(), {"--no-huge", "--no-pci", "-m", "256", "--file-prefix",
                           "forein-switch-" + std::to_string(::getpid()), "-l", "0"});
  }
  eal.push_back("--vdev");
  eal.push_back("net_tap0,iface=" + o.iface[0]);
  eal.push_back("--vdev");
  eal.push_back("net_tap1,iface=" + o.iface[1]);
  return eal;
}

}  // namespace forein::net::sw

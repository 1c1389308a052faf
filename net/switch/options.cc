#include "options.h"

#include "common/parse.h"
#include "dpdk/eal.h"

#include <unistd.h>

#include <cstdlib>
#include <string_view>

namespace forein::net::sw {
namespace {


// P0,P1,...: 1 to 64 UDP ports, 1..65535 each.
bool parse_ports(std::string_view text, std::vector<std::uint16_t>* out) {
  out->clear();
  while (true) {
    const std::size_t comma = text.find(',');
    std::uint64_t p = 0;
    if (!parse_number<std::uint64_t>(text.substr(0, comma), 1, 65535, &p) || out->size() == 64) return false;
    out->push_back(static_cast<std::uint16_t>(p));
    if (comma == std::string_view::npos) return true;
    text.remove_prefix(comma + 1);
  }
}

// tap, memif:PATH or memif-client:PATH with PATH usable in a vdev argument (no ',' or '='),
// in the JSON exit line (no '"', '\\' or control bytes) and as a Unix
// socket address (under 108 bytes).
bool parse_port_kind(std::string_view text, PortKind* kind, std::string* socket, bool* client) {
  if (text == "tap") {
    *kind = PortKind::kTap;
    return true;
  }
  *client = text.starts_with("memif-client:");
  if (!text.starts_with("memif:") && !*client) return false;
  const std::string_view path = text.substr(text.find(':') + 1);
  // Absolute: DPDK's memif PMD refuses a socket path without a directory.
  if (!path.starts_with('/') || path.size() >= 108) return false;
  for (const char c : path) {
    if (c == ',' || c == '=' || c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20) return false;
  }
  *kind = PortKind::kMemif;
  *socket = std::string(path);
  return true;
}

}  // namespace

void usage(std::FILE* out) {
  std::fprintf(out,
               "usage: forein-switch [--agent-listen HOST:PORT] [--agent-token T] [--index ID]\n"
               "                     [--servers P0,P1,... --keys N] [--service-port P] [--hints on|off]\n"
               "                     [--stage all|core|aggregation|edge] [--image-from HOST:PORT]\n"
               "                     [--backend switch_visibility --data-nodes P0,... --metadata-nodes P\n"
               "                      [--visibility on|off] [--slots N]]\n"
               "                     [--client-port KIND] [--server-port KIND]\n"
               "                     [--client-iface NAME] [--server-iface NAME]\n"
               "                     [--client-net A.B.C] [--server-net A.B.C] [-- EAL ARGS...]\n"
               "  --agent-listen HOST:PORT  the in-process agent's gRPC address (default 127.0.0.1:50052)\n"
               "  --agent-token T           bearer token (default $FOREIN_AGENT_TOKEN)\n"
               "  --index ID                the agent's index whose image hints requests (default 0;\n"
               "                            with --servers, server i's image is index ID+i)\n"
               "  --servers P0,P1,...       several servers on the server side's .1, server i on port Pi\n"
               "                            owning dataset shard i of K (needs --keys when K > 1)\n"
               "  --keys N                  the data set the servers split (forein-kv-server --shard I/K)\n"
               "  --service-port P          with --servers: the port clients send to (default 9000)\n"
               "  --hints on|off            off: forward requests unchanged, no lookups (default on)\n"
               "  --stage all|core|aggregation|edge\n"
               "                            fattree: this switch's part of the k=4 path; the walk is handed\n"
               "                            on in the temporary header (default all: the whole walk here)\n"
               "  --image-from HOST:PORT    fetch the images from that agent (a chain's core switch)\n"
               "                            instead of the in-process one\n"
               "  --backend switch_visibility\n"
               "                            Switch-delta: keep the visibility table of in-flight writes and\n"
               "                            route the ordered-write ops (clients send to --service-port)\n"
               "  --data-nodes P0,P1,...    forein-data-node i on the server side's .1:Pi (owns slots s %% D == i)\n"
               "  --metadata-nodes P        forein-kv-server --mode metadata on .1:P (one metadata node)\n"
               "  --visibility on|off       off: same routing, the table bypassed: every write takes phase 2\n"
               "                            (the baseline; default on)\n"
               "  --slots N                 visibility slots, a power of two <= 65536 (default 65536)\n"
               "  --client-port KIND        the client side's port: tap (a TAP device, needs root) or\n"
               "                            memif:PATH (the switch serves the memif socket file PATH;\n"
               "                            the peer is a DPDK program, no root) or memif-client:PATH\n"
               "                            (join the memif socket another switch serves, as the .1 of\n"
               "                            that link: a chain's next switch) (default tap)\n"
               "  --server-port KIND        the server side's port, likewise (default tap)\n"
               "  --client-iface NAME       TAP device of the client side (default fswc0)\n"
               "  --server-iface NAME       TAP device of the server side (default fsws0)\n"
               "  --client-net A.B.C        client side /24: kernel A.B.C.1, switch A.B.C.2 (default 10.77.0)\n"
               "  --server-net A.B.C        server side /24: kernel A.B.C.1 (the server), switch A.B.C.2\n"
               "                            (default 10.77.1)\n"
               "  -- EAL ARGS               replace the default EAL options (--no-huge --no-pci -m 256\n"
               "                            --file-prefix forein-switch-PID -l 0); the two --vdev are added\n"
               "TAP ports are made in the network namespace the switch runs in: start it, and the\n"
               "programs that use their addresses, in one of their own (ip netns add NAME; ip netns\n"
               "exec NAME forein-switch ...; docs/network.md, \"Network namespaces\").\n"
               "A memif side has no kernel and no ARP: its peer sends from A.B.C.1 to A.B.C.2 and the\n"
               "switch learns the peer's MAC from those frames.\n"
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
      } else if (arg == "--keys") {
        if (parse_number<std::uint64_t>(argv[++i], 1, std::uint64_t{1} << 40, &o->keys)) continue;
      } else if (arg == "--service-port") {
        std::uint64_t p = 0;
        if (parse_number<std::uint64_t>(argv[++i], 1, 65535, &p)) {
          o->service_port = static_cast<std::uint16_t>(p);
          continue;
        }
      } else if (arg == "--servers") {
        if (parse_ports(argv[++i], &o->servers)) continue;
      } else if (arg == "--data-nodes") {
        if (parse_ports(argv[++i], &o->data_nodes)) continue;
      } else if (arg == "--metadata-nodes") {
        if (parse_ports(argv[++i], &o->metadata_nodes)) continue;
      } else if (arg == "--backend") {
        o->backend = argv[++i];
        if (o->backend == "switch_visibility") continue;
        std::fprintf(stderr,
                     "forein-switch: --backend takes switch_visibility (hint backends come from the agent's "
                     "images), not '%s'\n",
                     argv[i]);
        return 2;
      } else if (arg == "--visibility") {
        const std::string_view v = argv[++i];
        if (v == "on" || v == "off") {
          o->visibility = v == "on";
          continue;
        }
      } else if (arg == "--slots") {
        std::uint64_t n = 0;
        if (parse_number<std::uint64_t>(argv[++i], 1, 65536, &n) && (n & (n - 1)) == 0) {
          o->slots = static_cast<std::uint32_t>(n);
          continue;
        }
      } else if (arg == "--client-port" || arg == "--server-port") {
        const int side = arg == "--client-port" ? 0 : 1;
        if (parse_port_kind(argv[++i], &o->port_kind[side], &o->memif_socket[side], &o->memif_client[side])) {
          continue;
        }
        std::fprintf(stderr,
                     "forein-switch: %s wants tap, memif:PATH or memif-client:PATH (PATH absolute, under 108 bytes, "
                     "without ',', '=', "
                     "'\"' or '\\'), not '%s'\n",
                     argv[i - 1], argv[i]);
        return 2;
      } else if (arg == "--stage") {
        const std::string_view v = argv[++i];
        const int stage = v == "all" ? -1 : v == "core" ? 0 : v == "aggregation" ? 1 : v == "edge" ? 2 : -2;
        if (stage != -2) {
          o->stage = stage;
          continue;
        }
      } else if (arg == "--image-from") {
        o->image_from = argv[++i];
        if (o->image_from.rfind(':') != std::string::npos && o->image_from.rfind(':') > 0) continue;
      } else if (arg == "--hints") {
        const std::string_view v = argv[++i];
        if (v == "on" || v == "off") {
          o->hints = v == "on";
          continue;
        }
      }
    }
    std::fprintf(stderr, "forein-switch: unknown or incomplete argument '%s'\n", argv[i]);
    usage(stderr);
    return 2;
  }
  const bool visibility_flags = !o->data_nodes.empty() || !o->metadata_nodes.empty() || o->slots != 0;
  if (o->backend.empty() && visibility_flags) {
    std::fprintf(stderr, "forein-switch: --data-nodes, --metadata-nodes and --slots need --backend switch_visibility\n");
    return 2;
  }
  if (!o->backend.empty()) {
    if (o->data_nodes.empty() || o->metadata_nodes.empty()) {
      std::fprintf(stderr, "forein-switch: --backend switch_visibility needs --data-nodes and --metadata-nodes\n");
      return 2;
    }
    if (!o->servers.empty() || o->stage != -1 || !o->image_from.empty()) {
      std::fprintf(stderr,
                   "forein-switch: --backend switch_visibility routes by op; it does not take --servers, --stage "
                   "or --image-from\n");
      return 2;
    }
    if (o->metadata_nodes.size() > 1) {
      // Each metadata node rebuilds from every data node's log and clears
      // the slots of what it applied; split across several, one could clear
      // a slot whose write its owner has not applied yet.
      std::fprintf(stderr, "forein-switch: --metadata-nodes takes one port (one metadata node)\n");
      return 2;
    }
  }
  if (o->servers.size() > 1 && o->keys == 0) {
    std::fprintf(stderr, "forein-switch: --servers with more than one port needs --keys N (the data set they split)\n");
    return 2;
  }
  return std::nullopt;
}

std::vector<std::string> eal_args(const Options& o) {
  std::vector<std::string> eal = {"forein-switch"};
  if (o.eal_given) {
    eal.insert(eal.end(), o.eal.begin(), o.eal.end());
  } else {
    eal = dpdk::default_eal_args("forein-switch", "forein-switch");
  }
  for (int side = 0; side < 2; ++side) {
    eal.push_back("--vdev");
    if (o.port_kind[side] == PortKind::kTap) {
      eal.push_back(port_device(o, side) + ",iface=" + o.iface[side]);
    } else {
      // The switch is the memif server: it creates the socket file (not
      // an abstract socket) and waits for the peer. Its MAC is the one the
      // switch writes as the source of frames on that side (ports.cc).
      // memif-client: it joins the socket another switch serves.
      eal.push_back(port_device(o, side) + (o.memif_client[side] ? ",role=client" : ",role=server") +
                    ",id=0,socket-abstract=no,socket=" + o.memif_socket[side] + ",mac=02:f0:e1:5c:0" +
                    (o.memif_client[side] ? "1" : "0") + ":0" + std::to_string(side + 1));
    }
  }
  return eal;
}

std::string port_device(const Options& o, int side) {
  return (o.port_kind[side] == PortKind::kTap ? "net_tap" : "net_memif") + std::to_string(side);
}

}  // namespace forein::net::sw

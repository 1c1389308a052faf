#include "options.h"

#include <net/if.h>
#include <unistd.h>

#include <cstdlib>
#include <string_view>

#include "agent_service.h"
#include "common/cli.h"
#include "dpdk/eal.h"

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

namespace {

// Every flag, once: what --help prints and what parse_options takes.
void declare(CLI::App& app, Options* o, bool* visibility_given) {
  cli::configure(app);
  app.description(
      "forein-switch: the DPDK software switch between clients and servers; writes hints from the agent's "
      "images, or keeps Switch-delta's visibility table (docs/network.md)");
  cli::address(app, "--agent-listen", &o->agent_listen, 0, "the in-process agent's gRPC address (port 0: a free one)")
      ->default_str(o->agent_listen);
  cli::text(app, "--agent-token", &o->token,
            "the agent's bearer token (default $FOREIN_AGENT_TOKEN); needed when --agent-listen is not loopback")
      ->type_name("T");
  cli::number<std::uint64_t>(app, "--index", &o->index, 0, ~std::uint64_t{0},
                             "the agent's index whose image hints requests (with --servers, server i's image is "
                             "index ID+i)")
      ->type_name("ID");
  cli::value(
      app, "--servers", "P0,P1,...", [o](const std::string& v) { return parse_ports(v, &o->servers); },
      "1 to 64 UDP ports from 1 to 65535, comma-separated",
      "several servers on the server side's .1, server i on port Pi owning dataset shard i of K (needs --keys "
      "when K > 1)");
  cli::number<std::uint64_t>(app, "--keys", &o->keys, 1, std::uint64_t{1} << 40,
                             "the data set the servers split (forein-kv-server --shard I/K), or the key space "
                             "several --metadata-nodes split")
      ->default_str("");
  cli::number<std::uint16_t>(app, "--service-port", &o->service_port, 1, 65535,
                             "with --servers or --backend switch_visibility: the port clients send to")
      ->type_name("P");
  cli::on_off(app, "--hints", &o->hints, "off: forward requests unchanged, no lookups (offload off)");
  cli::choice<int>(app, "--stage", &o->stage, {{"all", -1}, {"core", 0}, {"aggregation", 1}, {"edge", 2}},
                   "fattree: this switch's part of the k=4 path; the walk is handed on in the temporary header "
                   "(all: the whole walk here)")
      ->default_str("all");
  cli::address(app, "--image-from", &o->image_from, 1,
               "fetch the images from that agent (a chain's core switch) instead of the in-process one");
  cli::value(
      app, "--backend", "switch_visibility",
      [o](const std::string& v) {
        o->backend = v;
        return v == "switch_visibility";
      },
      "switch_visibility (the hint backends need no flag: they come from the agent's images)",
      "Switch-delta: keep the visibility table of in-flight writes and route the ordered-write ops");
  cli::value(
      app, "--data-nodes", "P0,P1,...", [o](const std::string& v) { return parse_ports(v, &o->data_nodes); },
      "1 to 64 UDP ports from 1 to 65535, comma-separated",
      "with --backend switch_visibility: forein-data-node i on the server side's .1:Pi (owns slots s % D == i)");
  cli::value(
      app, "--metadata-nodes", "P0,P1,...", [o](const std::string& v) { return parse_ports(v, &o->metadata_nodes); },
      "1 to 64 UDP ports from 1 to 65535, comma-separated",
      "with --backend switch_visibility: forein-kv-server --mode metadata on .1:Pi; several need --keys N (node i "
      "owns shard i of the key space, --shard i/K --keys N)");
  cli::on_off(app, "--visibility", &o->visibility,
              "with --backend switch_visibility; off: the same routing, the table bypassed, every write takes "
              "phase 2 (the baseline)")
      ->each([visibility_given](const std::string&) { *visibility_given = true; });
  cli::value(
      app, "--slots", "N",
      [o](const std::string& v) {
        std::uint32_t n = 0;
        if (!parse_number<std::uint32_t>(v, 1, 65536, &n) || (n & (n - 1)) != 0) return false;
        o->slots = n;
        return true;
      },
      "a power of two from 1 to 65536", "with --backend switch_visibility: visibility slots (default 65536)");
  for (int side = 0; side < 2; ++side) {
    const std::string name = side == 0 ? "client" : "server";
    cli::value(
        app, "--" + name + "-port", "KIND",
        [o, side](const std::string& v) {
          return parse_port_kind(v, &o->port_kind[side], &o->memif_socket[side], &o->memif_client[side]);
        },
        "tap, memif:PATH or memif-client:PATH (PATH absolute, under 108 bytes, without ',', '=', '\"' or '\\')",
        "the " + name +
            " side's port: tap (a TAP device, needs root), memif:PATH (the switch serves the memif socket file "
            "PATH; the peer is a DPDK program) or memif-client:PATH (join the memif socket another switch "
            "serves, as the .1 of that link)")
        ->default_str("tap");
    cli::value(
        app, "--" + name + "-iface", "NAME",
        [o, side](const std::string& v) {
          if (v.empty() || v.size() >= IFNAMSIZ || v.find_first_of("/ :") != std::string::npos) return false;
          o->iface[side] = v;
          return true;
        },
        "an interface name of 1 to " + std::to_string(IFNAMSIZ - 1) + " characters without '/', ':' or spaces",
        "the TAP device of the " + name + " side")
        ->default_str(o->iface[side]);
    cli::net24(app, "--" + name + "-net", &o->net[side], nullptr,
               side == 0 ? "the client side's /24: kernel A.B.C.1, switch A.B.C.2"
                         : "the server side's /24: kernel A.B.C.1 (the server), switch A.B.C.2");
  }
  app.footer(
      "  -- EAL ARGS...            replace the default EAL options (--no-huge --no-pci -m 256\n"
      "                            --file-prefix forein-switch-PID -l 0); the two --vdev are added\n"
      "TAP ports are made in the network namespace the switch runs in: start it, and the\n"
      "programs that use their addresses, in one of their own (ip netns add NAME; ip netns\n"
      "exec NAME forein-switch ...; docs/network.md, \"Network namespaces\").\n"
      "A memif side has no kernel and no ARP: its peer sends from A.B.C.1 to A.B.C.2 and the\n"
      "switch learns the peer's MAC from those frames.\n"
      "Prints `listening HOST:PORT` and `ready` when serving; SIGINT/SIGTERM stop it and print\n"
      "its counters as one JSON line.\n");
}

// The checks across flags: the message, or "" when they agree.
std::string check(const Options& o, bool visibility_given) {
  const bool visibility_flags = !o.data_nodes.empty() || !o.metadata_nodes.empty() || o.slots != 0 || visibility_given;
  if (o.backend.empty() && visibility_flags) {
    return "--data-nodes, --metadata-nodes, --slots and --visibility need --backend switch_visibility";
  }
  if (!o.backend.empty()) {
    if (o.data_nodes.empty() || o.metadata_nodes.empty()) {
      return "--backend switch_visibility needs --data-nodes and --metadata-nodes";
    }
    if (!o.servers.empty() || o.stage != -1 || !o.image_from.empty()) {
      return "--backend switch_visibility routes by op; it does not take --servers, --stage or --image-from";
    }
    // Several metadata nodes split the keys by shard_of over --keys N
    // (each started with --shard I/K --keys N, the same N).
    if (o.metadata_nodes.size() > 1 && o.keys == 0) {
      return "--metadata-nodes with more than one port needs --keys N (the key space the metadata nodes split; "
             "the same N as their --keys)";
    }
  }
  if (o.servers.size() > 1 && o.keys == 0) {
    return "--servers with more than one port needs --keys N (the data set they split)";
  }
  return "";
}

}  // namespace

std::string usage_text() {
  Options o;
  bool visibility_given = false;
  CLI::App app{"", "forein-switch"};
  declare(app, &o, &visibility_given);
  return app.help();
}

std::optional<int> parse_options(int argc, char** argv, Options* o) {
  if (const char* env = std::getenv("FOREIN_AGENT_TOKEN"); env != nullptr) o->token = env;
  const int ours = cli::split_eal(argc, argv, &o->eal, &o->eal_given);
  bool visibility_given = false;
  CLI::App app{"", "forein-switch"};
  declare(app, o, &visibility_given);
  if (const auto exit_code = cli::run(app, ours, argv)) return *exit_code;
  if (const std::string why = check(*o, visibility_given); !why.empty()) return cli::refuse("forein-switch", why);
  // Exit 1, as an agent address that cannot be bound (forein-agent's rule).
  if (!is_loopback_listen(o->agent_listen) && o->token.empty()) {
    std::fprintf(stderr,
                 "forein-switch: --agent-listen %s is not a loopback address: give --agent-token T (or "
                 "FOREIN_AGENT_TOKEN) so that callers must present it\n",
                 o->agent_listen.c_str());
    return 1;
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

#include "mem_server/options.h"

#include "common/cli.h"
#include "forein/offload/registry.h"
#include "kv_server/options.h"
#include "remote/node_layout.h"

namespace forein::net::mem {

namespace {

// The backends whose image a switch uses to rewrite a start READ.
constexpr const char* kReadBackends = "none, switch_lpm, fattree";

bool read_backend(const std::string& name) {
  return (name == "none" || name == "switch_lpm" || name == "fattree") && offload::find_backend(name) != nullptr;
}

struct Given {
  bool listen = false, keys = false, fanout = false, memif_net = false;
};

void declare(CLI::App& app, MemOptions* o, Given* g) {
  cli::configure(app);
  app.description(
      "forein-mem-server: a memory node holding a remote tree (16-branch nodes or pages, 1000-byte values) "
      "that answers one-sided READs (address, length) and the owner's PUTs over UDP; its offload image "
      "goes to a switch's agent, which rewrites start READs; docs/network.md, docs/remote-read.md");
  cli::host_port(app, "--listen", &o->listen_host, &o->listen_port, 0,
                 "the UDP address to serve (PORT 0 picks a free port) (required)")
      ->each([g](const std::string&) { g->listen = true; });
  cli::number<std::uint64_t>(app, "--keys", &o->keys, 1, std::uint64_t{1} << 36,
                             "the data set dataset_key(0..N-1) (this shard's part is held) (required)")
      ->default_str("")
      ->each([g](const std::string&) { g->keys = true; });
  cli::number<std::uint32_t>(app, "--value-bytes", &o->value_bytes, 0,
                             static_cast<std::uint32_t>(remote::kMaxValueBytes), "bytes per value");
  cli::number<std::uint32_t>(app, "--fanout", &o->fanout, remote::kMinFanout, remote::kMaxFanout,
                             "branches per node (the paper's 16)")
      ->each([g](const std::string&) { g->fanout = true; });
  cli::number<std::uint32_t>(app, "--node-bytes", &o->node_bytes, 104,
                             static_cast<std::uint32_t>(remote::kMaxReadBytes),
                             "nodes of this many bytes, a multiple of 8, with as many branches as fit "
                             "(8192: 8 KiB pages, 509 branches) instead of --fanout")
      ->default_str("");
  cli::number<std::uint32_t>(app, "--fill-percent", &o->fill_percent, 50, 100,
                             "entries per node at build, percent of the fanout (less leaves room for inserts)");
  cli::number<std::uint64_t>(app, "--spare-bytes", &o->spare_bytes, 0, std::uint64_t{1} << 36,
                             "region bytes beyond the build, for PUTs (new records and splits)");
  cli::part_of(app, "--shard", &o->shard, &o->shards, 64, "I/K",
               "hold dataset shard I of K and publish the offload image under agent index I");
  cli::number<unsigned>(app, "--threads", &o->threads, 1, 64, "UDP worker threads");
  cli::value(
      app, "--backend", "NAME",
      [o](const std::string& v) {
        if (!read_backend(v)) return false;
        o->backend = v;
        return true;
      },
      std::string("a backend a switch rewrites READs with: ") + kReadBackends,
      std::string("the owner's offload backend: ") + kReadBackends)
      ->default_str(o->backend);
  cli::address(app, "--agent", &o->agent, 1, "mirror the offload image to forein-agent (or forein-switch's agent)");
  cli::text(app, "--agent-token", &o->agent_token, "bearer token for the agent (needs --agent)")->type_name("T");
  cli::number<std::uint32_t>(app, "--refresh-ms", &o->refresh_ms, 1, 3'600'000, "offload refresh period");
  cli::number<std::uint32_t>(app, "--refresh-cpu-percent", &o->refresh_cpu_percent, 0, 100,
                             "at most this % of a core in offload refreshes: they space out past --refresh-ms "
                             "when a plan is expensive (0: no bound)");
  cli::number<std::uint32_t>(app, "--sample-rate", &o->sample_rate, 0, 1'000'000,
                             "1 in N start READs sampled for the offload planner (0: none)");
  cli::number<std::uint32_t>(app, "--fat-root-ranges", &o->fat_root_ranges, 1, 1024,
                             "fattree: the fat root's TCAM ranges (default the paper's 600)")
      ->default_str("");
  cli::number<std::uint32_t>(app, "--layer-nodes", &o->layer_nodes, 1, 4096,
                             "fattree: nodes per cached layer (default the paper's 3600)")
      ->default_str("");
  cli::value(
      app, "--memif", "PATH",
      [o](const std::string& v) {
        if (!kv::valid_memif_path(v)) return false;
        o->memif_socket = v;
        return true;
      },
      "the memif socket file forein-switch serves (under 108 bytes, without ',', '=', '\"', '\\' or control "
      "characters)",
      "also serve on a DPDK memif port joining forein-switch's socket PATH (--server-port memif:PATH)");
  cli::net24(app, "--memif-net", &o->memif_net, &o->memif_ip, "with --memif: the link's /24; the memory node is A.B.C.1")
      ->each([g](const std::string&) { g->memif_net = true; });
}

}  // namespace

std::string usage_text(const char* argv0) {
  MemOptions o;
  Given g;
  CLI::App app{"", argv0};
  declare(app, &o, &g);
  return app.help();
}

bool parse_options(int argc, char** argv, MemOptions* out, std::string* error, bool* help) {
  Given g;
  CLI::App app{"", "forein-mem-server"};
  declare(app, out, &g);
  if (!cli::parse(app, argc, argv, error, help)) return false;
  if (*help) return true;
  if (!g.listen) {
    *error = "--listen HOST:PORT is required";
    return false;
  }
  if (!g.keys) {
    *error = "--keys N is required";
    return false;
  }
  if (out->node_bytes != 0) {
    if (g.fanout) {
      *error = "give --fanout or --node-bytes, not both";
      return false;
    }
    if (out->node_bytes % 8 != 0) {
      *error = "--node-bytes: " + std::to_string(out->node_bytes) + " is not a multiple of 8";
      return false;
    }
  }
  if ((out->fat_root_ranges != 0 || out->layer_nodes != 0) && out->backend != "fattree") {
    *error = "--fat-root-ranges and --layer-nodes are fattree settings (give --backend fattree)";
    return false;
  }
  if (!out->agent_token.empty() && out->agent.empty()) {
    *error = "--agent-token needs --agent";
    return false;
  }
  if (g.memif_net && out->memif_socket.empty()) {
    *error = "--memif-net needs --memif PATH";
    return false;
  }
  if (!out->memif_socket.empty()) {
    if (!parse_net(out->memif_net, &out->memif_ip)) {
      *error = "bad default memif network";
      return false;
    }
    out->memif_ip += 1;  // the memory node is the link's .1
  }
  return true;
}

}  // namespace forein::net::mem

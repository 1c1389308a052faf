#include "kv_server/options.h"

#include <arpa/inet.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <string_view>

#include "common/cli.h"
#include "forein/offload/registry.h"

namespace forein::net::kv {

bool valid_memif_path(std::string_view path) {
  if (path.empty() || path.size() >= 108) return false;
  for (const char c : path) {
    if (c == ',' || c == '=' || c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20) return false;
  }
  return true;
}

namespace {

// H:P[,H:P...], at most max entries.
bool parse_host_port_list(std::string_view text, std::size_t max, std::vector<HostPort>* out) {
  out->clear();
  for (;;) {
    const std::size_t comma = text.find(',');
    HostPort hp;
    if (!cli::parse_host_port(text.substr(0, comma), 1, &hp.host, &hp.port)) return false;
    out->push_back(std::move(hp));
    if (out->size() > max) return false;
    if (comma == std::string_view::npos) return true;
    text = text.substr(comma + 1);
  }
}

// --mode metadata's rules: the index comes from the data nodes' logs, one
// event loop serves it.
bool check_metadata_options(ServerOptions* out, std::string* error) {
  if (out->data_nodes.empty()) {
    *error = "--mode metadata needs --data-nodes H:P[,H:P...] (the index is rebuilt from their logs)";
    return false;
  }
  if (out->threads_given && out->threads != 1) {
    *error =
        "--threads must be 1 in metadata mode (one event loop serves the socket, the deferred "
        "batches and the catch-up timer)";
    return false;
  }
  out->threads = 1;
  if (!out->data_file.empty()) {
    *error = "--data is not used in metadata mode (the index is rebuilt from the data nodes' logs)";
    return false;
  }
  // Several metadata nodes: --shard I/K --keys N owns the keys shard_of
  // gives I (the split forein-switch's --metadata-nodes ports use, over
  // its --keys N); no rows are loaded.
  if (out->keys_given && out->shards <= 1) {
    *error =
        "--keys in metadata mode is the key space --shard I/K splits (K > 1 metadata nodes); with one "
        "metadata node give neither (the index is rebuilt from the data nodes' logs)";
    return false;
  }
  if (out->shards > 1 && out->keys == 0) {
    *error = "--shard I/K in metadata mode needs --keys N > 0 (the key space split, as forein-switch's --keys)";
    return false;
  }
  if (!out->memif_socket.empty()) {
    *error = "--memif is not supported in metadata mode";
    return false;
  }
  if (out->secondary_index) {
    // The paper's one data node: its one timestamp counter orders every
    // write of a primary key, whatever secondary keys they name.
    if (out->data_nodes.size() != 1) {
      *error = "--secondary-index needs exactly one --data-nodes address (the case study's one data node, "
               "forein-data-node --secondary-index), not " +
               std::to_string(out->data_nodes.size());
      return false;
    }
    if (out->shards > 1) {
      *error = "--secondary-index is one metadata node: --shard must be 1/1 (the secondary index is not split), not " +
               std::to_string(out->shard) + "/" + std::to_string(out->shards);
      return false;
    }
  }
  return true;
}

}  // namespace

const char* to_string(Engine e) {
  switch (e) {
    case Engine::kForein: return "forein";
    case Engine::kHoneycomb: return "honeycomb";
    case Engine::kDpa: return "dpa";
  }
  return "?";
}

const char* to_string(HoneycombReads r) {
  return r == HoneycombReads::kCpu ? "cpu" : "accelerator";
}

namespace {

// Which flags were given, for the checks across flags.
struct Given {
  bool listen = false, memif_net = false;
  std::string metadata_flag;  // the last metadata-mode flag given, for kv mode's error
};

// Every flag, once: what --help prints and what parse_options takes.
void declare(CLI::App& app, ServerOptions* o, Given* g) {
  cli::configure(app);
  app.description(
      "forein-kv-server: the papers' KV server over UDP (kv mode: a forein tree bulk-loaded from --keys or "
      "--data, hinted by --backend's images), or Switch-delta's metadata node (--mode metadata); "
      "docs/network.md");
  const auto metadata_flag = [g](const std::string& flag) {
    return [g, flag](const std::string&) { g->metadata_flag = flag; };
  };
  cli::choice<ServerMode>(app, "--mode", &o->mode, {{"kv", ServerMode::kKv}, {"metadata", ServerMode::kMetadata}},
                          "kv: the KV server; metadata: Switch-delta's metadata node, its index rebuilt from "
                          "the data nodes' logs")
      ->default_str("kv");
  cli::host_port(app, "--listen", &o->listen_host, &o->listen_port, 0,
                 "the UDP address to serve (PORT 0 picks a free port; --engine dpa: PORT..PORT+T-1) (required)")
      ->each([g](const std::string&) { g->listen = true; });
  cli::number<std::uint64_t>(app, "--keys", &o->keys, 0, std::uint64_t{1} << 40,
                             "serve the generated data set dataset_key(0..N-1) (or --data); metadata mode: "
                             "the key space --shard splits")
      ->default_str("")
      ->each([o](const std::string&) { o->keys_given = true; });
  cli::text(app, "--data", &o->data_file, "serve FILE's rows, one hexkey<TAB>value a line (or --keys)")
      ->type_name("FILE");
  cli::value(
      app, "--backend", "NAME",
      [o](const std::string& v) {
        const offload::BackendInfo* b = offload::find_backend(v);
        if (b == nullptr || !offload::serves_lookups(*b)) return false;
        o->backend = v;
        o->backend_given = true;
        return true;
      },
      "a backend this server can look keys up with: " + offload::lookup_backend_names(),
      "offload backend of the tree's hints: " + offload::lookup_backend_names())
      ->default_str(o->backend);
  cli::address(app, "--agent", &o->agent, 1, "mirror the offload image to forein-agent (or forein-switch's agent)");
  cli::text(app, "--agent-token", &o->agent_token, "bearer token for the agent (needs --agent)")->type_name("T");
  cli::number<unsigned>(app, "--threads", &o->threads, 1, 64, "UDP worker threads (metadata mode: 1)")
      ->each([o](const std::string&) { o->threads_given = true; });
  cli::number<std::uint32_t>(app, "--refresh-ms", &o->refresh_ms, 1, 3'600'000, "offload refresh period");
  cli::number<std::uint32_t>(app, "--refresh-cpu-percent", &o->refresh_cpu_percent, 0, 100,
                             "at most this % of a core in offload refreshes: they space out past --refresh-ms "
                             "when a plan is expensive (0: no bound)");
  cli::number<std::uint32_t>(app, "--sample-rate", &o->sample_rate, 0, 1'000'000,
                             "1 in N accesses sampled for the offload planner (0: none)");
  cli::part_of(app, "--shard", &o->shard, &o->shards, 64, "I/K",
               "with --keys, own dataset shard I of K and publish the offload image under agent index I; "
               "metadata mode: own the keys of shard I of K (several metadata nodes)");
  cli::number<std::uint32_t>(app, "--fat-root-ranges", &o->fat_root_ranges, 1, 1024,
                             "fattree: the fat root's TCAM ranges (default the paper's 600)")
      ->default_str("");
  cli::number<std::uint32_t>(app, "--layer-nodes", &o->layer_nodes, 1, 4096,
                             "fattree: nodes per cached layer (default the paper's 3600)")
      ->default_str("");
  cli::value(
      app, "--memif", "PATH",
      [o](const std::string& v) {
        if (!valid_memif_path(v)) return false;
        o->memif_socket = v;
        return true;
      },
      "the memif socket file forein-switch serves (under 108 bytes, without ',', '=', '\"', '\\' or control "
      "characters)",
      "also serve on a DPDK memif port joining forein-switch's socket PATH (--server-port memif:PATH)");
  cli::net24(app, "--memif-net", &o->memif_net, &o->memif_ip, "with --memif: the link's /24; the server is A.B.C.1")
      ->each([g](const std::string&) { g->memif_net = true; });
  cli::number<int>(app, "--memif-core", &o->memif_core, 0, 1023,
                   "with --memif: run the memif poll thread alone on CPU N, the server's other threads on the "
                   "CPUs it was started with but N (taskset)")
      ->default_str("");
  cli::value(
      app, "--engine", "forein|honeycomb|dpa",
      [o](const std::string& v) {
        if (v == "forein")
          o->engine = Engine::kForein;
        else if (v == "honeycomb")
          o->engine = Engine::kHoneycomb;
        else if (v == "dpa")
          o->engine = Engine::kDpa;
        else
          return false;
        return true;
      },
      "forein, honeycomb or dpa",
      "forein: the engine tree; honeycomb: Honeycomb's store, GET/SCAN by the accelerator model, PUT/DELETE by "
      "the CPU (keys 1..460 bytes; no --backend, --agent or --shard); dpa: DPA-Store's store, 8-byte keys, "
      "64-bit values, one UDP port per worker (no --backend, --agent, --shard, --memif or --mode metadata)")
      ->default_str("forein");
  cli::choice<HoneycombReads>(app, "--honeycomb-reads", &o->honeycomb_reads,
                              {{"accelerator", HoneycombReads::kAccelerator}, {"cpu", HoneycombReads::kCpu}},
                              "with --engine honeycomb: who runs GET and SCAN: accelerator (the accelerator model, "
                              "the paper's SmartNIC) or cpu (the store's own CPU read path: a CPU server on "
                              "Honeycomb's store)")
      ->default_str("accelerator")
      ->each([o](const std::string&) { o->honeycomb_reads_given = true; });
  // Metadata mode.
  cli::value(
      app, "--data-nodes", "H:P[,H:P...]",
      [o](const std::string& v) { return parse_host_port_list(v, 1024, &o->data_nodes); },
      "H:P[,H:P...] (1..1024 data nodes, data node i at position i)",
      "metadata mode: data node i at position i (LOG_FETCH for recovery and catch-up)")
      ->each(metadata_flag("--data-nodes"));
  cli::host_port(app, "--switch", &o->switch_address.host, &o->switch_address.port, 1,
                 "metadata mode: where CLEARs go until a switch packet names an address")
      ->each(metadata_flag("--switch"))
      ->each([o](const std::string&) { o->switch_given = true; });
  cli::on_off(app, "--deferred", &o->deferred,
              "metadata mode: buffer the switch's META_ASYNC copies and apply them in sorted, prefetched "
              "batches (off: apply each at once)")
      ->each(metadata_flag("--deferred"));
  cli::number<std::uint32_t>(app, "--batch", &o->batch, 1, 4096, "metadata mode: deferred updates per batch")
      ->each(metadata_flag("--batch"));
  cli::number<std::uint32_t>(app, "--visibility-timeout-us", &o->visibility_timeout_us, 100, 60'000'000,
                             "metadata mode: catch-up period for lost META_ASYNC copies, microseconds")
      ->each(metadata_flag("--visibility-timeout-us"));
  app.add_flag("--secondary-index", o->secondary_index,
               "metadata mode: the secondary-index case study (paper VI-B, partial writes III-C): the tree holds "
               "composite keys (secondary, ts, primary), SIDX_READ serves a secondary key's primary keys; needs "
               "exactly one --data-nodes (forein-data-node --secondary-index) and no --shard")
      ->each(metadata_flag("--secondary-index"));
  app.footer("backends: " + offload::lookup_backend_names() + "\n");
}

}  // namespace

std::string usage_text(const char* argv0) {
  ServerOptions o;
  Given g;
  CLI::App app{"", argv0};
  declare(app, &o, &g);
  return app.help();
}

bool parse_options(int argc, char** argv, ServerOptions* out, std::string* error, bool* help) {
  Given g;
  CLI::App app{"", "forein-kv-server"};
  declare(app, out, &g);
  if (!cli::parse(app, argc, argv, error, help)) return false;
  if (*help) return true;
  const bool listen_given = g.listen, memif_net_given = g.memif_net;
  const std::string& metadata_flag = g.metadata_flag;
  if (!listen_given) {
    *error = "--listen HOST:PORT is required";
    return false;
  }
  if (out->honeycomb_reads_given && out->engine != Engine::kHoneycomb) {
    *error = std::string("--honeycomb-reads is only for --engine honeycomb (not --engine ") + to_string(out->engine) +
             ")";
    return false;
  }
  if (out->engine != Engine::kForein) {
    // Honeycomb's accelerator and DPA-Store's traversers walk their own
    // indexes: no switch hints, no image to mirror, and their keys are not
    // sharded. DPA-Store's clients pick the port (the thread) themselves,
    // so no memif port either.
    const char* refused = out->mode == ServerMode::kMetadata                          ? "--mode metadata"
                          : out->backend_given                                        ? "--backend"
                          : !out->agent.empty()                                       ? "--agent"
                          : out->shards > 1                                           ? "--shard"
                          : out->engine == Engine::kDpa && !out->memif_socket.empty() ? "--memif"
                                                                                      : nullptr;
    if (refused != nullptr) {
      *error = std::string(refused) + " is not supported with --engine " + to_string(out->engine);
      return false;
    }
    out->backend = "none";
  }
  if (out->engine == Engine::kDpa && out->listen_port != 0 &&
      std::uint32_t{out->listen_port} + out->threads - 1 > 65535) {
    *error = "--engine dpa listens on PORT..PORT+threads-1: " + std::to_string(out->listen_port) + "+" +
             std::to_string(out->threads - 1) + " passes 65535";
    return false;
  }
  if (out->mode == ServerMode::kMetadata) {
    if (!check_metadata_options(out, error)) return false;
  } else {
    if (!metadata_flag.empty()) {
      *error = metadata_flag + " is a metadata-mode flag (give --mode metadata)";
      return false;
    }
    if (out->keys_given == !out->data_file.empty()) {
      *error = "give exactly one of --keys N and --data FILE";
      return false;
    }
  }
  if ((out->fat_root_ranges != 0 || out->layer_nodes != 0) && out->backend != "fattree") {
    *error = "--fat-root-ranges and --layer-nodes are fattree settings (give --backend fattree)";
    return false;
  }
  if (out->shards > 1 && !out->keys_given) {
    *error = "--shard needs --keys (shards split the generated data set)";
    return false;
  }
  if (out->memif_core >= 0 && out->memif_socket.empty()) {
    *error = "--memif-core needs --memif PATH";
    return false;
  }
  if (memif_net_given && out->memif_socket.empty()) {
    *error = "--memif-net needs --memif PATH";
    return false;
  }
  if (!out->memif_socket.empty()) {
    if (!parse_net(out->memif_net, &out->memif_ip)) {
      *error = "bad default memif network";
      return false;
    }
    out->memif_ip += 1;  // the server is the link's .1
  }
  if (!out->agent_token.empty() && out->agent.empty()) {
    *error = "--agent-token needs --agent";
    return false;
  }
  return true;
}

}  // namespace forein::net::kv

#include "kv_server/options.h"

#include <arpa/inet.h>

#include <charconv>
#include <algorithm>
#include <cstring>
#include <string_view>

#include "common/parse.h"
#include "forein/offload/registry.h"

namespace forein::net::kv {

namespace {

// HOST:PORT; the port may be 0 when allow_zero.
bool parse_host_port(std::string_view text, bool allow_zero, std::string* host,
                     std::uint16_t* port) {
  const std::size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return false;
  std::uint32_t p = 0;
  if (!parse_number<std::uint32_t>(text.substr(colon + 1), allow_zero ? 0 : 1, 65535, &p)) {
    return false;
  }
  *host = std::string(text.substr(0, colon));
  *port = static_cast<std::uint16_t>(p);
  return true;
}

// PATH usable in the memif vdev argument (no ',' or '='), in the JSON
// stats (no '"', '\\' or control bytes) and as a Unix socket address
// (under 108 bytes): forein-switch's rule for memif:PATH.
bool valid_memif_path(std::string_view path) {
  if (path.empty() || path.size() >= 108) return false;
  for (const char c : path) {
    if (c == ',' || c == '=' || c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20) return false;
  }
  return true;
}


// on|off.
bool parse_on_off(std::string_view text, bool* out) {
  if (text == "on") {
    *out = true;
  } else if (text == "off") {
    *out = false;
  } else {
    return false;
  }
  return true;
}

// H:P[,H:P...], at most max entries.
bool parse_host_port_list(std::string_view text, std::size_t max, std::vector<HostPort>* out) {
  out->clear();
  for (;;) {
    const std::size_t comma = text.find(',');
    HostPort hp;
    if (!parse_host_port(text.substr(0, comma), false, &hp.host, &hp.port)) return false;
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
    *error = "--threads must be 1 in metadata mode (one event loop serves the socket, the deferred "
             "batches and the catch-up timer)";
    return false;
  }
  out->threads = 1;
  if (out->keys_given || !out->data_file.empty()) {
    *error = "--keys and --data are not used in metadata mode (the index is rebuilt from the data nodes' logs)";
    return false;
  }
  if (out->shards > 1) {
    *error = "--shard is not supported in metadata mode (one metadata node follows every data node's log)";
    return false;
  }
  if (!out->memif_socket.empty()) {
    *error = "--memif is not supported in metadata mode";
    return false;
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

std::string usage_text(const char* argv0) {
  return std::string("usage: ") + argv0 +
         " [--mode kv] --listen HOST:PORT (--keys N | --data FILE) [--backend NAME]\n"
         "       [--agent HOST:PORT] [--agent-token T] [--threads T] [--refresh-ms MS]\n"
         "       [--sample-rate N] [--shard I/K] [--fat-root-ranges N] [--layer-nodes N]\n"
         "       [--memif PATH [--memif-net A.B.C]] [--engine forein|honeycomb|dpa]\n"
         "  --shard I/K: with --keys, own dataset shard I of K (0 <= I < K <= 64) and\n"
         "               publish the offload image under agent index I\n"
         "  --fat-root-ranges N, --layer-nodes N: fattree's fat root ranges (1..1024) and\n"
         "               nodes per cached layer (1..4096); default the paper's 600 and 3600\n"
         "  --memif PATH: also serve on a DPDK memif port joining forein-switch's socket PATH\n"
         "               (--server-port memif:PATH), as A.B.C.1 of --memif-net (default 10.77.1)\n"
         "  --engine honeycomb: serve from Honeycomb's store: GET/SCAN by the accelerator\n"
         "               model, PUT/DELETE by the CPU (keys 1..460 bytes; no --backend,\n"
         "               --agent or --shard; default forein: the engine tree)\n"
         "  --engine dpa: serve from DPA-Store's store: 8-byte keys (big-endian uint64),\n"
         "               64-bit values (dataset values \"v\" + 15 hex digits, or up to 7\n"
         "               bytes); one UDP port per worker, HOST:PORT .. PORT+T-1 (PORT 0:\n"
         "               a free block), as the paper's traverser threads; no --backend,\n"
         "               --agent, --shard, --memif or --mode metadata\n"
         "  metadata mode (Switch-delta's metadata node; the index is rebuilt from the data nodes' logs):\n"
         "       " + std::string(argv0) + " --mode metadata --listen HOST:PORT --data-nodes H:P[,H:P...]\n"
         "       [--switch H:P] [--deferred on|off] [--batch N] [--visibility-timeout-us U]\n"
         "       [--backend NAME] [--agent HOST:PORT] [--threads 1]\n"
         "  --data-nodes: data node i at position i (1..1024 of them)\n"
         "  --switch H:P: where CLEARs go until a switch packet names an address\n"
         "  --deferred: buffer the switch's META_ASYNC copies and apply them in sorted,\n"
         "               prefetched batches (default on; off: apply each at once)\n"
         "  --batch N: deferred updates per batch, 1..4096 (default 16)\n"
         "  --visibility-timeout-us U: catch-up period for lost META_ASYNC copies,\n"
         "               100..60000000 (default 2000)\n"
         "  backends: " + offload::lookup_backend_names() + "\n";
}

bool parse_options(int argc, char** argv, ServerOptions* out, std::string* error, bool* help) {
  *help = false;
  bool listen_given = false;
  bool memif_net_given = false;
  std::string metadata_flag;  // the last metadata-mode flag given, for kv mode's error
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    std::string_view value;
    bool has_inline = false;
    if (arg.starts_with("--")) {
      const std::size_t eq = arg.find('=');
      if (eq != std::string_view::npos) {
        value = arg.substr(eq + 1);
        arg = arg.substr(0, eq);
        has_inline = true;
      }
    }
    if (arg == "--help" || arg == "-h") {
      *help = true;
      return true;
    }
    const bool known = arg == "--listen" || arg == "--keys" || arg == "--data" ||
                       arg == "--backend" || arg == "--agent" || arg == "--agent-token" ||
                       arg == "--threads" || arg == "--refresh-ms" || arg == "--sample-rate" ||
                       arg == "--shard" || arg == "--fat-root-ranges" || arg == "--layer-nodes" ||
                       arg == "--memif" || arg == "--memif-net" || arg == "--mode" ||
                       arg == "--data-nodes" || arg == "--switch" || arg == "--deferred" ||
                       arg == "--batch" || arg == "--visibility-timeout-us" || arg == "--engine";
    if (!known) {
      *error = "unknown argument '" + std::string(arg) + "'";
      return false;
    }
    if (!has_inline) {
      if (i + 1 >= argc) {
        *error = std::string(arg) + " needs a value";
        return false;
      }
      value = argv[++i];
    }
    const auto bad = [&](const char* what) {
      *error = "bad value '" + std::string(value) + "' for " + std::string(arg) + ": " + what;
      return false;
    };
    if (arg == "--deferred" || arg == "--batch" || arg == "--visibility-timeout-us" ||
        arg == "--data-nodes" || arg == "--switch") {
      metadata_flag = std::string(arg);
    }
    if (arg == "--engine") {
      if (value == "forein") {
        out->engine = Engine::kForein;
      } else if (value == "honeycomb") {
        out->engine = Engine::kHoneycomb;
      } else if (value == "dpa") {
        out->engine = Engine::kDpa;
      } else {
        return bad("expected forein, honeycomb or dpa");
      }
    } else if (arg == "--mode") {
      if (value == "kv") {
        out->mode = ServerMode::kKv;
      } else if (value == "metadata") {
        out->mode = ServerMode::kMetadata;
      } else {
        return bad("expected kv or metadata");
      }
    } else if (arg == "--data-nodes") {
      if (!parse_host_port_list(value, 1024, &out->data_nodes)) {
        return bad("expected H:P[,H:P...] (1..1024 data nodes, data node i at position i)");
      }
    } else if (arg == "--switch") {
      if (!parse_host_port(value, false, &out->switch_address.host, &out->switch_address.port)) {
        return bad("expected HOST:PORT");
      }
      out->switch_given = true;
    } else if (arg == "--deferred") {
      if (!parse_on_off(value, &out->deferred)) return bad("expected on or off");
    } else if (arg == "--batch") {
      if (!parse_number<std::uint32_t>(value, 1, 4096, &out->batch)) {
        return bad("expected 1..4096 deferred updates per batch");
      }
    } else if (arg == "--visibility-timeout-us") {
      if (!parse_number<std::uint32_t>(value, 100, 60'000'000, &out->visibility_timeout_us)) {
        return bad("expected microseconds, 100..60000000");
      }
    } else if (arg == "--listen") {
      if (!parse_host_port(value, true, &out->listen_host, &out->listen_port)) {
        return bad("expected HOST:PORT (PORT 0 picks a free port)");
      }
      listen_given = true;
    } else if (arg == "--keys") {
      if (!parse_number<std::uint64_t>(value, 0, std::uint64_t{1} << 40, &out->keys)) {
        return bad("expected a number of keys");
      }
      out->keys_given = true;
    } else if (arg == "--data") {
      if (value.empty()) return bad("expected a file name");
      out->data_file = std::string(value);
    } else if (arg == "--backend") {
      out->backend = std::string(value);
      out->backend_given = true;
    } else if (arg == "--agent") {
      std::string host;
      std::uint16_t port = 0;
      if (!parse_host_port(value, false, &host, &port)) return bad("expected HOST:PORT");
      out->agent = std::string(value);
    } else if (arg == "--agent-token") {
      out->agent_token = std::string(value);
    } else if (arg == "--threads") {
      if (!parse_number<unsigned>(value, 1, 64, &out->threads)) return bad("expected 1..64");
      out->threads_given = true;
    } else if (arg == "--refresh-ms") {
      if (!parse_number<std::uint32_t>(value, 1, 3'600'000, &out->refresh_ms)) {
        return bad("expected milliseconds, 1..3600000");
      }
    } else if (arg == "--sample-rate") {
      if (!parse_number<std::uint32_t>(value, 0, 1'000'000, &out->sample_rate)) {
        return bad("expected 0 (no sampling) .. 1000000");
      }
    } else if (arg == "--fat-root-ranges") {
      if (!parse_number<std::uint32_t>(value, 1, 1024, &out->fat_root_ranges)) {
        return bad("expected 1..1024 (the fat root's TCAM ranges)");
      }
    } else if (arg == "--layer-nodes") {
      if (!parse_number<std::uint32_t>(value, 1, 4096, &out->layer_nodes)) {
        return bad("expected 1..4096 (nodes per node set)");
      }
    } else if (arg == "--memif") {
      if (!valid_memif_path(value)) {
        return bad("expected the memif socket file forein-switch serves (under 108 bytes, without ',', '=', "
                   "'\"', '\\' or control characters)");
      }
      out->memif_socket = std::string(value);
    } else if (arg == "--memif-net") {
      if (!parse_net(value, &out->memif_ip)) return bad("expected A.B.C (the link's /24; the server is A.B.C.1)");
      out->memif_ip += 1;  // the server is the link's .1
      out->memif_net = std::string(value);
      memif_net_given = true;
    } else if (arg == "--shard") {
      const std::size_t slash = value.find('/');
      if (slash == std::string_view::npos ||
          !parse_number<std::uint32_t>(value.substr(slash + 1), 1, 64, &out->shards) ||
          !parse_number<std::uint32_t>(value.substr(0, slash), 0, out->shards - 1, &out->shard)) {
        return bad("expected I/K with 0 <= I < K <= 64");
      }
    }
  }
  if (!listen_given) {
    *error = "--listen HOST:PORT is required";
    return false;
  }
  if (out->engine != Engine::kForein) {
    // Honeycomb's accelerator and DPA-Store's traversers walk their own
    // indexes: no switch hints, no image to mirror, and their keys are not
    // sharded. DPA-Store's clients pick the port (the thread) themselves,
    // so no memif port either.
    const char* refused = out->mode == ServerMode::kMetadata                        ? "--mode metadata"
                          : out->backend_given                                      ? "--backend"
                          : !out->agent.empty()                                     ? "--agent"
                          : out->shards > 1                                         ? "--shard"
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
  if (memif_net_given && out->memif_socket.empty()) {
    *error = "--memif-net needs --memif PATH";
    return false;
  }
  if (!out->memif_socket.empty() && !memif_net_given) {
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

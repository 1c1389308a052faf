#include "load/options.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "common/cli.h"
#include "protocol/dataset.h"
#include "protocol/secondary_index.h"

namespace forein::net::load {

const char* to_string(Workload w) {
  switch (w) {
    case Workload::kA: return "a";
    case Workload::kB: return "b";
    case Workload::kC: return "c";
    case Workload::kD: return "d";
    case Workload::kE: return "e";
    case Workload::kF: return "f";
    case Workload::kGetPutDel: return "getputdel";
    case Workload::kWriteOnly: return "write-only";
    case Workload::kWriteHeavy: return "write-heavy";
    case Workload::kSecondaryIndex: return "secondary-index";
  }
  return "?";
}

bool is_ordered(Workload w) {
  return w == Workload::kWriteOnly || w == Workload::kWriteHeavy || w == Workload::kSecondaryIndex;
}

const char* to_string(Distribution d) {
  switch (d) {
    case Distribution::kUniform: return "uniform";
    case Distribution::kZipf: return "zipf";
    case Distribution::kLatest: return "latest";
  }
  return "?";
}

namespace {

template <typename T>
bool parse_uint(std::string_view s, T* out) {
  if (s.empty()) return false;
  T v{};
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return false;
  *out = v;
  return true;
}

bool parse_double(const std::string& s, double* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

}  // namespace

bool split_host_port(const std::string& s, std::string* host, std::uint16_t* port) {
  const auto colon = s.rfind(':');
  if (colon == std::string::npos || colon == 0) return false;
  std::uint32_t p = 0;
  if (!parse_uint(std::string_view(s).substr(colon + 1), &p) || p == 0 || p > 65535) return false;
  *host = s.substr(0, colon);
  *port = static_cast<std::uint16_t>(p);
  return true;
}

namespace {

// Which flags were given, for the checks across flags.
struct Given {
  bool target = false, workload = false, dist = false, index = false, record = false, shards = false,
       secondary_keys = false, sidx_read_count = false;
};

// Every flag, once: what --help prints and what parse_options takes.
void declare(CLI::App& app, LoadOptions* o, Given* g) {
  cli::configure(app);
  app.description(
      "forein-load: YCSB-style load against forein-kv-server (or Switch-delta's ordered writes "
      "through forein-switch), with --verify (docs/network.md)");
  cli::value(
      app, "--target", "HOST:PORT",
      [o](const std::string& v) { return split_host_port(v, &o->target_host, &o->target_port); },
      "HOST:PORT with PORT from 1 to 65535",
      "forein-kv-server's UDP address (IPv4 or a host name); for write-only/write-heavy the switch's "
      "service address (required)")
      ->each([g](const std::string&) { g->target = true; });
  cli::number<std::uint64_t>(app, "--keys", &o->keys, 1, std::uint64_t{1} << 40,
                             "keys 0..N-1 the server was loaded with (required)")
      ->default_str("");
  cli::choice<Workload>(app, "--workload", &o->workload,
                        {{"a", Workload::kA},
                         {"b", Workload::kB},
                         {"c", Workload::kC},
                         {"d", Workload::kD},
                         {"e", Workload::kE},
                         {"f", Workload::kF},
                         {"getputdel", Workload::kGetPutDel},
                         {"write-only", Workload::kWriteOnly},
                         {"write-heavy", Workload::kWriteHeavy},
                         {"secondary-index", Workload::kSecondaryIndex}},
                        "YCSB a (50% read/50% update), b (95/5), c (100% read), d (95% read/5% insert, reads "
                        "latest), e (95% scan/5% insert), f (50% read/50% read-modify-write), getputdel (90% get, "
                        "5% put of a new key, 5% delete); Switch-delta's ordered writes: write-only (100% write), "
                        "write-heavy (50% read/50% write): LOG_APPEND, then META_PUT unless the switch took it; "
                        "reads META_GET then LOG_READ; secondary-index (50% write/50% read, paper 002 VI-B): writes move "
                        "a primary key to a new secondary key (LOG_APPEND, META_PUT unless the switch stored the "
                        "partial entry), reads SIDX_READ a secondary key then LOG_READ each primary key listed, "
                        "keeping those whose record still names it (required)")
      ->each([g](const std::string&) { g->workload = true; });
  cli::choice<Distribution>(
      app, "--dist", &o->dist,
      {{"uniform", Distribution::kUniform}, {"zipf", Distribution::kZipf}, {"latest", Distribution::kLatest}},
      "key distribution (default uniform; latest for workload d)")
      ->each([g](const std::string&) { g->dist = true; });
  cli::value(
      app, "--zipf", "THETA",
      [o](const std::string& v) { return parse_double(v, &o->theta) && o->theta > 0 && o->theta <= 2; },
      "a number with 0 < THETA <= 2", "Zipf exponent (below 1 Gray et al.'s generator, from 1 rejection-inversion)")
      ->default_str("0.99");
  cli::value(
      app, "--seconds", "S",
      [o](const std::string& v) { return parse_double(v, &o->seconds) && o->seconds > 0 && o->seconds <= 86400; },
      "a number of seconds with 0 < S <= 86400", "run time")
      ->default_str("10");
  cli::number<unsigned>(app, "--outstanding", &o->outstanding, 1, 4096, "requests in flight");
  app.add_flag("--verify", o->verify,
               "check every GET/SCAN answer (write-only/write-heavy: every record read back by the "
               "workload's reads; write-only reads none); exit 1 if any is wrong");
  cli::number<std::uint32_t>(app, "--timeout-ms", &o->timeout_ms, 1, 60000, "per-attempt timeout");
  cli::number<std::uint32_t>(app, "--retries", &o->retries, 0, 100, "resends after a timeout");
  cli::number<std::uint64_t>(app, "--seed", &o->seed, 0, ~std::uint64_t{0},
                             "random seed (default: drawn; printed in the JSON)")
      ->default_str("")
      ->each([o](const std::string&) { o->seed_given = true; });
  cli::number<std::size_t>(app, "--record-bytes", &o->record_bytes, kMinRecordBytes, kMaxRecordBytes,
                           "write-only/write-heavy/secondary-index: bytes per record (secondary-index: the "
                           "payload after the secondary key)")
      ->each([g](const std::string&) { g->record = true; });
  cli::number<std::uint64_t>(app, "--secondary-keys", &o->secondary_keys, 1, std::uint64_t{1} << 40,
                             "secondary-index: secondary keys 0..S-1 (the data node's --secondary-keys; "
                             "default --keys / 25, at least 1)")
      ->type_name("S")
      ->default_str("")
      ->each([g](const std::string&) { g->secondary_keys = true; });
  cli::number<std::uint32_t>(app, "--sidx-read-count", &o->sidx_read_count, 1, kMaxSidxReadCount,
                             "secondary-index: primary keys a read asks for (SIDX_READ's count; the paper's 10)")
      ->type_name("C")
      ->each([g](const std::string&) { g->sidx_read_count = true; });
  cli::text(app, "--history", &o->history,
            "write-only/write-heavy/secondary-index: write one line per operation to FILE (client slot, "
            "W/R, key, version written or read, invoke and response CLOCK_MONOTONIC ns, ok/failed/pending; "
            "secondary-index: SW/SR lines with the secondary key and the primary keys kept) for "
            "forein-history-check")
      ->type_name("FILE");
  cli::address(app, "--agent", &o->agent, 1,
               "forein-agent to fetch the index's offload image from (a few times a second); requests carry its hints "
               "(not with write-only/write-heavy)");
  cli::text(app, "--agent-token", &o->agent_token, "bearer token for the agent's calls (needs --agent)")
      ->type_name("T");
  cli::number<std::uint64_t>(app, "--index", &o->index_id, 0, ~std::uint64_t{0},
                             "the agent's index id (needs --agent; forein-kv-server publishes under 0)")
      ->type_name("ID")
      ->each([g](const std::string&) { g->index = true; });
  cli::number<unsigned>(app, "--route-by-key", &o->route_by_key, 1, 64,
                        "forein-kv-server --engine dpa with N ports (--threads N): send each request to the "
                        "target's PORT + the key's DPA-Store traverser (traverser_of(key, 176)) mod N (not with "
                        "write-only/write-heavy)")
      ->default_str("");
  app.add_flag("--remote-read", o->remote_read,
               "the target is forein-mem-server (or a switch in front of K of them): walk the remote tree one "
               "READ per node, the first READ marked for the switch to rewrite; updates are PUTs to the owner "
               "(workloads a, b, c; docs/remote-read.md)");
  cli::number<std::uint32_t>(app, "--shards", &o->shards, 1, 64,
                             "with --remote-read: K memory nodes, node i holding dataset shard i of K (each its "
                             "own region and root)")
      ->each([g](const std::string&) { g->shards = true; });
}

}  // namespace

std::string usage_text(const char* argv0) {
  LoadOptions o;
  Given g;
  CLI::App app{"", argv0};
  declare(app, &o, &g);
  return app.help();
}

bool parse_options(int argc, char** argv, LoadOptions* out, std::string* error, bool* help) {
  LoadOptions o;
  o.index_id = kDatasetIndexId;
  Given g;
  CLI::App app{"", "forein-load"};
  declare(app, &o, &g);
  if (!cli::parse(app, argc, argv, error, help)) return false;
  if (*help) return true;
  const bool target = g.target, workload = g.workload, dist_given = g.dist, index_given = g.index,
             record_given = g.record;
  if (!target) {
    *error = "--target HOST:PORT is required";
    return false;
  }
  if (o.keys == 0) {
    *error = "--keys N is required";
    return false;
  }
  if (!workload) {
    *error = "--workload is required";
    return false;
  }
  if (o.agent.empty() && (!o.agent_token.empty() || index_given)) {
    *error = std::string(o.agent_token.empty() ? "--index" : "--agent-token") + " needs --agent";
    return false;
  }
  if (is_ordered(o.workload) && !o.agent.empty()) {
    *error = std::string("--agent: hints are not used by --workload ") + to_string(o.workload);
    return false;
  }
  if (is_ordered(o.workload) && o.route_by_key != 0) {
    *error = std::string("--route-by-key: not used by --workload ") + to_string(o.workload);
    return false;
  }
  if (o.route_by_key != 0 && std::uint32_t{o.target_port} + o.route_by_key - 1 > 65535) {
    *error = "--route-by-key " + std::to_string(o.route_by_key) + ": the target's ports would pass 65535";
    return false;
  }
  if (!is_ordered(o.workload) && record_given) {
    *error = "--record-bytes needs --workload write-only, write-heavy or secondary-index";
    return false;
  }
  if (o.workload != Workload::kSecondaryIndex && (g.secondary_keys || g.sidx_read_count)) {
    *error = std::string(g.secondary_keys ? "--secondary-keys" : "--sidx-read-count") +
             " needs --workload secondary-index";
    return false;
  }
  if (o.workload == Workload::kSecondaryIndex && !g.secondary_keys) o.secondary_keys = default_secondary_keys(o.keys);
  if (!o.history.empty()) {
    if (!is_ordered(o.workload)) {
      *error = "--history needs --workload write-only or write-heavy, or secondary-index";
      return false;
    }
    // Refused now, not after the run: the file is created (empty) here.
    std::FILE* f = std::fopen(o.history.c_str(), "w");
    if (f == nullptr) {
      *error = "--history " + o.history + ": cannot write: " + std::strerror(errno);
      return false;
    }
    std::fclose(f);
  }
  if (g.shards && !o.remote_read) {
    *error = "--shards needs --remote-read";
    return false;
  }
  if (o.remote_read) {
    const char* refused = !o.agent.empty() ? "--agent" : o.route_by_key != 0 ? "--route-by-key" : nullptr;
    if (refused != nullptr) {
      *error = std::string(refused) + " is not used with --remote-read (the switch rewrites the first READ)";
      return false;
    }
    if (o.workload != Workload::kA && o.workload != Workload::kB && o.workload != Workload::kC) {
      *error = std::string("--remote-read runs --workload a, b or c (reads and updates), not ") + to_string(o.workload);
      return false;
    }
    if (o.outstanding > kMaxRemoteOutstanding) {
      *error = "--outstanding: at most " + std::to_string(kMaxRemoteOutstanding) +
               " with --remote-read (one thread per walk in flight)";
      return false;
    }
  }
  // YCSB D reads the latest keys unless told otherwise.
  if (!dist_given && o.workload == Workload::kD) o.dist = Distribution::kLatest;
  *out = o;
  return true;
}

}  // namespace forein::net::load

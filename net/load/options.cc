#include "load/options.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <string_view>

#include "protocol/dataset.h"

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
  }
  return "?";
}

bool is_ordered(Workload w) { return w == Workload::kWriteOnly || w == Workload::kWriteHeavy; }

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

std::string usage_text(const char* argv0) {
  return std::string("usage: ") + argv0 +
         " --target HOST:PORT --keys N\n"
         "         --workload a|b|c|d|e|f|getputdel|write-only|write-heavy\n"
         "         [--dist uniform|zipf|latest] [--zipf THETA] [--seconds S]\n"
         "         [--outstanding K] [--verify] [--timeout-ms T] [--retries R] [--seed S]\n"
         "         [--record-bytes N] [--agent HOST:PORT [--agent-token T] [--index ID]]\n"
         "         [--route-by-key N]\n"
         "  --target HOST:PORT   forein-kv-server's UDP address (IPv4 or a host name); for\n"
         "                       write-only/write-heavy the switch's service address\n"
         "  --keys N             keys 0..N-1 the server was loaded with (N >= 1)\n"
         "  --workload W         YCSB a (50% read/50% update), b (95/5), c (100% read),\n"
         "                       d (95% read/5% insert, reads latest), e (95% scan/5% insert),\n"
         "                       f (50% read/50% read-modify-write), getputdel (90% get,\n"
         "                       5% put of a new key, 5% delete); Switch-delta's ordered\n"
         "                       writes: write-only (100% write), write-heavy (50% read/\n"
         "                       50% write): LOG_APPEND, then META_PUT unless the switch\n"
         "                       took it; reads META_GET then LOG_READ\n"
         "  --dist D             key distribution: uniform (default), zipf, latest\n"
         "  --zipf THETA         Zipf exponent, 0 < THETA < 1 (default 0.99)\n"
         "  --seconds S          run time (default 10)\n"
         "  --outstanding K      requests in flight, 1..4096 (default 16)\n"
         "  --verify             check every GET/SCAN answer; exit 1 if any is wrong\n"
         "  --timeout-ms T       per-attempt timeout, 1..60000 (default 200)\n"
         "  --retries R          resends after a timeout, 0..100 (default 3)\n"
         "  --seed S             random seed (default: drawn; printed in the JSON)\n"
         "  --record-bytes N     write-only/write-heavy: bytes per record, 27..4096\n"
         "                       (default 128)\n"
         "  --agent HOST:PORT    forein-agent to fetch the index's offload image from\n"
         "                       (a few times a second); requests carry its hints\n"
         "                       (not with write-only/write-heavy)\n"
         "  --agent-token T      bearer token for the agent's calls (needs --agent)\n"
         "  --index ID           the agent's index id (default 0, the one\n"
         "                       forein-kv-server publishes under; needs --agent)\n"
         "  --route-by-key N     forein-kv-server --engine dpa with N ports (--threads N):\n"
         "                       send each request to the target's PORT + the key's\n"
         "                       DPA-Store traverser (traverser_of(key, 176)) mod N,\n"
         "                       1..64 (not with write-only/write-heavy)\n";
}

bool parse_options(int argc, char** argv, LoadOptions* out, std::string* error, bool* help) {
  LoadOptions o;
  o.index_id = kDatasetIndexId;
  bool target = false, workload = false, dist_given = false, index_given = false, record_given = false;
  *help = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      *help = true;
      return true;
    }
    if (arg == "--verify") {
      o.verify = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0) {
      *error = "unexpected argument '" + arg + "'";
      return false;
    }
    if (i + 1 >= argc) {
      *error = arg + " needs a value";
      return false;
    }
    const std::string val = argv[++i];
    auto bad = [&](const char* what) {
      *error = "bad value for " + arg + ": '" + val + "' (" + what + ")";
      return false;
    };
    if (arg == "--target") {
      if (!split_host_port(val, &o.target_host, &o.target_port)) return bad("HOST:PORT");
      target = true;
    } else if (arg == "--keys") {
      if (!parse_uint(val, &o.keys) || o.keys == 0 || o.keys > (1ull << 40)) return bad("1..2^40");
    } else if (arg == "--workload") {
      static constexpr std::pair<const char*, Workload> kNames[] = {
          {"a", Workload::kA}, {"b", Workload::kB}, {"c", Workload::kC},
          {"d", Workload::kD}, {"e", Workload::kE}, {"f", Workload::kF},
          {"getputdel", Workload::kGetPutDel}, {"write-only", Workload::kWriteOnly},
          {"write-heavy", Workload::kWriteHeavy}};
      bool found = false;
      for (const auto& [name, w] : kNames) {
        if (val == name) {
          o.workload = w;
          found = true;
        }
      }
      if (!found) return bad("a|b|c|d|e|f|getputdel|write-only|write-heavy");
      workload = true;
    } else if (arg == "--dist") {
      if (val == "uniform") {
        o.dist = Distribution::kUniform;
      } else if (val == "zipf") {
        o.dist = Distribution::kZipf;
      } else if (val == "latest") {
        o.dist = Distribution::kLatest;
      } else {
        return bad("uniform|zipf|latest");
      }
      dist_given = true;
    } else if (arg == "--zipf") {
      if (!parse_double(val, &o.theta) || !(o.theta > 0) || !(o.theta < 1)) return bad("0 < THETA < 1");
    } else if (arg == "--seconds") {
      if (!parse_double(val, &o.seconds) || !(o.seconds > 0) || o.seconds > 86400) return bad("0 < S <= 86400");
    } else if (arg == "--outstanding") {
      if (!parse_uint(val, &o.outstanding) || o.outstanding == 0 || o.outstanding > 4096) return bad("1..4096");
    } else if (arg == "--timeout-ms") {
      if (!parse_uint(val, &o.timeout_ms) || o.timeout_ms == 0 || o.timeout_ms > 60000) return bad("1..60000");
    } else if (arg == "--retries") {
      if (!parse_uint(val, &o.retries) || o.retries > 100) return bad("0..100");
    } else if (arg == "--seed") {
      if (!parse_uint(val, &o.seed)) return bad("an unsigned integer");
      o.seed_given = true;
    } else if (arg == "--record-bytes") {
      if (!parse_uint(val, &o.record_bytes) || o.record_bytes < kMinRecordBytes ||
          o.record_bytes > kMaxRecordBytes) {
        return bad("27..4096");
      }
      record_given = true;
    } else if (arg == "--agent") {
      std::string host;
      std::uint16_t port = 0;
      if (!split_host_port(val, &host, &port)) return bad("HOST:PORT");
      o.agent = val;
    } else if (arg == "--agent-token") {
      if (val.empty()) return bad("a non-empty token");
      o.agent_token = val;
    } else if (arg == "--route-by-key") {
      if (!parse_uint(val, &o.route_by_key) || o.route_by_key == 0 || o.route_by_key > 64) return bad("1..64");
    } else if (arg == "--index") {
      if (!parse_uint(val, &o.index_id)) return bad("an unsigned integer");
      index_given = true;
    } else {
      *error = "unknown flag '" + arg + "'";
      return false;
    }
  }
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
    *error = "--record-bytes needs --workload write-only or write-heavy";
    return false;
  }
  // YCSB D reads the latest keys unless told otherwise.
  if (!dist_given && o.workload == Workload::kD) o.dist = Distribution::kLatest;
  *out = o;
  return true;
}

}  // namespace forein::net::load

#include "load/report.h"

#include <cstdio>
#include <sstream>

#include "common/json.h"

namespace forein::net::load {

namespace {

double us(std::uint64_t ns) { return static_cast<double>(ns) / 1000.0; }

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// A histogram's figures in ns, as one JSON object.
Json latency_object(const LatencyHistogram& h) {
  Json o = Json::object();
  o["count"] = h.count();
  o["min"] = h.min();
  o["p50"] = h.percentile(0.50);
  o["p90"] = h.percentile(0.90);
  o["p99"] = h.percentile(0.99);
  o["p999"] = h.percentile(0.999);
  o["max"] = h.max();
  o["mean"] = json_whole(h.mean());
  return o;
}

std::string latency_line(const LatencyHistogram& h) {
  return "p50 " + fmt("%.1f", us(h.percentile(0.5))) + "  p90 " + fmt("%.1f", us(h.percentile(0.9))) + "  p99 " +
         fmt("%.1f", us(h.percentile(0.99))) + "  p999 " + fmt("%.1f", us(h.percentile(0.999))) + "  max " +
         fmt("%.1f", us(h.max()));
}

}  // namespace

std::string report_json(const RunReport& r) {
  const LoadOptions& opt = r.options;
  Json o = Json::object();
  o["ops"] = r.ops;
  o["ops_per_s"] = json_fixed(r.ops_per_s(), 1);
  o["seconds"] = json_fixed(r.elapsed_s, 3);
  o["p50_us"] = json_fixed(us(r.latency.percentile(0.50)), 1);
  o["p90_us"] = json_fixed(us(r.latency.percentile(0.90)), 1);
  o["p99_us"] = json_fixed(us(r.latency.percentile(0.99)), 1);
  o["p999_us"] = json_fixed(us(r.latency.percentile(0.999)), 1);
  o["max_us"] = json_fixed(us(r.latency.max()), 1);
  o["mean_us"] = json_fixed(r.latency.mean() / 1000.0, 1);
  o["errors"] = r.errors;
  o["timeouts"] = r.timeouts;
  if (r.timeouts > 0) {
    o["timeout_key_min"] = r.timeout_key_min;
    o["timeout_key_max"] = r.timeout_key_max;
  }
  o["retries"] = r.retries;
  o["wrong"] = r.wrong;
  o["verified"] = r.verified;
  o["not_found"] = r.not_found;
  o["late_replies"] = r.late_replies;
  o["send_failures"] = r.send_failures;
  o["hinted"] = r.hinted;
  o["agent_fetches"] = r.agent_fetches;
  o["agent_errors"] = r.agent_errors;
  for (std::size_t k = 0; k < kOpKinds; ++k) {
    o[std::string(to_string(static_cast<OpKind>(k))) + "s"] = r.per_op[k];
  }
  if (is_ordered(opt.workload)) {
    o["writes_one_rtt"] = r.writes_one_rtt;
    o["writes_two_phase"] = r.writes_two_phase;
    o["reads_from_switch"] = r.reads_from_switch;
    o["read_retries"] = r.read_retries;
    o["write_latency_ns"] = latency_object(r.write_latency);
    o["read_latency_ns"] = latency_object(r.read_latency);
    o["record_bytes"] = opt.record_bytes;
  }
  if (opt.workload == Workload::kSecondaryIndex) {
    o["secondary_keys"] = opt.secondary_keys;
    o["sidx_read_count"] = opt.sidx_read_count;
    o["sidx_keys_listed"] = r.sidx_keys_listed;
    o["sidx_keys_kept"] = r.sidx_keys_kept;
    o["sidx_keys_dropped"] = r.sidx_keys_dropped;
    o["sidx_reads_truncated"] = r.sidx_reads_truncated;
  }
  if (opt.remote_read) {
    o["mode"] = "remote-read";
    o["read_requests"] = r.reads;  // "reads" is the read operations, as in every mode
    o["reads_per_op"] = json_fixed(r.ops > 0 ? static_cast<double>(r.reads) / static_cast<double>(r.ops) : 0, 3);
    o["start_reads"] = r.start_reads;
    o["rewritten"] = r.rewritten;
    o["hint_hits"] = r.hint_hits;
    o["fallbacks"] = r.fallbacks;
    o["walk_restarts"] = r.walk_restarts;
    o["torn_reads"] = r.torn_reads;
    o["read_failures"] = r.read_failures;
    o["gave_up"] = r.gave_up;
    o["height"] = r.remote_height;
    o["shards"] = opt.shards;
  }
  o["workload"] = to_string(opt.workload);
  o["dist"] = to_string(opt.dist);
  o["zipf"] = json_fixed(opt.theta, 3);
  o["keys"] = opt.keys;
  o["outstanding"] = opt.outstanding;
  o["verify"] = opt.verify;
  o["seed"] = opt.seed;
  o["agent"] = opt.agent;
  o["index"] = opt.index_id;
  o["route_by_key"] = opt.route_by_key;
  return json_line(o);
}

std::string format_report(const RunReport& r) {
  std::ostringstream o;
  o << "forein-load: workload " << to_string(r.options.workload) << ", " << to_string(r.options.dist)
    << ", " << r.options.keys << " keys, " << r.options.outstanding << " outstanding, seed "
    << r.options.seed << "\n";
  o << "ops " << r.ops << " in " << fmt("%.3f", r.elapsed_s) << " s: " << fmt("%.0f", r.ops_per_s())
    << " ops/s; errors " << r.errors << ", timeouts " << r.timeouts << ", retries " << r.retries;
  if (r.options.verify) o << ", verified " << r.verified << ", wrong " << r.wrong;
  o << "\n";
  if (r.timeouts > 0) {
    o << "timeouts: " << r.timeouts << " operations got no reply after " << r.options.retries + 1
      << " attempts of " << r.options.timeout_ms << " ms, keys " << r.timeout_key_min << " .. "
      << r.timeout_key_max << " (is the target, or the server owning those keys, down?)\n";
  }
  if (!r.options.agent.empty()) {
    o << "agent " << r.options.agent << " index " << r.options.index_id << ": " << r.hinted
      << " requests hinted; image fetches " << r.agent_fetches << ", failed " << r.agent_errors << "\n";
  }
  if (r.options.remote_read) {
    o << "remote reads: " << r.reads << " READs ("
      << fmt("%.2f", r.ops > 0 ? static_cast<double>(r.reads) / static_cast<double>(r.ops) : 0)
      << " per op, tree height " << r.remote_height << "); start READs " << r.start_reads << ", rewritten by the switch "
      << r.rewritten << ", hint hits " << r.hint_hits << ", fallbacks " << r.fallbacks << ", torn " << r.torn_reads
      << ", failed READs " << r.read_failures << ", gave up " << r.gave_up << "\n";
  }
  o << "latency us: min " << fmt("%.1f", us(r.latency.min())) << "  " << latency_line(r.latency) << "\n";
  if (is_ordered(r.options.workload)) {
    const std::uint64_t w = r.per_op[static_cast<std::size_t>(OpKind::kWrite)];
    const std::uint64_t rd = r.per_op[static_cast<std::size_t>(OpKind::kRead)];
    o << "writes " << w << ": committed in one round trip (switch) " << r.writes_one_rtt << ", two-phase "
      << r.writes_two_phase << "; records of " << r.options.record_bytes << " bytes\n";
    o << "  write latency us: " << latency_line(r.write_latency) << "\n";
    if (r.options.workload == Workload::kSecondaryIndex) {
      o << "secondary-index reads " << rd << " (" << r.options.secondary_keys << " secondary keys, count "
        << r.options.sidx_read_count << "): primary keys listed " << r.sidx_keys_listed << ", kept "
        << r.sidx_keys_kept << ", dropped by validation " << r.sidx_keys_dropped << " (not found " << r.not_found
        << "); truncated " << r.sidx_reads_truncated << "\n";
      o << "  read latency us: " << latency_line(r.read_latency) << "\n";
    }
    if (r.options.workload == Workload::kWriteHeavy) {
      o << "reads " << rd << ": location from the switch " << r.reads_from_switch << ", retries (mismatch) "
        << r.read_retries << "\n";
      o << "  read latency us: " << latency_line(r.read_latency) << "\n";
    }
  }
  // The histogram as cumulative shares.
  if (r.latency.count() > 0) {
    o << "histogram (percent of ops <= latency us):\n";
    static constexpr double kQs[] = {0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 0.9999, 1.0};
    for (double q : kQs) {
      o << "  " << fmt("%8.4f", q * 100) << "%  <= " << fmt("%.1f", us(r.latency.percentile(q))) << "\n";
    }
  }
  o << report_json(r) << "\n";
  return o.str();
}

}  // namespace forein::net::load

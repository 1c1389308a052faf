// Fat-B+Tree experiments (Zhao et al., ICDE 2024, section V; digest section
// 2 of shared/papers/DIGESTS.md) on the fattree backend:
// docs/fattree-experiments.md, run by tests/bench/run_fattree_experiments.sh.
//
// Every figure is computed from packet walks (fattree_walk) over the image
// the real device (FattreeDevice) publishes for the real planner's plan
// (plan_switches): nothing is typed in but the cost model's constants.
//
//   rdma-scale    RDMA latency vs database scale (paper Fig 5)
//   rdma-drift    RDMA latency vs workload drift (Fig 6)
//   rdma-nodes    RDMA latency vs nodes loaded per layer (Fig 8)
//   rdma-layers   RDMA latency vs layers loaded (Fig 9)
//   eth-scale     Ethernet throughput ratio vs scale (Fig 10a)
//   eth-rw        Ethernet throughput ratio vs read/write ratio (Fig 10c)
//   eth-skew      Ethernet throughput ratio vs skew (Fig 10d)
//   eth-clients   Ethernet throughput vs number of clients (Fig 10b)
//   engine        measured, not modelled: the engine's tree (8 KiB pages,
//                 bulk load) behind an OffloadManager over the registered
//                 fattree backend: nodes visited per lookup and lookup
//                 throughput, hinted vs root start
//   all           every one of the above
//
// Tree (modelled figures): the paper's 16-branch nodes:
// build_synthetic_tree(keys, leaf_size 16, fanout 16) over N distinct
// uniform random 64-bit keys. Workload: YCSB C, Zipf(theta) over ranks,
// ranks shuffled onto keys with a fixed permutation. Planning weights: a
// training sample of --train requests counted on their leaves
// (OffloadNode.weight); probes: --probes fresh requests.
//
// A probe's walk gives its hint: the deepest tree node resolved in the
// network, at level h (no match: the root, h = H - 1). Levels resolved in
// the network r = (H - 1) - h (root start: 0).
//   RDMA: round trips = (H - r) node fetches + 1 for the data; the
//     baseline fetches every node from the root: H + 1. One round trip
//     costs --rtt-us (default: the paper's baseline latency at 2M keys,
//     112.6 us, over H(2M) + 1 round trips). Single-threaded client:
//     throughput = 1 / latency. "inline" columns: the leaf holds the value
//     (no separate data fetch), as the paper's one-round-trip completions
//     suggest.
//   Ethernet: the server visits H - r nodes (baseline H). Per request it
//     spends F + visits * v, F = k * v a fixed cost in node visits, so
//     throughput ratio = (k + H) / (k + mean visits); columns for k in
//     --fixed-visits. Writes go to the server from the root (H visits).
//     implied_k is the k at which the model gives the paper's ratio.
//   Ethernet, clients (closed loop): each of c clients has one request
//     outstanding; a request takes Z (network and client) + S (server:
//     (k + visits) * v). --eth-servers m single-threaded servers serve
//     at most m / S requests per unit time, so throughput(c) =
//     min(c / (Z + S), m / S) (the asymptotic bounds of a closed queueing
//     network). v and Z come from the paper's one-client throughputs
//     (52.0 and 47.7 KTPS): 1/47.7k - 1/52.0k = (base visits - visits) * v,
//     Z = 1/52.0k - (k + visits) * v; so one client matches the paper by
//     construction and the knee and the 16-client numbers are the model's.
//
// Usage: fattree_experiments CMD [--seed S] [--out DIR] [--probes P] [--train T]
//          [--scales N,..] [--eth-scales N,..] [--eth-keys N] [--keys N]
//          [--rtt-us X] [--fixed-visits K,..] [--engine-keys N] [--engine-ops N]
//          [--reps R] [--clients N,..] [--eth-servers M]
// --seed defaults to FOREIN_SEED, else 42; the seed is printed.

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "fattree/fattree_batch.h"
#include "fattree/fattree_device.h"
#include "fattree/fattree_image.h"
#include "fattree/fattree_plan.h"
#include "forein/key.h"
#include "forein/offload/backend.h"
#include "forein/offload/manager.h"
#include "forein/offload/manager_clock.h"
#include "forein/offload/registry.h"
#include "forein/page_store.h"
#include "forein/tree.h"
#include "bench_common.h"
#include "offload/synthetic_tree.h"
#include "support/zipf.h"

namespace {

using forein::Word;
using forein::bench::Clock;
using forein::bench::median;
using forein::bench::open_csv;
using forein::bench::random_words;
using forein::bench::seconds_since;
using forein::bench::value_bytes;
namespace bench = forein::bench;
namespace off = forein::offload;
namespace ft = forein::offload::fattree;

// The paper's figures the model is calibrated on or compared with.
constexpr double kPaperBaselineUs2M = 112.6;  // RDMA baseline, 2M keys (section V-B)
// Ethernet, Fig 10b: throughput with 1 and 16 clients (section V-C).
constexpr double kPaperEth1Ktps = 52.0, kPaperEth1BaseKtps = 47.7;
constexpr double kPaperEth16Ktps = 583.1, kPaperEth16BaseKtps = 442.8;

struct Options {
  std::string command;
  std::uint64_t seed = 42;
  std::string out = ".";
  std::uint64_t probes = 200'000;
  std::uint64_t train = 1'000'000;
  std::vector<std::uint64_t> scales = {1'000'000, 2'000'000, 3'000'000, 4'000'000, 5'000'000,
                                       6'000'000, 7'000'000, 8'000'000, 9'000'000, 10'000'000};
  std::vector<std::uint64_t> eth_scales = {10'000'000, 20'000'000, 50'000'000, 100'000'000};
  std::uint64_t eth_keys = 100'000'000;  // eth-rw, eth-skew
  std::uint64_t keys = 2'000'000;        // RDMA default
  double rtt_us = 0;                     // 0: derived from the paper's baseline
  std::vector<double> fixed_visits = {0, 4, 16};
  std::uint64_t engine_keys = 2'000'000;
  std::uint64_t engine_ops = 1'000'000;
  int reps = 5;
  std::vector<std::uint64_t> clients = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  std::uint64_t eth_servers = 4;  // section V-C: four memory servers
};

[[noreturn]] void usage(const std::string& error) {
  if (!error.empty()) std::cerr << "fattree_experiments: " << error << "\n";
  std::cerr << "usage: fattree_experiments rdma-scale|rdma-drift|rdma-nodes|rdma-layers|eth-scale|"
               "eth-rw|eth-skew|eth-clients|engine|all\n"
               "         [--seed S] [--out DIR] [--probes P] [--train T] [--scales N,..]\n"
               "         [--eth-scales N,..] [--eth-keys N] [--keys N] [--rtt-us X]\n"
               "         [--fixed-visits K,..] [--engine-keys N] [--engine-ops N] [--reps R]\n"
               "         [--clients N,..] [--eth-servers M]\n";
  std::exit(2);
}

Options parse(int argc, char** argv) {
  if (argc < 2) usage("");
  Options o;
  o.command = argv[1];
  const std::vector<std::string> cmds = {"rdma-scale", "rdma-drift", "rdma-nodes", "rdma-layers",
                                         "eth-scale",  "eth-rw",     "eth-skew",   "eth-clients",
                                         "engine",     "all"};
  if (std::find(cmds.begin(), cmds.end(), o.command) == cmds.end()) {
    usage("unknown subcommand '" + o.command + "'");
  }
  if (const char* env = std::getenv("FOREIN_SEED"); env != nullptr && *env != '\0') {
    o.seed = std::strtoull(env, nullptr, 10);
  }
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) usage(arg + " needs a value");
    const std::string value = argv[++i];
    auto one = [&](auto tag) {
      const auto v = bench::parse_list<decltype(tag)>(value, arg, usage);
      if (v.size() != 1) usage(arg + " takes one value");
      return v[0];
    };
    if (arg == "--seed") o.seed = one(std::uint64_t{});
    else if (arg == "--out") o.out = value;
    else if (arg == "--probes") o.probes = one(std::uint64_t{});
    else if (arg == "--train") o.train = one(std::uint64_t{});
    else if (arg == "--scales") o.scales = bench::parse_list<std::uint64_t>(value, arg, usage);
    else if (arg == "--eth-scales") o.eth_scales = bench::parse_list<std::uint64_t>(value, arg, usage);
    else if (arg == "--eth-keys") o.eth_keys = one(std::uint64_t{});
    else if (arg == "--keys") o.keys = one(std::uint64_t{});
    else if (arg == "--rtt-us") o.rtt_us = one(double{});
    else if (arg == "--fixed-visits") o.fixed_visits = bench::parse_list<double>(value, arg, usage);
    else if (arg == "--engine-keys") o.engine_keys = one(std::uint64_t{});
    else if (arg == "--engine-ops") o.engine_ops = one(std::uint64_t{});
    else if (arg == "--reps") o.reps = static_cast<int>(one(std::uint64_t{}));
    else if (arg == "--clients") o.clients = bench::parse_list<std::uint64_t>(value, arg, usage);
    else if (arg == "--eth-servers") o.eth_servers = one(std::uint64_t{});
    else usage("unknown flag " + arg);
  }
  if (o.probes == 0 || o.train == 0 || o.reps < 1 || o.eth_servers == 0) {
    usage("--probes, --train, --reps, --eth-servers must be > 0");
  }
  return o;
}

// Rank -> key index: a fixed random permutation.
std::vector<std::uint32_t> rank_permutation(std::uint64_t n, std::uint64_t seed) {
  return bench::shuffled_indices(n, seed ^ 0x5DEECE66Dull);
}

// A ranking that differs from `perm` in a fraction f of its ranks: those
// ranks, drawn at random, have their keys shuffled among themselves.
std::vector<std::uint32_t> drifted(const std::vector<std::uint32_t>& perm, double f,
                                   std::uint64_t seed) {
  std::vector<std::uint32_t> out = perm;
  std::mt19937_64 rng(seed + 0xD1F7);
  std::vector<std::size_t> ranks;
  std::bernoulli_distribution pick(f);
  for (std::size_t r = 0; r < perm.size(); ++r) {
    if (pick(rng)) ranks.push_back(r);
  }
  std::vector<std::uint32_t> keys;
  keys.reserve(ranks.size());
  for (std::size_t r : ranks) keys.push_back(perm[r]);
  std::shuffle(keys.begin(), keys.end(), rng);
  for (std::size_t i = 0; i < ranks.size(); ++i) out[ranks[i]] = keys[i];
  return out;
}

// ---------------------------------------------------------------------------
// The modelled experiments: a 16-branch tree, plan, device, walks.

struct World {
  std::uint64_t n = 0;
  off::testing::SyntheticTree tree;
  std::uint16_t height = 0;
  std::vector<std::uint32_t> perm;
  double build_s = 0;
};

World make_world(std::uint64_t n, const Options& opt) {
  const auto t0 = Clock::now();
  World w;
  w.n = n;
  w.tree = off::testing::build_synthetic_tree(random_words(n, opt.seed), 16, 16);
  w.height = static_cast<std::uint16_t>(w.tree.table.back().interval.level + 1);
  w.perm = rank_permutation(n, opt.seed);
  w.build_s = seconds_since(t0);
  return w;
}

struct Eval {
  std::uint16_t height = 0;
  std::size_t ranges = 0;
  std::array<std::size_t, ft::kNodeSets> set_nodes{};
  std::size_t reformed = 0, absorbed = 0;
  std::vector<std::uint64_t> resolved_hist;  // probes by levels resolved (0..H-1)
  double mean_resolved = 0;
  double switch_nodes = 0;  // regular nodes a packet was processed by
  double unmatched = 0;
  double plan_s = 0, walk_s = 0;

  double mean_visits() const { return static_cast<double>(height) - mean_resolved; }
  // RDMA round trips (with the data fetch), mean and quantile.
  double mean_rts(bool inline_value) const { return mean_visits() + (inline_value ? 0 : 1); }
  double rts_quantile(double q, bool inline_value) const {
    std::uint64_t total = 0;
    for (auto c : resolved_hist) total += c;
    const auto need = static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(total)));
    // Most round trips first = most levels left = fewest resolved.
    std::uint64_t seen = 0;
    for (std::size_t r = resolved_hist.size(); r-- > 0;) {
      seen += resolved_hist[r];
      if (seen >= need) {
        return static_cast<double>(height - r) + (inline_value ? 0 : 1);
      }
    }
    return static_cast<double>(height) + (inline_value ? 0 : 1);
  }
  double frac_resolved(std::size_t r) const {
    std::uint64_t total = 0;
    for (auto c : resolved_hist) total += c;
    return r < resolved_hist.size() ? static_cast<double>(resolved_hist[r]) / static_cast<double>(total) : 0;
  }
};

// Train on `train_perm` at `theta`, plan, install, probe with `query_perm`.
Eval evaluate(World& w, const std::vector<std::uint32_t>& train_perm,
              const std::vector<std::uint32_t>& query_perm, double theta,
              const ft::PlanSettings& settings, const Options& opt, std::uint64_t salt) {
  Eval e;
  e.height = w.height;
  const auto t0 = Clock::now();
  forein::testing::ZipfGenerator gen(w.n, theta);
  for (auto& node : w.tree.table) node.weight = 0;
  std::mt19937_64 trng(opt.seed * 1000003 + salt * 7 + 1);
  for (std::uint64_t s = 0; s < opt.train; ++s) {
    w.tree.table[w.tree.leaf_of_key[train_perm[gen(trng)]]].weight += 1.0;
  }
  const ft::SwitchPlan plan = ft::plan_switches(w.tree.table, settings);
  e.ranges = plan.ranges.size();
  e.reformed = plan.reformed_nodes;
  e.absorbed = plan.absorbed_nodes;
  std::vector<ft::NodeRecord> nodes;
  for (std::size_t s = 0; s < ft::kNodeSets; ++s) {
    e.set_nodes[s] = plan.sets[s].size();
    nodes.insert(nodes.end(), plan.sets[s].begin(), plan.sets[s].end());
  }
  ft::FattreeDevice device;
  const auto status = device.apply(ft::encode_batch(off::BatchKind::kInstall, plan.ranges, nodes));
  if (status != off::BackendStatus::kOk) throw std::runtime_error("device refused the plan");
  const auto image = device.load_image();
  e.plan_s = seconds_since(t0);

  const auto t1 = Clock::now();
  e.resolved_hist.assign(w.height, 0);
  std::mt19937_64 qrng(opt.seed * 1000003 + salt * 7 + 2);
  std::uint64_t sum_resolved = 0, sum_switch = 0, unmatched = 0;
  const auto top = static_cast<std::uint16_t>(w.height - 1);
  for (std::uint64_t p = 0; p < opt.probes; ++p) {
    const std::uint32_t k = query_perm[gen(qrng)];
    const Word word = w.tree.words[k];
    const ft::Walk walk = ft::fattree_walk(image->bytes, word);
    std::uint16_t level = top;
    if (walk.matched && walk.hints.primary.present()) {
      level = walk.hints.primary.level;
      // The hint must cover the key: the leaf of a leaf hint is the key's.
      if (level == 0 && walk.hints.primary.node != w.tree.table[w.tree.leaf_of_key[k]].interval.node) {
        throw std::runtime_error("walk resolved a leaf that does not hold the key");
      }
    } else {
      ++unmatched;
    }
    const std::size_t r = top - std::min(level, top);
    ++e.resolved_hist[r];
    sum_resolved += r;
    sum_switch += walk.nodes_visited;
  }
  const auto P = static_cast<double>(opt.probes);
  e.mean_resolved = static_cast<double>(sum_resolved) / P;
  e.switch_nodes = static_cast<double>(sum_switch) / P;
  e.unmatched = static_cast<double>(unmatched) / P;
  e.walk_s = seconds_since(t1);
  return e;
}

ft::PlanSettings rdma_settings() {
  ft::PlanSettings s;
  s.fat_root_ranges = 600;
  s.layer_nodes = 3600;
  s.layers = 3;
  s.budget = ft::kCapacity;
  return s;
}

ft::PlanSettings eth_settings() {
  ft::PlanSettings s = rdma_settings();
  s.layers = 4;  // section V-C: "four subsequent layers"
  return s;
}

struct Rtt {
  double us = 0;
  std::string source;
};

// The cost of one RDMA round trip: the paper's baseline at 2M keys over
// the 2M-key 16-branch tree's height + 1 (the data), unless --rtt-us.
Rtt round_trip(const Options& opt) {
  if (opt.rtt_us > 0) return {opt.rtt_us, "--rtt-us"};
  const auto t = off::testing::build_synthetic_tree(random_words(2'000'000, opt.seed), 16, 16);
  const int h = t.table.back().interval.level + 1;
  std::ostringstream src;
  src << "paper baseline " << kPaperBaselineUs2M << " us / (" << h << " levels + 1 data)";
  return {kPaperBaselineUs2M / (h + 1), src.str()};
}

const char* kRdmaHeader =
    "keys,height,zipf,drift,fat_root_limit,layer_nodes,layers,ranges,set1,set2,set3,set4,"
    "switch_nodes_per_query,unmatched,mean_resolved,frac_leaf_resolved,mean_rts,p99_rts,rtt_us,"
    "latency_us,p99_us,ktps,base_rts,base_latency_us,base_ktps,reduction,speedup,"
    "inline_latency_us,inline_base_us,inline_reduction";

void rdma_row(std::ostream& out, const World& w, const Eval& e, double theta, double drift,
              const ft::PlanSettings& s, const Rtt& rtt, const std::string& label) {
  const double lat = e.mean_rts(false) * rtt.us, base = (w.height + 1) * rtt.us;
  const double ilat = e.mean_rts(true) * rtt.us, ibase = w.height * rtt.us;
  out << w.n << ',' << w.height << ',' << theta << ',' << drift << ',' << s.fat_root_ranges << ','
      << s.layer_nodes << ',' << s.layers << ',' << e.ranges;
  for (std::size_t i = 0; i < 4; ++i) out << ',' << e.set_nodes[i];
  out << ',' << e.switch_nodes << ',' << e.unmatched << ',' << e.mean_resolved << ','
      << e.frac_resolved(w.height - 1) << ',' << e.mean_rts(false) << ','
      << e.rts_quantile(0.99, false) << ',' << rtt.us << ',' << lat << ','
      << e.rts_quantile(0.99, false) * rtt.us << ',' << 1000.0 / lat << ',' << w.height + 1 << ','
      << base << ',' << 1000.0 / base << ',' << 1 - lat / base << ',' << base / lat << ',' << ilat
      << ',' << ibase << ',' << 1 - ilat / ibase << '\n';
  out.flush();
  std::cout << std::fixed << std::setprecision(2) << "  " << label << ": n=" << w.n << " H="
            << w.height << " ranges=" << e.ranges << " sets=" << e.set_nodes[0] << "/"
            << e.set_nodes[1] << "/" << e.set_nodes[2] << "/" << e.set_nodes[3]
            << " resolved=" << e.mean_resolved << " (leaf " << 100 * e.frac_resolved(w.height - 1)
            << "%) RTs=" << e.mean_rts(false) << " latency=" << lat << " us (base " << base
            << ", -" << 100 * (1 - lat / base) << "%) p99=" << e.rts_quantile(0.99, false) * rtt.us
            << " us  [plan " << e.plan_s << " s, walks " << e.walk_s << " s]\n"
            << std::defaultfloat << std::setprecision(6);
}

const char* kEthHeader =
    "keys,height,zipf,read_fraction,fat_root_limit,layer_nodes,layers,ranges,set1,set2,set3,set4,"
    "mean_resolved,frac_leaf_resolved,read_visits,base_visits,mean_visits";

void eth_row(std::ostream& out, const World& w, const Eval& e, double theta, double reads,
             const ft::PlanSettings& s, const Options& opt, double paper_ratio,
             const std::string& label) {
  const double H = w.height, m = e.mean_visits();
  const double visits = reads * m + (1 - reads) * H;
  out << w.n << ',' << w.height << ',' << theta << ',' << reads << ',' << s.fat_root_ranges << ','
      << s.layer_nodes << ',' << s.layers << ',' << e.ranges;
  for (std::size_t i = 0; i < 4; ++i) out << ',' << e.set_nodes[i];
  out << ',' << e.mean_resolved << ',' << e.frac_resolved(w.height - 1) << ',' << m << ',' << H
      << ',' << visits;
  std::cout << std::fixed << std::setprecision(3) << "  " << label << ": n=" << w.n << " H=" << H
            << " zipf=" << theta << " reads=" << reads << " server visits " << H << " -> "
            << visits << " ratio";
  for (double k : opt.fixed_visits) {
    out << ',' << (k + H) / (k + visits);
    std::cout << " k" << k << "=" << (k + H) / (k + visits);
  }
  // The fixed cost (in node visits) at which the model meets the paper.
  const double implied = paper_ratio > 1 ? (H - paper_ratio * visits) / (paper_ratio - 1) : std::nan("");
  out << ',' << paper_ratio << ',' << implied << '\n';
  out.flush();
  std::cout << "  (paper " << paper_ratio << " => k=" << implied << ")  [plan " << e.plan_s
            << " s]\n"
            << std::defaultfloat << std::setprecision(6);
}

std::string eth_header(const Options& opt) {
  std::ostringstream h;
  h << kEthHeader;
  for (double k : opt.fixed_visits) h << ",ratio_k" << k;
  h << ",paper_ratio,implied_k";
  return h.str();
}

// Fig 10b: closed-loop throughput vs clients (see the header comment).
void eth_clients(std::ostream& out, const World& w, const Eval& e, double theta, double reads,
                 const Options& opt) {
  const double H = w.height;
  const double visits = reads * e.mean_visits() + (1 - reads) * H, base_visits = H;
  const double m = static_cast<double>(opt.eth_servers);
  // Microseconds per request with one client (1e3 / KTPS).
  const double t1 = 1e3 / kPaperEth1Ktps, t1_base = 1e3 / kPaperEth1BaseKtps;
  const double v = (t1_base - t1) / (base_visits - visits);
  out << "keys,height,zipf,read_fraction,servers,k,visit_us,network_us,visits,base_visits,"
         "service_us,base_service_us,knee_clients,base_knee_clients,clients,ktps,base_ktps,ratio,"
         "paper_ktps,paper_base_ktps\n";
  std::cout << std::fixed << std::setprecision(3) << "  n=" << w.n << " H=" << H << " reads="
            << reads << " server visits " << base_visits << " -> " << visits << "; v = (" << t1_base
            << " - " << t1 << " us) / " << base_visits - visits << " visits = " << v
            << " us per visit, " << m << " servers\n";
  for (double k : opt.fixed_visits) {
    const double s = (k + visits) * v, s_base = (k + base_visits) * v, z = t1 - s;
    if (z < 0) {
      std::cout << "  k=" << k << ": skipped (the service time alone exceeds one client's "
                << t1 << " us per request)\n";
      continue;
    }
    const double knee = m * (z + s) / s, knee_base = m * (z + s_base) / s_base;
    std::cout << "  k=" << k << ": Z=" << z << " us, S=" << s << " / " << s_base
              << " us, knee at " << knee << " / " << knee_base << " clients; KTPS";
    for (std::uint64_t c : opt.clients) {
      const double cc = static_cast<double>(c);
      const double x = 1e3 * std::min(cc / (z + s), m / s);
      const double xb = 1e3 * std::min(cc / (z + s_base), m / s_base);
      out << w.n << ',' << w.height << ',' << theta << ',' << reads << ',' << opt.eth_servers << ','
          << k << ',' << v << ',' << z << ',' << visits << ',' << base_visits << ',' << s << ','
          << s_base << ',' << knee << ',' << knee_base << ',' << c << ',' << x << ',' << xb << ','
          << x / xb << ',';
      if (c == 1) out << kPaperEth1Ktps << ',' << kPaperEth1BaseKtps;
      if (c == 16) out << kPaperEth16Ktps << ',' << kPaperEth16BaseKtps;
      if (c != 1 && c != 16) out << ',';
      out << '\n';
      std::cout << std::setprecision(1) << " c" << c << "=" << x << "/" << xb << std::setprecision(3);
    }
    std::cout << "\n";
  }
  out.flush();
  std::cout << std::defaultfloat << std::setprecision(6);
}

std::string path(const Options& opt, const std::string& base) { return opt.out + "/" + base + ".csv"; }

void print_world(const World& w) {
  std::vector<std::size_t> per_level(w.height, 0);
  for (const auto& n : w.tree.table) ++per_level[n.interval.level];
  std::cout << "tree  n=" << w.n << " (16-branch: leaf 16, fanout 16) height=" << w.height << " (";
  for (int l = w.height - 1; l >= 0; --l) {
    std::cout << "L" << l << "=" << per_level[static_cast<std::size_t>(l)] << (l > 0 ? " " : "");
  }
  std::cout << ")  build " << std::setprecision(3) << w.build_s << " s" << std::setprecision(6)
            << "\n";
}

// ---------------------------------------------------------------------------
// Measured on the engine: OffloadManager over the registered fattree backend.

int engine(const Options& opt, const Rtt& rtt) {
  const auto t0 = Clock::now();
  const std::uint64_t n = opt.engine_keys;
  const std::vector<Word> words = random_words(n, opt.seed);
  auto tree = forein::Tree::create(std::make_unique<forein::MemoryPageStore>());
  {
    std::vector<std::pair<std::string, std::string>> sorted;
    sorted.reserve(n);
    for (Word w : words) sorted.emplace_back(forein::encode_word(w), value_bytes(~w));
    tree->bulk_load(sorted);
  }
  const int H = tree->height();
  std::size_t tree_nodes = 0, leaves = 0;
  tree->for_each_node([&](const forein::NodeInterval& iv) {
    ++tree_nodes;
    leaves += iv.level == 0;
  });
  const auto perm = rank_permutation(n, opt.seed);
  forein::testing::ZipfGenerator gen(n, 0.99);

  off::ManualClock clock;
  off::BackendConfig config;
  config.set("fat_root_ranges", 600).set("layer_nodes", 3600).set("cached_layers", 3);
  config.budget = ft::kCapacity;
  off::Backend backend(off::backend_by_name("fattree"), config);
  off::ManagerOptions mo;
  mo.sample_rate = 1;
  mo.clock = &clock;
  off::OffloadManager manager(backend, mo);
  manager.attach(*tree);
  std::mt19937_64 trng(opt.seed * 1000003 + 901);
  for (std::uint64_t s = 0; s < opt.train; ++s) manager.record_access(words[perm[gen(trng)]]);
  manager.refresh();
  manager.flush();
  const off::BackendUsage usage = backend.usage();

  std::mt19937_64 qrng(opt.seed * 1000003 + 902);
  std::vector<std::string> keys(opt.engine_ops);
  for (auto& k : keys) k = forein::encode_word(words[perm[gen(qrng)]]);
  std::vector<forein::StartHints> hints(keys.size());
  const auto th = Clock::now();
  for (std::size_t i = 0; i < keys.size(); ++i) hints[i] = manager.hint(keys[i]);
  const double hint_ns = seconds_since(th) * 1e9 / static_cast<double>(keys.size());
  // Levels resolved in the network, from the hints the lookups get.
  double resolved = 0;
  std::uint64_t leaf_hints = 0;
  for (const auto& h : hints) {
    const int level = h.primary.present() ? h.primary.level : H - 1;
    resolved += (H - 1) - level;
    leaf_hints += h.primary.present() && h.primary.level == 0;
  }
  resolved /= static_cast<double>(hints.size());
  const double setup_s = seconds_since(t0);

  enum { kRoot, kHost, kInproc, kModes };
  const char* names[kModes] = {"root", "host", "inproc"};
  std::vector<double> mops[kModes];
  forein::TreeStats stats[kModes];
  std::string value;
  for (int rep = 0; rep < opt.reps; ++rep) {
    for (int j = 0; j < kModes; ++j) {
      const int mode = (rep + j) % kModes;
      std::uint64_t found = 0;
      const double s = bench::timed_pass(*tree, keys, mode == kHost ? &hints : nullptr,
                                         mode == kInproc ? &manager : nullptr, &value, &found);
      if (found != keys.size()) throw std::runtime_error(std::string("engine: lookups missed keys in mode ") + names[mode]);
      mops[mode].push_back(static_cast<double>(keys.size()) / s / 1e6);
      stats[mode] = tree->stats();
    }
  }
  manager.detach();
  auto per_op = [](std::uint64_t a, std::uint64_t ops) {
    return ops ? static_cast<double>(a) / static_cast<double>(ops) : 0.0;
  };
  auto ratios = [&](int a) {
    std::vector<double> r;
    for (std::size_t i = 0; i < mops[a].size(); ++i) r.push_back(mops[a][i] / mops[kRoot][i]);
    return r;
  };
  const double lat = (H - resolved + 1) * rtt.us, base = (H + 1) * rtt.us;
  auto csv = open_csv(path(opt, "engine"));
  csv << "keys,page_size,height,tree_nodes,leaves,zipf,train,ops,reps,switch_used,switch_capacity,"
         "mean_resolved,frac_leaf_hints,hint_ns,root_nodes_per_op,host_nodes_per_op,"
         "host_hint_hits_per_op,host_fallbacks_per_op,root_mops,host_mops,inproc_mops,"
         "speedup_host,speedup_host_min,speedup_host_max,speedup_inproc,speedup_inproc_min,"
         "speedup_inproc_max,model_rdma_latency_us,model_rdma_base_us,model_rdma_reduction\n";
  const auto rh = ratios(kHost), ri = ratios(kInproc);
  csv << n << ',' << forein::kDefaultPageSize << ',' << H << ',' << tree_nodes << ',' << leaves
      << ",0.99," << opt.train << ',' << keys.size() << ',' << opt.reps << ',' << usage.used << ','
      << usage.capacity << ',' << resolved << ','
      << static_cast<double>(leaf_hints) / static_cast<double>(keys.size()) << ',' << hint_ns << ','
      << per_op(stats[kRoot].nodes_visited, stats[kRoot].operations) << ','
      << per_op(stats[kHost].nodes_visited, stats[kHost].operations) << ','
      << per_op(stats[kHost].hint_hits, stats[kHost].operations) << ','
      << per_op(stats[kHost].fallbacks, stats[kHost].operations) << ',' << median(mops[kRoot])
      << ',' << median(mops[kHost]) << ',' << median(mops[kInproc]) << ',' << median(rh) << ','
      << *std::min_element(rh.begin(), rh.end()) << ',' << *std::max_element(rh.begin(), rh.end())
      << ',' << median(ri) << ',' << *std::min_element(ri.begin(), ri.end()) << ','
      << *std::max_element(ri.begin(), ri.end()) << ',' << lat << ',' << base << ','
      << 1 - lat / base << '\n';
  std::cout << std::setprecision(4) << "engine n=" << n << " (8 KiB pages, bulk 90%) height=" << H
            << " nodes=" << tree_nodes << " leaves=" << leaves << " switch used " << usage.used
            << "/" << usage.capacity << "\n  resolved levels " << resolved << " of " << H
            << " (leaf hints " << 100.0 * static_cast<double>(leaf_hints) / static_cast<double>(keys.size())
            << "%), hint " << hint_ns << " ns\n  nodes/op root "
            << per_op(stats[kRoot].nodes_visited, stats[kRoot].operations) << " -> hinted "
            << per_op(stats[kHost].nodes_visited, stats[kHost].operations) << " (hits "
            << per_op(stats[kHost].hint_hits, stats[kHost].operations) << ", fallbacks "
            << per_op(stats[kHost].fallbacks, stats[kHost].operations) << ")\n  Mops root/host/inproc "
            << median(mops[kRoot]) << " / " << median(mops[kHost]) << " / " << median(mops[kInproc])
            << "  speedup host " << median(rh) << " inproc " << median(ri) << "  (medians of "
            << opt.reps << ")\n  model RDMA latency " << lat << " us vs " << base << " us  [setup "
            << setup_s << " s]\n"
            << std::setprecision(6);
  return 0;
}

// ---------------------------------------------------------------------------

int run(const Options& opt) {
  const auto t_all = Clock::now();
  std::cout << "seed " << opt.seed << " (rerun with FOREIN_SEED=" << opt.seed << " or --seed "
            << opt.seed << ")\n";
  const bool all = opt.command == "all";
  auto want = [&](const char* c) { return all || opt.command == c; };
  const Rtt rtt = round_trip(opt);
  std::cout << "RDMA round trip " << rtt.us << " us (" << rtt.source << ")\n";

  if (want("rdma-scale")) {
    std::cout << "== rdma-scale (paper Fig 5: 27.5-46.7 us vs 112.6-129.0 us)\n";
    auto csv = open_csv(path(opt, "rdma_scale"));
    csv << kRdmaHeader << '\n';
    for (std::uint64_t n : opt.scales) {
      World w = make_world(n, opt);
      print_world(w);
      const auto s = rdma_settings();
      rdma_row(csv, w, evaluate(w, w.perm, w.perm, 0.99, s, opt, 1), 0.99, 0, s, rtt, "scale");
    }
  }
  if (want("rdma-drift") || want("rdma-nodes") || want("rdma-layers")) {
    World w = make_world(opt.keys, opt);
    print_world(w);
    if (want("rdma-drift")) {
      std::cout << "== rdma-drift (paper Fig 6: 32.9 -> 44.9 us, baseline ~113 us)\n";
      auto csv = open_csv(path(opt, "rdma_drift"));
      csv << kRdmaHeader << '\n';
      for (double f : {0.0, 0.2, 0.4, 0.6, 0.8, 1.0}) {
        const auto q = drifted(w.perm, f, opt.seed);
        const auto s = rdma_settings();
        std::ostringstream label;
        label << "drift " << f;
        rdma_row(csv, w, evaluate(w, w.perm, q, 0.99, s, opt, 2), 0.99, f, s, rtt, label.str());
      }
    }
    // One RDMA plan setting varied over `values` (Fig 8: nodes per layer;
    // Fig 9: cached layers), everything else at the defaults.
    auto sweep = [&](const char* banner, const char* csv_name, std::uint32_t ft::PlanSettings::*field,
                     const std::vector<std::uint32_t>& values, std::uint64_t salt, const char* label) {
      std::cout << banner << '\n';
      auto csv = open_csv(path(opt, csv_name));
      csv << kRdmaHeader << '\n';
      for (std::uint32_t v : values) {
        auto s = rdma_settings();
        s.*field = v;
        rdma_row(csv, w, evaluate(w, w.perm, w.perm, 0.99, s, opt, salt), 0.99, 0, s, rtt,
                 label + std::to_string(v));
      }
    };
    if (want("rdma-nodes")) {
      sweep("== rdma-nodes (paper Fig 8: 45.6 -> 32.7 us for 300 -> 3,900 nodes)", "rdma_nodes",
            &ft::PlanSettings::layer_nodes, {300, 900, 1500, 2100, 2700, 3300, 3900}, 3, "nodes ");
    }
    if (want("rdma-layers")) {
      sweep("== rdma-layers (paper Fig 9: 74.1 -> 32.8 us for 0 -> 3 layers)", "rdma_layers",
            &ft::PlanSettings::layers, {0, 1, 2, 3}, 4, "layers ");
    }
  }
  if (want("eth-scale")) {
    std::cout << "== eth-scale (paper Fig 10a: up to 1.35x; 679.8/557.1 .. 566.0/437.2 KTPS)\n";
    auto csv = open_csv(path(opt, "eth_scale"));
    csv << eth_header(opt) << '\n';
    for (std::uint64_t n : opt.eth_scales) {
      World w = make_world(n, opt);
      print_world(w);
      const auto s = eth_settings();
      eth_row(csv, w, evaluate(w, w.perm, w.perm, 0.99, s, opt, 5), 0.99, 0.9, s, opt, 1.35, "scale");
    }
  }
  if (want("eth-rw") || want("eth-skew") || want("eth-clients")) {
    World w = make_world(opt.eth_keys, opt);
    print_world(w);
    const auto s = eth_settings();
    if (want("eth-rw")) {
      std::cout << "== eth-rw (paper Fig 10c: up to 1.35x; 413.7..613.2 vs 363.0..451.9 KTPS)\n";
      auto csv = open_csv(path(opt, "eth_rw"));
      csv << eth_header(opt) << '\n';
      const Eval e = evaluate(w, w.perm, w.perm, 0.99, s, opt, 6);
      for (double r : {0.5, 0.6, 0.7, 0.8, 0.9, 1.0}) {
        std::ostringstream label;
        label << "reads " << r;
        eth_row(csv, w, e, 0.99, r, s, opt, 1.35, label.str());
      }
    }
    if (want("eth-skew")) {
      std::cout << "== eth-skew (paper Fig 10d: 521.0/417.7 .. 583.1/442.8 KTPS, up to 1.32x)\n";
      auto csv = open_csv(path(opt, "eth_skew"));
      csv << eth_header(opt) << '\n';
      const double paper[] = {521.0 / 417.7, 0, 583.1 / 442.8};
      int i = 0;
      for (double theta : {0.9, 0.95, 0.99}) {
        eth_row(csv, w, evaluate(w, w.perm, w.perm, theta, s, opt, 7), theta, 0.9, s, opt,
                paper[i++], "skew");
      }
    }
    if (want("eth-clients")) {
      std::cout << "== eth-clients (paper Fig 10b: 52.0 -> 583.1 vs 47.7 -> 442.8 KTPS for 1 -> 16 "
                   "clients)\n";
      auto csv = open_csv(path(opt, "eth_clients"));
      eth_clients(csv, w, evaluate(w, w.perm, w.perm, 0.99, s, opt, 8), 0.99, 0.9, opt);
    }
  }
  if (want("engine")) {
    std::cout << "== engine (measured: OffloadManager over backend fattree)\n";
    engine(opt, rtt);
  }
  std::cout << "total " << std::setprecision(3) << seconds_since(t_all) << " s\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return forein::bench::guarded_main("fattree_experiments", argc, argv, parse, run);
}

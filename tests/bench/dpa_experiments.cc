// DPA-Store's section 4 on the dpa backend's store (docs/dpa.md), run by
// tests/bench/run_dpa_experiments.sh.
//
// Everything here is the MODEL: the store (offload/backends/dpa/store/)
// really runs every operation -- descends its NIC-side tree, scans insert
// buffers, patches and stitches -- and counts the DPA lines, L3 lines, host
// DMAs and stitched bytes each one made; forein/dpa/model.h turns those counts
// into the paper's latency and throughput (4.2.6: 176 traversers / t; writes
// also bounded by 120 MB/s of host-to-DPA stitching, 4.2.7-4.2.8). Nothing
// is timed on this machine's CPU except how long the run takes.
//
// Experiments (CSV per experiment in --out):
//   ops       GET, RANGE (10 keys), INSERT, UPDATE-only (paper: 33 / 13 /
//             <= 1.7 / 12.1 Mops)
//   ycsb      YCSB A-F, uniform keys (4.3)
//   hot       GET with the hot-entry cache on/off, uniform and Zipf 0.99
//             (4.2.4: up to +30 %)
//   eps       leaf and inner error bound sweeps (4.2.4)
//   threads   traverser count 1..189 (4.2.2)
//   memory    DPA memory per data set beside Table 1 (50M keys)
//   qdepth    client queue depth 1..64 vs throughput and response time
//             (4.2.3), by the thread/queue model (thread_model.h)
// and with ops, latency.csv: each operation's latency at low load and at
// the paper's queue depth.
//
// Every operation is routed to its key's traverser (traverser_of, 3.1);
// the thread model counts each thread's busy time, the clients' moving of
// GETs off overwhelmed threads (3.1.3) and the card's packet ceiling
// (B3140L, 44.9 Mops, 4.2.9).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "bench/bench_common.h"
#include "dpa/datasets.h"
#include "forein/dpa/model.h"
#include "forein/dpa/store.h"
#include "forein/dpa/thread_model.h"
#include "support/zipf.h"

namespace {

using forein::bench::Clock;
using forein::bench::seconds_since;
using forein::testing::Dataset;
namespace dpa = forein::offload::dpa;

struct Options {
  std::uint64_t keys = 2'000'000;         // bulk-loaded keys per store
  std::uint64_t ops = 200'000;            // operations per point
  std::uint64_t memory_keys = 10'000'000; // keys for the DPA memory experiment
  std::string out = "docs/bench/dpa";
  std::vector<std::string> experiments = {"ops", "ycsb", "hot", "eps", "threads", "memory", "qdepth"};
  std::vector<std::string> datasets = {"sparse", "books", "lognormal"};
  std::uint64_t seed = 42;
};

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "dpa_experiments: " << why << "\n"
            << "usage: dpa_experiments [--smoke] [--keys N] [--ops N] [--memory-keys N] [--out DIR]\n"
            << "                       [--experiments ops,ycsb,hot,eps,threads,memory,qdepth]\n"
            << "                       [--datasets sparse,books,lognormal,...] [--seed N]\n"
            << "  --smoke: 100,000 keys, 20,000 ops per point, 200,000 keys for memory (about 30 s)\n";
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) usage(a + " needs a value");
      return argv[++i];
    };
    auto number = [&]() -> std::uint64_t {
      const std::string v = next();
      try {
        std::size_t used = 0;
        const std::uint64_t n = std::stoull(v, &used);
        if (used != v.size()) usage("bad number '" + v + "' for " + a);
        return n;
      } catch (const std::exception&) {
        usage("bad number '" + v + "' for " + a);
      }
    };
    auto list = [&]() { return forein::bench::parse_list<std::string>(next(), a, [](const std::string& m) { usage(m); }); };
    if (a == "--smoke") {
      o.keys = 100'000;
      o.ops = 20'000;
      o.memory_keys = 200'000;
    } else if (a == "--keys") {
      o.keys = number();
    } else if (a == "--ops") {
      o.ops = number();
    } else if (a == "--memory-keys") {
      o.memory_keys = number();
    } else if (a == "--out") {
      o.out = next();
    } else if (a == "--experiments") {
      o.experiments = list();
    } else if (a == "--datasets") {
      o.datasets = list();
    } else if (a == "--seed") {
      o.seed = number();
    } else {
      usage("unknown flag " + a);
    }
  }
  if (o.keys < 1000) usage("--keys must be at least 1000");
  if (o.ops < 100) usage("--ops must be at least 100");
  for (const auto& d : o.datasets) {
    if (!forein::testing::dataset_by_name(d)) usage("unknown data set " + d);
  }
  for (const auto& e : o.experiments) {
    static const std::vector<std::string> known = {"ops", "ycsb", "hot", "eps", "threads", "memory", "qdepth"};
    if (std::find(known.begin(), known.end(), e) == known.end()) usage("unknown experiment " + e);
  }
  return o;
}

bool wants(const Options& o, const std::string& e) {
  return std::find(o.experiments.begin(), o.experiments.end(), e) != o.experiments.end();
}

std::uint64_t mix64(std::uint64_t z) {
  z ^= z >> 30;
  z *= 0xbf58476d1ce4e5b9ULL;
  z ^= z >> 27;
  z *= 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::uint64_t value_of(std::uint64_t key) { return mix64(key ^ 0x5bd1e995u); }

// A data set split into the bulk-loaded keys and held-out keys for
// INSERTs (every 11th key: inserts follow the data set's distribution).
struct KeySet {
  std::vector<std::uint64_t> loaded;
  std::vector<std::uint64_t> held_out;  // shuffled
};

KeySet make_keys(Dataset d, std::uint64_t n, std::uint64_t seed) {
  const std::uint64_t total = n + n / 10;
  const auto all = forein::testing::make_dataset(d, total, seed);
  KeySet ks;
  ks.loaded.reserve(n);
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (i % 11 == 10 && ks.held_out.size() < total - n) {
      ks.held_out.push_back(all[i]);
    } else {
      ks.loaded.push_back(all[i]);
    }
  }
  std::mt19937_64 rng(seed ^ 0x1234);
  std::shuffle(ks.held_out.begin(), ks.held_out.end(), rng);
  return ks;
}

std::unique_ptr<dpa::Store> load_store(const std::vector<std::uint64_t>& keys, dpa::StoreOptions so) {
  std::vector<dpa::KV> pairs(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) pairs[i] = {keys[i], value_of(keys[i])};
  auto s = std::make_unique<dpa::Store>(so);
  s->bulk_load(pairs);
  return s;
}

// What a run of operations cost, thread by thread, and the model's figures for it.
struct Tally {
  explicit Tally(std::size_t traversers = dpa::kTraverserThreads) : load(traversers) {}
  dpa::ThreadLoad load;
  std::uint64_t misses = 0;  // GETs of loaded keys that found nothing (must stay 0)
  // One request for `key`, on the thread its key hashes to (3.1); GETs
  // may be moved by clients off an overwhelmed thread (3.1.3).
  void add(std::uint64_t key, const dpa::OpCost& c, bool is_get = false) {
    load.add(dpa::traverser_of(key, load.traversers()), c, is_get);
  }
  const dpa::OpCost& cost() const { return load.total(); }
  std::uint64_t ops() const { return load.ops(); }
};

// Stitching is the store's, per patch, not per operation: the bytes,
// commands and lines are amortized over the run (op_cost.h), after a flush.
void add_stitches(dpa::Store& s, const dpa::StoreStats& before, Tally* t) {
  s.flush();
  t->load.add_unrouted(dpa::stitcher_work(before, s.stats()));
}

dpa::ModelFigures figures(const Tally& t) { return dpa::model_figures(t.load); }

double per_op(std::uint64_t x, std::uint64_t ops) { return ops ? static_cast<double>(x) / ops : 0; }

void check_misses(const Tally& t, const std::string& what) {
  if (t.misses != 0) {
    throw std::runtime_error(what + ": " + std::to_string(t.misses) + " GETs of present keys found nothing");
  }
}

// The key a uniform or Zipf draw picks among n loaded keys (Zipf ranks
// scattered over the key space by a hash, so hot keys are not neighbours).
struct KeyPicker {
  const std::vector<std::uint64_t>* keys;
  std::unique_ptr<forein::testing::ZipfGenerator> zipf;
  std::uint64_t pick(std::mt19937_64& rng) {
    const std::uint64_t n = keys->size();
    if (!zipf) return (*keys)[rng() % n];
    return (*keys)[mix64((*zipf)(rng)) % n];
  }
};

KeyPicker uniform_picker(const std::vector<std::uint64_t>& keys) { return KeyPicker{&keys, nullptr}; }

// Each traverser's share of the requests a picker makes: the keys' hash
// shares (uniform), or the Zipf law's weights (r + 1)^-0.99 of the ranks
// that land on each thread's keys (the generator approximates that law).
// The thread model then weighs each thread by its share, not by how many
// of a finite sample's requests it happened to get.
std::vector<double> shares(const KeyPicker& p, std::size_t traversers) {
  std::vector<double> s(traversers, 0);
  const auto& keys = *p.keys;
  double total = 0;
  for (std::uint64_t r = 0; r < keys.size(); ++r) {
    const double w = p.zipf ? std::pow(static_cast<double>(r + 1), -0.99) : 1.0;
    const std::uint64_t key = p.zipf ? keys[mix64(r) % keys.size()] : keys[r];
    s[dpa::traverser_of(key, traversers)] += w;
    total += w;
  }
  for (double& x : s) x /= total;
  return s;
}
KeyPicker zipf_picker(const std::vector<std::uint64_t>& keys) {
  return KeyPicker{&keys, std::make_unique<forein::testing::ZipfGenerator>(keys.size(), 0.99)};
}

Tally run_gets(dpa::Store& s, KeyPicker& p, std::uint64_t ops, std::mt19937_64& rng,
               const std::vector<double>& thread_shares) {
  Tally t(thread_shares.size());
  t.load.set_shares(thread_shares);
  for (std::uint64_t i = 0; i < ops; ++i) {
    const std::uint64_t k = p.pick(rng);
    dpa::OpCost c;
    const auto v = s.get(k, &c);
    if (!v) ++t.misses;
    t.add(k, c, true);
  }
  return t;
}

std::string fmt(double x, int prec = 3) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", prec, x);
  return b;
}

void print_row(const std::string& label, const Tally& t, const dpa::ModelFigures& f, const std::string& note) {
  std::printf("  %-28s %8s Mops  %7s us  lines %5.2f  l3 %4.2f  dmas %4.2f  stitched %7.1f B/op  [%s]%s\n",
              label.c_str(), fmt(f.ops_per_second / 1e6, 2).c_str(), fmt(f.latency_ns / 1e3, 2).c_str(),
              per_op(t.cost().dpa_lines, t.ops()), per_op(t.cost().l3_lines, t.ops()), per_op(t.cost().dmas, t.ops()),
              per_op(t.cost().stitched_bytes, t.ops()), f.bottleneck.c_str(), note.empty() ? "" : ("  " + note).c_str());
  if (f.imbalance > 1.05 || f.spilled_fraction > 0.001) {
    std::printf("  %-28s owners only %.2f Mops (busiest thread %.2fx the mean), %.1f %% of GETs moved (3.1.3)\n", "",
                f.owner_bound / 1e6, f.imbalance, f.spilled_fraction * 100);
  }
  std::fflush(stdout);
}

const char* kCostHeader = "ops,dpa_lines_per_op,l3_lines_per_op,dmas_per_op,stitched_bytes_per_op,stitch_commands_per_op,latency_us,traverser_mops,stitch_mops,stitcher_mops,packet_mops,owner_mops,imbalance,spilled_pct,mops,bottleneck";

std::string cost_cols(const Tally& t, const dpa::ModelFigures& f) {
  const double stitch = std::isinf(f.stitch_bound) ? -1 : f.stitch_bound / 1e6;
  const double stitcher = std::isinf(f.stitcher_bound) ? -1 : f.stitcher_bound / 1e6;
  const auto& c = t.cost();
  const auto n = t.ops();
  return std::to_string(n) + "," + fmt(per_op(c.dpa_lines, n), 4) + "," + fmt(per_op(c.l3_lines, n), 4) + "," +
         fmt(per_op(c.dmas, n), 4) + "," + fmt(per_op(c.stitched_bytes, n), 2) + "," +
         fmt(per_op(c.stitch_commands, n), 4) + "," + fmt(f.latency_ns / 1e3, 4) + "," +
         fmt(f.traverser_bound / 1e6, 4) + "," + fmt(stitch, 4) + "," + fmt(stitcher, 4) + "," +
         fmt(f.packet_bound / 1e6, 4) + "," + fmt(f.owner_bound / 1e6, 4) + "," + fmt(f.imbalance, 4) + "," +
         fmt(f.spilled_fraction * 100, 3) + "," + fmt(f.ops_per_second / 1e6, 4) + "," + f.bottleneck;
}

void describe_store(const dpa::Store& s) {
  const auto st = s.stats();
  std::printf("  store: %llu keys, %llu leaves, %llu inner nodes, depth %llu, DPA %.1f MB\n",
              static_cast<unsigned long long>(st.keys), static_cast<unsigned long long>(st.leaves),
              static_cast<unsigned long long>(st.inner_nodes), static_cast<unsigned long long>(st.depth),
              static_cast<double>(st.dpa_bytes) / 1e6);
}

// The paper's clients' requests in flight at a queue depth (4.2.3).
std::uint64_t paper_in_flight(std::size_t queue_depth) {
  return dpa::kClientNodes * dpa::kClientThreadsPerNode * queue_depth;
}

// Response time (us) at `queue_depth` by the queue model, the throughput
// capped by the model's other bounds (stitching): Little's law.
double response_us_at(const Tally& t, const dpa::ModelFigures& f, std::size_t queue_depth, std::size_t pairs) {
  const std::uint64_t n = paper_in_flight(queue_depth);
  const auto pts = dpa::queue_sweep(t.load, {n}, dpa::wire_ns(pairs));
  const double x = std::min(pts.front().ops_per_second, f.ops_per_second);
  return static_cast<double>(n) / x * 1e6;
}

// ---- ops: GET, RANGE, INSERT, UPDATE-only ----
void experiment_ops(const Options& o, std::ofstream& csv) {
  csv << "dataset,op,depth," << kCostHeader << ",paper_mops\n";
  auto lat = forein::bench::open_csv(o.out + "/latency.csv");
  lat << "dataset,op,response_pairs,dpa_us,packet_us,wire_us,low_load_us,paper_queue_depth,in_flight,"
         "response_us_at_paper_qd,mops\n";
  std::puts("== ops: GET, RANGE (10 keys), INSERT, UPDATE-only (model; paper 4.2.4/4.2.8/4.3)");
  for (const auto& dn : o.datasets) {
    const Dataset d = *forein::testing::dataset_by_name(dn);
    const auto t0 = Clock::now();
    KeySet ks = make_keys(d, o.keys, o.seed);
    dpa::StoreOptions so;
    so.seed = o.seed;
    so.hot_cache = false;  // uniform keys: the paper's runs gain nothing from it; measured in "hot"
    auto s = load_store(ks.loaded, so);
    std::printf(" %s (%llu keys, loaded in %.1f s)\n", dn.c_str(), static_cast<unsigned long long>(ks.loaded.size()),
                seconds_since(t0));
    describe_store(*s);
    const auto depth = s->stats().depth;
    std::mt19937_64 rng(o.seed);
    // pairs: in the response; queue depth: the paper's for the op (4.2.3).
    auto row = [&](const std::string& op, const Tally& t, const char* paper, std::size_t pairs, std::size_t qd) {
      const auto f = figures(t);
      print_row(op, t, f, std::string("paper: ") + paper);
      csv << dn << "," << op << "," << depth << "," << cost_cols(t, f) << "," << paper << "\n";
      const auto l = dpa::low_load_latency(t.load, pairs);
      const double at_qd = response_us_at(t, f, qd, pairs);
      std::printf("  %-28s latency: %.2f us alone (DPA %.2f + packet engine %.3f + wire %.3f), %.0f us at queue "
                  "depth %zu (%llu in flight)\n",
                  "", l.total_ns() / 1e3, l.dpa_ns / 1e3, l.packet_ns / 1e3, l.wire_ns / 1e3, at_qd, qd,
                  static_cast<unsigned long long>(paper_in_flight(qd)));
      lat << dn << "," << op << "," << pairs << "," << fmt(l.dpa_ns / 1e3, 4) << "," << fmt(l.packet_ns / 1e3, 4)
          << "," << fmt(l.wire_ns / 1e3, 4) << "," << fmt(l.total_ns() / 1e3, 4) << "," << qd << ","
          << paper_in_flight(qd) << "," << fmt(at_qd, 2) << "," << fmt(f.ops_per_second / 1e6, 4) << "\n";
    };
    KeyPicker uni = uniform_picker(ks.loaded);
    const std::vector<double> uni_shares = shares(uni, dpa::kTraverserThreads);
    {
      const Tally t = run_gets(*s, uni, o.ops, rng, uni_shares);
      check_misses(t, dn + " GET");
      row("GET", t, "33", 1, dpa::kGetQueueDepth);
    }
    {
      Tally t;
      t.load.set_shares(uni_shares);
      for (std::uint64_t i = 0; i < o.ops; ++i) {
        dpa::OpCost c;
        const std::uint64_t k = uni.pick(rng);
        const auto r = s->range(k, 10, &c);
        if (r.pairs.empty()) ++t.misses;
        t.add(k, c);
      }
      check_misses(t, dn + " RANGE");
      row("RANGE10", t, "13", 10, dpa::kRangeInsertQueueDepth);
    }
    {
      // Steady state first: a leaf's buffer patches once per 16 updates, but
      // a short run over many leaves would leave most buffers part full and
      // their RESETs uncounted. Unmeasured updates until every leaf has had
      // a buffer's worth on average.
      const std::uint64_t warm = s->stats().leaves * s->options().insert_buffer;
      for (std::uint64_t i = 0; i < warm; ++i) s->update(uni.pick(rng), i);
      s->flush();
      const auto before = s->stats();
      Tally t;
      t.load.set_shares(uni_shares);
      for (std::uint64_t i = 0; i < o.ops; ++i) {
        dpa::OpCost c;
        const std::uint64_t k = uni.pick(rng);
        s->update(k, i, &c);
        t.add(k, c);
      }
      add_stitches(*s, before, &t);
      // The paper names no queue depth for UPDATE; its write workloads' 18.
      row("UPDATE", t, "12.1", 1, dpa::kRangeInsertQueueDepth);
    }
    {
      const auto before = s->stats();
      Tally t;  // every held-out key once: the sample is the distribution
      const std::uint64_t n = std::min<std::uint64_t>(o.ops, ks.held_out.size());
      for (std::uint64_t i = 0; i < n; ++i) {
        dpa::OpCost c;
        s->insert(ks.held_out[i], value_of(ks.held_out[i]), &c);
        t.add(ks.held_out[i], c);
      }
      add_stitches(*s, before, &t);
      row("INSERT", t, "<=1.7", 1, dpa::kRangeInsertQueueDepth);
      const auto st = s->stats();
      std::printf("  after writes: %llu patches (%llu update-only), %llu leaf / %llu inner / %llu root splits, "
                  "%llu COPY stitches, %.1f MB stitched, depth %llu\n",
                  static_cast<unsigned long long>(st.patches), static_cast<unsigned long long>(st.update_only_patches),
                  static_cast<unsigned long long>(st.leaf_splits), static_cast<unsigned long long>(st.inner_splits),
                  static_cast<unsigned long long>(st.root_splits), static_cast<unsigned long long>(st.copy_stitches),
                  static_cast<double>(st.stitched_bytes) / 1e6, static_cast<unsigned long long>(st.depth));
    }
    const std::string problems = s->check();
    if (!problems.empty()) throw std::runtime_error(dn + ": store check failed: " + problems);
  }
}

// ---- ycsb: A-F, uniform ----
void experiment_ycsb(const Options& o, std::ofstream& csv) {
  csv << "dataset,workload,mix," << kCostHeader << "\n";
  std::puts("== YCSB A-F, uniform keys (model; paper 4.3, Figure 15)");
  struct Workload {
    const char* name;
    const char* mix;
    double read, update, insert, range, rmw;
  };
  // Run in YCSB's recommended order: the inserting workloads (D, E) last.
  const std::vector<Workload> workloads = {
      {"A", "50% GET / 50% UPDATE", 0.5, 0.5, 0, 0, 0},
      {"B", "95% GET / 5% UPDATE", 0.95, 0.05, 0, 0, 0},
      {"C", "100% GET", 1.0, 0, 0, 0, 0},
      {"F", "50% GET / 50% read-modify-write", 0.5, 0, 0, 0, 0.5},
      {"D", "95% GET (latest) / 5% INSERT", 0.95, 0, 0.05, 0, 0},
      {"E", "95% RANGE (10) / 5% INSERT", 0, 0, 0.05, 0.95, 0},
  };
  for (const auto& dn : o.datasets) {
    const Dataset d = *forein::testing::dataset_by_name(dn);
    KeySet ks = make_keys(d, o.keys, o.seed);
    dpa::StoreOptions so;
    so.seed = o.seed;
    so.hot_cache = false;
    auto s = load_store(ks.loaded, so);
    std::printf(" %s\n", dn.c_str());
    std::mt19937_64 rng(o.seed + 7);
    KeyPicker uni = uniform_picker(ks.loaded);
    // YCSB's "latest": Zipf over recency (the newest insert is rank 0);
    // ranks past the inserts fall on loaded keys.
    forein::testing::ZipfGenerator latest(ks.loaded.size() + ks.held_out.size(), 0.99);
    const std::vector<double> uni_shares = shares(uni, dpa::kTraverserThreads);
    std::size_t inserted = 0;
    for (const auto& w : workloads) {
      const auto before = s->stats();
      Tally t;
      // The uniform keys' thread shares (inserts: 5 % of D and E, held-out
      // keys of the same distribution); D's "latest" GETs: as sampled.
      if (w.name[0] != 'D') t.load.set_shares(uni_shares);
      std::uniform_real_distribution<double> u(0, 1);
      for (std::uint64_t i = 0; i < o.ops; ++i) {
        const double x = u(rng);
        dpa::OpCost c;
        std::uint64_t k = 0;
        bool is_get = false;
        if (x < w.read) {
          if (w.name[0] == 'D') {
            const std::uint64_t r = latest(rng);
            k = r < inserted ? ks.held_out[inserted - 1 - r] : ks.loaded[mix64(r) % ks.loaded.size()];
          } else {
            k = uni.pick(rng);
          }
          if (!s->get(k, &c)) ++t.misses;
          is_get = true;
        } else if (x < w.read + w.update) {
          k = uni.pick(rng);
          s->update(k, i, &c);
        } else if (x < w.read + w.update + w.insert) {
          if (inserted < ks.held_out.size()) {
            k = ks.held_out[inserted++];
            s->insert(k, value_of(k), &c);
          } else {
            k = uni.pick(rng);
            s->update(k, i, &c);  // held-out keys used up (tiny runs)
          }
        } else if (x < w.read + w.update + w.insert + w.range) {
          k = uni.pick(rng);
          const auto r = s->range(k, 10, &c);
          if (r.pairs.empty()) ++t.misses;
        } else {  // read-modify-write: one GET and one UPDATE, one YCSB operation, one thread
          k = uni.pick(rng);
          const auto v = s->get(k, &c);
          if (!v) ++t.misses;
          s->update(k, v.value_or(0) + 1, &c);
        }
        t.add(k, c, is_get);
      }
      add_stitches(*s, before, &t);
      check_misses(t, dn + " YCSB " + w.name);
      const auto f = figures(t);
      print_row(std::string("YCSB-") + w.name + " (" + w.mix + ")", t, f, "");
      csv << dn << "," << w.name << ",\"" << w.mix << "\"," << cost_cols(t, f) << "\n";
    }
  }
}

// ---- hot: the hot-entry cache on/off, uniform and Zipf 0.99 ----
void experiment_hot(const Options& o, std::ofstream& csv) {
  csv << "dataset,distribution,hot_cache,hit_ratio," << kCostHeader << ",gain_vs_off_pct,b3220_mops,b3220_bottleneck\n";
  std::puts("== hot-entry cache on/off, GET only (model; paper 4.2.4: up to +30 % under skew)");
  const std::string dn = o.datasets.front();
  KeySet ks = make_keys(*forein::testing::dataset_by_name(dn), o.keys, o.seed);
  std::printf(" %s\n", dn.c_str());
  for (const bool zipf : {false, true}) {
    double off_mops = 0;
    for (const bool on : {false, true}) {
      dpa::StoreOptions so;
      so.seed = o.seed;
      so.hot_cache = on;
      auto s = load_store(ks.loaded, so);
      KeyPicker p = zipf ? zipf_picker(ks.loaded) : uniform_picker(ks.loaded);
      const std::vector<double> thread_shares = shares(p, dpa::kTraverserThreads);
      std::mt19937_64 rng(o.seed + 11);
      // Warm the caches with as many requests as are measured.
      (void)run_gets(*s, p, o.ops, rng, thread_shares);
      const auto before = s->stats();
      const Tally t = run_gets(*s, p, o.ops, rng, thread_shares);
      check_misses(t, dn + " hot");
      const auto after = s->stats();
      const double hit = per_op(after.hot_hits - before.hot_hits, t.ops());
      const auto f = figures(t);
      if (!on) off_mops = f.ops_per_second;
      const double gain = on && off_mops > 0 ? (f.ops_per_second / off_mops - 1) * 100 : 0;
      const std::string label = std::string(zipf ? "Zipf 0.99" : "uniform") + ", cache " + (on ? "on" : "off");
      print_row(label + " (hits " + fmt(hit * 100, 1) + "%)", t, f, on ? "gain " + fmt(gain, 1) + "%" : "");
      // The same run on the B3220: its packet engine 69 % faster (4.2.9).
      dpa::ModelConfig b3220;
      b3220.card = dpa::Card::kB3220;
      const auto g = dpa::model_figures(t.load, b3220);
      std::printf("  %-28s B3220: %.2f Mops [%s]\n", "", g.ops_per_second / 1e6, g.bottleneck.c_str());
      csv << dn << "," << (zipf ? "zipf0.99" : "uniform") << "," << (on ? "on" : "off") << "," << fmt(hit, 4) << ","
          << cost_cols(t, f) << "," << fmt(gain, 2) << "," << fmt(g.ops_per_second / 1e6, 4) << "," << g.bottleneck
          << "\n";
    }
  }
}

// ---- eps: leaf and inner error bounds ----
void experiment_eps(const Options& o, std::ofstream& csv) {
  csv << "dataset,which,eps_inner,eps_leaf,depth,leaves,inner_nodes,dpa_mb," << kCostHeader << "\n";
  std::puts("== error bound sweep, GET only, uniform (model; paper 4.2.4, Figure 11)");
  for (const auto& dn : o.datasets) {
    KeySet ks = make_keys(*forein::testing::dataset_by_name(dn), o.keys, o.seed);
    std::printf(" %s\n", dn.c_str());
    auto point = [&](const char* which, std::uint32_t ei, std::uint32_t el) {
      dpa::StoreOptions so;
      so.seed = o.seed;
      so.hot_cache = false;
      so.epsilon_inner = ei;
      so.epsilon_leaf = el;
      auto s = load_store(ks.loaded, so);
      KeyPicker p = uniform_picker(ks.loaded);
      std::mt19937_64 rng(o.seed + 13);
      const Tally t = run_gets(*s, p, o.ops, rng, shares(p, dpa::kTraverserThreads));
      check_misses(t, dn + " eps");
      const auto f = figures(t);
      const auto st = s->stats();
      print_row(std::string(which) + " eps_inner " + std::to_string(ei) + " eps_leaf " + std::to_string(el) +
                    " depth " + std::to_string(st.depth),
                t, f, "");
      csv << dn << "," << which << "," << ei << "," << el << "," << st.depth << "," << st.leaves << ","
          << st.inner_nodes << "," << fmt(static_cast<double>(st.dpa_bytes) / 1e6, 2) << "," << cost_cols(t, f)
          << "\n";
    };
    for (const std::uint32_t el : {1u, 2u, 4u, 8u, 16u, 32u, 64u}) point("leaf", dpa::kDefaultEpsilonInner, el);
    for (const std::uint32_t ei : {1u, 2u, 4u, 8u, 16u, 32u, 64u}) point("inner", ei, dpa::kDefaultEpsilonLeaf);
  }
}

// ---- threads: traverser count ----
void experiment_threads(const Options& o, std::ofstream& csv) {
  csv << "dataset,traversers," << kCostHeader << ",in_flight,response_us,busiest_queue,rx_overflow\n";
  std::puts("== traverser threads, GET only, uniform (model; paper 4.2.2, Figure 9)");
  std::puts("   each thread's busy time from its own requests; response time at the paper's queue depth 32");
  const std::string dn = o.datasets.front();
  KeySet ks = make_keys(*forein::testing::dataset_by_name(dn), o.keys, o.seed);
  for (const std::size_t n : {1, 2, 4, 8, 16, 32, 64, 96, 128, 160, 176, 189}) {
    dpa::StoreOptions so;
    so.seed = o.seed;
    so.traversers = n;
    so.hot_cache = false;
    auto s = load_store(ks.loaded, so);
    KeyPicker p = uniform_picker(ks.loaded);
    std::mt19937_64 rng(o.seed + 17);
    const Tally t = run_gets(*s, p, std::max<std::uint64_t>(o.ops / 4, 100), rng, shares(p, n));
    check_misses(t, dn + " threads");
    const auto f = figures(t);
    const std::uint64_t in_flight = paper_in_flight(dpa::kGetQueueDepth);
    const auto q = dpa::queue_sweep(t.load, {in_flight}, dpa::wire_ns(1)).front();
    print_row(dn + ", " + std::to_string(n) + " traversers", t, f,
              "at QD 32: " + fmt(q.response_ns / 1e3, 0) + " us, busiest queue " + fmt(q.busiest_queue, 0) +
                  (q.rx_overflow ? " > 256: receive queues overflow" : ""));
    csv << dn << "," << n << "," << cost_cols(t, f) << "," << in_flight << "," << fmt(q.response_ns / 1e3, 2) << ","
        << fmt(q.busiest_queue, 1) << "," << (q.rx_overflow ? 1 : 0) << "\n";
  }
}

// ---- qdepth: client queue depth vs throughput and response time ----
void experiment_qdepth(const Options& o, std::ofstream& csv) {
  csv << "dataset,workload,queue_depth,in_flight,mops,response_us,busiest_queue,rx_overflow,model_mops,bottleneck\n";
  std::puts("== client queue depth, 6 nodes x 31 threads (model: mean value analysis; paper 4.2.3, Figure 10)");
  const std::string dn = o.datasets.front();
  KeySet ks = make_keys(*forein::testing::dataset_by_name(dn), o.keys, o.seed);
  const std::vector<std::size_t> depths = {1, 2, 4, 8, 16, 18, 32, 64};
  std::vector<std::uint64_t> in_flight;
  for (const std::size_t qd : depths) in_flight.push_back(paper_in_flight(qd));
  auto sweep = [&](const std::string& workload, const Tally& t, std::size_t pairs) {
    const auto f = figures(t);
    const auto pts = dpa::queue_sweep(t.load, in_flight, dpa::wire_ns(pairs));
    std::printf(" %s (model bound %.2f Mops, %s)\n", workload.c_str(), f.ops_per_second / 1e6, f.bottleneck.c_str());
    for (std::size_t i = 0; i < pts.size(); ++i) {
      const auto& q = pts[i];
      std::printf("  QD %2zu: %6llu in flight  %6.2f Mops  %8.1f us  busiest queue %6.1f%s\n", depths[i],
                  static_cast<unsigned long long>(q.in_flight), q.ops_per_second / 1e6, q.response_ns / 1e3,
                  q.busiest_queue, q.rx_overflow ? "  (> 256: receive queue overflows)" : "");
      csv << dn << "," << workload << "," << depths[i] << "," << q.in_flight << "," << fmt(q.ops_per_second / 1e6, 4)
          << "," << fmt(q.response_ns / 1e3, 3) << "," << fmt(q.busiest_queue, 2) << "," << (q.rx_overflow ? 1 : 0)
          << "," << fmt(f.ops_per_second / 1e6, 4) << "," << f.bottleneck << "\n";
    }
    std::fflush(stdout);
  };
  for (const bool cache : {false, true}) {
    dpa::StoreOptions so;
    so.seed = o.seed;
    so.hot_cache = cache;
    auto s = load_store(ks.loaded, so);
    std::mt19937_64 rng(o.seed + 19);
    if (!cache) {
      KeyPicker uni = uniform_picker(ks.loaded);
      const auto uni_shares = shares(uni, dpa::kTraverserThreads);
      sweep("GET uniform", run_gets(*s, uni, o.ops, rng, uni_shares), 1);
      Tally t;
      t.load.set_shares(uni_shares);
      for (std::uint64_t i = 0; i < o.ops; ++i) {
        dpa::OpCost c;
        const std::uint64_t k = uni.pick(rng);
        (void)s->range(k, 10, &c);
        t.add(k, c);
      }
      sweep("RANGE10 uniform", t, 10);
    } else {
      KeyPicker z = zipf_picker(ks.loaded);
      const auto z_shares = shares(z, dpa::kTraverserThreads);
      (void)run_gets(*s, z, o.ops, rng, z_shares);  // warm the caches
      sweep("GET Zipf 0.99 + hot cache", run_gets(*s, z, o.ops, rng, z_shares), 1);
    }
  }
}

// ---- memory: DPA bytes per data set beside Table 1 ----
void experiment_memory(const Options& o, std::ofstream& csv) {
  csv << "dataset,keys,depth,leaves,inner_nodes,dpa_bytes,dpa_bytes_per_key,dpa_mb_at_50m,host_mb,load_seconds,"
         "paper_dataset,paper_mb_at_50m\n";
  std::printf("== DPA memory per data set at %llu keys (model; paper Table 1 at 50M keys)\n",
              static_cast<unsigned long long>(o.memory_keys));
  // Table 1 (50M keys): the paper's data sets and what stands in for them.
  const std::map<std::string, std::pair<std::string, std::string>> table1 = {
      {"sparse", {"sparse", "207"}},
      {"dense4x", {"dense4x", "169"}},
      {"normal", {"(none; wiki 147)", ""}},
      {"lognormal", {"osmc 472 / face 672", ""}},
      {"books", {"amzn", "346"}},
  };
  for (const Dataset d : forein::testing::all_datasets()) {
    const std::string dn = forein::testing::dataset_name(d);
    const auto t0 = Clock::now();
    const auto keys = forein::testing::make_dataset(d, o.memory_keys, o.seed);
    dpa::StoreOptions so;
    so.seed = o.seed;
    auto s = load_store(keys, so);
    const double secs = seconds_since(t0);
    const auto st = s->stats();
    const double per_key = static_cast<double>(st.dpa_bytes) / static_cast<double>(keys.size());
    const double at50 = per_key * 50e6 / 1e6;
    const auto& paper = table1.at(dn);
    std::printf("  %-10s depth %llu, %8llu leaves, %6llu inner, DPA %8.1f MB = %6.2f B/key -> %6.1f MB at 50M"
                "   paper %s%s%s\n",
                dn.c_str(), static_cast<unsigned long long>(st.depth), static_cast<unsigned long long>(st.leaves),
                static_cast<unsigned long long>(st.inner_nodes), static_cast<double>(st.dpa_bytes) / 1e6, per_key,
                at50, paper.first.c_str(), paper.second.empty() ? "" : ": ",
                paper.second.empty() ? "" : (paper.second + " MB").c_str());
    std::fflush(stdout);
    csv << dn << "," << keys.size() << "," << st.depth << "," << st.leaves << "," << st.inner_nodes << ","
        << st.dpa_bytes << "," << fmt(per_key, 3) << "," << fmt(at50, 1) << ","
        << fmt(static_cast<double>(st.host_bytes) / 1e6, 1) << "," << fmt(secs, 1) << ",\"" << paper.first << "\","
        << paper.second << "\n";
  }
}

int run(const Options& o) {
  const auto t0 = Clock::now();
  std::printf("dpa_experiments: %llu keys, %llu ops per point, memory at %llu keys, data sets", 
              static_cast<unsigned long long>(o.keys), static_cast<unsigned long long>(o.ops),
              static_cast<unsigned long long>(o.memory_keys));
  for (const auto& d : o.datasets) std::printf(" %s", d.c_str());
  std::printf(", seed %llu\n", static_cast<unsigned long long>(o.seed));
  std::printf("model: %s\n\n", dpa::model_figures(dpa::OpCost{}, 1).source.c_str());
  using Experiment = void (*)(const Options&, std::ofstream&);
  const std::pair<const char*, Experiment> experiments[] = {
      {"ops", experiment_ops},  {"ycsb", experiment_ycsb},       {"hot", experiment_hot},
      {"eps", experiment_eps},  {"threads", experiment_threads}, {"memory", experiment_memory},
      {"qdepth", experiment_qdepth},
  };
  for (const auto& [name, fn] : experiments) {
    if (!wants(o, name)) continue;
    auto csv = forein::bench::open_csv(o.out + "/" + name + ".csv");
    fn(o, csv);
  }
  std::printf("\ndpa_experiments: done in %.1f s\n", seconds_since(t0));
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return forein::bench::guarded_main("dpa_experiments", argc, argv, parse, run); }

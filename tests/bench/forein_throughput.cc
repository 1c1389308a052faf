// FOREIN's throughput experiments (paper section VII-C, Fig 9 and Fig 10):
// docs/forein-experiments.md, run by tests/bench/run_forein_experiments.sh.
//
//   fig9   static Get-only workload vs skew (uniform, Zipf 0.9/0.95/0.99):
//          throughput without hints (root start), with switch_lpm hints, and
//          with oracle (exact leaf) hints; speedup = with / without.
//   fig10  dynamic workload (Get / Put / Delete) vs skew at one dynamic
//          ratio (fig10_skew.csv) and vs dynamic ratio at one skew
//          (fig10_ratio.csv), the manager refreshing every K updates and
//          its batches installed after the install delay.
//
// Setup. n distinct uniform random 64-bit keys (8-byte encode_word keys,
// 8-byte values) bulk-loaded into a Tree over a MemoryPageStore (default
// 8 KiB pages, 90% fill). Requests: Zipf(theta) ranks mapped to keys
// through a fixed random permutation (hot keys scattered over the key
// space, as in fig8 of forein_experiments); theta 0 = uniform. The offload
// path is the real one: an OffloadManager over a SwitchLpmBackend with
// 73,000 entries (budget --budget), fed the tree's node events.
//
// Modes, interleaved in every rep (the order rotates from rep to rep), on
// the same tree and the same request sequence:
//   root    Tree::get/put/erase without hints (offload disabled)
//   host    hints precomputed outside the timed loop with manager.hint(),
//           as the switch computes them before the request reaches the
//           host: the host-side cost alone
//   inproc  manager.hint() inside the timed loop (software LPM lookup on
//           the host); fig10 also reports inproc_all, which adds the
//           manager's pumps and refreshes (single-core total cost)
//   oracle  (fig9 only) hint = Tree::leaf_for(key), precomputed: the ceiling
// Throughput = requests / wall time of the timed loop. Speedup = median over
// reps of the per-rep ratio mode / root (min and max are in the CSV).
//
// Static (fig9): the manager is trained with the workload's exact key
// frequencies (record_access of every request, as the paper counts them),
// refreshed and flushed before timing; the table does not change.
//
// Dynamic (fig10): every run (mode x rep) starts from a fresh bulk-loaded
// tree and a fresh manager trained on the Gets of the workload, refreshed
// and flushed, then runs the same op sequence: a fraction `ratio` of the ops
// are updates, half Put of a new key (from a disjoint pool of random keys,
// so leaves split), half Delete of a uniformly chosen present key; the rest
// are Zipf Gets. Ops run in slices of 1,024; after each slice the manual
// clock of the manager advances by the slice's wall time and due batches are
// pumped; after every K updates (--refresh-every) the manager refreshes;
// batches are due --install-delay-us after their refresh. In host mode the
// hints of a slice are precomputed just before it (the switch's table as
// of that moment); in inproc mode manager.hint() runs per op in the timed
// loop. Both hinted modes time sample_access() (the host samples its own
// accesses); pumps and refreshes (the manager's work, a background thread
// in a deployment) are timed separately (manager_ms) and added in for
// inproc_all. Root mode has no manager at all.
//
// Usage: forein_throughput fig9|fig10 [--size 1000000] [--zipf 0,0.9,0.95,0.99]
//          [--ops N] [--reps R] [--budget 73000] [--page-size 8192] [--fill 90]
//          [--ratio 0.1 (fig10 vs skew)] [--ratios 0,0.05,0.1,0.2,0.5]
//          [--ratio-zipf 0.99 (fig10 vs ratio)] [--refresh-every 10000]
//          [--install-delay-us 1000] [--sample-rate 16] [--seed 42]
//          [--out DIR] [--tag NAME]

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
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

#include "forein/key.h"
#include "forein/node_interval.h"
#include "forein/offload/manager.h"
#include "forein/offload/manager_clock.h"
#include "forein/page_store.h"
#include "forein/tree.h"
#include "support/zipf.h"
#include "forein/offload/registry.h"
#include "bench_common.h"
#include "bench_tree.h"

namespace {

using forein::StartHints;
using forein::Word;
using forein::bench::Clock;
using forein::bench::median;
using forein::bench::random_words;
using forein::bench::seconds;
using forein::bench::value_bytes;
namespace bench = forein::bench;
using forein::bench::KeyPicker;
using forein::bench::node_counts;
using forein::bench::Relay;
namespace off = forein::offload;

struct Options {
  std::string command;
  std::uint64_t size = 1'000'000;
  std::vector<double> zipf = {0, 0.9, 0.95, 0.99};
  std::vector<double> ratios = {0, 0.05, 0.1, 0.2, 0.5};
  double ratio = 0.1;
  double ratio_zipf = 0.99;
  std::uint64_t ops = 0;  // 0: 1M (fig9), 500k (fig10)
  int reps = 0;           // 0: 5 (fig9), 3 (fig10)
  std::uint64_t budget = 73000;
  std::string backend = forein::offload::default_backend().name;  // a registered offload backend
  std::uint32_t page_size = forein::kDefaultPageSize;
  int fill = 90;
  std::uint64_t refresh_every = 10000;
  std::uint64_t install_delay_us = 1000;
  std::uint32_t sample_rate = 16;
  std::uint64_t seed = 42;
  std::string out = ".";
  std::string tag;
};

[[noreturn]] void usage(const std::string& error) {
  if (!error.empty()) std::cerr << "forein_throughput: " << error << "\n";
  std::cerr << "usage: forein_throughput fig9|fig10 [--size N] [--zipf T,T,...] [--ops N]\n"
               "         [--reps R] [--budget M] [--page-size B] [--fill P] [--ratio F]\n"
               "         [--ratios F,F,...] [--ratio-zipf T] [--refresh-every K]\n"
               "         [--install-delay-us U] [--sample-rate S] [--seed S] [--out DIR]\n"
               "         [--tag NAME] [--backend NAME]\n"
               "backends: " << off::lookup_backend_names() << "\n";
  std::exit(2);
}

template <typename T>
T parse_one(const std::string& s, const std::string& flag) {
  return bench::parse_one<T>(s, flag, [](const std::string& m) { usage(m); });
}

template <typename T>
std::vector<T> parse_list(const std::string& s, const std::string& flag) {
  return bench::parse_list<T>(s, flag, [](const std::string& m) { usage(m); });
}

Options parse(int argc, char** argv) {
  Options o;
  if (argc < 2) usage("");
  o.command = argv[1];
  if (o.command != "fig9" && o.command != "fig10") usage("unknown command '" + o.command + "'");
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) usage("missing value for " + arg);
    const std::string v = argv[++i];
    if (arg == "--size") o.size = parse_one<std::uint64_t>(v, arg);
    else if (arg == "--zipf") o.zipf = parse_list<double>(v, arg);
    else if (arg == "--ops") o.ops = parse_one<std::uint64_t>(v, arg);
    else if (arg == "--reps") o.reps = parse_one<int>(v, arg);
    else if (arg == "--budget") o.budget = parse_one<std::uint64_t>(v, arg);
    else if (arg == "--backend") {
      // A backend the tree can look keys up with (start hints, or none).
      try {
        off::backend_for_lookups(v);
      } catch (const std::exception& e) {
        usage(e.what());
      }
      o.backend = v;
    }
    else if (arg == "--page-size") o.page_size = parse_one<std::uint32_t>(v, arg);
    else if (arg == "--fill") o.fill = parse_one<int>(v, arg);
    else if (arg == "--ratio") o.ratio = parse_one<double>(v, arg);
    else if (arg == "--ratios") o.ratios = parse_list<double>(v, arg);
    else if (arg == "--ratio-zipf") o.ratio_zipf = parse_one<double>(v, arg);
    else if (arg == "--refresh-every") o.refresh_every = parse_one<std::uint64_t>(v, arg);
    else if (arg == "--install-delay-us") o.install_delay_us = parse_one<std::uint64_t>(v, arg);
    else if (arg == "--sample-rate") o.sample_rate = parse_one<std::uint32_t>(v, arg);
    else if (arg == "--seed") o.seed = parse_one<std::uint64_t>(v, arg);
    else if (arg == "--out") o.out = v;
    else if (arg == "--tag") o.tag = v;
    else usage("unknown option " + arg);
  }
  if (o.ops == 0) o.ops = o.command == "fig9" ? 1'000'000 : 500'000;
  if (o.reps <= 0) o.reps = o.command == "fig9" ? 5 : 3;
  if (o.size < 1000) usage("--size must be >= 1000");
  if (o.fill < 10 || o.fill > 100) usage("--fill must be 10..100");
  if (o.refresh_every == 0) usage("--refresh-every must be > 0");
  for (double r : o.ratios) {
    if (r < 0 || r > 1) usage("ratios must be in [0, 1]");
  }
  return o;
}

// ---------------------------------------------------------------------------
// Shared pieces.

std::vector<std::uint32_t> random_perm(std::uint64_t n, std::uint64_t seed) {
  return bench::shuffled_indices(n, seed);
}

struct ModeResult {
  std::vector<double> mops;        // per rep
  forein::TreeStats stats;         // of the last rep
  double refresh_ms = 0;           // fig10: manager work (pumps, refreshes) of the last rep
  std::vector<double> with_manager_mops;  // fig10: per rep, manager work counted in
  off::ManagerStats mstats;        // fig10: last rep
  std::uint64_t found = 0;         // last rep: gets that hit
};

// Ratios mode / base, per rep.
std::vector<double> ratios_of(const ModeResult& mode, const ModeResult& base) {
  std::vector<double> r;
  for (std::size_t i = 0; i < mode.mops.size() && i < base.mops.size(); ++i) {
    r.push_back(mode.mops[i] / base.mops[i]);
  }
  return r;
}

double per_op(std::uint64_t x, std::uint64_t ops) {
  return ops == 0 ? 0 : static_cast<double>(x) / static_cast<double>(ops);
}

std::string file_name(const Options& opt, const std::string& base) {
  return opt.out + "/" + base + (opt.tag.empty() ? "" : "_" + opt.tag) + ".csv";
}

std::ofstream open_csv(const std::string& path) {
  std::ofstream f(path);
  if (!f) {
    std::cerr << "forein_throughput: cannot write " << path << "\n";
    std::exit(1);
  }
  f << std::setprecision(6);
  return f;
}

void write_speedup(std::ostream& out, const ModeResult& mode, const ModeResult& base) {
  const std::vector<double> r = ratios_of(mode, base);
  out << ',' << median(r) << ',' << *std::min_element(r.begin(), r.end()) << ','
      << *std::max_element(r.begin(), r.end());
}

void write_stats(std::ostream& out, const forein::TreeStats& s) {
  out << ',' << per_op(s.nodes_visited, s.operations) << ',' << per_op(s.hint_hits, s.operations)
      << ',' << per_op(s.secondary_hits, s.operations) << ',' << per_op(s.fallbacks, s.operations)
      << ',' << per_op(s.move_rights, s.operations);
}

const char* kStatsHeader = "nodes_per_op,hint_hits_per_op,secondary_hits_per_op,fallbacks_per_op,move_rights_per_op";

// ---------------------------------------------------------------------------
// Fig 9: static Gets.

int fig9(const Options& opt) {
  const auto t_build = Clock::now();
  const std::vector<Word> words = random_words(opt.size, opt.seed);
  std::vector<std::pair<std::string, std::string>> sorted;
  sorted.reserve(words.size());
  for (Word w : words) sorted.emplace_back(forein::encode_word(w), value_bytes(~w));
  Relay relay;
  auto tree = bench::load_tree(sorted, opt.page_size, opt.fill, &relay);
  sorted.clear();
  sorted.shrink_to_fit();
  const auto [nodes, leaves] = node_counts(*tree);
  const std::vector<std::uint32_t> perm = random_perm(opt.size, opt.seed + 7);
  std::cout << "fig9 keys=" << opt.size << " page=" << opt.page_size << " fill=" << opt.fill
            << " height=" << tree->height() << " nodes=" << nodes << " leaves=" << leaves
            << " (built in " << std::fixed << std::setprecision(2) << seconds(Clock::now() - t_build)
            << " s)\n";

  std::ofstream csv = open_csv(file_name(opt, "fig9"));
  csv << "page_size,fill,keys,height,nodes,leaves,zipf,ops,reps,budget,entries_used,capacity,"
         "hint_ns,root_mops,host_mops,inproc_mops,oracle_mops,"
         "speedup_host,speedup_host_min,speedup_host_max,speedup_inproc,speedup_inproc_min,"
         "speedup_inproc_max,speedup_oracle,speedup_oracle_min,speedup_oracle_max";
  for (const char* m : {"root", "host", "inproc", "oracle"}) {
    std::string h = kStatsHeader;
    std::string prefixed;
    std::stringstream ss(h);
    std::string col;
    while (std::getline(ss, col, ',')) prefixed += std::string(",") + m + "_" + col;
    csv << prefixed;
  }
  csv << '\n';

  for (double theta : opt.zipf) {
    const auto t0 = Clock::now();
    KeyPicker pick(perm, theta);
    std::mt19937_64 rng(opt.seed * 31 + static_cast<std::uint64_t>(theta * 1000));
    std::vector<std::string> keys(opt.ops);
    for (auto& k : keys) k = forein::encode_word(words[pick(rng)]);

    off::ManualClock clock;
    off::BackendConfig config;
    config.budget = opt.budget;
    off::Backend backend(off::backend_by_name(opt.backend), config);
    off::ManagerOptions mo;
    mo.sample_rate = 1;
    mo.clock = &clock;
    off::OffloadManager manager(backend, mo);
    bench::train_on_requests(manager, relay, *tree, keys);
    const off::BackendUsage usage = backend.usage();

    double hint_ns = 0;
    const std::vector<StartHints> host = bench::hints_of(manager, keys, &hint_ns);
    std::vector<StartHints> oracle(opt.ops);
    for (std::size_t i = 0; i < keys.size(); ++i) oracle[i].primary = tree->leaf_for(keys[i]);
    const double setup_s = seconds(Clock::now() - t0);

    enum { kRoot, kHost, kInproc, kOracle, kModes };
    ModeResult res[kModes];
    std::string value;
    for (int rep = 0; rep < opt.reps; ++rep) {
      for (int j = 0; j < kModes; ++j) {
        const int mode = (rep + j) % kModes;
        const std::vector<StartHints>* given = mode == kHost ? &host : mode == kOracle ? &oracle : nullptr;
        std::uint64_t found = 0;
        const double s = bench::timed_pass(*tree, keys, given, mode == kInproc ? &manager : nullptr,
                                           &value, &found);
        res[mode].mops.push_back(static_cast<double>(opt.ops) / s / 1e6);
        res[mode].stats = tree->stats();
        res[mode].found = found;
        if (found != opt.ops) {
          std::cerr << "fig9: mode " << mode << " found " << found << " of " << opt.ops << " keys\n";
          return 1;
        }
      }
    }
    manager.detach();
    relay.to = nullptr;

    csv << opt.page_size << ',' << opt.fill << ',' << opt.size << ',' << tree->height() << ','
        << nodes << ',' << leaves << ',' << theta << ',' << opt.ops << ',' << opt.reps << ','
        << opt.budget << ',' << usage.used << ',' << usage.capacity << ','
        << hint_ns << ',' << median(res[kRoot].mops) << ',' << median(res[kHost].mops) << ','
        << median(res[kInproc].mops) << ',' << median(res[kOracle].mops);
    write_speedup(csv, res[kHost], res[kRoot]);
    write_speedup(csv, res[kInproc], res[kRoot]);
    write_speedup(csv, res[kOracle], res[kRoot]);
    for (int m = 0; m < kModes; ++m) write_stats(csv, res[m].stats);
    csv << '\n';
    csv.flush();

    const auto& hs = res[kHost].stats;
    std::cout << std::setprecision(3) << "  zipf=" << theta << " entries=" << usage.used
              << " Mops root/host/inproc/oracle = "
              << median(res[kRoot].mops) << " / " << median(res[kHost].mops) << " / "
              << median(res[kInproc].mops) << " / " << median(res[kOracle].mops)
              << "  speedup host " << median(ratios_of(res[kHost], res[kRoot])) << " inproc "
              << median(ratios_of(res[kInproc], res[kRoot])) << " oracle "
              << median(ratios_of(res[kOracle], res[kRoot])) << "  nodes/op "
              << per_op(res[kRoot].stats.nodes_visited, res[kRoot].stats.operations) << " -> "
              << per_op(hs.nodes_visited, hs.operations) << " (hits "
              << per_op(hs.hint_hits, hs.operations) << ", fallbacks "
              << per_op(hs.fallbacks, hs.operations) << ", move-rights "
              << per_op(hs.move_rights, hs.operations) << ") hint " << hint_ns << " ns"
              << "  [setup " << setup_s << " s]\n";
  }
  return 0;
}

// ---------------------------------------------------------------------------
// Fig 10: dynamic workloads.

enum class OpType : std::uint8_t { kGet, kPut, kDelete };

struct Workload {
  std::vector<OpType> type;
  std::vector<std::string> keys;
  std::vector<Word> get_words;  // training sample: the Gets' words
  std::uint64_t gets = 0, puts = 0, deletes = 0;
};

struct DynamicData {
  std::vector<Word> initial;  // sorted, bulk-loaded
  std::vector<Word> spare;    // Put keys, random order, disjoint from initial
  std::vector<std::pair<std::string, std::string>> sorted;
  std::vector<std::uint32_t> perm;
};

DynamicData dynamic_data(const Options& opt) {
  DynamicData d;
  std::vector<Word> all = random_words(2 * opt.size, opt.seed + 3);
  std::mt19937_64 rng(opt.seed + 4);
  std::shuffle(all.begin(), all.end(), rng);
  d.initial.assign(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(opt.size));
  d.spare.assign(all.begin() + static_cast<std::ptrdiff_t>(opt.size), all.end());
  std::sort(d.initial.begin(), d.initial.end());
  d.sorted.reserve(opt.size);
  for (Word w : d.initial) d.sorted.emplace_back(forein::encode_word(w), value_bytes(~w));
  d.perm = random_perm(opt.size, opt.seed + 7);
  return d;
}

Workload make_workload(const DynamicData& d, const Options& opt, double theta, double ratio) {
  Workload w;
  w.type.reserve(opt.ops);
  w.keys.reserve(opt.ops);
  KeyPicker pick(d.perm, theta);
  std::mt19937_64 rng(opt.seed * 131 + static_cast<std::uint64_t>(theta * 1000) * 7 +
                      static_cast<std::uint64_t>(ratio * 1000));
  std::uniform_real_distribution<double> coin(0, 1);
  std::vector<bool> deleted(d.initial.size(), false);
  std::size_t next_spare = 0;
  for (std::uint64_t i = 0; i < opt.ops; ++i) {
    if (coin(rng) < ratio) {
      if (coin(rng) < 0.5 && next_spare < d.spare.size()) {
        w.type.push_back(OpType::kPut);
        w.keys.push_back(forein::encode_word(d.spare[next_spare++]));
        ++w.puts;
      } else {
        std::uniform_int_distribution<std::size_t> any(0, d.initial.size() - 1);
        std::size_t k = any(rng);
        while (deleted[k]) k = any(rng);
        deleted[k] = true;
        w.type.push_back(OpType::kDelete);
        w.keys.push_back(forein::encode_word(d.initial[k]));
        ++w.deletes;
      }
    } else {
      const Word word = d.initial[pick(rng)];
      w.type.push_back(OpType::kGet);
      w.keys.push_back(forein::encode_word(word));
      w.get_words.push_back(word);
      ++w.gets;
    }
  }
  return w;
}

enum DynMode { kDynRoot, kDynHost, kDynInproc, kDynModes };

// One run of the whole op sequence on a fresh tree; returns Mops.
double dynamic_run(const DynamicData& d, const Workload& w, const Options& opt, DynMode mode,
                   ModeResult& res) {
  constexpr std::size_t kSlice = 1024;
  Relay relay;
  auto tree = bench::load_tree(d.sorted, opt.page_size, opt.fill, &relay);
  off::ManualClock clock;
  off::BackendConfig config;
  config.budget = opt.budget;
  off::Backend backend(off::backend_by_name(opt.backend), config);
  off::ManagerOptions mo;
  mo.sample_rate = opt.sample_rate;
  mo.clock = &clock;
  mo.install_delay = std::chrono::microseconds(opt.install_delay_us);
  std::unique_ptr<off::OffloadManager> manager;
  if (mode != kDynRoot) {
    manager = std::make_unique<off::OffloadManager>(backend, mo);
    relay.to = manager.get();
    manager->attach(*tree);
    for (Word x : w.get_words) manager->record_access(x);
    manager->refresh();
    manager->flush();
  }
  const std::string value = value_bytes(0x5a5a5a5a5a5a5a5aull);
  std::string out;
  std::vector<StartHints> hints(kSlice);
  Clock::duration timed{0}, manager_time{0};
  std::uint64_t found = 0, updates_since_refresh = 0;
  tree->reset_stats();
  for (std::size_t start = 0; start < w.keys.size(); start += kSlice) {
    const std::size_t end = std::min(w.keys.size(), start + kSlice);
    if (mode == kDynHost) {
      for (std::size_t i = start; i < end; ++i) hints[i - start] = manager->hint(w.keys[i]);
    }
    const auto ts = Clock::now();
    for (std::size_t i = start; i < end; ++i) {
      const std::string& k = w.keys[i];
      StartHints h;
      const StartHints* hp = nullptr;
      if (mode == kDynHost) {
        hp = &hints[i - start];
      } else if (mode == kDynInproc) {
        h = manager->hint(k);
        hp = &h;
      }
      if (mode != kDynRoot) manager->sample_access(forein::word_of(k));
      switch (w.type[i]) {
        case OpType::kGet: found += tree->get(k, &out, hp); break;
        case OpType::kPut: tree->put(k, value, hp); ++updates_since_refresh; break;
        case OpType::kDelete: tree->erase(k, hp); ++updates_since_refresh; break;
      }
    }
    const auto te = Clock::now();
    timed += te - ts;
    if (mode != kDynRoot) {
      // The control plane: time passes as the slice took, due batches land,
      // and every K updates the manager recomputes.
      clock.advance(std::chrono::duration_cast<off::ManagerDuration>(te - ts));
      manager->pump();
      if (updates_since_refresh >= opt.refresh_every) {
        manager->refresh();
        updates_since_refresh = 0;
      }
      manager_time += Clock::now() - te;
    }
  }
  res.stats = tree->stats();
  res.found = found;
  res.refresh_ms = seconds(manager_time) * 1e3;
  res.with_manager_mops.push_back(static_cast<double>(w.keys.size()) /
                                  seconds(timed + manager_time) / 1e6);
  if (manager) {
    res.mstats = manager->stats();
    manager->detach();
  }
  relay.to = nullptr;
  return static_cast<double>(w.keys.size()) / seconds(timed) / 1e6;
}

void fig10_point(const DynamicData& d, const Options& opt, double theta, double ratio,
                 const char* series, std::ostream& csv) {
  const auto t0 = Clock::now();
  const Workload w = make_workload(d, opt, theta, ratio);
  ModeResult res[kDynModes];
  for (int rep = 0; rep < opt.reps; ++rep) {
    for (int j = 0; j < kDynModes; ++j) {
      const auto mode = static_cast<DynMode>((rep + j) % kDynModes);
      res[mode].mops.push_back(dynamic_run(d, w, opt, mode, res[mode]));
    }
  }
  for (int m = 1; m < kDynModes; ++m) {
    if (res[m].found != res[kDynRoot].found) {
      std::cerr << "fig10: mode " << m << " found " << res[m].found << " keys, root found "
                << res[kDynRoot].found << "\n";
      std::exit(1);
    }
  }
  const auto& ms = res[kDynHost].mstats;
  csv << series << ',' << opt.page_size << ',' << opt.fill << ',' << opt.size << ',' << theta << ','
      << ratio << ',' << opt.ops << ',' << w.gets << ',' << w.puts << ',' << w.deletes << ','
      << opt.reps << ',' << opt.budget << ',' << opt.refresh_every << ',' << opt.install_delay_us
      << ',' << median(res[kDynRoot].mops) << ',' << median(res[kDynHost].mops) << ','
      << median(res[kDynInproc].mops);
  write_speedup(csv, res[kDynHost], res[kDynRoot]);
  write_speedup(csv, res[kDynInproc], res[kDynRoot]);
  ModeResult all;
  all.mops = res[kDynInproc].with_manager_mops;
  csv << ',' << median(all.mops);
  write_speedup(csv, all, res[kDynRoot]);
  for (int m = 0; m < kDynModes; ++m) write_stats(csv, res[m].stats);
  csv << ',' << ms.refreshes << ',' << res[kDynHost].refresh_ms << ',' << ms.install_batches << ','
      << ms.entries_installed << ',' << ms.entries_removed << ',' << ms.remove_first_batches << ','
      << ms.failed_installs << ',' << ms.pending_batches << ',' << ms.target_entries << '\n';
  csv.flush();
  const auto& hs = res[kDynHost].stats;
  std::cout << std::setprecision(3) << "  " << series << " zipf=" << theta << " ratio=" << ratio
            << " Mops root/host/inproc = " << median(res[kDynRoot].mops) << " / "
            << median(res[kDynHost].mops) << " / " << median(res[kDynInproc].mops)
            << "  speedup host " << median(ratios_of(res[kDynHost], res[kDynRoot])) << " inproc "
            << median(ratios_of(res[kDynInproc], res[kDynRoot])) << " inproc+manager "
            << median(ratios_of(all, res[kDynRoot])) << "  nodes/op "
            << per_op(res[kDynRoot].stats.nodes_visited, res[kDynRoot].stats.operations) << " -> "
            << per_op(hs.nodes_visited, hs.operations) << " (hits " << per_op(hs.hint_hits, hs.operations)
            << ", 2nd " << per_op(hs.secondary_hits, hs.operations) << ", fallbacks "
            << per_op(hs.fallbacks, hs.operations) << ", move-rights "
            << per_op(hs.move_rights, hs.operations) << ")  refreshes " << ms.refreshes << " (manager "
            << res[kDynHost].refresh_ms << " ms)  [" << seconds(Clock::now() - t0) << " s]\n";
}

int fig10(const Options& opt) {
  const auto t0 = Clock::now();
  const DynamicData d = dynamic_data(opt);
  {
    Relay relay;
    auto tree = bench::load_tree(d.sorted, opt.page_size, opt.fill, &relay);
    const auto [nodes, leaves] = node_counts(*tree);
    std::cout << "fig10 keys=" << opt.size << " page=" << opt.page_size << " fill=" << opt.fill
              << " height=" << tree->height() << " nodes=" << nodes << " leaves=" << leaves
              << " ops=" << opt.ops << " reps=" << opt.reps << " refresh every "
              << opt.refresh_every << " updates, install delay " << opt.install_delay_us
              << " us (data " << std::fixed << std::setprecision(2) << seconds(Clock::now() - t0)
              << " s)\n";
  }
  std::string header =
      "series,page_size,fill,keys,zipf,ratio,ops,gets,puts,deletes,reps,budget,refresh_every,"
      "install_delay_us,root_mops,host_mops,inproc_mops,speedup_host,speedup_host_min,"
      "speedup_host_max,speedup_inproc,speedup_inproc_min,speedup_inproc_max,inproc_all_mops,"
      "speedup_inproc_all,speedup_inproc_all_min,speedup_inproc_all_max";
  for (const char* m : {"root", "host", "inproc"}) {
    std::stringstream ss(kStatsHeader);
    std::string col;
    while (std::getline(ss, col, ',')) header += std::string(",") + m + "_" + col;
  }
  header += ",refreshes,manager_ms,install_batches,entries_installed,entries_removed,"
            "remove_first_batches,failed_installs,pending_batches,target_entries\n";
  std::ofstream skew = open_csv(file_name(opt, "fig10_skew"));
  skew << header;
  for (double theta : opt.zipf) fig10_point(d, opt, theta, opt.ratio, "skew", skew);
  std::ofstream ratio = open_csv(file_name(opt, "fig10_ratio"));
  ratio << header;
  for (double r : opt.ratios) fig10_point(d, opt, opt.ratio_zipf, r, "ratio", ratio);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return forein::bench::guarded_main("forein_throughput", argc, argv, parse, [](const Options& opt) {
    return opt.command == "fig9" ? fig9(opt) : fig10(opt);
  });
}

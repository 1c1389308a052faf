// dpa hints on the host (docs/dpa-experiments.md, "Measured on the engine"):
// the engine's tree behind an OffloadManager over the registered `dpa`
// backend (DPA-Store's learned index over the tree's leaf boundaries), and
// the same lookups in three modes on the same tree, interleaved, medians:
//
//   root    no hints (offload off, the same tree);
//   host    hints computed beforehand with manager.hint() -- what the NIC
//           would hand the host: the host pays nothing for them;
//   inproc  manager.hint() inside the timed loop (the learned-index walk
//           done in software on the same core).
//
//   dpa_host_speedup [--keys 1000000,10000000] [--ops 1000000] [--reps 5]
//                    [--zipf 0.99] [--train 1000000] [--seed 7] [--out DIR]
//
// Writes DIR/engine_hints.csv (one row per key count) and prints a table.
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "bench/bench_common.h"
#include "forein/key.h"
#include "forein/offload/backend.h"
#include "forein/offload/manager.h"
#include "forein/offload/registry.h"
#include "forein/page_store.h"
#include "forein/tree.h"
#include "support/zipf.h"

namespace {

namespace off = forein::offload;
using forein::bench::Clock;
using forein::bench::median;
using forein::bench::seconds_since;

struct Options {
  std::vector<std::uint64_t> keys = {1000000, 10000000};
  std::uint64_t ops = 1000000;
  std::uint64_t train = 1000000;
  int reps = 5;
  double zipf = 0.99;
  std::uint64_t seed = 7;
  std::string out = ".";
};

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "dpa_host_speedup: " << why
            << "\nusage: dpa_host_speedup [--keys N[,N...]] [--ops N] [--reps N] [--zipf THETA] "
               "[--train N] [--seed N] [--out DIR]\n";
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) usage("missing value for " + a);
    const std::string v = argv[++i];
    auto number = [&](const std::string& s) {
      char* end = nullptr;
      const unsigned long long x = std::strtoull(s.c_str(), &end, 10);
      if (s.empty() || *end != '\0') usage("bad value '" + s + "' for " + a);
      return static_cast<std::uint64_t>(x);
    };
    if (a == "--keys") {
      o.keys = forein::bench::parse_list<std::uint64_t>(v, a, usage);
    } else if (a == "--ops") {
      o.ops = number(v);
    } else if (a == "--train") {
      o.train = number(v);
    } else if (a == "--reps") {
      o.reps = static_cast<int>(number(v));
    } else if (a == "--seed") {
      o.seed = number(v);
    } else if (a == "--zipf") {
      o.zipf = std::strtod(v.c_str(), nullptr);
      if (!(o.zipf > 0 && o.zipf < 1)) usage("--zipf must be in (0, 1)");
    } else if (a == "--out") {
      o.out = v;
    } else {
      usage("unknown flag " + a);
    }
  }
  if (o.reps < 1 || o.ops < 1) usage("--reps and --ops must be at least 1");
  return o;
}

void one(const Options& opt, std::uint64_t n, std::ostream& csv) {
  const auto t0 = Clock::now();
  const std::vector<std::uint64_t> words = forein::bench::random_words(n, opt.seed);
  auto tree = forein::Tree::create(std::make_unique<forein::MemoryPageStore>());
  {
    std::vector<std::pair<std::string, std::string>> sorted;
    sorted.reserve(n);
    for (std::uint64_t w : words) sorted.emplace_back(forein::encode_word(w), forein::bench::value_bytes(~w));
    tree->bulk_load(sorted);
  }
  const int height = tree->height();
  std::size_t nodes = 0, leaves = 0;
  tree->for_each_node([&](const forein::NodeInterval& iv) {
    ++nodes;
    leaves += iv.level == 0;
  });
  const auto perm = forein::bench::shuffled_indices(n, opt.seed + 1);
  forein::testing::ZipfGenerator gen(n, opt.zipf);

  off::ManualClock clock;
  off::Backend backend(off::backend_for_lookups("dpa"));
  off::ManagerOptions mo;
  mo.sample_rate = 1;
  mo.clock = &clock;
  off::OffloadManager manager(backend, mo);
  manager.attach(*tree);
  std::mt19937_64 trng(opt.seed * 1000003 + 11);
  for (std::uint64_t s = 0; s < opt.train; ++s) manager.record_access(words[perm[gen(trng)]]);
  manager.refresh();
  manager.flush();
  const off::BackendUsage usage = backend.usage();
  const off::BackendModel model = backend.model();
  const std::size_t image_bytes = backend.device().load_image()->bytes.size();

  std::mt19937_64 qrng(opt.seed * 1000003 + 12);
  std::vector<std::string> keys(opt.ops);
  for (auto& k : keys) k = forein::encode_word(words[perm[gen(qrng)]]);
  std::vector<forein::StartHints> hints(keys.size());
  const auto th = Clock::now();
  for (std::size_t i = 0; i < keys.size(); ++i) hints[i] = manager.hint(keys[i]);
  const double hint_ns = seconds_since(th) * 1e9 / static_cast<double>(keys.size());
  std::uint64_t leaf_hints = 0;
  for (const auto& h : hints) leaf_hints += h.primary.present() && h.primary.level == 0;

  enum { kRoot, kHost, kInproc, kModes };
  const char* names[kModes] = {"root", "host", "inproc"};
  std::vector<double> mops[kModes];
  forein::TreeStats stats[kModes];
  std::string value;
  for (int rep = 0; rep < opt.reps; ++rep) {
    for (int j = 0; j < kModes; ++j) {
      const int mode = (rep + j) % kModes;
      std::uint64_t found = 0;
      const double s = forein::bench::timed_pass(*tree, keys, mode == kHost ? &hints : nullptr,
                                                 mode == kInproc ? &manager : nullptr, &value, &found);
      if (found != keys.size()) {
        throw std::runtime_error(std::string("lookups missed keys in mode ") + names[mode]);
      }
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
  const auto rh = ratios(kHost), ri = ratios(kInproc);
  const auto [hmin, hmax] = std::minmax_element(rh.begin(), rh.end());
  csv << n << ',' << height << ',' << nodes << ',' << leaves << ',' << opt.zipf << ',' << keys.size() << ','
      << opt.reps << ',' << usage.used << ',' << usage.capacity << ',' << image_bytes << ','
      << static_cast<double>(leaf_hints) / static_cast<double>(keys.size()) << ',' << hint_ns << ','
      << per_op(stats[kRoot].nodes_visited, stats[kRoot].operations) << ','
      << per_op(stats[kHost].nodes_visited, stats[kHost].operations) << ','
      << per_op(stats[kHost].hint_hits, stats[kHost].operations) << ','
      << per_op(stats[kHost].fallbacks, stats[kHost].operations) << ',' << median(mops[kRoot]) << ','
      << median(mops[kHost]) << ',' << median(mops[kInproc]) << ',' << median(rh) << ',' << *hmin << ','
      << *hmax << ',' << median(ri) << ',' << model.hint_latency_ns << '\n';
  std::cout << std::setprecision(4) << "keys " << n << ": tree height " << height << ", " << nodes << " nodes ("
            << leaves << " leaves); dpa index " << usage.used << " of " << usage.capacity << " " << usage.unit
            << ", image " << image_bytes << " B; leaf hints "
            << 100.0 * static_cast<double>(leaf_hints) / static_cast<double>(keys.size()) << "%, walk " << hint_ns
            << " ns\n  nodes/op root " << per_op(stats[kRoot].nodes_visited, stats[kRoot].operations)
            << " -> hinted " << per_op(stats[kHost].nodes_visited, stats[kHost].operations) << " (hits "
            << per_op(stats[kHost].hint_hits, stats[kHost].operations) << ", fallbacks "
            << per_op(stats[kHost].fallbacks, stats[kHost].operations) << ")\n  Mops root/host/inproc "
            << median(mops[kRoot]) << " / " << median(mops[kHost]) << " / " << median(mops[kInproc])
            << "  speedup host " << median(rh) << " (min " << *hmin << ", max " << *hmax << ") inproc "
            << median(ri) << "  (medians of " << opt.reps << "; modelled DPA hint " << model.hint_latency_ns
            << " ns)  [setup " << seconds_since(t0) << " s]\n"
            << std::setprecision(6);
}

int run(const Options& opt) {
  auto csv = forein::bench::open_csv(opt.out + "/engine_hints.csv");
  csv << "keys,height,tree_nodes,leaves,zipf,ops,reps,dpa_bytes,dpa_capacity,image_bytes,frac_leaf_hints,"
         "walk_ns,root_nodes_per_op,host_nodes_per_op,host_hint_hits_per_op,host_fallbacks_per_op,root_mops,"
         "host_mops,inproc_mops,speedup_host,speedup_host_min,speedup_host_max,speedup_inproc,"
         "model_hint_latency_ns\n";
  for (std::uint64_t n : opt.keys) one(opt, n, csv);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return forein::bench::guarded_main("dpa_host_speedup", argc, argv, parse, run); }

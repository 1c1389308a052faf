// Every offload backend side by side on the engine (issue 21, part 3;
// docs/BENCHMARKS.md, run by scripts/bench-all.sh): the same tree, the same
// keys and the same request sequence, one start-hint source per mode.
//
// Setup as forein_throughput fig9: n distinct uniform random 64-bit keys
// (8-byte keys and values) bulk-loaded into one Tree over a
// MemoryPageStore; requests are Zipf(theta) ranks through a fixed random
// permutation (theta 0: uniform). For each backend an OffloadManager with
// the backend's default configuration (the paper's capacity, the planner's
// default budget) is trained with every request's key (sample rate 1),
// refreshed and flushed; the hints of the request sequence are then read
// off the device's image before the timed loop, as the network computes
// them before the request reaches the host. The manager is detached before
// the next backend attaches, so every backend plans from the same tree.
//
// Modes, in every rep, in an order that rotates from rep to rep:
//   none        the `none` backend: no hints, every lookup from the root
//   <backend>   that backend's hints
//   oracle      the exact leaf of every key (Tree::leaf_for): the ceiling
// Reported per mode: median lookups/s, its min and max, the median of the
// per-rep ratios to `none`, nodes visited per lookup (TreeStats of the
// last rep), hint hits and fallbacks per lookup, the device's usage in its
// own unit, and how close the mode comes to the oracle:
//   oracle_share  (none_nodes - nodes) / (none_nodes - oracle_nodes): the
//                 share of the oracle's saved node visits the mode saved;
//   same_bytes_nodes  nodes per lookup of an ideal device given the same
//                 bytes (hardware_bytes) as an exact-match table of
//                 12-byte records (8-byte key word, 4-byte page id) holding
//                 the most requested leaves of this very sequence: a leaf
//                 in the table costs 1 node, any other a walk from the root.
//                 Computed from the request sequence, not timed.
// With --by-level, each backend's requests are also split by the level of
// their primary hint (none: from the root), and each part is timed with
// that backend's hints, with `none` and with the oracle's on the very same
// requests (reps as above, the three in rotating order): which kind of
// hint a backend's gain or loss comes from.
//
// Usage: backend_compare [--keys N,N,...] [--zipf T,T,...] [--ops N] [--reps R]
//          [--backends NAME,NAME,...] [--page-size B] [--fill P] [--seed S]
//          [--csv FILE] [--by-level]

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "bench_common.h"
#include "bench_tree.h"
#include "forein/key.h"
#include "forein/offload/manager.h"
#include "forein/offload/registry.h"
#include "forein/tree.h"

namespace {

namespace bench = forein::bench;
namespace off = forein::offload;
using bench::Clock;
using bench::median;
using forein::StartHints;
using forein::Word;

constexpr double kSameBytesRecord = 12;  // key word + page id of an exact-leaf table

struct Options {
  std::vector<std::uint64_t> keys = {1'000'000, 10'000'000};
  std::vector<double> zipf = {0, 0.99};
  std::uint64_t ops = 1'000'000;
  int reps = 5;
  std::vector<std::string> backends;  // empty: every backend that serves lookups
  std::uint32_t page_size = forein::kDefaultPageSize;
  int fill = 90;
  std::uint64_t seed = 42;
  std::string csv = "backend_compare.csv";
  bool by_level = false;
};

[[noreturn]] void usage(const std::string& error) {
  if (!error.empty()) std::cerr << "backend_compare: " << error << "\n";
  std::cerr << "usage: backend_compare [--keys N,N,...] [--zipf T,T,...] [--ops N] [--reps R]\n"
               "         [--backends NAME,...] [--page-size B] [--fill P] [--seed S] [--csv FILE]\n"
               "         [--by-level]\n"
               "defaults: --keys 1000000,10000000 --zipf 0,0.99 --ops 1000000 --reps 5\n"
               "          --backends " << off::lookup_backend_names() << "\n";
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  const auto fail = [](const std::string& m) { usage(m); };
  const auto number = [&](const std::string& v, const std::string& flag) {
    return bench::parse_one<std::uint64_t>(v, flag, fail);
  };
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") usage("");
    if (arg == "--by-level") {
      o.by_level = true;
      continue;
    }
    if (i + 1 >= argc) usage("missing value for " + arg);
    const std::string v = argv[++i];
    if (arg == "--keys") o.keys = bench::parse_list<std::uint64_t>(v, arg, fail);
    else if (arg == "--zipf") o.zipf = bench::parse_list<double>(v, arg, fail);
    else if (arg == "--ops") o.ops = number(v, arg);
    else if (arg == "--reps") o.reps = bench::parse_one<int>(v, arg, fail);
    else if (arg == "--backends") o.backends = bench::parse_list<std::string>(v, arg, fail);
    else if (arg == "--page-size") o.page_size = bench::parse_one<std::uint32_t>(v, arg, fail);
    else if (arg == "--fill") o.fill = bench::parse_one<int>(v, arg, fail);
    else if (arg == "--seed") o.seed = number(v, arg);
    else if (arg == "--csv") o.csv = v;
    else usage("unknown option " + arg);
  }
  if (o.backends.empty()) {
    for (const off::BackendInfo* b : off::registered_backends()) {
      if (off::serves_lookups(*b)) o.backends.emplace_back(b->name);
    }
  }
  for (const auto& b : o.backends) {
    try {
      off::backend_for_lookups(b);
    } catch (const std::exception& e) {
      usage(e.what());
    }
  }
  // `none` first, once: the baseline every ratio is taken against.
  o.backends.erase(std::remove(o.backends.begin(), o.backends.end(), "none"), o.backends.end());
  o.backends.insert(o.backends.begin(), "none");
  for (std::uint64_t n : o.keys) {
    if (n < 1000 || n > 100'000'000) usage("--keys must be 1000..100000000");
  }
  for (double t : o.zipf) {
    if (t < 0 || t >= 1.5 || t == 1) usage("--zipf values must be in [0, 1.5), not 1");
  }
  if (o.ops == 0) usage("--ops must be > 0");
  if (o.reps <= 0) usage("--reps must be > 0");
  if (o.fill < 10 || o.fill > 100) usage("--fill must be 10..100");
  return o;
}

// One hint source: its hints for the request sequence and what it costs.
struct Mode {
  std::string name;
  std::vector<StartHints> hints;
  off::BackendUsage usage;
  double hint_ns = 0;  // the software model's lookup, per request (not the hardware's)
  std::vector<double> mlookups;  // per rep
  std::vector<double> ratio;     // per rep, to none
  forein::TreeStats stats;       // of the last rep
};

double per_op(std::uint64_t x, std::uint64_t ops) {
  return ops == 0 ? 0 : static_cast<double>(x) / static_cast<double>(ops);
}

// Nodes per lookup of an exact-leaf table of `bytes` holding the sequence's
// most requested leaves (a hit costs one node, a miss the root's walk).
double same_bytes_nodes(const std::vector<forein::PageId>& leaf_of_request, std::uint64_t bytes,
                        double root_nodes) {
  std::unordered_map<forein::PageId, std::uint64_t> count;
  for (forein::PageId p : leaf_of_request) ++count[p];
  std::vector<std::uint64_t> c;
  c.reserve(count.size());
  for (const auto& [page, n] : count) c.push_back(n);
  std::sort(c.begin(), c.end(), std::greater<>());
  const auto records = static_cast<std::size_t>(static_cast<double>(bytes) / kSameBytesRecord);
  std::uint64_t covered = 0;
  for (std::size_t i = 0; i < c.size() && i < records; ++i) covered += c[i];
  const double hit = per_op(covered, leaf_of_request.size());
  return hit * 1.0 + (1.0 - hit) * root_nodes;
}

// --by-level: mode m's requests split by the level of their primary hint,
// each part timed with m's hints, none's (from the root) and the oracle's.
void time_by_level(forein::Tree& tree, const std::vector<std::string>& keys, const Mode& m,
                   const Mode& oracle, int reps, std::uint64_t n, double theta) {
  constexpr int kRoot = -1;
  std::map<int, std::vector<std::size_t>> parts;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const auto& h = m.hints[i].primary;
    parts[h.present() ? static_cast<int>(h.level) : kRoot].push_back(i);
  }
  std::string value;
  for (const auto& [level, idx] : parts) {
    std::vector<std::string> k;
    std::vector<StartHints> mine, ora;
    for (std::size_t i : idx) {
      k.push_back(keys[i]);
      mine.push_back(m.hints[i]);
      ora.push_back(oracle.hints[i]);
    }
    const std::vector<StartHints>* sources[3] = {nullptr, &mine, &ora};
    std::vector<double> ml[3], ratio[2];
    for (int rep = 0; rep < reps; ++rep) {
      for (int j = 0; j < 3; ++j) {
        const int s = (rep + j) % 3;
        std::uint64_t found = 0;
        const double sec = bench::timed_pass<off::OffloadManager>(tree, k, sources[s], nullptr,
                                                                  &value, &found);
        ml[s].push_back(static_cast<double>(k.size()) / sec / 1e6);
      }
      ratio[0].push_back(ml[1].back() / ml[0].back());
      ratio[1].push_back(ml[2].back() / ml[0].back());
    }
    std::cout << std::setprecision(3) << "  by level: keys=" << n << " zipf=" << theta << "  "
              << m.name << " hint level "
              << (level == kRoot ? std::string("none") : std::to_string(level)) << "  share "
              << per_op(idx.size(), keys.size()) << "  none " << median(ml[0])
              << " M lookups/s  " << m.name << " x" << median(ratio[0]) << "  oracle x"
              << median(ratio[1]) << "\n";
  }
}

int run(const Options& opt) {
  std::ofstream csv = bench::open_csv(opt.csv);
  csv << "keys,height,leaves,zipf,ops,reps,mode,unit,used,capacity,hardware_bytes,hint_ns,"
         "mlookups,mlookups_min,mlookups_max,speedup,speedup_min,speedup_max,nodes_per_op,"
         "hint_hits_per_op,fallbacks_per_op,oracle_share,same_bytes_nodes\n";
  for (std::uint64_t n : opt.keys) {
    const auto t_build = Clock::now();
    const std::vector<Word> words = bench::random_words(n, opt.seed);
    bench::Relay relay;
    std::unique_ptr<forein::Tree> tree;
    {
      std::vector<std::pair<std::string, std::string>> sorted;
      sorted.reserve(words.size());
      for (Word w : words) sorted.emplace_back(forein::encode_word(w), bench::value_bytes(~w));
      tree = bench::load_tree(sorted, opt.page_size, opt.fill, &relay);
    }
    const auto [nodes, leaves] = bench::node_counts(*tree);
    const std::vector<std::uint32_t> perm = bench::shuffled_indices(n, opt.seed + 7);
    std::cout << "keys=" << n << " height=" << tree->height() << " nodes=" << nodes
              << " leaves=" << leaves << " (built in " << std::fixed << std::setprecision(2)
              << bench::seconds_since(t_build) << " s)\n";

    for (double theta : opt.zipf) {
      bench::KeyPicker pick(perm, theta);
      std::mt19937_64 rng(opt.seed * 31 + static_cast<std::uint64_t>(theta * 1000));
      std::vector<std::string> keys(opt.ops);
      for (auto& k : keys) k = forein::encode_word(words[pick(rng)]);

      std::vector<Mode> modes;
      for (const auto& name : opt.backends) {
        off::Backend backend(off::backend_for_lookups(name));
        off::ManagerOptions mo;
        mo.sample_rate = 1;
        off::OffloadManager manager(backend, mo);
        bench::train_on_requests(manager, relay, *tree, keys);
        Mode m;
        m.name = name;
        m.usage = backend.usage();
        m.hints = bench::hints_of(manager, keys, &m.hint_ns);
        manager.detach();
        relay.to = nullptr;
        modes.push_back(std::move(m));
      }
      std::vector<forein::PageId> leaf_of_request(keys.size());
      {
        Mode m;
        m.name = "oracle";
        m.hints.resize(keys.size());
        for (std::size_t i = 0; i < keys.size(); ++i) {
          m.hints[i].primary = tree->leaf_for(keys[i]);
          leaf_of_request[i] = m.hints[i].primary.node;
        }
        modes.push_back(std::move(m));
      }

      std::string value;
      for (int rep = 0; rep < opt.reps; ++rep) {
        for (std::size_t j = 0; j < modes.size(); ++j) {
          Mode& m = modes[(static_cast<std::size_t>(rep) + j) % modes.size()];
          std::uint64_t found = 0;
          const double s = bench::timed_pass<off::OffloadManager>(*tree, keys, &m.hints, nullptr,
                                                                  &value, &found);
          if (found != keys.size()) {
            std::cerr << "backend_compare: " << m.name << " found " << found << " of "
                      << keys.size() << " keys\n";
            return 1;
          }
          m.mlookups.push_back(static_cast<double>(keys.size()) / s / 1e6);
          m.stats = tree->stats();
        }
        for (Mode& m : modes) m.ratio.push_back(m.mlookups.back() / modes[0].mlookups.back());
      }

      const double none_nodes = per_op(modes[0].stats.nodes_visited, modes[0].stats.operations);
      const double oracle_nodes = per_op(modes.back().stats.nodes_visited, modes.back().stats.operations);
      for (const Mode& m : modes) {
        const double nodes_per_op = per_op(m.stats.nodes_visited, m.stats.operations);
        const double share = none_nodes > oracle_nodes
                                 ? (none_nodes - nodes_per_op) / (none_nodes - oracle_nodes) : 0;
        const double same_bytes = same_bytes_nodes(leaf_of_request, m.usage.hardware_bytes, none_nodes);
        csv << n << ',' << tree->height() << ',' << leaves << ',' << theta << ',' << opt.ops << ','
            << opt.reps << ',' << m.name << ',' << (m.usage.unit.empty() ? "-" : m.usage.unit) << ','
            << m.usage.used << ',' << m.usage.capacity << ',' << m.usage.hardware_bytes << ','
            << m.hint_ns << ',' << median(m.mlookups) << ','
            << *std::min_element(m.mlookups.begin(), m.mlookups.end()) << ','
            << *std::max_element(m.mlookups.begin(), m.mlookups.end()) << ',' << median(m.ratio)
            << ',' << *std::min_element(m.ratio.begin(), m.ratio.end()) << ','
            << *std::max_element(m.ratio.begin(), m.ratio.end()) << ',' << nodes_per_op << ','
            << per_op(m.stats.hint_hits, m.stats.operations) << ','
            << per_op(m.stats.fallbacks, m.stats.operations) << ',' << share << ',' << same_bytes
            << '\n';
        std::cout << std::setprecision(3) << "  keys=" << n << " zipf=" << theta << "  "
                  << std::left << std::setw(10) << m.name << std::right << " "
                  << median(m.mlookups) << " M lookups/s  x" << median(m.ratio) << "  nodes/op "
                  << nodes_per_op << "  oracle share " << share << "  usage " << m.usage.used
                  << "/" << m.usage.capacity << " " << m.usage.unit << "\n";
      }
      csv.flush();
      if (opt.by_level) {
        for (std::size_t j = 1; j + 1 < modes.size(); ++j) {
          if (modes[j].name == "none") continue;
          time_by_level(*tree, keys, modes[j], modes.back(), opt.reps, n, theta);
        }
      }
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return bench::guarded_main("backend_compare", argc, argv, parse, run);
}

// FOREIN's PREFIXCOVER experiments (paper section VII-B, Fig 7 and Fig 8):
// docs/forein-experiments.md, run by tests/bench/run_forein_experiments.sh.
//
//   fig7   prefix-cover size per tree layer (L0 = leaves with hollow
//          prefixes dropped, L0* = leaves keeping them, L1.. = inner layers,
//          hollow dropped) vs dataset size, and the distribution of cover
//          sizes per layer.
//   fig8a  AMA vs dataset size with a fixed number of installed nodes
//          (3,200), one curve per Zipf exponent, plus the LPM entries those
//          nodes use (the paper's Table II: 3,200 nodes ~ 25,000 of 73,000
//          entries) and the entry-budgeted greedy (M = 73,000) for reference.
//   fig8b  AMA vs number of installed nodes, one curve per Zipf exponent,
//          at one dataset size (1M keys).
//   all    the three above, building each tree once.
//
// Setup. n distinct uniform random 64-bit keys (8-byte encode_word keys,
// 8-byte values), bulk-loaded into a Tree over a MemoryPageStore (default
// 8 KiB pages, 90% fill; --load insert puts the keys one by one in random
// order instead, leaving leaves ~70% full as splits do). The node table comes from Tree::for_each_node;
// a node's parent is the node one level up whose word interval contains the
// child's lo word (intervals of one level partition word space; empty
// intervals, which only arise when keys share a word, never do here and are
// counted and reported). Covers: prefix_cover of the node's word interval,
// and drop_hollow against the sorted key words inside that interval.
//
// Access weights: Zipf(theta) over the n keys; rank r (0 = hottest) is
// mapped to a key through a fixed random permutation of the keys (seeded),
// so hot keys are scattered over the key space. A leaf's weight is the
// exact Zipf probability mass of its keys (--samples S instead draws S
// requests with support/zipf.h and counts them, as the paper does). Weights
// sum to 1, so AMA (selection.h: sum over leaves of w_L * D_L) is the
// average number of nodes a lookup visits; with no node installed it is the
// tree height (the no-offload baseline).
//
// "N installed nodes" (Fig 8): Algorithm 1 (select_nodes, SelectionRank::
// kReduction, S = {root} initially, nearest selected ancestor dropped once
// redundant) run with every node's cost set to 1 and budget N, so the
// greedy order is the paper's (largest AMA reduction first) and it stops at
// N nodes. The LPM entries of the chosen nodes (their hollow-free covers)
// are then summed. Nodes whose hollow-free cover is empty are excluded.
//
// Output: CSV files under --out (see each subcommand). Keys and permutation
// are reproducible: --seed (default 42).
//
// Usage: forein_experiments fig7|fig8a|fig8b|all [--sizes 100000,1000000,10000000]
//          [--size 1000000 (fig8b, fig7 histogram)] [--zipf 0.9,0.95,0.99]
//          [--nodes 3200] [--node-counts 0,100,...] [--budget 73000]
//          [--page-size 8192] [--fill 90] [--load bulk|insert] [--samples 0] [--seed 42]
//          [--out DIR] [--tag NAME (file-name suffix)]

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "forein/error.h"
#include "forein/key.h"
#include "forein/node_interval.h"
#include "switch_lpm/prefix_cover.h"
#include "switch_lpm/selection.h"
#include "forein/page_store.h"
#include "forein/tree.h"
#include "support/zipf.h"
#include "bench_common.h"

namespace {

using forein::NodeInterval;
using forein::Word;
using forein::bench::Clock;
using forein::bench::open_csv;
using forein::bench::random_words;
using forein::bench::seconds_since;
using forein::bench::value_bytes;
namespace off = forein::offload;

struct Options {
  std::string command;
  std::vector<std::uint64_t> sizes = {100'000, 1'000'000, 10'000'000};
  std::uint64_t size = 1'000'000;  // fig8b's dataset, and fig7b's highlighted one
  std::vector<double> zipf = {0.9, 0.95, 0.99};
  std::uint64_t nodes = 3200;
  std::vector<std::uint64_t> node_counts = {0,    50,   100,  200,   400,   800,  1600,
                                            3200, 6400, 12800, 25600, 51200, 102400};
  std::uint64_t budget = 73000;
  std::uint32_t page_size = forein::kDefaultPageSize;
  int fill = 90;
  std::uint64_t samples = 0;  // 0: exact Zipf probabilities
  std::uint64_t seed = 42;
  bool insert = false;  // --load insert: put() in random order instead of bulk_load
  std::string out = ".";
  std::string tag;
};

[[noreturn]] void usage(const std::string& error) {
  if (!error.empty()) std::cerr << "forein_experiments: " << error << "\n";
  std::cerr
      << "usage: forein_experiments fig7|fig8a|fig8b|all [--sizes N,N,...] [--size N]\n"
         "         [--zipf T,T,...] [--nodes N] [--node-counts N,N,...] [--budget M]\n"
         "         [--page-size B] [--fill P] [--load bulk|insert] [--samples S] [--seed S]\n"
         "         [--out DIR] [--tag NAME]\n";
  std::exit(2);
}

Options parse(int argc, char** argv) {
  if (argc < 2) usage("");
  Options o;
  o.command = argv[1];
  if (o.command != "fig7" && o.command != "fig8a" && o.command != "fig8b" && o.command != "all") {
    usage("unknown subcommand '" + o.command + "'");
  }
  for (int i = 2; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    if (const auto eq = arg.find('='); eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    } else {
      if (i + 1 >= argc) usage(arg + " needs a value");
      value = argv[++i];
    }
    auto one = [&](auto tag) {
      using T = decltype(tag);
      const auto v = forein::bench::parse_list<T>(value, arg, usage);
      if (v.size() != 1) usage(arg + " takes one value");
      return v[0];
    };
    if (arg == "--sizes") {
      o.sizes = forein::bench::parse_list<std::uint64_t>(value, arg, usage);
    } else if (arg == "--size") {
      o.size = one(std::uint64_t{});
    } else if (arg == "--zipf") {
      o.zipf = forein::bench::parse_list<double>(value, arg, usage);
    } else if (arg == "--nodes") {
      o.nodes = one(std::uint64_t{});
    } else if (arg == "--node-counts") {
      o.node_counts = forein::bench::parse_list<std::uint64_t>(value, arg, usage);
    } else if (arg == "--budget") {
      o.budget = one(std::uint64_t{});
    } else if (arg == "--page-size") {
      o.page_size = static_cast<std::uint32_t>(one(std::uint64_t{}));
    } else if (arg == "--fill") {
      o.fill = static_cast<int>(one(std::uint64_t{}));
    } else if (arg == "--samples") {
      o.samples = one(std::uint64_t{});
    } else if (arg == "--load") {
      if (value != "bulk" && value != "insert") usage("--load takes bulk or insert");
      o.insert = value == "insert";
    } else if (arg == "--seed") {
      o.seed = one(std::uint64_t{});
    } else if (arg == "--out") {
      o.out = value;
    } else if (arg == "--tag") {
      o.tag = value;
    } else {
      usage("unknown flag " + arg);
    }
  }
  for (double t : o.zipf) {
    if (!(t > 0) || t == 1.0) usage("Zipf exponents must be > 0 and != 1");
  }
  for (auto n : o.sizes) {
    if (n < 2) usage("dataset sizes must be >= 2");
  }
  if (o.fill < 10 || o.fill > 100) usage("--fill must be 10..100");
  return o;
}

// ---------------------------------------------------------------------------
// The tree and its node table.

struct NodeInfo {
  NodeInterval iv;
  std::int32_t parent = -1;
  std::uint32_t cover_full = 0;    // prefix_cover size (hollow prefixes kept)
  std::uint32_t cover_solid = 0;   // after drop_hollow
  std::uint64_t first_key = 0;     // index of the first key word inside iv
  std::uint64_t key_count = 0;     // key words inside iv
};

struct Dataset {
  std::uint64_t n = 0;
  std::vector<Word> words;      // sorted key words
  std::uint16_t height = 0;     // levels (1 = a single leaf)
  std::vector<NodeInfo> nodes;  // by level descending, then lo; root first
  std::size_t root = 0;
  std::vector<std::size_t> leaves;  // node indices of the leaves, by lo
  std::size_t empty_intervals = 0;
  double build_s = 0, table_s = 0;
};

Dataset build_dataset(std::uint64_t n, const Options& opt) {
  Dataset d;
  d.n = n;
  const auto t0 = Clock::now();
  d.words = random_words(n, opt.seed);

  forein::TreeOptions topt;
  topt.bulk_fill_percent = static_cast<std::uint8_t>(opt.fill);
  auto tree = forein::Tree::create(std::make_unique<forein::MemoryPageStore>(opt.page_size), topt);
  if (opt.insert) {
    std::vector<Word> order = d.words;
    std::mt19937_64 rng(opt.seed + 1);
    std::shuffle(order.begin(), order.end(), rng);
    for (Word w : order) tree->put(forein::encode_word(w), value_bytes(~w));
  } else {
    std::vector<std::pair<std::string, std::string>> sorted;
    sorted.reserve(n);
    for (Word w : d.words) sorted.emplace_back(forein::encode_word(w), value_bytes(~w));
    tree->bulk_load(sorted);
  }
  if (tree->size() != n) throw std::runtime_error("bulk_load lost keys");
  d.height = tree->height();

  std::vector<NodeInterval> ivs;
  tree->for_each_node([&](const NodeInterval& iv) { ivs.push_back(iv); });
  d.build_s = seconds_since(t0);
  const auto t1 = Clock::now();

  // Root level first, each level by lo (empty intervals after the non-empty
  // one with the same lo, so they never become parents).
  std::sort(ivs.begin(), ivs.end(), [](const NodeInterval& a, const NodeInterval& b) {
    if (a.level != b.level) return a.level > b.level;
    if (a.lo != b.lo) return a.lo < b.lo;
    return a.empty() < b.empty();
  });
  if (ivs.empty() || ivs.front().level + 1 != d.height) {
    throw std::runtime_error("for_each_node: top level does not match the height");
  }
  d.nodes.resize(ivs.size());
  for (std::size_t i = 0; i < ivs.size(); ++i) d.nodes[i].iv = ivs[i];
  if (ivs.size() > 1 && ivs[1].level == ivs[0].level) {
    throw std::runtime_error("for_each_node: more than one node at the top level");
  }
  d.root = 0;

  // Parents: the non-empty node of level + 1 whose interval holds the
  // child's lo word. An empty child (only possible when keys share a word)
  // gets the owner of its lo too; such intervals are counted and reported.
  std::size_t level_begin = 0;
  while (level_begin < d.nodes.size()) {
    std::size_t level_end = level_begin;
    const auto level = d.nodes[level_begin].iv.level;
    while (level_end < d.nodes.size() && d.nodes[level_end].iv.level == level) ++level_end;
    if (level_begin > 0) {
      // Parents live in [up_begin, level_begin).
      std::size_t up_begin = level_begin;
      while (up_begin > 0 && d.nodes[up_begin - 1].iv.level == level + 1) --up_begin;
      std::vector<std::size_t> candidates;
      for (std::size_t i = up_begin; i < level_begin; ++i) {
        if (!d.nodes[i].iv.empty()) candidates.push_back(i);
      }
      for (std::size_t c = level_begin; c < level_end; ++c) {
        const Word lo = d.nodes[c].iv.lo;
        auto it = std::upper_bound(candidates.begin(), candidates.end(), lo,
                                   [&](Word w, std::size_t i) { return w < d.nodes[i].iv.lo; });
        const std::size_t p = it == candidates.begin() ? candidates.front() : *(it - 1);
        d.nodes[c].parent = static_cast<std::int32_t>(p);
        const NodeInterval& pi = d.nodes[p].iv;
        const NodeInterval& ci = d.nodes[c].iv;
        if (!ci.empty() && (!pi.contains(ci.lo) || (!pi.hi_inf && (ci.hi_inf || ci.hi > pi.hi)))) {
          throw std::runtime_error("node interval not nested in its parent's");
        }
      }
    }
    for (std::size_t i = level_begin; i < level_end; ++i) {
      if (d.nodes[i].iv.empty()) ++d.empty_intervals;
    }
    level_begin = level_end;
  }

  // Covers.
  const std::span<const Word> all(d.words);
  for (NodeInfo& ni : d.nodes) {
    const auto cover = off::prefix_cover(ni.iv);
    const auto first = std::lower_bound(d.words.begin(), d.words.end(), ni.iv.lo);
    const auto last = ni.iv.hi_inf ? d.words.end()
                                   : std::lower_bound(first, d.words.end(), ni.iv.hi);
    ni.first_key = static_cast<std::uint64_t>(first - d.words.begin());
    ni.key_count = ni.iv.empty() ? 0 : static_cast<std::uint64_t>(last - first);
    if (ni.iv.empty()) continue;
    ni.cover_full = static_cast<std::uint32_t>(cover.size());
    ni.cover_solid = static_cast<std::uint32_t>(
        off::drop_hollow(cover, all.subspan(ni.first_key, ni.key_count)).size());
    if (ni.iv.level == 0) {
      // Spot check against the tree's own descent.
      const std::string k = forein::encode_word(d.words[ni.first_key]);
      if (tree->leaf_for(k).node != ni.iv.node) {
        throw std::runtime_error("leaf_for disagrees with the leaf intervals");
      }
    }
  }
  for (std::size_t i = 0; i < d.nodes.size(); ++i) {
    if (d.nodes[i].iv.level == 0) d.leaves.push_back(i);
  }
  std::uint64_t leaf_keys = 0;
  for (std::size_t l : d.leaves) leaf_keys += d.nodes[l].key_count;
  if (leaf_keys != n) throw std::runtime_error("leaf intervals do not partition the keys");
  d.table_s = seconds_since(t1);
  return d;
}

std::vector<std::size_t> level_counts(const Dataset& d) {
  std::vector<std::size_t> c(d.height, 0);
  for (const NodeInfo& ni : d.nodes) ++c[ni.iv.level];
  return c;
}

std::string shape(const Dataset& d) {
  std::ostringstream os;
  const auto c = level_counts(d);
  for (int l = d.height - 1; l >= 0; --l) {
    os << "L" << l << "=" << c[static_cast<std::size_t>(l)] << (l > 0 ? " " : "");
  }
  return os.str();
}

std::string file_name(const Options& opt, const std::string& base) {
  return opt.out + "/" + base + (opt.tag.empty() ? "" : "_" + opt.tag) + ".csv";
}

// ---------------------------------------------------------------------------
// Fig 7.

struct LayerStats {
  std::size_t nodes = 0;
  double sum = 0, sum2 = 0;
  std::uint32_t min = ~0u, max = 0;
  std::map<std::uint32_t, std::size_t> hist;
  void add(std::uint32_t v) {
    ++nodes;
    sum += v;
    sum2 += static_cast<double>(v) * v;
    min = std::min(min, v);
    max = std::max(max, v);
    ++hist[v];
  }
  double mean() const { return nodes ? sum / static_cast<double>(nodes) : 0; }
  double sd() const {
    if (nodes < 2) return 0;
    const double m = mean();
    return std::sqrt(std::max(0.0, sum2 / static_cast<double>(nodes) - m * m));
  }
};

struct Fig7Out {
  std::ofstream avg, wide, hist;
  int max_level = 0;
  bool header = false;
};

// Layers: "L0" (hollow dropped), "L0*" (hollow kept), "L1".. (hollow
// dropped), each with the hollow-kept figure alongside in the long CSV.
void fig7(const Dataset& d, const Options& opt, Fig7Out& out) {
  std::vector<LayerStats> solid(d.height), full(d.height);
  for (const NodeInfo& ni : d.nodes) {
    if (ni.iv.empty()) continue;
    solid[ni.iv.level].add(ni.cover_solid);
    full[ni.iv.level].add(ni.cover_full);
  }
  auto row = [&](const std::string& layer, int level, const LayerStats& s, bool hollow_kept) {
    out.avg << opt.page_size << "," << opt.fill << "," << (opt.insert ? "insert" : "bulk") << "," << d.n << "," << d.height << "," << layer
            << "," << level << "," << (hollow_kept ? 1 : 0) << "," << s.nodes << "," << s.mean()
            << "," << s.sd() << "," << s.min << "," << s.max << "\n";
    for (const auto& [size, count] : s.hist) {
      out.hist << d.n << "," << layer << "," << size << "," << count << ","
               << static_cast<double>(count) / static_cast<double>(s.nodes) << "\n";
    }
  };
  row("L0", 0, solid[0], false);
  row("L0*", 0, full[0], true);
  for (int l = 1; l < d.height; ++l) {
    // (Built by stream: g++ 12 warns falsely on "L" + to_string(l).)
    std::ostringstream name;
    name << 'L' << l;
    row(name.str(), l, solid[static_cast<std::size_t>(l)], false);
    name << '*';
    row(name.str(), l, full[static_cast<std::size_t>(l)], true);
  }
  // Wide file for plotting: keys, L0, L0*, L1..L<max_level> (NaN if absent).
  out.wide << d.n << "," << solid[0].mean() << "," << full[0].mean();
  for (int l = 1; l <= out.max_level; ++l) {
    if (l < d.height) {
      out.wide << "," << solid[static_cast<std::size_t>(l)].mean();
    } else {
      out.wide << ",NaN";
    }
  }
  out.wide << "\n";

  std::cout << "fig7  n=" << d.n << " height=" << d.height << "  avg cover: L0=" << std::fixed
            << std::setprecision(2) << solid[0].mean() << " L0*=" << full[0].mean();
  for (int l = 1; l < d.height; ++l) {
    std::cout << " L" << l << "=" << solid[static_cast<std::size_t>(l)].mean() << " (L" << l
              << "*=" << full[static_cast<std::size_t>(l)].mean() << ")";
  }
  std::cout << std::defaultfloat << std::setprecision(6) << "\n";
}

// ---------------------------------------------------------------------------
// Fig 8.

// Leaf weights (indexed like d.nodes; zero for inner nodes), summing to 1.
std::vector<double> zipf_weights(const Dataset& d, double theta, const Options& opt) {
  const std::uint64_t n = d.n;
  // Key index -> leaf node index.
  std::vector<std::uint32_t> leaf_of(n);
  for (std::size_t l : d.leaves) {
    const NodeInfo& ni = d.nodes[l];
    for (std::uint64_t k = ni.first_key; k < ni.first_key + ni.key_count; ++k) {
      leaf_of[k] = static_cast<std::uint32_t>(l);
    }
  }
  // Rank -> key index: a fixed random permutation (same for every theta).
  const std::vector<std::uint32_t> perm = forein::bench::shuffled_indices(n, opt.seed ^ 0x5DEECE66Dull);

  std::vector<double> w(d.nodes.size(), 0.0);
  if (opt.samples == 0) {
    double z = 0;
    for (std::uint64_t r = 0; r < n; ++r) z += std::pow(static_cast<double>(r + 1), -theta);
    for (std::uint64_t r = 0; r < n; ++r) {
      w[leaf_of[perm[r]]] += std::pow(static_cast<double>(r + 1), -theta) / z;
    }
  } else {
    forein::testing::ZipfGenerator gen(n, theta);
    std::mt19937_64 srng(opt.seed + 7);
    for (std::uint64_t s = 0; s < opt.samples; ++s) w[leaf_of[perm[gen(srng)]]] += 1.0;
    for (double& x : w) x /= static_cast<double>(opt.samples);
  }
  return w;
}

struct SelectionWorld {
  std::unique_ptr<off::SelectionTree> unit;  // cost 1 per node: node-count budget
  std::unique_ptr<off::SelectionTree> real;  // cost = hollow-free cover size
  std::vector<std::size_t> excluded;
};

SelectionWorld make_world(const Dataset& d, const std::vector<double>& weights) {
  std::vector<off::TreeNodeDesc> unit(d.nodes.size()), real(d.nodes.size());
  SelectionWorld w;
  for (std::size_t i = 0; i < d.nodes.size(); ++i) {
    const NodeInfo& ni = d.nodes[i];
    off::TreeNodeDesc desc{ni.iv.node, ni.parent, ni.iv.level, 1, weights[i]};
    unit[i] = desc;
    desc.cost = ni.cover_solid;
    real[i] = desc;
    if (i != d.root && ni.cover_solid == 0) w.excluded.push_back(i);
  }
  w.unit = std::make_unique<off::SelectionTree>(std::move(unit));
  w.real = std::make_unique<off::SelectionTree>(std::move(real));
  return w;
}

struct Picked {
  std::size_t installed = 0;
  std::uint64_t entries = 0;       // hollow-free covers of the installed nodes
  std::uint64_t entries_full = 0;  // the same nodes with hollow prefixes kept
  std::size_t leaves = 0;          // installed nodes that are leaves
  double ama = 0;
};

Picked summarize(const Dataset& d, const off::Selection& s) {
  Picked p;
  p.installed = s.installed.size();
  p.ama = s.ama;
  for (std::size_t i : s.installed) {
    p.entries += d.nodes[i].cover_solid;
    p.entries_full += d.nodes[i].cover_full;
    if (d.nodes[i].iv.level == 0) ++p.leaves;
  }
  return p;
}

Picked select_n(const Dataset& d, const SelectionWorld& w, std::uint64_t n_nodes) {
  off::SelectionOptions so;
  so.budget = n_nodes;
  so.rank = off::SelectionRank::kReduction;
  so.excluded = w.excluded;
  return summarize(d, off::select_nodes(*w.unit, so));
}

Picked select_budget(const Dataset& d, const SelectionWorld& w, std::uint64_t budget,
                     off::SelectionRank rank) {
  off::SelectionOptions so;
  so.budget = budget;
  so.rank = rank;
  so.excluded = w.excluded;
  return summarize(d, off::select_nodes(*w.real, so));
}

void fig8a(const Dataset& d, const Options& opt, std::ofstream& out) {
  for (double theta : opt.zipf) {
    const auto t0 = Clock::now();
    const auto weights = zipf_weights(d, theta, opt);
    const SelectionWorld w = make_world(d, weights);
    const double baseline = off::compute_ama(*w.unit, std::span<const std::size_t>());
    const Picked p = select_n(d, w, opt.nodes);
    const Picked m = select_budget(d, w, opt.budget, off::SelectionRank::kReduction);
    const Picked mpe = select_budget(d, w, opt.budget, off::SelectionRank::kReductionPerEntry);
    out << opt.page_size << "," << opt.fill << "," << (opt.insert ? "insert" : "bulk") << "," << d.n << "," << d.height << "," << d.nodes.size()
        << "," << d.leaves.size() << "," << theta << "," << baseline << "," << opt.nodes << ","
        << p.installed << "," << p.leaves << "," << p.entries << "," << p.entries_full << ","
        << p.ama << "," << opt.budget << "," << m.installed << "," << m.entries << "," << m.ama
        << "," << mpe.installed << "," << mpe.entries << "," << mpe.ama << "\n";
    std::cout << "fig8a n=" << d.n << " zipf=" << theta << " baseline=" << baseline << "  "
              << opt.nodes << " nodes: installed=" << p.installed << " (leaves " << p.leaves
              << ") entries=" << p.entries << " (hollow kept " << p.entries_full
              << ") AMA=" << p.ama << "  |  M=" << opt.budget << ": nodes=" << m.installed
              << " entries=" << m.entries << " AMA=" << m.ama << "; per-entry rank: nodes="
              << mpe.installed << " AMA=" << mpe.ama << "  (" << std::setprecision(3)
              << seconds_since(t0) << " s)" << std::setprecision(6) << "\n";
  }
}

void fig8b(const Dataset& d, const Options& opt, std::ofstream& out) {
  for (double theta : opt.zipf) {
    const auto t0 = Clock::now();
    const auto weights = zipf_weights(d, theta, opt);
    const SelectionWorld w = make_world(d, weights);
    std::cout << "fig8b n=" << d.n << " zipf=" << theta << ":";
    for (std::size_t k = 0; k < opt.node_counts.size(); ++k) {
      const std::uint64_t target = opt.node_counts[k];
      const Picked p = select_n(d, w, target);
      out << opt.page_size << "," << opt.fill << "," << (opt.insert ? "insert" : "bulk") << "," << d.n << "," << d.height << "," << theta
          << "," << k << "," << target << "," << p.installed << "," << p.leaves << ","
          << p.entries << "," << p.entries_full << "," << p.ama << "\n";
      std::cout << " " << target << "->" << p.ama;
    }
    std::cout << "  (" << std::setprecision(3) << seconds_since(t0) << " s)" << std::setprecision(6)
              << "\n";
  }
}

int run(const Options& opt) {
  const bool do7 = opt.command == "fig7" || opt.command == "all";
  const bool do8a = opt.command == "fig8a" || opt.command == "all";
  const bool do8b = opt.command == "fig8b" || opt.command == "all";

  // Which dataset sizes each part needs.
  std::vector<std::uint64_t> sizes;
  if (do7 || do8a) sizes = opt.sizes;
  if (do8b && std::find(sizes.begin(), sizes.end(), opt.size) == sizes.end()) {
    sizes.push_back(opt.size);
  }
  std::sort(sizes.begin(), sizes.end());

  Fig7Out f7;
  std::ofstream f8a, f8b;
  if (do7) {
    f7.avg = open_csv(file_name(opt, "fig7a_long"));
    f7.avg << "page_size,fill,load,keys,height,layer,level,hollow_kept,nodes,avg_cover,sd_cover,"
              "min_cover,max_cover\n";
    f7.hist = open_csv(file_name(opt, "fig7b"));
    f7.hist << "keys,layer,cover_size,nodes,fraction\n";
    f7.wide = open_csv(file_name(opt, "fig7a"));
  }
  if (do8a) {
    f8a = open_csv(file_name(opt, "fig8a"));
    f8a << "page_size,fill,load,keys,height,tree_nodes,leaves,zipf,baseline_ama,target_nodes,installed,"
           "installed_leaves,lpm_entries,lpm_entries_hollow_kept,ama,budget,budget_installed,"
           "budget_entries,budget_ama,per_entry_installed,per_entry_entries,per_entry_ama\n";
  }
  if (do8b) {
    f8b = open_csv(file_name(opt, "fig8b"));
    f8b << "page_size,fill,load,keys,height,zipf,point,target_nodes,installed,installed_leaves,"
           "lpm_entries,lpm_entries_hollow_kept,ama\n";
  }

  std::vector<Dataset> kept;  // fig7's wide file needs the deepest tree first
  const auto t_all = Clock::now();
  for (std::uint64_t n : sizes) {
    const bool in_list = std::find(opt.sizes.begin(), opt.sizes.end(), n) != opt.sizes.end();
    Dataset d = build_dataset(n, opt);
    std::cout << "tree  n=" << n << " page=" << opt.page_size << " fill=" << opt.fill << "% "
              << (opt.insert ? "insert" : "bulk") << " height=" << d.height << " nodes=" << d.nodes.size() << " (" << shape(d)
              << ") empty-intervals=" << d.empty_intervals << "  build " << std::setprecision(3)
              << d.build_s << " s, covers " << d.table_s << " s" << std::setprecision(6) << "\n";
    if (do7 && in_list) f7.max_level = std::max(f7.max_level, d.height - 1);
    if (do8a && in_list) fig8a(d, opt, f8a);
    if (do8b && n == opt.size) fig8b(d, opt, f8b);
    if (do7 && in_list) {
      // The wide header needs the largest height; sizes are ascending and
      // height grows with n, but keep it general: defer.
      kept.push_back(std::move(d));
      // Drop the big per-key arrays we no longer need.
      kept.back().words.clear();
      kept.back().words.shrink_to_fit();
    }
  }
  if (do7) {
    f7.wide << "keys,L0,L0*";
    for (int l = 1; l <= f7.max_level; ++l) f7.wide << ",L" << l;
    f7.wide << "\n";
    for (const Dataset& d : kept) fig7(d, opt, f7);
  }
  std::cout << "total " << std::setprecision(3) << seconds_since(t_all) << " s\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return forein::bench::guarded_main("forein_experiments", argc, argv, parse, run);
}

// Honeycomb's section 6 on the fpga backend's store (docs/fpga-experiments.md),
// run by tests/bench/run_fpga_experiments.sh.
//
// The same workloads run three ways on this machine:
//   baseline   CPU only, measured on `--threads` threads, on two trees:
//              forein's engine tree (a CPU-optimized B+tree with optimistic
//              latching) and Honeycomb's own store with every operation on
//              the CPU; the better of the two per workload is the baseline
//              (the paper's is eRPC-Masstree, which we cannot run here);
//   honeycomb  the Honeycomb store (offload/backends/fpga/honeycomb/):
//              writes on CPU threads (measured), GET/SCAN executed by the
//              accelerator model's worker threads with the real read
//              algorithm; the accelerator's rate comes from its model fed
//              with the bytes, DMAs and cache hits those requests really
//              made (Accelerator::model()).
// Neither side has a network stack (the paper's eRPC costs CPU on the
// baseline; ours pays none, which favours the baseline); Honeycomb's
// throughput is capped by the paper's 50 Gbps Ethernet over its reply bytes.
//
// Combining the two halves (documented in docs/fpga-experiments.md): with
// read fraction r, the NIC serves up to R_nic reads/s; CPU cores serve the
// writes (W per core-second) and any reads beyond R_nic (R_cpu per
// core-second, measured on the same store), as the paper's CPU helps with
// SCANs at high read fractions:
//   (1-r) X / W + max(0, r X - R_nic) / R_cpu <= threads.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_common.h"
#include "forein/page_store.h"
#include "forein/tree.h"
#include "forein/fpga/accelerator.h"
#include "forein/fpga/store.h"
#include "support/zipf.h"

namespace {

using forein::bench::Clock;
using forein::bench::seconds_since;
namespace hc = forein::offload::fpga;

// Paper section 2: 50 Gbps Ethernet. Reply framing: Ethernet + IPv4 + UDP
// headers (42 B) and an 8-byte reply header, 4 bytes of blob headers per item.
constexpr double kNetworkBytesPerSecond = 50e9 / 8;
constexpr double kReplyOverheadBytes = 42 + 8;
constexpr double kItemFramingBytes = 4;

struct Options {
  std::uint64_t keys = 4'000'000;
  // The cache ablation's store: the paper's is a 4-level tree (128M pairs);
  // 20M pairs of 16 B make ours 4 levels too.
  std::uint64_t cache_keys = 20'000'000;
  double seconds = 1.0;
  unsigned threads = 2;
  std::string out = "docs/bench/fpga";
  std::vector<std::string> experiments = {"ycsb", "cloud", "scan", "cache", "mvcc"};
  std::uint64_t seed = 42;
};

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "fpga_experiments: " << why << "\n"
            << "usage: fpga_experiments [--keys N] [--cache-keys N] [--seconds S] [--threads T]\n"
            << "                        [--out DIR]\n"
            << "                        [--experiments ycsb,cloud,scan,cache,mvcc] [--seed N]\n";
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
    try {
      if (a == "--keys") {
        o.keys = std::stoull(next());
      } else if (a == "--cache-keys") {
        o.cache_keys = std::stoull(next());
      } else if (a == "--seconds") {
        o.seconds = std::stod(next());
      } else if (a == "--threads") {
        o.threads = static_cast<unsigned>(std::stoul(next()));
      } else if (a == "--out") {
        o.out = next();
      } else if (a == "--experiments") {
        o.experiments = forein::bench::parse_list<std::string>(
            next(), a, [](const std::string& m) { usage(m); });
      } else if (a == "--seed") {
        o.seed = std::stoull(next());
      } else {
        usage("unknown flag " + a);
      }
    } catch (const std::logic_error&) {
      usage("bad value for " + a);
    }
  }
  if (o.keys < 1000 || o.cache_keys < 1000) usage("--keys and --cache-keys must be at least 1000");
  if (o.threads == 0) usage("--threads must be at least 1");
  if (o.seconds <= 0) usage("--seconds must be positive");
  return o;
}

// 16-byte keys: the word big-endian, then its complement (distinct words
// give distinct, order-preserving keys).
std::string key_of(std::uint64_t w) {
  std::string k(16, '\0');
  for (int i = 0; i < 8; ++i) {
    k[static_cast<std::size_t>(i)] = static_cast<char>(w >> (56 - 8 * i));
    k[static_cast<std::size_t>(8 + i)] = static_cast<char>(~w >> (56 - 8 * i));
  }
  return k;
}

std::string value_of(std::uint64_t v) {
  std::string s = forein::bench::value_bytes(v);
  return s + s;  // 16 bytes
}

enum class Read : std::uint8_t { kGet, kScan };
enum class Write : std::uint8_t { kNone, kUpdate, kInsert, kReadModifyWrite };
enum class Dist : std::uint8_t { kUniform, kZipf, kLatest };

struct Mix {
  std::string name;
  double read_fraction;
  Read read;
  Write write;
  std::uint32_t scan_min = 1, scan_max = 1;  // items a scan covers on the loaded keys
  Dist dist = Dist::kUniform;
};

const char* dist_name(Dist d) {
  return d == Dist::kUniform ? "uniform" : d == Dist::kZipf ? "zipf" : "latest";
}

// The loaded data set, shared by every run.
struct DataSet {
  std::vector<std::uint64_t> words;  // sorted
  std::vector<std::uint32_t> rank_to_index;
};

// One thread's operation stream.
class OpStream {
 public:
  OpStream(const DataSet& data, const Mix& mix, std::uint64_t seed)
      : data_(data), mix_(mix), rng_(seed) {
    if (mix.dist != Dist::kUniform) {
      zipf_ = std::make_unique<forein::testing::ZipfGenerator>(data.words.size(), 0.99);
    }
  }

  bool next_is_read() { return coin_(rng_) < mix_.read_fraction; }

  // A loaded key's index by the mix's distribution.
  std::size_t pick_index() {
    const std::size_t n = data_.words.size();
    if (mix_.dist == Dist::kUniform) return rng_() % n;
    const std::uint64_t rank = (*zipf_)(rng_);
    if (mix_.dist == Dist::kLatest) return n - 1 - std::min<std::uint64_t>(rank, n - 1);
    return data_.rank_to_index[rank];
  }
  std::uint32_t scan_items() {
    return mix_.scan_min + static_cast<std::uint32_t>(rng_() % (mix_.scan_max - mix_.scan_min + 1));
  }
  std::uint64_t fresh_word() { return rng_(); }
  std::uint64_t value() { return rng_(); }

 private:
  const DataSet& data_;
  const Mix& mix_;
  std::mt19937_64 rng_;
  std::uniform_real_distribution<double> coin_{0.0, 1.0};
  std::unique_ptr<forein::testing::ZipfGenerator> zipf_;
};

// ---- baseline: the engine tree on CPU threads ----------------------------

std::unique_ptr<forein::Tree> load_engine(const DataSet& data) {
  forein::TreeOptions o;
  o.bulk_fill_percent = 70;
  auto tree = forein::Tree::create(std::make_unique<forein::MemoryPageStore>(8192), o);
  std::vector<std::pair<std::string, std::string>> kv;
  kv.reserve(data.words.size());
  for (std::size_t i = 0; i < data.words.size(); ++i) {
    kv.emplace_back(key_of(data.words[i]), value_of(i));
  }
  tree->bulk_load(kv);
  return tree;
}

double run_engine(forein::Tree& tree, const DataSet& data, const Mix& mix, const Options& o,
                  std::uint64_t seed) {
  std::atomic<std::uint64_t> ops{0};
  std::vector<std::thread> threads;
  const auto t0 = Clock::now();
  for (unsigned t = 0; t < o.threads; ++t) {
    threads.emplace_back([&, t] {
      OpStream s(data, mix, seed + t);
      std::string value;
      std::uint64_t n = 0;
      while (seconds_since(t0) < o.seconds) {
        for (int batch = 0; batch < 64; ++batch, ++n) {
          if (s.next_is_read()) {
            const std::string k = key_of(data.words[s.pick_index()]);
            if (mix.read == Read::kGet) {
              tree.get(k, &value);
            } else {
              // SCAN(K, N), as the paper ran eRPC-Masstree.
              forein::ScanSpec spec;
              spec.lower = forein::KeyBound{k, true};
              auto c = tree.scan(spec);
              for (std::uint32_t i = s.scan_items(); i > 0 && c.next(); --i) {
              }
            }
          } else if (mix.write == Write::kInsert) {
            tree.put(key_of(s.fresh_word()), value_of(s.value()));
          } else {
            const std::string k = key_of(data.words[s.pick_index()]);
            if (mix.write == Write::kReadModifyWrite) tree.get(k, &value);
            tree.put(k, value_of(s.value()));
          }
        }
      }
      ops.fetch_add(n);
    });
  }
  for (auto& th : threads) th.join();
  return static_cast<double>(ops.load()) / seconds_since(t0);
}

// ---- honeycomb: CPU writes measured, NIC reads modelled -------------------

struct Honeycomb {
  std::unique_ptr<hc::Accelerator> accelerator;
  std::unique_ptr<hc::Store> store;
};

std::vector<hc::Item> items_of(const DataSet& data) {
  std::vector<hc::Item> items;
  items.reserve(data.words.size());
  for (std::size_t i = 0; i < data.words.size(); ++i) {
    items.push_back({key_of(data.words[i]), value_of(i)});
  }
  return items;
}

Honeycomb load_honeycomb(const std::vector<hc::Item>& items, hc::AcceleratorOptions ao,
                         hc::StoreOptions so) {
  Honeycomb h;
  h.accelerator = std::make_unique<hc::Accelerator>(ao);
  h.store = std::make_unique<hc::Store>(so, h.accelerator.get());
  // The paper's trees sit at about 55-70 % occupancy after inserts.
  h.store->bulk_load(items, 0.7);
  return h;
}

Honeycomb load_honeycomb(const DataSet& data, hc::AcceleratorOptions ao, hc::StoreOptions so) {
  return load_honeycomb(items_of(data), ao, so);
}

struct HoneycombPoint {
  double throughput = 0;     // the system's ops/s (model + measurement)
  double nic_reads = 0;      // R_nic: the accelerator model's reads/s
  double cpu_writes = 0;     // W: writes per core-second (measured)
  double cpu_reads = 0;      // R_cpu: reads per core-second on the store (measured)
  double reply_bytes = 0;    // mean per read
  hc::AcceleratorStats stats;
  hc::AcceleratorModel model;
  std::string bound;         // "nic", "cpu", "network"
};

// The scan bounds for `items` items from loaded index i (SCAN(K_l, K_u)
// returns exactly `items` on the loaded set).
std::pair<std::string, std::string> scan_bounds(const DataSet& data, std::size_t i,
                                                std::uint32_t items) {
  const std::size_t last = std::min(data.words.size() - 1, i + items - 1);
  return {key_of(data.words[i]), key_of(data.words[last])};
}

// What a phase of `threads` threads did in `seconds`.
struct PhaseCount {
  std::uint64_t reads = 0, writes = 0, items = 0;
  double seconds = 0;
};

enum class Route : std::uint8_t {
  kNicReadsCpuWrites,  // the system: reads to the accelerator, writes on the store
  kCpuOnly,            // the same store, every operation on CPU threads
  kCpuWritesOnly,      // only the mix's writes (W)
  kCpuReadsOnly,       // only the mix's reads, on the store's CPU path (R_cpu)
};

PhaseCount run_phase(Honeycomb& h, const DataSet& data, const Mix& mix, const Options& o,
                     std::uint64_t seed, Route route, double seconds) {
  std::atomic<std::uint64_t> reads{0}, writes{0}, items{0};
  std::vector<std::thread> threads;
  const auto t0 = Clock::now();
  for (unsigned t = 0; t < o.threads; ++t) {
    threads.emplace_back([&, t] {
      OpStream s(data, mix, seed + t);
      std::uint64_t r = 0, w = 0, got = 0;
      while (seconds_since(t0) < seconds) {
        for (int batch = 0; batch < 32; ++batch) {
          const bool read = route == Route::kCpuReadsOnly   ? true
                            : route == Route::kCpuWritesOnly ? false
                                                             : s.next_is_read();
          if (read) {
            const std::size_t i = s.pick_index();
            const bool nic = route == Route::kNicReadsCpuWrites;
            if (mix.read == Read::kGet) {
              const std::string k = key_of(data.words[i]);
              got += (nic ? h.accelerator->get(k) : h.store->get(k)).has_value();
            } else {
              const auto [lo, hi] = scan_bounds(data, i, s.scan_items());
              got += (nic ? h.accelerator->scan(lo, hi) : h.store->scan(lo, hi)).items.size();
            }
            ++r;
          } else {
            if (mix.write == Write::kInsert) {
              h.store->put(key_of(s.fresh_word()), value_of(s.value()));
            } else {
              const std::string k = key_of(data.words[s.pick_index()]);
              if (mix.write == Write::kReadModifyWrite) (void)h.store->get(k);
              h.store->update(k, value_of(s.value()));
            }
            ++w;
          }
        }
      }
      reads += r;
      writes += w;
      items += got;
    });
  }
  for (auto& th : threads) th.join();
  return {reads.load(), writes.load(), items.load(), seconds_since(t0)};
}

// One workload point on Honeycomb. Three phases on the same store, so that
// a phase's CPU time is not shared with another's:
//   1. the mix as the system runs it (reads to the accelerator, writes on
//      the store): the accelerator's counters feed its model -> R_nic;
//   2. the mix's writes alone on `threads` threads -> W per core-second;
//   3. the mix's reads alone on the store's CPU path -> R_cpu (the CPU
//      helping with reads, as the paper's does for SCANs).
// Then the same mix CPU-only on the store (a second baseline).
HoneycombPoint run_honeycomb(Honeycomb& h, const DataSet& data, const Mix& mix,
                             const Options& o, std::uint64_t seed, bool cpu_helps,
                             double* cpu_only_ops = nullptr) {
  h.accelerator->reset_stats();
  const PhaseCount system = run_phase(h, data, mix, o, seed, Route::kNicReadsCpuWrites, o.seconds);
  h.accelerator->drain();

  HoneycombPoint p;
  p.stats = h.accelerator->stats();
  p.model = h.accelerator->model();
  p.nic_reads = system.reads > 0 ? p.model.requests_per_second : 0;
  const double items_per_read =
      system.reads > 0 ? static_cast<double>(system.items) / static_cast<double>(system.reads) : 0;
  p.reply_bytes = kReplyOverheadBytes + items_per_read * (32 + kItemFramingBytes);
  const double cores = static_cast<double>(o.threads);
  if (mix.read_fraction < 1.0) {
    const PhaseCount w = run_phase(h, data, mix, o, seed + 100, Route::kCpuWritesOnly, o.seconds);
    p.cpu_writes = static_cast<double>(w.writes) / (w.seconds * cores);
  }
  if (cpu_helps && mix.read_fraction > 0) {
    const PhaseCount r = run_phase(h, data, mix, o, seed + 200, Route::kCpuReadsOnly, o.seconds);
    p.cpu_reads = static_cast<double>(r.reads) / (r.seconds * cores);
  }
  if (cpu_only_ops != nullptr) {
    const PhaseCount c = run_phase(h, data, mix, o, seed + 300, Route::kCpuOnly, o.seconds);
    *cpu_only_ops = static_cast<double>(c.reads + c.writes) / c.seconds;
  }

  const double r = mix.read_fraction;
  const double helping = cpu_helps ? cores : 0;
  double x;
  if (r >= 1.0) {
    x = p.nic_reads + helping * p.cpu_reads;
    p.bound = helping > 0 ? "nic+cpu" : "nic";
  } else if (r * cores * p.cpu_writes / (1 - r) <= p.nic_reads) {
    // The writers' cores are the limit; the NIC keeps up with the reads.
    x = cores * p.cpu_writes / (1 - r);
    p.bound = "cpu";
  } else if (p.cpu_reads > 0 && helping > 0) {
    // The NIC is saturated; the cores share writes and the reads beyond it.
    x = (helping + p.nic_reads / p.cpu_reads) / ((1 - r) / p.cpu_writes + r / p.cpu_reads);
    p.bound = "nic+cpu";
  } else {
    x = p.nic_reads / r;
    p.bound = "nic";
  }
  if (r > 0) {
    const double network_cap = kNetworkBytesPerSecond / p.reply_bytes / r;
    if (network_cap < x) {
      x = network_cap;
      p.bound = "network";
    }
  }
  p.throughput = x;
  return p;
}

DataSet make_data(const Options& o) {
  DataSet d;
  d.words = forein::bench::random_words(o.keys, o.seed);
  d.rank_to_index = forein::bench::shuffled_indices(o.keys, o.seed + 1);
  return d;
}

// The baseline: the better of the two CPU-only runs of the workload.
struct Baseline {
  double engine = 0;  // forein's engine tree
  double store = 0;   // Honeycomb's store, every operation on the CPU
  double best() const { return std::max(engine, store); }
};

void log_point(const std::string& what, const Baseline& base, const HoneycombPoint& p) {
  std::cerr << "  " << what << ": baseline " << static_cast<std::uint64_t>(base.best())
            << " ops/s (engine " << static_cast<std::uint64_t>(base.engine) << ", store on CPU "
            << static_cast<std::uint64_t>(base.store) << "), honeycomb "
            << static_cast<std::uint64_t>(p.throughput) << " ops/s ("
            << (base.best() > 0 ? p.throughput / base.best() : 0) << "x, " << p.bound
            << "-bound; NIC " << static_cast<std::uint64_t>(p.nic_reads) << " reads/s, "
            << p.model.bottleneck << "; W " << static_cast<std::uint64_t>(p.cpu_writes)
            << "/core-s; hit rate " << p.stats.hit_rate() << ")\n";
}

void point_columns(std::ostream& f, const Baseline& base, const HoneycombPoint& p) {
  const double reads = static_cast<double>(std::max<std::uint64_t>(p.stats.requests, 1));
  f << base.engine << "," << base.store << "," << base.best() << "," << p.throughput << ","
    << (base.best() > 0 ? p.throughput / base.best() : 0) << "," << p.bound << ","
    << p.nic_reads << "," << p.cpu_writes << "," << p.cpu_reads << ","
    << static_cast<double>(p.stats.pcie_bytes) / reads << ","
    << static_cast<double>(p.stats.pcie_reads) / reads << ","
    << static_cast<double>(p.stats.dram_bytes) / reads << "," << p.stats.hit_rate() << ","
    << p.model.bottleneck << "\n";
}

constexpr const char* kPointHeader =
    "engine_cpu_ops,store_cpu_ops,baseline_ops,honeycomb_ops,ratio,bound,nic_reads_per_s,"
    "cpu_writes_per_core_s,cpu_reads_per_core_s,pcie_bytes_per_read,pcie_dmas_per_read,"
    "dram_bytes_per_read,interior_hit_rate,nic_bottleneck";

// Both baselines and the Honeycomb point for one mix (engine_mix: the
// baseline's form of the mix, e.g. SCAN(K, N) for SCAN(K_l, K_u)).
HoneycombPoint measure(forein::Tree& tree, Honeycomb& h, const DataSet& data, const Mix& mix,
                       const Mix& engine_mix, const Options& o, std::uint64_t seed,
                       Baseline* base) {
  base->engine = run_engine(tree, data, engine_mix, o, seed);
  return run_honeycomb(h, data, mix, o, seed, true, &base->store);
}

// ---- experiments -----------------------------------------------------------

void ycsb(const DataSet& data, const Options& o) {
  std::cerr << "ycsb: " << data.words.size() << " keys, " << o.threads << " threads\n";
  auto f = forein::bench::open_csv(o.out + "/ycsb.csv");
  f << "workload,distribution," << kPointHeader << "\n";
  for (const Dist dist : {Dist::kUniform, Dist::kZipf}) {
    auto tree = load_engine(data);
    Honeycomb h = load_honeycomb(data, {}, {});
    // YCSB's order (Table 2): A-F; D reads the latest inserts.
    const std::vector<Mix> mixes = {
        {"A", 0.5, Read::kGet, Write::kUpdate, 1, 1, dist},
        {"B", 0.95, Read::kGet, Write::kUpdate, 1, 1, dist},
        {"C", 1.0, Read::kGet, Write::kNone, 1, 1, dist},
        {"D", 0.95, Read::kGet, Write::kInsert, 1, 1, dist == Dist::kZipf ? Dist::kLatest : dist},
        {"E", 0.95, Read::kScan, Write::kInsert, 1, 100, dist},
        {"F", 0.5, Read::kGet, Write::kReadModifyWrite, 1, 1, dist},
    };
    for (const Mix& m : mixes) {
      Baseline base;
      const HoneycombPoint p = measure(*tree, h, data, m, m, o, o.seed + 7, &base);
      log_point(std::string("YCSB-") + m.name + " " + dist_name(dist), base, p);
      f << m.name << "," << dist_name(m.dist) << ",";
      point_columns(f, base, p);
    }
  }
}

void cloud(const DataSet& data, const Options& o, bool mvcc_sweep) {
  const std::string name = mvcc_sweep ? "mvcc" : "cloud";
  std::cerr << name << ": " << data.words.size() << " keys\n";
  auto f = forein::bench::open_csv(o.out + "/" + name + ".csv");
  f << "read_percent,distribution,mvcc," << kPointHeader << "\n";
  for (const Dist dist : {Dist::kUniform, Dist::kZipf}) {
    for (const bool mvcc : mvcc_sweep ? std::vector<bool>{true, false} : std::vector<bool>{true}) {
      if (mvcc_sweep && dist == Dist::kZipf) continue;
      auto tree = load_engine(data);
      hc::StoreOptions so;
      so.mvcc = mvcc;
      Honeycomb h = load_honeycomb(data, {}, so);
      for (const int pct : {50, 60, 70, 80, 90, 100}) {
        // SCAN(K_l, K_u) bounds chosen to return 3 items on the loaded set;
        // the baseline's SCAN(K, N) takes 3 or 4 (the paper's matching).
        const Mix hm{"cloud", pct / 100.0, Read::kScan, Write::kInsert, 3, 3, dist};
        const Mix bm{"cloud", pct / 100.0, Read::kScan, Write::kInsert, 3, 4, dist};
        Baseline base;
        const HoneycombPoint p = measure(*tree, h, data, hm, bm, o, o.seed + 11, &base);
        log_point(name + " " + std::to_string(pct) + "% reads " + dist_name(dist) +
                      (mvcc ? "" : " mvcc off"),
                  base, p);
        f << pct << "," << dist_name(dist) << "," << (mvcc ? "on" : "off") << ",";
        point_columns(f, base, p);
      }
    }
  }
}

void scan_sizes(const DataSet& data, const Options& o) {
  std::cerr << "scan sizes: " << data.words.size() << " keys\n";
  auto f = forein::bench::open_csv(o.out + "/scan_size.csv");
  f << "items," << kPointHeader << "\n";
  auto tree = load_engine(data);
  Honeycomb h = load_honeycomb(data, {}, {});
  for (const std::uint32_t n : {1u, 2u, 4u, 8u, 12u, 16u, 24u}) {
    const Mix m{"scan", 1.0, Read::kScan, Write::kNone, n, n, Dist::kUniform};
    Baseline base;
    const HoneycombPoint p = measure(*tree, h, data, m, m, o, o.seed + 13, &base);
    log_point("scan of " + std::to_string(n), base, p);
    f << n << ",";
    point_columns(f, base, p);
  }
}

// Figure 16: FPGA only (no CPU), read-only 1-item SCAN, by cache setup, on
// its own (larger) store so the tree has the paper's four levels.
void cache_ablation(const Options& o) {
  Options co = o;
  co.keys = o.cache_keys;
  const DataSet data = make_data(co);
  std::cerr << "cache ablation: " << data.words.size() << " keys\n";
  auto f = forein::bench::open_csv(o.out + "/cache.csv");
  f << "setup,cache_mb,height,nic_reads_per_s,ratio_to_no_cache,interior_hit_rate,"
       "pcie_bytes_per_read,pcie_dmas_per_read,dram_bytes_per_read,dram_accesses_per_read,"
       "balanced_to_pcie,nic_bottleneck,compute_bound,pcie_bound,pcie_tag_bound,dram_bound,"
       "busiest_unit,mean_latency_us\n";
  struct Setup {
    const char* name;
    hc::CacheMode mode;
    std::uint64_t mb;
    bool balancer;
  };
  const std::vector<Setup> setups = {
      {"no cache", hc::CacheMode::kNone, 0, true},
      {"root in SRAM", hc::CacheMode::kRootOnly, 0, true},
      {"interior 1 MB", hc::CacheMode::kInterior, 1, true},
      {"interior 16 MB", hc::CacheMode::kInterior, 16, true},
      {"interior 256 MB", hc::CacheMode::kInterior, 256, true},
      {"interior 256 MB no LB", hc::CacheMode::kInterior, 256, false},
  };
  const std::vector<hc::Item> items = items_of(data);
  double none = 0;
  for (const Setup& s : setups) {
    hc::AcceleratorOptions ao;
    ao.cache = s.mode;
    ao.cache_bytes = std::max<std::uint64_t>(s.mb, 1) << 20;
    ao.load_balancer = s.balancer;
    Honeycomb h = load_honeycomb(items, ao, {});
    const Mix m{"scan1", 1.0, Read::kScan, Write::kNone, 1, 1, Dist::kUniform};
    // Warm the cache, then measure.
    (void)run_honeycomb(h, data, m, co, o.seed + 17, false);
    const HoneycombPoint p = run_honeycomb(h, data, m, co, o.seed + 19, false);
    if (s.mode == hc::CacheMode::kNone) none = p.nic_reads;
    const double reads = static_cast<double>(std::max<std::uint64_t>(p.stats.requests, 1));
    const double dram_accesses =
        static_cast<double>(p.stats.dram_reads + p.stats.page_table_reads + p.stats.metadata_reads) / reads;
    std::cerr << "  " << s.name << ": " << static_cast<std::uint64_t>(p.nic_reads)
              << " reads/s (" << (none > 0 ? p.nic_reads / none : 0) << "x no cache), hit rate "
              << p.stats.hit_rate() << ", " << p.model.bottleneck << "-bound (compute "
              << p.model.compute_bound << " " << p.model.busiest_unit << ", pcie " << p.model.pcie_bound
              << ", dram " << p.model.dram_bound << ", tags " << p.model.pcie_tag_bound << "), "
              << dram_accesses << " DRAM accesses/read, height " << h.store->stats().height << "\n";
    f << '"' << s.name << "\"," << s.mb << "," << h.store->stats().height << "," << p.nic_reads << ","
      << (none > 0 ? p.nic_reads / none : 0) << "," << p.stats.hit_rate() << ","
      << static_cast<double>(p.stats.pcie_bytes) / reads << ","
      << static_cast<double>(p.stats.pcie_reads) / reads << ","
      << static_cast<double>(p.stats.dram_bytes) / reads << "," << dram_accesses << ","
      << p.stats.balanced_to_pcie << "," << p.model.bottleneck << "," << p.model.compute_bound << ","
      << p.model.pcie_bound << "," << p.model.pcie_tag_bound << "," << p.model.dram_bound << ",\""
      << p.model.busiest_unit << "\"," << p.model.mean_latency_ns / 1000 << "\n";
  }
}

int run(const Options& o) {
  std::optional<DataSet> loaded;  // made on first use: the cache ablation has its own
  const auto data = [&]() -> const DataSet& {
    if (!loaded) loaded = make_data(o);
    return *loaded;
  };
  for (const std::string& e : o.experiments) {
    if (e == "ycsb") {
      ycsb(data(), o);
    } else if (e == "cloud") {
      cloud(data(), o, false);
    } else if (e == "mvcc") {
      cloud(data(), o, true);
    } else if (e == "scan") {
      scan_sizes(data(), o);
    } else if (e == "cache") {
      cache_ablation(o);
    } else {
      usage("unknown experiment " + e);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return forein::bench::guarded_main("fpga_experiments", argc, argv, parse, run);
}

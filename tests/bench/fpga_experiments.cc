// Honeycomb's section 6 on the fpga backend's store (docs/fpga-experiments.md),
// run by tests/bench/run_fpga_experiments.sh.
//
// Measured on this machine, on `--threads` threads: forein's engine tree
// (the CPU baseline's index) and Honeycomb's store (offload/backends/fpga/
// honeycomb/): its writes on CPU threads, its GET/SCAN executed by the
// accelerator model's worker threads with the real read algorithm. The
// accelerator's rate comes from its model fed with the work those requests
// really did (bytes, DMAs, accesses, cycles, reply bytes:
// Accelerator::model(), the lowest of compute, PCIe, read tags, DRAM and
// network).
//
// Both systems are then put on the paper's server (6.1: 10 cores, requests
// over the network) from per-core costs:
//   - the network path's CPU per request: forein-kv-server's GET over the
//     DPDK memif path per server-CPU-second (--server-csv, written by
//     run_fpga_cpu_server.sh) minus the same GET in process on a twin of
//     the server's tree; without that file, none;
//   - a read on a CPU server: the better of the engine and Honeycomb's
//     store read by the CPU, in process on this tree, plus the network path;
//     a write: the engine's in-process time plus the network path;
//   - baseline: C / (r t_read + (1-r) t_write) on C cores;
//   - Honeycomb: the NIC serves up to R_nic reads/s; the C cores serve the
//     writes (the store's, plus the network path) and, in the cloud-storage
//     runs as the paper's did, the reads beyond R_nic:
//       (1-r) X t_write + max(0, r X - R_nic) t_read_cpu <= C,
//     and replies fit the 50 Gbps Ethernet.
// Throughput per watt of TDP with the paper's server figures (6.3: 127 W for
// eRPC-Masstree's server, 157.9 W for Honeycomb's).
#include <algorithm>
#include <atomic>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
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

// Paper section 6.3: the servers' TDP, the proxy for cost.
constexpr double kBaselineWatts = 127.0;
constexpr double kHoneycombWatts = 157.9;

struct Options {
  // The paper's tree has four levels (128M pairs, 6.2); 20M pairs of 16 B
  // make ours four levels too, which sets the accelerator's work a request.
  std::uint64_t keys = 20'000'000;
  std::uint64_t cache_keys = 20'000'000;
  double seconds = 1.0;
  unsigned threads = 2;
  double cores = 10;  // the paper's server (6.1)
  std::string server_csv;  // run_fpga_cpu_server.sh's cpu_server.csv
  std::uint64_t server_keys = 2'000'000;  // the data set it served
  std::string out = "docs/bench/fpga";
  std::vector<std::string> experiments = {"ycsb", "cloud", "scan", "cache", "mvcc", "keysize", "logblock",
                                          "latency"};
  std::uint64_t seed = 42;
};

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "fpga_experiments: " << why << "\n"
            << "usage: fpga_experiments [--keys N] [--cache-keys N] [--seconds S] [--threads T]\n"
            << "                        [--cores C] [--server-csv FILE] [--server-keys N] [--out DIR] [--seed N]\n"
            << "                        [--experiments ycsb,cloud,scan,cache,mvcc,keysize,logblock,latency]\n";
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
      } else if (a == "--cores") {
        o.cores = std::stod(next());
      } else if (a == "--server-csv") {
        o.server_csv = next();
      } else if (a == "--server-keys") {
        o.server_keys = std::stoull(next());
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
  if (!(o.cores >= 1)) usage("--cores must be at least 1");
  return o;
}

// Key and value sizes: 16 bytes as the paper's experiments (6.2); the key
// size experiment (Figure 14) sets both between its runs, never while
// threads run.
std::size_t g_key_bytes = 16;
std::size_t g_value_bytes = 16;

// The word big-endian, then its complement repeated (distinct words give
// distinct, order-preserving keys of any size >= 8).
std::string key_of(std::uint64_t w) {
  std::string k(g_key_bytes, '\0');
  for (std::size_t i = 0; i < g_key_bytes; ++i) {
    const std::uint64_t x = i < 8 ? w : ~w;
    k[i] = static_cast<char>(x >> (56 - 8 * (i % 8)));
  }
  return k;
}

std::string value_of(std::uint64_t v) {
  const std::string s = forein::bench::value_bytes(v);
  std::string out;
  while (out.size() < g_value_bytes) out += s;
  out.resize(g_value_bytes);
  return out;
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

enum class Part : std::uint8_t { kMix, kReadsOnly, kWritesOnly };

// The engine on `mix` (or its reads or writes alone), ops/s on o.threads.
double run_engine(forein::Tree& tree, const DataSet& data, const Mix& mix, const Options& o,
                  std::uint64_t seed, Part part = Part::kMix) {
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
          const bool read = part == Part::kReadsOnly ? true : part == Part::kWritesOnly ? false : s.next_is_read();
          if (read) {
            const std::string k = key_of(data.words[s.pick_index()]);
            if (mix.read == Read::kGet) {
              tree.get(k, &value);
            } else {
              // SCAN(K, N), as the paper ran eRPC-Masstree.
              const std::uint32_t want = s.scan_items();
              forein::ScanSpec spec;
              spec.lower = forein::KeyBound{k, true};
              spec.expected_rows = want;
              auto c = tree.scan(spec);
              for (std::uint32_t i = want; i > 0 && c.next(); --i) {
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

// ---- the CPU server's per-request costs over the network ------------------

// What run_fpga_cpu_server.sh measured: server CPU seconds per request over
// the memif path (medians over rounds), per engine ("forein",
// "honeycomb-cpu"), op ("get", "scan") and items; and the network path's
// CPU per request derived from it (calibrate_network).
struct ServerCosts {
  std::map<std::tuple<std::string, std::string, int>, double> seconds;
  std::uint64_t keys = 0;  // the server's data set (for the in-process twin)
  double net = 0;
  bool measured() const { return !seconds.empty(); }
  double get(const std::string& engine) const {
    const auto at = seconds.find({engine, "get", 1});
    return at == seconds.end() ? 0 : at->second;
  }
};

std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out;
  std::string cell;
  std::stringstream ss(line);
  while (std::getline(ss, cell, ',')) out.push_back(cell);
  return out;
}

// The named columns' positions in a CSV header line (throws if one is missing).
std::map<std::string, std::size_t> columns(const std::string& path, const std::string& header,
                                           std::initializer_list<const char*> names) {
  const std::vector<std::string> head = split_csv(header);
  std::map<std::string, std::size_t> out;
  for (const char* name : names) {
    const auto at = std::find(head.begin(), head.end(), name);
    if (at == head.end()) throw std::runtime_error(path + ": no column " + name);
    out[name] = static_cast<std::size_t>(at - head.begin());
  }
  return out;
}

ServerCosts load_server_costs(const std::string& path, std::uint64_t server_keys) {
  ServerCosts c;
  c.keys = server_keys;
  if (path.empty()) return c;
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read --server-csv " + path);
  std::string line;
  std::getline(in, line);
  auto col = columns(path, line, {"engine", "op", "items", "per_core_req_per_s"});
  std::map<std::tuple<std::string, std::string, int>, std::vector<double>> rates;
  while (std::getline(in, line)) {
    const std::vector<std::string> row = split_csv(line);
    if (row.size() < col.size()) continue;
    const double r = std::stod(row.at(col["per_core_req_per_s"]));
    if (r > 0) rates[{row.at(col["engine"]), row.at(col["op"]), std::stoi(row.at(col["items"]))}].push_back(r);
  }
  for (auto& [key, v] : rates) {
    std::sort(v.begin(), v.end());
    c.seconds[key] = 1.0 / v[v.size() / 2];
  }
  return c;
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
  double nic_reads = 0;      // R_nic: the accelerator model's reads/s
  double cpu_writes = 0;     // W: writes per core-second (measured)
  double cpu_reads = 0;      // R_cpu: reads per core-second on the store (measured)
  double reply_bytes = 0;    // mean per read, on the wire
  hc::AcceleratorStats stats;
  hc::AcceleratorModel model;
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
//   3. the mix's reads alone on the store's CPU path -> R_cpu.
HoneycombPoint run_honeycomb(Honeycomb& h, const DataSet& data, const Mix& mix,
                             const Options& o, std::uint64_t seed, bool cpu_phases) {
  h.accelerator->reset_stats();
  const PhaseCount system = run_phase(h, data, mix, o, seed, Route::kNicReadsCpuWrites, o.seconds);
  h.accelerator->drain();

  HoneycombPoint p;
  p.stats = h.accelerator->stats();
  p.model = h.accelerator->model();
  p.nic_reads = system.reads > 0 ? p.model.requests_per_second : 0;
  const double requests = static_cast<double>(std::max<std::uint64_t>(p.stats.requests, 1));
  p.reply_bytes = p.model.network_seconds * h.accelerator->options().network_bits_per_second / 8 / requests;
  const double cores = static_cast<double>(o.threads);
  if (cpu_phases && mix.read_fraction < 1.0) {
    const PhaseCount w = run_phase(h, data, mix, o, seed + 100, Route::kCpuWritesOnly, o.seconds);
    p.cpu_writes = static_cast<double>(w.writes) / (w.seconds * cores);
  }
  if (cpu_phases && mix.read_fraction > 0) {
    const PhaseCount r = run_phase(h, data, mix, o, seed + 200, Route::kCpuReadsOnly, o.seconds);
    p.cpu_reads = static_cast<double>(r.reads) / (r.seconds * cores);
  }
  return p;
}

DataSet make_data(const Options& o) {
  DataSet d;
  d.words = forein::bench::random_words(o.keys, o.seed);
  d.rank_to_index = forein::bench::shuffled_indices(o.keys, o.seed + 1);
  return d;
}

// The engine's per-core costs in process (seconds per op on one core).
struct EngineCosts {
  double mix_ops = 0;  // the mix on o.threads, ops/s (as measured)
  double read = 0, write = 0;
};

// Both systems on the paper's server (C cores, requests over the network).
struct PaperScale {
  double baseline = 0, honeycomb = 0;  // ops/s
  double ratio() const { return baseline > 0 ? honeycomb / baseline : 0; }
  double baseline_per_watt() const { return baseline / kBaselineWatts; }
  double honeycomb_per_watt() const { return honeycomb / kHoneycombWatts; }
  double efficiency_ratio() const { return baseline > 0 ? honeycomb_per_watt() / baseline_per_watt() : 0; }
  std::string bound;  // "cpu", "nic:<resource>", "nic:<resource>+cpu", "network"
};

// cpu_helps: Honeycomb's cores also serve reads beyond the NIC, as the
// paper configured its cloud-storage runs (6.3: "For high read percentages,
// Honeycomb also uses CPU cores to execute SCAN operations"); elsewhere
// the paper's reads are the accelerator's alone.
PaperScale at_paper_scale(const Mix& mix, const EngineCosts& e, const HoneycombPoint& p,
                          const ServerCosts& server, const Options& o, bool cpu_helps) {
  const double r = mix.read_fraction, c = o.cores;
  PaperScale out;
  // A read on a CPU server core: the better of the engine and Honeycomb's
  // store read by the CPU, in process on this tree, plus the network path.
  const double store_read = p.cpu_reads > 0 ? 1 / p.cpu_reads : 0;
  const double cpu_read =
      (e.read > 0 && store_read > 0 ? std::min(e.read, store_read) : std::max(e.read, store_read)) + server.net;
  const double b_time = r * cpu_read + (r < 1 ? (1 - r) * (e.write + server.net) : 0);
  out.baseline = b_time > 0 ? c / b_time : 0;
  // Honeycomb: the NIC's reads; the cores' writes and the reads beyond the
  // NIC (on its own store), each with the network path.
  const double h_write = p.cpu_writes > 0 ? 1 / p.cpu_writes + server.net : 0;
  const double h_read = cpu_helps && store_read > 0 ? store_read + server.net : 0;
  const std::string nic = "nic:" + p.model.bottleneck;
  double x;
  if (r >= 1.0) {
    x = p.nic_reads + (h_read > 0 ? c / h_read : 0);
    out.bound = h_read > 0 ? nic + "+cpu" : nic;
  } else if (r * c / ((1 - r) * h_write) <= p.nic_reads) {
    x = c / ((1 - r) * h_write);  // the writers' cores bind; the NIC keeps up
    out.bound = "cpu";
  } else if (h_read > 0) {
    x = (c + p.nic_reads * h_read) / ((1 - r) * h_write + r * h_read);
    out.bound = nic + "+cpu";
  } else {
    x = p.nic_reads / r;
    out.bound = nic;
  }
  if (r > 0 && p.reply_bytes > 0) {
    const double cap = 50e9 / 8 / p.reply_bytes / r;  // the card's Ethernet (section 2)
    if (cap < x) {
      x = cap;
      out.bound = "network";
    }
  }
  out.honeycomb = x;
  return out;
}

EngineCosts measure_engine(forein::Tree& tree, const DataSet& data, const Mix& mix, const Options& o,
                           std::uint64_t seed) {
  EngineCosts e;
  const double t = static_cast<double>(o.threads);
  e.mix_ops = run_engine(tree, data, mix, o, seed);
  if (mix.read_fraction > 0) e.read = t / run_engine(tree, data, mix, o, seed + 1, Part::kReadsOnly);
  if (mix.read_fraction < 1) e.write = t / run_engine(tree, data, mix, o, seed + 2, Part::kWritesOnly);
  return e;
}

void log_point(const std::string& what, const PaperScale& s, const HoneycombPoint& p) {
  std::cerr << "  " << what << ": baseline " << s.baseline / 1e6 << " M/s, honeycomb " << s.honeycomb / 1e6
            << " M/s (" << s.ratio() << "x, " << s.bound << "; NIC " << p.nic_reads / 1e6 << " M reads/s "
            << p.model.bottleneck << "-bound; W " << static_cast<std::uint64_t>(p.cpu_writes)
            << "/core-s; hit rate " << p.stats.hit_rate() << ")\n";
}

constexpr const char* kPointHeader =
    "engine_inproc_ops,engine_read_us,engine_write_us,baseline_ops,honeycomb_ops,ratio,"
    "baseline_kops_per_watt,honeycomb_kops_per_watt,efficiency_ratio,bound,nic_reads_per_s,"
    "nic_bottleneck,compute_bound,pcie_bound,dram_bound,network_bound,cpu_writes_per_core_s,"
    "cpu_reads_per_core_s,pcie_bytes_per_read,pcie_dmas_per_read,dram_bytes_per_read,interior_hit_rate";

void point_columns(std::ostream& f, const EngineCosts& e, const PaperScale& s, const HoneycombPoint& p) {
  const double reads = static_cast<double>(std::max<std::uint64_t>(p.stats.requests, 1));
  f << e.mix_ops << "," << e.read * 1e6 << "," << e.write * 1e6 << "," << s.baseline << "," << s.honeycomb
    << "," << s.ratio() << "," << s.baseline_per_watt() / 1e3 << "," << s.honeycomb_per_watt() / 1e3 << ","
    << s.efficiency_ratio() << "," << s.bound << "," << p.nic_reads << "," << p.model.bottleneck << ","
    << p.model.compute_bound << "," << p.model.pcie_bound << "," << p.model.dram_bound << ","
    << p.model.network_bound << "," << p.cpu_writes << "," << p.cpu_reads << ","
    << static_cast<double>(p.stats.pcie_bytes) / reads << "," << static_cast<double>(p.stats.pcie_reads) / reads
    << "," << static_cast<double>(p.stats.dram_bytes) / reads << "," << p.stats.hit_rate() << "\n";
}

// The engine's costs, the Honeycomb point and both on the paper's server
// for one mix (engine_mix: the baseline's form of the mix, e.g. SCAN(K, N)
// for SCAN(K_l, K_u)).
struct Measured {
  EngineCosts engine;
  HoneycombPoint honeycomb;
  PaperScale scale;
};

Measured measure(forein::Tree& tree, Honeycomb& h, const DataSet& data, const Mix& mix, const Mix& engine_mix,
                 const ServerCosts& server, const Options& o, std::uint64_t seed, bool cpu_helps = false) {
  Measured m;
  m.engine = measure_engine(tree, data, engine_mix, o, seed);
  m.honeycomb = run_honeycomb(h, data, mix, o, seed, true);
  m.scale = at_paper_scale(mix, m.engine, m.honeycomb, server, o, cpu_helps);
  return m;
}

// The network path's CPU per request: the engine's GET over memif (per
// server core) minus the same GET in process on a twin of the server's
// tree (its key count, 8-byte keys, 16-byte values).
void calibrate_network(ServerCosts& server, const Options& o) {
  const double over_memif = server.get("forein");
  if (over_memif <= 0) return;
  g_key_bytes = 8;
  Options to = o;
  to.keys = server.keys;
  const DataSet twin = make_data(to);
  auto tree = load_engine(twin);
  const Mix get{"get", 1.0, Read::kGet, Write::kNone, 1, 1, Dist::kUniform};
  const double inproc = static_cast<double>(o.threads) / run_engine(*tree, twin, get, to, o.seed + 3, Part::kReadsOnly);
  g_key_bytes = 16;
  server.net = std::max(0.0, over_memif - inproc);
  std::cerr << "network path: " << server.net * 1e6 << " us of server CPU a request (memif GET "
            << over_memif * 1e6 << " us - in-process GET " << inproc * 1e6 << " us, " << server.keys
            << " keys)\n";
}

// ---- experiments -----------------------------------------------------------

void ycsb(const DataSet& data, const ServerCosts& server, const Options& o) {
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
      const Measured r = measure(*tree, h, data, m, m, server, o, o.seed + 7);
      log_point(std::string("YCSB-") + m.name + " " + dist_name(dist), r.scale, r.honeycomb);
      f << m.name << "," << dist_name(m.dist) << ",";
      point_columns(f, r.engine, r.scale, r.honeycomb);
    }
  }
}

void cloud(const DataSet& data, const ServerCosts& server, const Options& o, bool mvcc_sweep) {
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
      // 0 %: the paper's "100 % writes" point (58 % of the baseline).
      for (const int pct : {0, 50, 60, 70, 80, 90, 100}) {
        if (mvcc_sweep && pct == 0) continue;
        // SCAN(K_l, K_u) bounds chosen to return 3 items on the loaded set;
        // the baseline's SCAN(K, N) takes 3 or 4 (the paper's matching).
        const Mix hm{"cloud", pct / 100.0, Read::kScan, Write::kInsert, 3, 3, dist};
        const Mix bm{"cloud", pct / 100.0, Read::kScan, Write::kInsert, 3, 4, dist};
        const Measured r = measure(*tree, h, data, hm, bm, server, o, o.seed + 11, true);
        log_point(name + " " + std::to_string(pct) + "% reads " + dist_name(dist) + (mvcc ? "" : " mvcc off"),
                  r.scale, r.honeycomb);
        f << pct << "," << dist_name(dist) << "," << (mvcc ? "on" : "off") << ",";
        point_columns(f, r.engine, r.scale, r.honeycomb);
      }
    }
  }
}

void scan_sizes(const DataSet& data, const ServerCosts& server, const Options& o) {
  std::cerr << "scan sizes: " << data.words.size() << " keys\n";
  auto f = forein::bench::open_csv(o.out + "/scan_size.csv");
  f << "items," << kPointHeader << "\n";
  auto tree = load_engine(data);
  Honeycomb h = load_honeycomb(data, {}, {});
  for (const std::uint32_t n : {1u, 2u, 4u, 8u, 12u, 16u, 24u}) {
    const Mix m{"scan", 1.0, Read::kScan, Write::kNone, n, n, Dist::kUniform};
    const Measured r = measure(*tree, h, data, m, m, server, o, o.seed + 13);
    log_point("scan of " + std::to_string(n), r.scale, r.honeycomb);
    f << n << ",";
    point_columns(f, r.engine, r.scale, r.honeycomb);
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

// Figure 14: 1-item SCANs on the initial store as keys and values grow
// (equal sizes). Fewer pairs for large keys keep the store in memory; the
// height is reported (the paper's stays at four levels).
void key_sizes(const ServerCosts& server, const Options& o) {
  auto f = forein::bench::open_csv(o.out + "/keysize.csv");
  f << "key_bytes,keys,height," << kPointHeader << "\n";
  for (const std::size_t bytes : {8u, 16u, 32u, 64u, 128u}) {
    g_key_bytes = bytes;
    g_value_bytes = bytes;
    Options ko = o;
    // The paper keeps the tree's depth (6.3); o.keys x 16 / bytes pairs keep
    // ours near four levels (8-byte keys: twice the pairs).
    ko.keys = std::max<std::uint64_t>(1000, o.keys * 16 / bytes);
    const DataSet data = make_data(ko);
    auto tree = load_engine(data);
    Honeycomb h = load_honeycomb(data, {}, {});
    const Mix m{"scan1", 1.0, Read::kScan, Write::kNone, 1, 1, Dist::kUniform};
    (void)run_honeycomb(h, data, m, ko, o.seed + 21, false);  // warm the cache
    const Measured r = measure(*tree, h, data, m, m, server, ko, o.seed + 23);
    log_point(std::to_string(bytes) + "-byte keys and values", r.scale, r.honeycomb);
    f << bytes << "," << ko.keys << "," << h.store->stats().height << ",";
    point_columns(f, r.engine, r.scale, r.honeycomb);
  }
  g_key_bytes = 16;
  g_value_bytes = 16;
}

// Figure 17: log block size against 1-item SCANs (read-only, the NIC) and
// inserts (write-only, the CPU).
void log_blocks(const DataSet& data, const Options& o) {
  auto f = forein::bench::open_csv(o.out + "/logblock.csv");
  f << "log_block_bytes,inserts_per_core_s,merges_per_insert,nic_reads_per_s,nic_bottleneck,pcie_bytes_per_read\n";
  const std::vector<hc::Item> items = items_of(data);
  for (const std::size_t log : {32u, 64u, 128u, 256u, 512u, 1024u, 2048u}) {
    hc::StoreOptions so;
    so.log_block_bytes = log;
    Honeycomb h = load_honeycomb(items, {}, so);
    const Mix ins{"insert", 0.0, Read::kGet, Write::kInsert, 1, 1, Dist::kUniform};
    const PhaseCount w = run_phase(h, data, ins, o, o.seed + 31, Route::kCpuWritesOnly, o.seconds);
    const double per_core = static_cast<double>(w.writes) / (w.seconds * o.threads);
    const hc::StoreStats st = h.store->stats();
    const Mix scan{"scan1", 1.0, Read::kScan, Write::kNone, 1, 1, Dist::kUniform};
    (void)run_honeycomb(h, data, scan, o, o.seed + 33, false);
    const HoneycombPoint p = run_honeycomb(h, data, scan, o, o.seed + 35, false);
    const double reads = static_cast<double>(std::max<std::uint64_t>(p.stats.requests, 1));
    std::cerr << "  log block " << log << " B: " << static_cast<std::uint64_t>(per_core)
              << " inserts/core-s, NIC " << p.nic_reads / 1e6 << " M 1-item SCANs/s (" << p.model.bottleneck
              << ")\n";
    f << log << "," << per_core << ","
      << (w.writes > 0 ? static_cast<double>(st.merges) / static_cast<double>(w.writes) : 0) << "," << p.nic_reads
      << "," << p.model.bottleneck << "," << static_cast<double>(p.stats.pcie_bytes) / reads << "\n";
  }
}

// Figure 12: median latency against throughput, read-only 3-item SCANs.
// Honeycomb: the network path's round trip (the server file's window-1 p50
// less the server's own time a request) plus the accelerator's chain of
// dependent reads, plus M/D/1 queueing at its bottleneck; the baseline: the
// server's window sweep (run_fpga_cpu_server.sh), its rate times the cores.
void latency(const DataSet& data, const ServerCosts& server, const Options& o) {
  auto f = forein::bench::open_csv(o.out + "/latency.csv");
  f << "system,window_or_load,throughput_ops,p50_us\n";
  double path_us = 0;
  const std::string sweep = o.server_csv.empty()
                                ? ""
                                : o.server_csv.substr(0, o.server_csv.rfind('/') + 1) + "cpu_server_latency.csv";
  std::ifstream in(sweep);
  if (in) {
    // The engine whose SCAN 3 costs a server core less is the baseline.
    const auto cost = [&](const char* engine) {
      const auto at = server.seconds.find({engine, "scan", 3});
      return at == server.seconds.end() ? 1e9 : at->second;
    };
    const std::string engine = cost("honeycomb-cpu") < cost("forein") ? "honeycomb-cpu" : "forein";
    std::string line;
    std::getline(in, line);
    auto col = columns(sweep, line, {"engine", "window", "req_per_s", "p50_us"});
    const double per_request_us = std::min(cost("forein"), cost("honeycomb-cpu")) * 1e6;
    std::vector<double> window_one;
    while (std::getline(in, line)) {
      const std::vector<std::string> row = split_csv(line);
      if (row.size() < col.size() || row.at(col["engine"]) != engine) continue;
      const double w = std::stod(row.at(col["window"])), x = std::stod(row.at(col["req_per_s"])),
                   l = std::stod(row.at(col["p50_us"]));
      if (w == 1) window_one.push_back(l);
      f << "baseline," << w << "," << x * o.cores << "," << l << "\n";
    }
    if (!window_one.empty()) {
      std::sort(window_one.begin(), window_one.end());
      path_us = std::max(0.0, window_one[window_one.size() / 2] - per_request_us);
    }
  }
  Honeycomb h = load_honeycomb(data, {}, {});
  const Mix m{"scan3", 1.0, Read::kScan, Write::kNone, 3, 3, Dist::kUniform};
  (void)run_honeycomb(h, data, m, o, o.seed + 41, false);
  const HoneycombPoint p = run_honeycomb(h, data, m, o, o.seed + 43, false);
  const double service_us = 1e6 / p.nic_reads;
  for (const double rho : {0.1, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95}) {
    const double queue_us = rho / (2 * (1 - rho)) * service_us;
    f << "honeycomb," << rho << "," << rho * p.nic_reads << ","
      << path_us + p.model.mean_latency_ns / 1000 + queue_us << "\n";
  }
  std::cerr << "latency: honeycomb unloaded " << p.model.mean_latency_ns / 1000 << " us of dependent reads + "
            << path_us << " us network path; peak " << p.nic_reads / 1e6 << " M/s (" << p.model.bottleneck << ")\n";
}

int run(const Options& o) {
  std::optional<DataSet> loaded;  // made on first use: the cache ablation has its own
  const auto data = [&]() -> const DataSet& {
    if (!loaded) loaded = make_data(o);
    return *loaded;
  };
  ServerCosts server = load_server_costs(o.server_csv, o.server_keys);
  if (server.measured()) {
    calibrate_network(server, o);
  } else {
    std::cerr << "no --server-csv: CPU-server reads at their in-process cost, no network cost\n";
  }
  for (const std::string& e : o.experiments) {
    if (e == "ycsb") {
      ycsb(data(), server, o);
    } else if (e == "cloud") {
      cloud(data(), server, o, false);
    } else if (e == "mvcc") {
      cloud(data(), server, o, true);
    } else if (e == "scan") {
      scan_sizes(data(), server, o);
    } else if (e == "cache") {
      cache_ablation(o);
    } else if (e == "keysize") {
      key_sizes(server, o);
    } else if (e == "logblock") {
      log_blocks(data(), o);
    } else if (e == "latency") {
      latency(data(), server, o);
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

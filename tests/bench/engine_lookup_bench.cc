// Point-lookup throughput of the forein B+tree against absl::btree_map and
// std::map (docs/engine-benchmark.md).
//
// For every key count and access distribution, the same random distinct
// uint64 keys are loaded into four structures:
//   forein-root    Tree::get with no hints (a descent from the root)
//   forein-oracle  Tree::get with StartHints.primary = Tree::leaf_for(key),
//                  computed for the whole probe sequence before timing (in
//                  the real system separate hardware computes the hint, so
//                  only the hinted get is on the lookup's critical path)
//   absl           absl::btree_map<uint64_t, uint64_t>::find
//   std::map       std::map<uint64_t, uint64_t>::find
// and every structure answers the same probe sequence. Each repetition times
// every structure once, round-robin (the starting structure rotates with the
// repetition) so that machine noise is shared; the report is the median
// lookups/s per structure and the ratios of medians, by the wall clock and
// by the thread's CPU time (the steadier figure on a shared machine).
//
// Then, on the same tree and probes, readers with and without a writer: R
// threads run the probe sequence from the root (each from its own offset)
// alone, then while W writer threads replace values of present keys and
// insert and erase absent ones; the report is lookups per second per reader
// thread, by the wall clock and by each thread's CPU time (on a machine with
// fewer cores than threads only the CPU-time figure compares the two).
//
// Every probe hits. Found values are summed into a checksum that must be the
// same for every structure (it is printed, which also keeps the lookups from
// being optimised away); a miss or a checksum mismatch fails the run.
//
// Usage: engine_lookup_bench [--keys 1000000,10000000] [--dist uniform,zipf]
//          [--reps 5] [--probes 2000000] [--csv out.csv] [--fill 90]
//          [--page-size 8192] [--theta 0.99] [--warmup 200000]
//          [--mixed 2,1] [--mixed-csv out.csv] [--mixed-writes mix|update]
// FOREIN_SEED=<n> replays a run's keys and probes (support/seed.h).

#include <absl/container/btree_map.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <exception>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "forein/error.h"
#include "forein/key.h"
#include "forein/node_interval.h"
#include "forein/page_store.h"
#include "forein/tree.h"
#include "bench_common.h"
#include "support/seed.h"
#include "support/zipf.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::vector<std::uint64_t> keys = {1'000'000, 10'000'000};
  std::vector<std::string> dists = {"uniform", "zipf"};
  int reps = 5;
  std::uint64_t probes = 2'000'000;
  std::uint64_t warmup = 200'000;  // untimed probes per structure per configuration
  std::string csv;
  int fill = 90;
  std::uint32_t page_size = forein::kDefaultPageSize;
  double theta = 0.99;
  int mixed_readers = 2, mixed_writers = 1;  // 0 readers: no mixed phase
  // The writers' operations: "mix" (replacements, inserts and erases) or
  // "update" (replacements only: no slot moves, every leaf keeps its shape).
  bool mixed_updates_only = false;
  std::string mixed_csv;
};

[[noreturn]] void usage(const std::string& error) {
  if (!error.empty()) std::cerr << "engine_lookup_bench: " << error << "\n";
  std::cerr << "usage: engine_lookup_bench [--keys N[,N...]] [--dist uniform,zipf] [--reps R]\n"
               "         [--probes P] [--csv FILE] [--fill PERCENT] [--page-size BYTES]\n"
               "         [--theta T] [--warmup W] [--mixed READERS,WRITERS] [--mixed-csv FILE]\n"
               "         [--mixed-writes mix|update]\n"
               "defaults: --keys 1000000,10000000 --dist uniform,zipf --reps 5 --probes 2000000\n"
               "          --fill 90 --page-size 8192 --theta 0.99 --warmup 200000 --mixed 2,1\n"
               "          --mixed-writes mix (--mixed 0 skips the readers-with-writers phase;\n"
               "          update: the writers only replace values, no insert or erase)\n";
  std::exit(error.empty() ? 0 : 2);
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

std::uint64_t parse_u64(const std::string& flag, const std::string& s) {
  // Accepts plain digits, optionally with a k/M suffix (1M = 1000000).
  std::uint64_t mult = 1;
  std::string digits = s;
  if (!digits.empty() && (digits.back() == 'k' || digits.back() == 'K')) {
    mult = 1000;
    digits.pop_back();
  } else if (!digits.empty() && (digits.back() == 'm' || digits.back() == 'M')) {
    mult = 1'000'000;
    digits.pop_back();
  }
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) {
    usage(flag + ": not a number: " + s);
  }
  return std::stoull(digits) * mult;
}

Options parse_args(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    bool has_value = false;
    if (auto eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      has_value = true;
    }
    if (arg == "--help" || arg == "-h") usage("");
    auto next = [&]() -> std::string {
      if (has_value) return value;
      if (i + 1 >= argc) usage(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--keys") {
      o.keys.clear();
      for (const auto& k : split_list(next())) o.keys.push_back(parse_u64(arg, k));
      if (o.keys.empty()) usage("--keys: empty list");
      for (auto k : o.keys) {
        if (k < 2) usage("--keys: each key count must be at least 2");
      }
    } else if (arg == "--dist") {
      o.dists = split_list(next());
      if (o.dists.empty()) usage("--dist: empty list");
      for (const auto& d : o.dists) {
        if (d != "uniform" && d != "zipf") usage("--dist: unknown distribution " + d);
      }
    } else if (arg == "--reps") {
      o.reps = static_cast<int>(parse_u64(arg, next()));
      if (o.reps < 1) usage("--reps must be at least 1");
    } else if (arg == "--probes") {
      o.probes = parse_u64(arg, next());
      if (o.probes < 1) usage("--probes must be at least 1");
    } else if (arg == "--warmup") {
      o.warmup = parse_u64(arg, next());
    } else if (arg == "--csv") {
      o.csv = next();
    } else if (arg == "--fill") {
      o.fill = static_cast<int>(parse_u64(arg, next()));
      if (o.fill < 10 || o.fill > 100) usage("--fill must be in 10..100");
    } else if (arg == "--page-size") {
      o.page_size = static_cast<std::uint32_t>(parse_u64(arg, next()));
    } else if (arg == "--mixed") {
      const auto parts = split_list(next());
      if (parts.empty() || parts.size() > 2) usage("--mixed: READERS[,WRITERS]");
      o.mixed_readers = static_cast<int>(parse_u64(arg, parts[0]));
      o.mixed_writers = parts.size() > 1 ? static_cast<int>(parse_u64(arg, parts[1])) : 1;
      if (o.mixed_readers > 64 || o.mixed_writers > 64) usage("--mixed: at most 64 threads each");
    } else if (arg == "--mixed-writes") {
      const std::string w = next();
      if (w != "mix" && w != "update") usage("--mixed-writes: mix or update");
      o.mixed_updates_only = w == "update";
    } else if (arg == "--mixed-csv") {
      o.mixed_csv = next();
    } else if (arg == "--theta") {
      o.theta = std::stod(next());
      if (!(o.theta > 0.0 && o.theta < 1.0)) usage("--theta must be in (0, 1)");
    } else {
      usage("unknown argument " + arg);
    }
  }
  return o;
}

// The value stored under key k (8 bytes in every structure).
inline std::uint64_t value_of(std::uint64_t k) { return k * 0x9E3779B97F4A7C15ull + 1; }

std::string value_bytes(std::uint64_t v) {
  std::string s(8, '\0');
  std::memcpy(s.data(), &v, 8);
  return s;
}

// Heap bytes in use (glibc), to estimate the peers' footprint.
std::uint64_t heap_in_use() {
#if defined(__GLIBC__)
  struct mallinfo2 mi = mallinfo2();
  return static_cast<std::uint64_t>(mi.uordblks) + static_cast<std::uint64_t>(mi.hblkhd);
#else
  return 0;
#endif
}

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// CPU time of the calling thread: unlike wall time it leaves out the time
// the thread sat descheduled, which on a shared machine is most of the noise.
double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

enum Structure : int { kForeinRoot = 0, kForeinOracle, kAbsl, kStdMap, kStructureCount };
const char* const kStructureNames[kStructureCount] = {"forein-root", "forein-oracle",
                                                      "absl::btree_map", "std::map"};

struct Pass {
  double seconds = 0;      // wall
  double cpu_seconds = 0;  // this thread's CPU time
  std::uint64_t checksum = 0;
  std::uint64_t misses = 0;
};

// The probe sequence in the forms each structure takes.
struct Probes {
  std::vector<std::uint64_t> words;        // for absl / std::map
  std::vector<char> encoded;               // 8 bytes per probe, encode_word
  std::vector<forein::StartHints> hints;   // oracle hints, one per probe

  std::string_view key(std::size_t i) const { return {encoded.data() + i * 8, 8}; }
};

// The timed loops. noinline keeps each loop's code the same whatever the
// caller looks like; the checksum (returned, then printed) keeps the lookups
// alive.
[[gnu::noinline]] Pass run_forein(forein::Tree& tree, const Probes& p, std::size_t begin,
                                  std::size_t end, bool hinted) {
  Pass r;
  std::string value;
  const double c0 = thread_cpu_seconds();
  const auto t0 = Clock::now();
  for (std::size_t i = begin; i < end; ++i) {
    const forein::StartHints* h = hinted ? &p.hints[i] : nullptr;
    if (tree.get(p.key(i), &value, h)) {
      std::uint64_t v = 0;
      std::memcpy(&v, value.data(), std::min<std::size_t>(8, value.size()));
      r.checksum += v;
    } else {
      ++r.misses;
    }
  }
  r.seconds = seconds_since(t0);
  r.cpu_seconds = thread_cpu_seconds() - c0;
  return r;
}

template <typename Map>
[[gnu::noinline]] Pass run_map(const Map& m, const Probes& p, std::size_t begin, std::size_t end) {
  Pass r;
  const auto end_it = m.end();
  const double c0 = thread_cpu_seconds();
  const auto t0 = Clock::now();
  for (std::size_t i = begin; i < end; ++i) {
    auto it = m.find(p.words[i]);
    if (it != end_it) {
      r.checksum += it->second;
    } else {
      ++r.misses;
    }
  }
  r.seconds = seconds_since(t0);
  r.cpu_seconds = thread_cpu_seconds() - c0;
  return r;
}

// Readers with and without writers (see the header comment).
struct MixedPass {
  double wall_lps = 0;  // per reader thread, median over the readers
  double cpu_lps = 0;   // per reader thread, lookups per thread-CPU-second
  double writes_per_s = 0;
  std::uint64_t checksum = 0, misses = 0, restarts = 0;
};

[[gnu::noinline]] MixedPass run_mixed(forein::Tree& tree, const Probes& p, std::size_t b0,
                                      std::size_t b1, int readers, int writers, bool updates_only,
                                      const std::vector<std::uint64_t>& keys, std::uint64_t seed) {
  std::atomic<bool> go{false}, stop{false};
  std::atomic<std::uint64_t> writes{0};
  std::vector<Pass> passes(static_cast<std::size_t>(readers));
  tree.reset_stats();
  std::vector<std::thread> ws, rs;
  const auto w0 = Clock::now();
  for (int w = 0; w < writers; ++w) {
    ws.emplace_back([&, w] {
      std::mt19937_64 rng(seed ^ (0x57A1u + static_cast<std::uint64_t>(w)));
      std::vector<std::string> inserted;  // absent keys put, erased again below
      std::uint64_t n = 0;
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      while (!stop.load(std::memory_order_relaxed)) {
        if (n % 2 == 0 || updates_only) {
          // A present key gets its own value again: readers' checksums stay
          // comparable, and the leaf is still latched and its version moved.
          const std::uint64_t k = keys[rng() % keys.size()];
          tree.put(forein::encode_word(k), value_bytes(value_of(k)));
        } else {
          const std::uint64_t u = rng();
          if (!std::binary_search(keys.begin(), keys.end(), u)) {
            inserted.push_back(forein::encode_word(u));
            tree.put(inserted.back(), value_bytes(value_of(u)));
            if (inserted.size() > 4096) {
              tree.erase(inserted[inserted.size() - 4097]);
            }
          }
        }
        ++n;
      }
      writes.fetch_add(n);
      for (std::size_t i = inserted.size() > 4096 ? inserted.size() - 4096 : 0; i < inserted.size(); ++i) {
        tree.erase(inserted[i]);
      }
    });
  }
  for (int r = 0; r < readers; ++r) {
    rs.emplace_back([&, r] {
      // Each reader starts at its own offset so they do not walk in step.
      const std::size_t off = b0 + (b1 - b0) * static_cast<std::size_t>(r) / static_cast<std::size_t>(readers);
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      Pass a = run_forein(tree, p, off, b1, false);
      const Pass b = run_forein(tree, p, b0, off, false);
      a.seconds += b.seconds;
      a.cpu_seconds += b.cpu_seconds;
      a.checksum += b.checksum;
      a.misses += b.misses;
      passes[static_cast<std::size_t>(r)] = a;
    });
  }
  go.store(true, std::memory_order_release);
  for (auto& t : rs) t.join();
  stop.store(true);
  const double write_s = seconds_since(w0);
  for (auto& t : ws) t.join();
  MixedPass m;
  std::vector<double> wall, cpu;
  for (const Pass& a : passes) {
    wall.push_back(static_cast<double>(b1 - b0) / a.seconds);
    cpu.push_back(static_cast<double>(b1 - b0) / std::max(a.cpu_seconds, 1e-9));
    m.misses += a.misses;
    if (m.checksum == 0) m.checksum = a.checksum;
    if (a.checksum != m.checksum) m.misses += 1;  // a reader summed other values
  }
  std::sort(wall.begin(), wall.end());
  std::sort(cpu.begin(), cpu.end());
  m.wall_lps = wall[wall.size() / 2];
  m.cpu_lps = cpu[cpu.size() / 2];
  m.writes_per_s = static_cast<double>(writes.load()) / write_s;
  m.restarts = tree.stats().restarts;
  return m;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct ForeinCounters {
  double nodes_per_lookup = 0;
  std::uint64_t operations = 0, hinted = 0, hint_hits = 0, secondary_hits = 0, fallbacks = 0,
                move_rights = 0, nodes_visited = 0;
};

ForeinCounters counters_of(const forein::TreeStats& s) {
  ForeinCounters c;
  c.operations = s.operations;
  c.hinted = s.hinted;
  c.hint_hits = s.hint_hits;
  c.secondary_hits = s.secondary_hits;
  c.fallbacks = s.fallbacks;
  c.move_rights = s.move_rights;
  c.nodes_visited = s.nodes_visited;
  c.nodes_per_lookup = s.operations ? static_cast<double>(s.nodes_visited) / s.operations : 0.0;
  return c;
}

struct TreeShape {
  std::uint16_t height = 0;
  std::uint64_t nodes = 0, leaves = 0, pages = 0;
  double keys_per_leaf = 0;
  double mib = 0;  // pages * page size
};

struct Result {
  std::uint64_t keys = 0;
  std::string dist;
  // Readers alone, then with writers (median over reps of MixedPass).
  bool mixed = false;
  double ro_wall = 0, ro_cpu = 0, rw_wall = 0, rw_cpu = 0, writes_per_s = 0;
  double restarts_per_lookup = 0;
  double median_lps[kStructureCount] = {};
  double min_lps[kStructureCount] = {};
  double max_lps[kStructureCount] = {};
  double median_cpu_lps[kStructureCount] = {};  // lookups per CPU-second
  double mib[kStructureCount] = {};
  // Medians over reps of each rep's own ratio (wall): the structures of one
  // rep run back to back, so a machine whose speed drifts between reps (a
  // shared host) moves these less than the ratios of medians.
  double paired_root_over_absl = 0, paired_oracle_over_absl = 0;
  ForeinCounters root, oracle;
  TreeShape shape;
  std::uint64_t checksum = 0;

  double root_over_absl(bool cpu) const {
    const double* m = cpu ? median_cpu_lps : median_lps;
    return m[kForeinRoot] / m[kAbsl];
  }
  double oracle_over_root(bool cpu) const {
    const double* m = cpu ? median_cpu_lps : median_lps;
    return m[kForeinOracle] / m[kForeinRoot];
  }
};

// Random distinct uint64 keys, sorted.
std::vector<std::uint64_t> make_keys(std::uint64_t n, std::mt19937_64& rng) {
  return forein::bench::distinct_sorted_random(n, rng);
}

std::string fmt(double v, int precision) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", precision, v);
  return buf;
}

std::string pad(const std::string& s, std::size_t width, bool right = false) {
  if (s.size() >= width) return s;
  return right ? std::string(width - s.size(), ' ') + s : s + std::string(width - s.size(), ' ');
}

}  // namespace

int main(int argc, char** argv) {
  const Options opt = parse_args(argc, argv);
  const std::uint64_t seed = forein::testing::test_seed("engine_lookup_bench");

  std::cout << "engine_lookup_bench: probes " << opt.probes << " per pass, reps " << opt.reps
            << ", warmup " << opt.warmup << " probes, zipf theta " << opt.theta
            << ", forein page size " << opt.page_size << " B, bulk fill " << opt.fill << "%"
            << std::endl;

  std::vector<Result> results;
  bool failed = false;

  try {
    for (const std::uint64_t n : opt.keys) {
      // Everything for this key count lives in this scope and is freed at
      // its end, before the next key count is built.
      std::mt19937_64 rng(seed ^ (n * 0xD1B54A32D192ED03ull));
      auto t_build = Clock::now();
      const std::vector<std::uint64_t> keys = make_keys(n, rng);

      // forein, via bulk_load of the sorted keys.
      forein::TreeOptions topt;
      topt.bulk_fill_percent = static_cast<std::uint8_t>(opt.fill);
      std::unique_ptr<forein::Tree> tree = forein::Tree::create(
          std::make_unique<forein::MemoryPageStore>(opt.page_size), topt);
      {
        std::vector<std::pair<std::string, std::string>> sorted;
        sorted.reserve(n);
        for (const auto k : keys) sorted.emplace_back(forein::encode_word(k), value_bytes(value_of(k)));
        tree->bulk_load(sorted);
      }
      TreeShape shape;
      shape.height = tree->height();
      tree->for_each_node([&](const forein::NodeInterval& ni) {
        ++shape.nodes;
        if (ni.level == 0) ++shape.leaves;
      });
      shape.pages = tree->store().page_count();
      shape.mib = static_cast<double>(shape.pages) * tree->store().page_size() / (1 << 20);
      shape.keys_per_leaf = shape.leaves ? static_cast<double>(n) / shape.leaves : 0;
      if (tree->size() != n) {
        std::cerr << "forein: size() " << tree->size() << " after bulk_load of " << n << " keys\n";
        failed = true;
      }

      // The peers, from the same sorted keys (end-hinted inserts: linear).
      std::uint64_t heap0 = heap_in_use();
      auto absl_map = std::make_unique<absl::btree_map<std::uint64_t, std::uint64_t>>();
      for (const auto k : keys) absl_map->emplace_hint(absl_map->end(), k, value_of(k));
      const double absl_mib = static_cast<double>(heap_in_use() - heap0) / (1 << 20);
      heap0 = heap_in_use();
      auto std_map = std::make_unique<std::map<std::uint64_t, std::uint64_t>>();
      for (const auto k : keys) std_map->emplace_hint(std_map->end(), k, value_of(k));
      const double std_mib = static_cast<double>(heap_in_use() - heap0) / (1 << 20);

      std::cout << "\n== " << n << " keys: built in " << fmt(seconds_since(t_build), 1)
                << " s; forein height " << shape.height << ", " << shape.leaves << " leaves ("
                << fmt(shape.keys_per_leaf, 1) << " keys/leaf), " << shape.nodes << " nodes, "
                << fmt(shape.mib, 1) << " MiB of pages; absl " << fmt(absl_mib, 1)
                << " MiB heap; std::map " << fmt(std_mib, 1) << " MiB heap" << std::endl;

      // Zipf: rank -> key through a fixed random permutation, so the hot
      // keys are spread over the key space rather than clustered at its
      // start.
      std::vector<std::uint32_t> perm;
      std::unique_ptr<forein::testing::ZipfGenerator> zipf;

      for (const std::string& dist : opt.dists) {
        Result res;
        res.keys = n;
        res.dist = dist;
        res.shape = shape;
        res.mib[kForeinRoot] = res.mib[kForeinOracle] = shape.mib;
        res.mib[kAbsl] = absl_mib;
        res.mib[kStdMap] = std_mib;

        // The probe sequence (key indexes), the same for every structure.
        const std::size_t total = static_cast<std::size_t>(opt.warmup + opt.probes);
        std::vector<std::uint64_t> idx(total);
        std::mt19937_64 prng(seed ^ (n * 0x9E3779B97F4A7C15ull) ^ (dist == "zipf" ? 0x5A5A : 0xA5A5));
        if (dist == "uniform") {
          std::uniform_int_distribution<std::uint64_t> u(0, n - 1);
          for (auto& x : idx) x = u(prng);
        } else {
          if (!zipf) {
            perm.resize(n);
            std::iota(perm.begin(), perm.end(), 0u);
            std::shuffle(perm.begin(), perm.end(), rng);
            zipf = std::make_unique<forein::testing::ZipfGenerator>(n, opt.theta);
          }
          for (auto& x : idx) x = perm[(*zipf)(prng)];
        }
        Probes p;
        p.words.resize(total);
        p.encoded.resize(total * 8);
        for (std::size_t i = 0; i < total; ++i) {
          p.words[i] = keys[idx[i]];
          const std::string k = forein::encode_word(p.words[i]);
          std::memcpy(p.encoded.data() + i * 8, k.data(), 8);
        }
        idx.clear();
        idx.shrink_to_fit();

        // Oracle hints, before any timing: in the real system a separate
        // device computes them.
        auto t_hints = Clock::now();
        p.hints.resize(total);
        for (std::size_t i = 0; i < total; ++i) p.hints[i].primary = tree->leaf_for(p.key(i));
        const double hint_s = seconds_since(t_hints);

        // Warm-up: one untimed partial pass per structure.
        const std::size_t w0 = 0, w1 = static_cast<std::size_t>(opt.warmup);
        const std::size_t b0 = w1, b1 = total;
        if (w1 > w0) {
          run_forein(*tree, p, w0, w1, false);
          run_forein(*tree, p, w0, w1, true);
          run_map(*absl_map, p, w0, w1);
          run_map(*std_map, p, w0, w1);
        }

        std::vector<double> lps[kStructureCount], cpu_lps[kStructureCount];
        std::uint64_t checksum[kStructureCount] = {};
        std::uint64_t misses[kStructureCount] = {};
        for (int rep = 0; rep < opt.reps; ++rep) {
          for (int j = 0; j < kStructureCount; ++j) {
            const int s = (rep + j) % kStructureCount;  // rotating round-robin
            Pass r;
            switch (s) {
              case kForeinRoot:
              case kForeinOracle: {
                tree->reset_stats();
                r = run_forein(*tree, p, b0, b1, s == kForeinOracle);
                const ForeinCounters c = counters_of(tree->stats());
                (s == kForeinRoot ? res.root : res.oracle) = c;
                break;
              }
              case kAbsl:
                r = run_map(*absl_map, p, b0, b1);
                break;
              case kStdMap:
                r = run_map(*std_map, p, b0, b1);
                break;
            }
            lps[s].push_back(static_cast<double>(b1 - b0) / r.seconds);
            cpu_lps[s].push_back(static_cast<double>(b1 - b0) / std::max(r.cpu_seconds, 1e-9));
            if (rep == 0) checksum[s] = r.checksum;
            if (r.checksum != checksum[s]) {
              std::cerr << kStructureNames[s] << ": checksum changed between repetitions\n";
              failed = true;
            }
            misses[s] += r.misses;
          }
        }

        std::vector<double> root_absl, oracle_absl;
        for (int rep = 0; rep < opt.reps; ++rep) {
          root_absl.push_back(lps[kForeinRoot][rep] / lps[kAbsl][rep]);
          oracle_absl.push_back(lps[kForeinOracle][rep] / lps[kAbsl][rep]);
        }
        res.paired_root_over_absl = median(root_absl);
        res.paired_oracle_over_absl = median(oracle_absl);
        for (int s = 0; s < kStructureCount; ++s) {
          res.median_lps[s] = median(lps[s]);
          res.median_cpu_lps[s] = median(cpu_lps[s]);
          res.min_lps[s] = *std::min_element(lps[s].begin(), lps[s].end());
          res.max_lps[s] = *std::max_element(lps[s].begin(), lps[s].end());
          if (misses[s] != 0) {
            std::cerr << kStructureNames[s] << ": " << misses[s]
                      << " lookups of present keys missed (n=" << n << ", " << dist << ")\n";
            failed = true;
          }
          if (checksum[s] != checksum[kStdMap]) {
            std::cerr << kStructureNames[s] << ": checksum " << checksum[s] << " differs from std::map's "
                      << checksum[kStdMap] << " (n=" << n << ", " << dist << ")\n";
            failed = true;
          }
        }
        res.checksum = checksum[kStdMap];
        if (res.oracle.hint_hits != res.oracle.operations || res.oracle.fallbacks != 0) {
          std::cerr << "forein-oracle: " << res.oracle.hint_hits << " of " << res.oracle.operations
                    << " oracle hints accepted, " << res.oracle.fallbacks << " fallbacks (n=" << n
                    << ", " << dist << ")\n";
        }

        std::cout << "\n-- " << n << " keys, " << dist << " (" << opt.probes << " probes x "
                  << opt.reps << " reps; oracle hints computed in " << fmt(hint_s, 2)
                  << " s, untimed)\n";
        std::cout << pad("structure", 17) << pad("wall Ml/s median", 18, true)
                  << pad("min", 8, true) << pad("max", 8, true) << pad("ns/lookup", 11, true)
                  << pad("cpu Ml/s median", 17, true) << pad("nodes/lookup", 14, true)
                  << pad("MiB", 8, true) << "\n";
        for (int s = 0; s < kStructureCount; ++s) {
          std::string nodes = "-";
          if (s == kForeinRoot) nodes = fmt(res.root.nodes_per_lookup, 3);
          if (s == kForeinOracle) nodes = fmt(res.oracle.nodes_per_lookup, 3);
          std::cout << pad(kStructureNames[s], 17) << pad(fmt(res.median_lps[s] / 1e6, 3), 18, true)
                    << pad(fmt(res.min_lps[s] / 1e6, 3), 8, true)
                    << pad(fmt(res.max_lps[s] / 1e6, 3), 8, true)
                    << pad(fmt(1e9 / res.median_lps[s], 1), 11, true)
                    << pad(fmt(res.median_cpu_lps[s] / 1e6, 3), 17, true) << pad(nodes, 14, true)
                    << pad(fmt(res.mib[s], 1), 8, true) << "\n";
        }
        std::cout << "ratios of medians, wall: root/absl = " << fmt(res.root_over_absl(false), 3)
                  << "  oracle/root = " << fmt(res.oracle_over_root(false), 3)
                  << "  oracle/absl = "
                  << fmt(res.median_lps[kForeinOracle] / res.median_lps[kAbsl], 3) << "\n";
        std::cout << "ratios of medians, cpu:  root/absl = " << fmt(res.root_over_absl(true), 3)
                  << "  oracle/root = " << fmt(res.oracle_over_root(true), 3)
                  << "  oracle/absl = "
                  << fmt(res.median_cpu_lps[kForeinOracle] / res.median_cpu_lps[kAbsl], 3) << "\n";
        std::cout << "medians of per-rep ratios, wall: root/absl = "
                  << fmt(res.paired_root_over_absl, 3)
                  << "  oracle/absl = " << fmt(res.paired_oracle_over_absl, 3) << "\n";
        std::cout << "forein-oracle: hinted " << res.oracle.hinted << ", hint hits "
                  << res.oracle.hint_hits << ", fallbacks " << res.oracle.fallbacks
                  << ", move-rights " << res.oracle.move_rights << " (last rep)\n";
        std::cout << "checksum " << res.checksum << std::endl;  // flush: progress in logs

        if (opt.mixed_readers > 0) {
          // Alternating reps, readers alone then with writers, so noise on
          // the machine falls on both.
          std::vector<double> ro_wall, ro_cpu, rw_wall, rw_cpu, wps, rpl;
          for (int rep = 0; rep < opt.reps; ++rep) {
            for (const int writers : {0, opt.mixed_writers}) {
              const MixedPass m = run_mixed(*tree, p, b0, b1, opt.mixed_readers, writers, opt.mixed_updates_only, keys,
                                            seed + static_cast<std::uint64_t>(rep));
              if (m.misses != 0 || m.checksum != checksum[kForeinRoot]) {
                std::cerr << "mixed phase: " << m.misses << " misses or a checksum other than"
                          << " forein-root's (n=" << n << ", " << dist << ")\n";
                failed = true;
              }
              (writers == 0 ? ro_wall : rw_wall).push_back(m.wall_lps);
              (writers == 0 ? ro_cpu : rw_cpu).push_back(m.cpu_lps);
              if (writers > 0) {
                wps.push_back(m.writes_per_s);
                rpl.push_back(static_cast<double>(m.restarts) /
                              (static_cast<double>(b1 - b0) * opt.mixed_readers));
              }
            }
          }
          res.mixed = true;
          res.ro_wall = median(ro_wall);
          res.ro_cpu = median(ro_cpu);
          res.rw_wall = median(rw_wall);
          res.rw_cpu = median(rw_cpu);
          res.writes_per_s = wps.empty() ? 0 : median(wps);
          res.restarts_per_lookup = rpl.empty() ? 0 : median(rpl);
          std::cout << "readers with writers (" << opt.mixed_readers << " readers from the root, "
                    << opt.mixed_writers
                    << (opt.mixed_updates_only ? " writer(s) replacing values" : " writer(s)")
                    << "; per reader thread, medians of "
                    << opt.reps << " reps):\n"
                    << "  alone:        wall " << fmt(res.ro_wall / 1e6, 3) << " Ml/s, cpu "
                    << fmt(res.ro_cpu / 1e6, 3) << " Ml/s\n"
                    << "  with writers: wall " << fmt(res.rw_wall / 1e6, 3) << " Ml/s, cpu "
                    << fmt(res.rw_cpu / 1e6, 3) << " Ml/s (" << fmt(res.writes_per_s / 1e3, 1)
                    << " k writes/s, " << fmt(res.restarts_per_lookup * 1e6, 1)
                    << " restarts per million lookups)\n"
                    << "  with/alone:   wall " << fmt(res.rw_wall / res.ro_wall, 3) << ", cpu "
                    << fmt(res.rw_cpu / res.ro_cpu, 3) << std::endl;
        }
        results.push_back(res);
      }
    }
  } catch (const std::exception& e) {
    std::cerr << "engine_lookup_bench: " << e.what() << "\n";
    return 1;
  }

  // Summary: one row per configuration.
  std::cout << "\n== Summary (median lookups/s in millions, wall clock; ratios of medians, wall"
               " and thread CPU time)\n";
  std::cout << pad("keys", 10) << pad("dist", 9) << pad("root", 7, true) << pad("oracle", 8, true)
            << pad("absl", 7, true) << pad("std::map", 10, true) << pad("root/absl", 11, true)
            << pad("oracle/root", 13, true) << pad("cpu root/absl", 15, true)
            << pad("cpu oracle/root", 17, true) << pad("nodes root", 12, true)
            << pad("nodes oracle", 14, true) << "\n";
  for (const auto& r : results) {
    std::cout << pad(std::to_string(r.keys), 10) << pad(r.dist, 9)
              << pad(fmt(r.median_lps[kForeinRoot] / 1e6, 2), 7, true)
              << pad(fmt(r.median_lps[kForeinOracle] / 1e6, 2), 8, true)
              << pad(fmt(r.median_lps[kAbsl] / 1e6, 2), 7, true)
              << pad(fmt(r.median_lps[kStdMap] / 1e6, 2), 10, true)
              << pad(fmt(r.root_over_absl(false), 3), 11, true)
              << pad(fmt(r.oracle_over_root(false), 3), 13, true)
              << pad(fmt(r.root_over_absl(true), 3), 15, true)
              << pad(fmt(r.oracle_over_root(true), 3), 17, true)
              << pad(fmt(r.root.nodes_per_lookup, 2), 12, true)
              << pad(fmt(r.oracle.nodes_per_lookup, 2), 14, true) << "\n";
  }

  // Targets (docs/engine-benchmark.md): root start at least absl's rate and
  // the oracle hint at least 1.5x absl's, at every point; readers with
  // writers within 20% of readers alone (per thread, CPU time).
  std::cout << "\nTargets: root/absl >= 1.000, oracle/absl >= 1.500 (wall | cpu); readers with"
               " writers >= 0.800 of alone (cpu)\n";
  constexpr double kOracleTarget = 1.5;
  auto verdict = [](double v, double target) {
    return fmt(v, 3) + (v >= target ? " MET" : " MISSED");
  };
  for (const auto& r : results) {
    std::cout << "  " << pad(std::to_string(r.keys) + " " + r.dist, 18) << "root/absl "
              << verdict(r.root_over_absl(false), 1.0) << " | "
              << verdict(r.root_over_absl(true), 1.0) << "; oracle/absl "
              << verdict(r.median_lps[kForeinOracle] / r.median_lps[kAbsl], kOracleTarget) << " | "
              << verdict(r.median_cpu_lps[kForeinOracle] / r.median_cpu_lps[kAbsl], kOracleTarget);
    if (r.mixed) std::cout << "; with writers " << verdict(r.rw_cpu / r.ro_cpu, 0.8);
    std::cout << "\n";
  }

  if (!opt.mixed_csv.empty()) {
    std::ofstream csv(opt.mixed_csv);
    if (!csv) {
      std::cerr << "engine_lookup_bench: cannot write " << opt.mixed_csv << "\n";
      return 1;
    }
    csv << "keys,dist,probes,reps,seed,readers,writers,alone_wall_lps,alone_cpu_lps,"
           "with_writers_wall_lps,with_writers_cpu_lps,with_over_alone_wall,with_over_alone_cpu,"
           "writes_per_s,restarts_per_lookup\n";
    for (const auto& r : results) {
      if (!r.mixed) continue;
      csv << r.keys << ',' << r.dist << ',' << opt.probes << ',' << opt.reps << ',' << seed << ','
          << opt.mixed_readers << ',' << opt.mixed_writers << ',' << fmt(r.ro_wall, 0) << ','
          << fmt(r.ro_cpu, 0) << ',' << fmt(r.rw_wall, 0) << ',' << fmt(r.rw_cpu, 0) << ','
          << fmt(r.rw_wall / r.ro_wall, 4) << ',' << fmt(r.rw_cpu / r.ro_cpu, 4) << ','
          << fmt(r.writes_per_s, 0) << ',' << fmt(r.restarts_per_lookup, 8) << "\n";
    }
    std::cout << "\nCSV written to " << opt.mixed_csv << "\n";
  }

  if (!opt.csv.empty()) {
    std::ofstream csv(opt.csv);
    if (!csv) {
      std::cerr << "engine_lookup_bench: cannot write " << opt.csv << "\n";
      return 1;
    }
    // *_lps: median wall-clock lookups/s; *_cpu_lps: median lookups per
    // thread-CPU-second; ratios are ratios of those medians.
    csv << "keys,dist,probes,reps,seed,page_size,bulk_fill_percent,forein_height,forein_leaves,"
           "forein_keys_per_leaf,"
           "forein_root_lps,forein_oracle_lps,absl_btree_map_lps,std_map_lps,"
           "forein_root_min_lps,forein_root_max_lps,forein_oracle_min_lps,forein_oracle_max_lps,"
           "absl_min_lps,absl_max_lps,std_map_min_lps,std_map_max_lps,"
           "root_over_absl,oracle_over_root,"
           "forein_root_cpu_lps,forein_oracle_cpu_lps,absl_btree_map_cpu_lps,std_map_cpu_lps,"
           "root_over_absl_cpu,oracle_over_root_cpu,"
           "root_nodes_per_lookup,oracle_nodes_per_lookup,oracle_hint_hits,oracle_fallbacks,"
           "oracle_move_rights,forein_mib,absl_mib,std_map_mib,checksum,"
           "paired_root_over_absl,paired_oracle_over_absl\n";
    for (const auto& r : results) {
      csv << r.keys << ',' << r.dist << ',' << opt.probes << ',' << opt.reps << ',' << seed << ','
          << opt.page_size << ',' << opt.fill << ',' << r.shape.height << ',' << r.shape.leaves
          << ',' << fmt(r.shape.keys_per_leaf, 1) << ',';
      for (int s = 0; s < kStructureCount; ++s) csv << fmt(r.median_lps[s], 0) << ',';
      for (int s = 0; s < kStructureCount; ++s) {
        csv << fmt(r.min_lps[s], 0) << ',' << fmt(r.max_lps[s], 0) << ',';
      }
      csv << fmt(r.root_over_absl(false), 4) << ',' << fmt(r.oracle_over_root(false), 4) << ',';
      for (int s = 0; s < kStructureCount; ++s) csv << fmt(r.median_cpu_lps[s], 0) << ',';
      csv << fmt(r.root_over_absl(true), 4) << ',' << fmt(r.oracle_over_root(true), 4) << ','
          << fmt(r.root.nodes_per_lookup, 4) << ',' << fmt(r.oracle.nodes_per_lookup, 4) << ','
          << r.oracle.hint_hits << ',' << r.oracle.fallbacks << ',' << r.oracle.move_rights << ','
          << fmt(r.mib[kForeinRoot], 1) << ',' << fmt(r.mib[kAbsl], 1) << ','
          << fmt(r.mib[kStdMap], 1) << ',' << r.checksum << ','
          << fmt(r.paired_root_over_absl, 4) << ',' << fmt(r.paired_oracle_over_absl, 4) << "\n";
    }
    std::cout << "\nCSV written to " << opt.csv << "\n";
  }

  if (failed) {
    std::cerr << "engine_lookup_bench: FAILED (wrong answers; see above)\n";
    return 3;
  }
  return 0;
}

// SQLite variant benchmark (issue 5, section 4; docs/sqlite-benchmark.md):
// the same rows in three tables of one database file, measured in the same
// run, taking turns:
//   ipk     CREATE TABLE ipk(k INTEGER PRIMARY KEY, v)           (rowid b-tree)
//   wr      CREATE TABLE wr(k INTEGER PRIMARY KEY, v) WITHOUT ROWID
//   forein  CREATE VIRTUAL TABLE fr USING forein(k INTEGER, v)
//   floor   CREATE VIRTUAL TABLE fl USING floor_vtab  (sqlite_floor_vtab.h:
//           rows in a sorted array; what SQLite's virtual-table protocol
//           itself costs per query and row, the least any vtab can take)
// Workloads, each with uniform and Zipf(theta) key choice:
//   point     SELECT v FROM t WHERE k = ?1          (prepared once, reset per op),
//             the probes of a run inside one read transaction
//   point_ac  the same, each statement its own (autocommit) transaction,
//             a quarter of the probes
//   range     SELECT k, v FROM t WHERE k >= ?1 ORDER BY k LIMIT <range>,
//             inside one read transaction
// Every repetition runs every (workload, distribution) group once, in an
// order rotated per repetition; inside a group the probe sequence is cut
// into kBlocks blocks and the tables take turns block by block (in an order
// rotated per block), so a swing in machine load hits every table alike. A
// cell's time in a repetition is the sum of its blocks; the report gives
// per-cell medians and the forein / native ratios. SQLite gets a page cache larger than the
// database and all tables are scanned before measuring, so the native
// tables are memory-resident like forein's tree.
//
//   sqlite_bench [--rows N] [--point-ops N] [--range-ops N] [--range N]
//                [--reps N] [--theta X] [--dir D] [--csv FILE]
//                [--only ipk|wr|forein]   (load and measure one table, for profiling)
//                [--hints on|off]         (off: forein without start hints, no offload
//                                          manager, forein_debug_hints(t, 2))
// FOREIN_SEED picks keys and probe sequences (tests/support/seed.h).
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "forein/sqlite.h"
#include "sqlite_bench_util.h"
#include "sqlite_floor_vtab.h"
#include "support/seed.h"
#include "support/zipf.h"

namespace {

using Clock = std::chrono::steady_clock;
using forein::bench::check;
using forein::bench::exec;
using forein::bench::kForeinCachePages;
using forein::bench::load_rows;
using forein::bench::scalar;
using forein::bench::Stmt;

struct Options {
  std::uint64_t rows = 1'000'000;
  std::uint64_t point_ops = 200'000;
  std::uint64_t range_ops = 20'000;
  std::uint64_t range = 100;
  int reps = 5;
  double theta = 0.99;
  std::string dir;
  std::string csv;
  std::string only;  // load and run only this table (for profiling)
  bool hints = true;  // --hints off: forein_debug_hints('fr', 2) before the load
};

[[noreturn]] void usage() {
  std::fprintf(stderr,
               "usage: sqlite_bench [--rows N] [--point-ops N] [--range-ops N] [--range N] "
               "[--reps N] [--theta X] [--dir D] [--csv FILE] [--only ipk|wr|forein] [--hints on|off]\n");
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) usage();
    const char* v = argv[++i];
    if (a == "--rows") o.rows = std::strtoull(v, nullptr, 10);
    else if (a == "--point-ops") o.point_ops = std::strtoull(v, nullptr, 10);
    else if (a == "--range-ops") o.range_ops = std::strtoull(v, nullptr, 10);
    else if (a == "--range") o.range = std::strtoull(v, nullptr, 10);
    else if (a == "--reps") o.reps = std::atoi(v);
    else if (a == "--theta") o.theta = std::strtod(v, nullptr);
    else if (a == "--dir") o.dir = v;
    else if (a == "--csv") o.csv = v;
    else if (a == "--only") o.only = v;
    else if (a == "--hints" && (std::string(v) == "on" || std::string(v) == "off")) o.hints = std::string(v) == "on";
    else usage();
  }
  if (o.rows < 2 * o.range || o.reps < 1 || o.range == 0) usage();
  return o;
}

struct Table {
  std::string label;  // ipk, wr, forein, floor
  std::string name;   // SQL name
};

// Loads the rows (ascending keys) in one transaction; returns seconds.
double load(sqlite3* db, const Table& t, const std::vector<std::int64_t>& keys,
            const std::vector<std::string>& values) {
  return load_rows(db, t.name, keys, values);
}

struct Result {
  double seconds;
  std::uint64_t checksum;  // rows and value bytes seen: equal across tables
};

// A run is one read transaction (BEGIN .. COMMIT around the probes), as an
// application batching its reads would do; with `autocommit` every
// statement opens and closes its own transaction (file locks, a header
// read), which costs every table the same microseconds.
Result run_point(Stmt& st, const std::int64_t* probes, std::size_t n, bool autocommit = false) {
  std::uint64_t sum = 0;
  if (!autocommit) exec(st.db(), "BEGIN");
  const auto start = Clock::now();
  for (std::size_t i = 0; i < n; ++i) {
    sqlite3_bind_int64(st.get(), 1, probes[i]);
    while (sqlite3_step(st.get()) == SQLITE_ROW) sum += 1 + static_cast<std::uint64_t>(sqlite3_column_bytes(st.get(), 0));
    sqlite3_reset(st.get());
  }
  const double s = std::chrono::duration<double>(Clock::now() - start).count();
  if (!autocommit) exec(st.db(), "COMMIT");
  return {s, sum};
}

Result run_range(Stmt& st, const std::int64_t* starts, std::size_t n) {
  std::uint64_t sum = 0;
  exec(st.db(), "BEGIN");
  const auto start = Clock::now();
  for (std::size_t i = 0; i < n; ++i) {
    sqlite3_bind_int64(st.get(), 1, starts[i]);
    while (sqlite3_step(st.get()) == SQLITE_ROW) {
      sum += 1 + static_cast<std::uint64_t>(sqlite3_column_int64(st.get(), 0) & 0xff) +
             static_cast<std::uint64_t>(sqlite3_column_bytes(st.get(), 1));
    }
    sqlite3_reset(st.get());
  }
  const double s = std::chrono::duration<double>(Clock::now() - start).count();
  exec(st.db(), "COMMIT");
  return {s, sum};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const std::uint64_t seed = forein::testing::test_seed("sqlite_bench");
  std::mt19937_64 rng(seed);

  const std::filesystem::path dir = o.dir.empty() ? std::filesystem::temp_directory_path() : std::filesystem::path(o.dir);
  const std::string path = (dir / ("forein-sqlite-bench-" + std::to_string(::getpid()) + ".db")).string();
  std::filesystem::remove(path);

  // Distinct random 62-bit keys, ascending; values of 16..48 bytes.
  std::vector<std::int64_t> keys;
  std::vector<std::string> values;
  forein::bench::make_rows(rng, o.rows, &keys, &values);

  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK || forein_sqlite_register(db) != SQLITE_OK ||
      forein::bench::register_floor_vtab(db) != SQLITE_OK) {
    std::fprintf(stderr, "sqlite_bench: cannot open %s\n", path.c_str());
    return 1;
  }
  int status = 0;
  try {
    exec(db, "PRAGMA journal_mode=WAL");
    exec(db, "PRAGMA synchronous=NORMAL");
    exec(db, "PRAGMA cache_size=-4000000");  // 4 GB: the whole database stays cached
    exec(db, "CREATE TABLE ipk(k INTEGER PRIMARY KEY, v)");
    exec(db, "CREATE TABLE wr(k INTEGER PRIMARY KEY, v) WITHOUT ROWID");
    exec(db, "CREATE VIRTUAL TABLE fr USING forein(k INTEGER, v)");
    exec(db, "CREATE VIRTUAL TABLE fl USING floor_vtab");
    // forein's page cache as large as SQLite's above: the whole tree stays.
    scalar(db, "SELECT forein_cache_pages('fr', " + std::to_string(kForeinCachePages) + ")");
    if (!o.hints) scalar(db, "SELECT forein_debug_hints('fr', 2)");
    const std::vector<Table> tables = {{"ipk", "ipk"}, {"wr", "wr"}, {"forein", "fr"}, {"floor", "fl"}};

    std::printf("sqlite_bench: %llu rows, SQLite %s, db %s\n",
                static_cast<unsigned long long>(o.rows), sqlite3_libversion(), path.c_str());
    std::printf("load (one transaction of %llu prepared INSERTs, ascending keys):\n",
                static_cast<unsigned long long>(o.rows));
    for (const Table& t : tables) {
      if (!o.only.empty() && t.label != o.only) continue;
      const double s = load(db, t, keys, values);
      std::printf("  %-7s %7.2f s  %8.0f rows/s\n", t.label.c_str(), s, static_cast<double>(o.rows) / s);
    }
    std::fflush(stdout);
    exec(db, "PRAGMA wal_checkpoint(TRUNCATE)");
    std::printf("database file: %.1f MiB; forein: %s\n",
                static_cast<double>(std::filesystem::file_size(path)) / (1 << 20),
                scalar(db, "SELECT forein_stats('fr')").c_str());
    // Warm every table's pages into SQLite's cache.
    for (const Table& t : tables) {
      if (o.only.empty() || t.label == o.only) scalar(db, "SELECT sum(length(v)) FROM " + t.name);
    }

    // Probe sequences, shared by all tables. Zipf ranks are scattered over
    // the key space by a fixed permutation (hot keys are not neighbours).
    forein::testing::ZipfGenerator zipf(o.rows, o.theta);
    const std::uint64_t span = o.rows - o.range;  // range starts leave `range` rows
    auto scatter = [&](std::uint64_t rank, std::uint64_t n) { return (rank * 2654435761ULL + 12345) % n; };
    struct Dist {
      std::string name;
      std::vector<std::int64_t> point, range;
    };
    std::vector<Dist> dists(2);
    dists[0].name = "uniform";
    dists[1].name = "zipf" + std::to_string(o.theta).substr(0, 4);
    for (std::uint64_t i = 0; i < o.point_ops; ++i) {
      dists[0].point.push_back(keys[rng() % o.rows]);
      dists[1].point.push_back(keys[scatter(zipf(rng), o.rows)]);
    }
    forein::testing::ZipfGenerator zipf_span(span, o.theta);
    for (std::uint64_t i = 0; i < o.range_ops; ++i) {
      dists[0].range.push_back(keys[rng() % span]);
      dists[1].range.push_back(keys[scatter(zipf_span(rng), span)]);
    }

    struct Cell {
      std::string op, dist, table;
      std::vector<double> ns;
      std::uint64_t checksum = 0;
    };
    std::vector<Cell> cells;
    std::vector<std::unique_ptr<Stmt>> point_st, range_st;
    for (const Table& t : tables) {
      point_st.push_back(std::make_unique<Stmt>(db, "SELECT v FROM " + t.name + " WHERE k = ?1"));
      range_st.push_back(std::make_unique<Stmt>(
          db, "SELECT k, v FROM " + t.name + " WHERE k >= ?1 ORDER BY k LIMIT " + std::to_string(o.range)));
    }
    const char* const ops[] = {"point", "point_ac", "range"};
    for (const char* op : ops) {
      for (const Dist& d : dists) {
        for (const Table& t : tables) cells.push_back({op, d.name, t.label, {}, 0});
      }
    }
    auto skip = [&](std::size_t ci) { return !o.only.empty() && cells[ci].table != o.only; };
    const std::size_t nt = tables.size(), groups = cells.size() / nt;
    // Probes of group g (workload, distribution): a point_ac run takes a
    // quarter of them (each statement its own transaction is slow).
    auto probes_of = [&](std::size_t g) -> std::pair<const std::int64_t*, std::size_t> {
      const std::size_t di = g % dists.size(), op = g / dists.size();
      const std::vector<std::int64_t>& v = op == 2 ? dists[di].range : dists[di].point;
      return {v.data(), op == 1 ? v.size() / 4 : v.size()};
    };
    auto run_block = [&](std::size_t g, std::size_t ti, std::size_t from, std::size_t to) {
      const std::int64_t* probes = probes_of(g).first;
      const std::size_t op = g / dists.size();
      if (op == 2) return run_range(*range_st[ti], probes + from, to - from);
      return run_point(*point_st[ti], probes + from, to - from, op == 1);
    };
    // Warm-up: one pass of every cell (forein installs its switch entries).
    for (std::size_t ci = 0; ci < cells.size(); ++ci) {
      if (!skip(ci)) cells[ci].checksum = run_block(ci / nt, ci % nt, 0, probes_of(ci / nt).second).checksum;
    }
    constexpr std::size_t kBlocks = 20;
    for (int rep = 0; rep < o.reps; ++rep) {
      for (std::size_t j = 0; j < groups; ++j) {
        const std::size_t g = (j + static_cast<std::size_t>(rep)) % groups;
        const std::size_t n = probes_of(g).second;
        std::vector<double> seconds(nt, 0);
        std::vector<std::uint64_t> sums(nt, 0);
        for (std::size_t b = 0; b < kBlocks; ++b) {
          for (std::size_t k = 0; k < nt; ++k) {
            const std::size_t ti = (k + b + static_cast<std::size_t>(rep)) % nt;
            if (skip(g * nt + ti)) continue;
            const Result r = run_block(g, ti, n * b / kBlocks, n * (b + 1) / kBlocks);
            seconds[ti] += r.seconds;
            sums[ti] += r.checksum;
          }
        }
        for (std::size_t ti = 0; ti < nt; ++ti) {
          Cell& c = cells[g * nt + ti];
          if (skip(g * nt + ti)) continue;
          if (sums[ti] != c.checksum) throw std::runtime_error("checksum changed");
          c.ns.push_back(seconds[ti] * 1e9 / static_cast<double>(n));
        }
      }
      std::fprintf(stderr, "  repetition %d of %d done\n", rep + 1, o.reps);
    }
    if (!o.only.empty()) {
      for (const Cell& c : cells) {
        if (!c.ns.empty()) std::printf("  %-8s %-9s %-7s %10.0f ns median\n", c.op.c_str(), c.dist.c_str(), c.table.c_str(), median(c.ns));
      }
      throw std::runtime_error("--only: no comparison");
    }
    // Same rows in every table: same checksums per (op, dist).
    for (std::size_t ci = 0; ci < cells.size(); ci += tables.size()) {
      for (std::size_t k = 1; k < tables.size(); ++k) {
        if (cells[ci + k].checksum != cells[ci].checksum) {
          throw std::runtime_error("tables disagree on " + cells[ci].op + "/" + cells[ci].dist);
        }
      }
    }

    std::printf("\nmedians of %d repetitions (ns per operation; range = %llu rows):\n", o.reps,
                static_cast<unsigned long long>(o.range));
    std::printf("  %-8s %-9s %8s %8s %8s %8s   %10s %10s %10s %12s\n", "op", "dist", "ipk", "wr",
                "forein", "floor", "forein/ipk", "forein/wr", "floor/ipk", "forein/floor");
    std::ofstream csv;
    if (!o.csv.empty()) {
      csv.open(o.csv);
      csv << "op,dist,table,median_ns,min_ns,max_ns,reps\n";
    }
    for (std::size_t ci = 0; ci < cells.size(); ci += tables.size()) {
      double m[4];
      for (std::size_t k = 0; k < tables.size(); ++k) {
        const Cell& c = cells[ci + k];
        m[k] = median(c.ns);
        if (csv) {
          csv << c.op << "," << c.dist << "," << c.table << "," << m[k] << ","
              << *std::min_element(c.ns.begin(), c.ns.end()) << ","
              << *std::max_element(c.ns.begin(), c.ns.end()) << "," << c.ns.size() << "\n";
        }
      }
      std::printf("  %-8s %-9s %8.0f %8.0f %8.0f %8.0f   %10.2f %10.2f %10.2f %12.2f\n", cells[ci].op.c_str(),
                  cells[ci].dist.c_str(), m[0], m[1], m[2], m[3], m[2] / m[0], m[2] / m[1], m[3] / m[0],
                  m[2] / m[3]);
    }
    std::printf("(ratio < 1: forein faster)\nforein after: %s\n",
                scalar(db, "SELECT forein_stats('fr')").c_str());

    // A fresh connection with hints off: opening the table and one lookup
    // read a root-to-leaf path, not the tree.
    double open_ms = 0;
    std::string open_stats;
    {
      sqlite3* fresh = nullptr;
      if (sqlite3_open(path.c_str(), &fresh) != SQLITE_OK || forein_sqlite_register(fresh) != SQLITE_OK) {
        throw std::runtime_error("cannot open a connection");
      }
      const auto t0 = Clock::now();
      scalar(fresh, "SELECT forein_debug_hints('fr', 2)");
      scalar(fresh, "SELECT v FROM fr WHERE k = " + std::to_string(keys[rng() % o.rows]));
      open_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      open_stats = scalar(fresh, "SELECT forein_stats('fr')");
      sqlite3_close_v2(fresh);
    }
    std::printf("\nfresh connection, hints off: open + first lookup %.2f ms\n%s\n", open_ms, open_stats.c_str());

    // Another connection: its first query attaches the hint path, which
    // plans from the pages that query reads (a root-to-leaf path); after
    // this connection commits a one-row UPDATE, its next query re-reads
    // only the changed pages.
    sqlite3* other = nullptr;
    if (sqlite3_open(path.c_str(), &other) != SQLITE_OK || forein_sqlite_register(other) != SQLITE_OK) {
      throw std::runtime_error("cannot open a second connection");
    }
    exec(other, "PRAGMA cache_size=-4000000");
    scalar(other, "SELECT forein_cache_pages('fr', " + std::to_string(kForeinCachePages) + ")");
    std::vector<double> first_ms, after_ms, native_ms;
    for (int rep = 0; rep < o.reps; ++rep) {
      const std::string k = std::to_string(keys[rng() % o.rows]);
      auto timed = [&](const std::string& sql) {
        const auto t0 = Clock::now();
        scalar(other, sql);
        return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      };
      if (rep == 0) first_ms.push_back(timed("SELECT v FROM fr WHERE k = " + k));
      exec(db, "UPDATE fr SET v = 'updated" + std::to_string(rep) + "' WHERE k = " + k);
      exec(db, "UPDATE ipk SET v = 'updated" + std::to_string(rep) + "' WHERE k = " + k);
      after_ms.push_back(timed("SELECT v FROM fr WHERE k = " + k));
      native_ms.push_back(timed("SELECT v FROM ipk WHERE k = " + k));
      if (scalar(other, "SELECT v FROM fr WHERE k = " + k) != "updated" + std::to_string(rep)) {
        throw std::runtime_error("second connection missed a commit");
      }
    }
    const std::string other_stats = scalar(other, "SELECT forein_stats('fr')");
    sqlite3_close_v2(other);
    std::printf("\nsecond connection: first query (hint path attach) %.1f ms; after a one-row commit by the\n"
                "first connection, next query: forein %.2f ms, ipk %.2f ms (medians of %d)\n%s\n",
                first_ms[0], median(after_ms), median(native_ms), o.reps, other_stats.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sqlite_bench: %s\n", e.what());
    status = 1;
  }
  sqlite3_close_v2(db);
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
  return status;
}

// Many connections on one database (issue 47; docs/sqlite-benchmark.md,
// "Many connections"): R reader connections, each in a thread of its own,
// run point lookups and range reads while one writer connection commits
// one-row UPDATEs at a steady rate, on a forein table and on an INTEGER
// PRIMARY KEY table with the same rows, taking turns (the order alternates
// by round), in WAL and in rollback-journal mode.
//
//   point   SELECT v FROM t WHERE k = ?1                       (prepared)
//   range   SELECT k, v FROM t WHERE k >= ?1 ORDER BY k LIMIT <range>
//
// Every read is its own (autocommit) transaction, so each sees the commits
// before it; a read is counted "after a commit" when the writer committed
// since the same reader's previous read (its first read of a new database
// version: what another connection's commit costs the next query). Both
// tables are fully cached (SQLite's cache_size and forein_cache_pages of
// 4 GB, a scan of each table per connection first). Reported per journal
// mode, reader count and table: the readers' median and p99 latency of
// each kind, the readers' reads per second and the commits done; and the
// forein / ipk ratios. Latencies are wall time per statement (step to
// done), so on a machine with fewer cores than threads they include
// waiting for a core: compare the tables within a run, not across machines.
//
//   sqlite_multiconn [--rows N] [--readers 1,2,8] [--seconds S] [--rounds R]
//                    [--commits-per-s C] [--range N] [--journal wal,delete]
//                    [--dir D] [--csv FILE]
// FOREIN_SEED picks the keys and the probes (tests/support/seed.h).
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "forein/sqlite.h"
#include "sqlite_bench_util.h"
#include "support/seed.h"

namespace {

using Clock = std::chrono::steady_clock;
using forein::bench::check;
using forein::bench::exec;
using forein::bench::kForeinCachePages;
using forein::bench::scalar;
using forein::bench::Stmt;

struct Options {
  std::uint64_t rows = 1'000'000;
  std::vector<int> readers{1, 2, 8};
  double seconds = 5;
  int rounds = 2;
  double commits_per_s = 100;
  std::uint64_t range = 100;
  std::vector<std::string> journals{"wal", "delete"};
  std::string dir;
  std::string csv;
};

[[noreturn]] void usage() {
  std::fprintf(stderr,
               "usage: sqlite_multiconn [--rows N] [--readers 1,2,8] [--seconds S] [--rounds R] "
               "[--commits-per-s C] [--range N] [--journal wal,delete] [--dir D] [--csv FILE]\n");
  std::exit(2);
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) out.push_back(item);
  return out;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) usage();
    const std::string v = argv[++i];
    if (a == "--rows") {
      o.rows = std::strtoull(v.c_str(), nullptr, 10);
    } else if (a == "--readers") {
      o.readers.clear();
      for (const std::string& r : split(v)) o.readers.push_back(std::atoi(r.c_str()));
    } else if (a == "--seconds") {
      o.seconds = std::strtod(v.c_str(), nullptr);
    } else if (a == "--rounds") {
      o.rounds = std::atoi(v.c_str());
    } else if (a == "--commits-per-s") {
      o.commits_per_s = std::strtod(v.c_str(), nullptr);
    } else if (a == "--range") {
      o.range = std::strtoull(v.c_str(), nullptr, 10);
    } else if (a == "--journal") {
      o.journals = split(v);
    } else if (a == "--dir") {
      o.dir = v;
    } else if (a == "--csv") {
      o.csv = v;
    } else {
      usage();
    }
  }
  const bool readers_ok = !o.readers.empty() && std::all_of(o.readers.begin(), o.readers.end(),
                                                            [](int r) { return r >= 1 && r <= 64; });
  const bool journals_ok = !o.journals.empty() && std::all_of(o.journals.begin(), o.journals.end(), [](const std::string& j) {
                             return j == "wal" || j == "delete";
                           });
  if (o.rows < 2 * o.range || o.range == 0 || !readers_ok || !journals_ok || !(o.seconds > 0) ||
      o.rounds < 1 || !(o.commits_per_s > 0)) {
    usage();
  }
  return o;
}

sqlite3* open_connection(const std::string& path) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                      nullptr) != SQLITE_OK ||
      forein_sqlite_register(db) != SQLITE_OK) {
    throw std::runtime_error("cannot open " + path);
  }
  sqlite3_busy_timeout(db, 10000);
  exec(db, "PRAGMA cache_size=-4000000");
  return db;
}

struct Connection {
  explicit Connection(const std::string& path) : db(open_connection(path)) {
    scalar(db, "SELECT forein_cache_pages('fr', " + std::to_string(kForeinCachePages) + ")");
    // Both tables into this connection's caches.
    for (const char* t : {"fr", "ipk"}) scalar(db, std::string("SELECT sum(length(v)) FROM ") + t);
  }
  ~Connection() { sqlite3_close_v2(db); }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  sqlite3* db;
};

// Latencies of one kind of read, microseconds.
struct Samples {
  std::vector<double> us;
  void add(Clock::time_point t0) {
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  void append(const Samples& o) { us.insert(us.end(), o.us.begin(), o.us.end()); }
  double quantile(double q) {
    if (us.empty()) return 0;
    std::sort(us.begin(), us.end());
    return us[std::min(us.size() - 1, static_cast<std::size_t>(q * static_cast<double>(us.size())))];
  }
};

struct ReaderResult {
  Samples point, range, after_commit;
  std::uint64_t rows = 0;
};

struct Phase {
  double point_p50 = 0, point_p99 = 0, range_p50 = 0, range_p99 = 0, after_p50 = 0, after_p99 = 0;
  double reads_per_s = 0, commits_per_s = 0;
  std::uint64_t after_commit_reads = 0;
};

// One measurement: the readers read `table` for o.seconds while the writer
// commits one-row UPDATEs to it at o.commits_per_s.
Phase run_phase(const Options& o, const std::string& table, std::vector<std::unique_ptr<Connection>>& readers,
                Connection& writer, const std::vector<std::int64_t>& keys, std::uint64_t seed) {
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> commits{0};
  std::vector<ReaderResult> results(readers.size());
  std::vector<std::thread> threads;
  for (std::size_t r = 0; r < readers.size(); ++r) {
    threads.emplace_back([&, r] {
      std::mt19937_64 rng(seed + r);
      sqlite3* db = readers[r]->db;
      Stmt point(db, "SELECT v FROM " + table + " WHERE k = ?1");
      Stmt range(db, "SELECT k, v FROM " + table + " WHERE k >= ?1 ORDER BY k LIMIT " + std::to_string(o.range));
      ReaderResult& out = results[r];
      std::uint64_t seen = commits.load();
      for (std::uint64_t i = 0; !stop.load(std::memory_order_relaxed); ++i) {
        const bool is_point = i % 2 == 0;
        Stmt& st = is_point ? point : range;
        const std::uint64_t now_commits = commits.load();
        const bool after = now_commits != seen;
        seen = now_commits;
        const std::size_t at = rng() % (keys.size() - (is_point ? 0 : o.range));
        const auto t0 = Clock::now();
        sqlite3_bind_int64(st.get(), 1, keys[at]);
        int rc;
        while ((rc = sqlite3_step(st.get())) == SQLITE_ROW) ++out.rows;
        sqlite3_reset(st.get());
        check(db, rc, "read");
        (is_point ? out.point : out.range).add(t0);
        if (after) out.after_commit.add(t0);
      }
    });
  }
  // The writer, on this thread: one-row UPDATEs, each its own transaction,
  // due at a steady rate (a late one goes at once; none is skipped).
  {
    std::mt19937_64 rng(seed ^ 0x5eed);
    Stmt update(writer.db, "UPDATE " + table + " SET v = ?2 WHERE k = ?1");
    const auto start = Clock::now();
    const auto end = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.seconds));
    const auto period = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(1.0 / o.commits_per_s));
    auto due = start;
    for (std::uint64_t n = 0; Clock::now() < end; ++n) {
      std::this_thread::sleep_until(due);
      due += period;
      const std::string v = "w" + std::to_string(n);
      sqlite3_bind_int64(update.get(), 1, keys[rng() % keys.size()]);
      sqlite3_bind_text(update.get(), 2, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
      check(writer.db, sqlite3_step(update.get()), "update");
      sqlite3_reset(update.get());
      commits.fetch_add(1);
    }
    stop.store(true);
  }
  for (std::thread& t : threads) t.join();
  ReaderResult all;
  for (const ReaderResult& r : results) {
    all.point.append(r.point);
    all.range.append(r.range);
    all.after_commit.append(r.after_commit);
    all.rows += r.rows;
  }
  Phase p;
  p.point_p50 = all.point.quantile(0.5);
  p.point_p99 = all.point.quantile(0.99);
  p.range_p50 = all.range.quantile(0.5);
  p.range_p99 = all.range.quantile(0.99);
  p.after_p50 = all.after_commit.quantile(0.5);
  p.after_p99 = all.after_commit.quantile(0.99);
  p.after_commit_reads = all.after_commit.us.size();
  p.reads_per_s = static_cast<double>(all.point.us.size() + all.range.us.size()) / o.seconds;
  p.commits_per_s = static_cast<double>(commits.load()) / o.seconds;
  return p;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const std::uint64_t seed = forein::testing::test_seed("sqlite_multiconn");
  std::mt19937_64 rng(seed);
  std::vector<std::int64_t> keys;
  std::vector<std::string> values;
  forein::bench::make_rows(rng, o.rows, &keys, &values);

  const std::filesystem::path dir = o.dir.empty() ? std::filesystem::temp_directory_path() : std::filesystem::path(o.dir);
  std::ofstream csv;
  if (!o.csv.empty()) {
    csv.open(o.csv);
    csv << "journal,readers,round,table,point_p50_us,point_p99_us,range_p50_us,range_p99_us,after_commit_p50_us,"
           "after_commit_p99_us,after_commit_reads,reads_per_s,commits_per_s\n";
  }
  std::printf("sqlite_multiconn: %llu rows, SQLite %s, %u cores, %.1f s per phase, %d round(s), %.0f commits/s, "
              "ranges of %llu\n",
              static_cast<unsigned long long>(o.rows), sqlite3_libversion(), std::thread::hardware_concurrency(),
              o.seconds, o.rounds, o.commits_per_s, static_cast<unsigned long long>(o.range));
  int status = 0;
  for (const std::string& journal : o.journals) {
    const std::string path = (dir / ("forein-multiconn-" + std::to_string(::getpid()) + "-" + journal + ".db")).string();
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::filesystem::remove(path + suffix);
    try {
      {
        sqlite3* db = open_connection(path);
        const std::string mode = scalar(db, "PRAGMA journal_mode=" + journal);
        if (mode != journal) throw std::runtime_error("journal_mode " + journal + " gave " + mode);
        exec(db, "CREATE TABLE ipk(k INTEGER PRIMARY KEY, v)");
        exec(db, "CREATE VIRTUAL TABLE fr USING forein(k INTEGER, v)");
        forein::bench::load_rows(db, "ipk", keys, values);
        forein::bench::load_rows(db, "fr", keys, values);
        if (journal == "wal") exec(db, "PRAGMA wal_checkpoint(TRUNCATE)");
        sqlite3_close_v2(db);
      }
      std::printf("\n== journal %s (%.1f MiB)\n", journal.c_str(),
                  static_cast<double>(std::filesystem::file_size(path)) / (1 << 20));
      std::printf("  readers table   point p50/p99 us   range p50/p99 us   after a commit p50/p99 us (n)   reads/s  commits/s\n");
      for (const int r : o.readers) {
        std::vector<std::unique_ptr<Connection>> readers;
        for (int i = 0; i < r; ++i) readers.push_back(std::make_unique<Connection>(path));
        Connection writer(path);
        std::vector<Phase> by_table[2];  // 0 fr, 1 ipk
        for (int round = 0; round < o.rounds; ++round) {
          for (int k = 0; k < 2; ++k) {
            const int t = (k + round) % 2;  // alternate which table goes first
            const std::string table = t == 0 ? "fr" : "ipk";
            const Phase p = run_phase(o, table, readers, writer, keys, seed + 1000 * round + 100 * r + t);
            by_table[t].push_back(p);
            if (csv) {
              csv << journal << "," << r << "," << round + 1 << "," << (t == 0 ? "forein" : "ipk") << "," << p.point_p50
                  << "," << p.point_p99 << "," << p.range_p50 << "," << p.range_p99 << "," << p.after_p50 << ","
                  << p.after_p99 << "," << p.after_commit_reads << "," << p.reads_per_s << "," << p.commits_per_s
                  << "\n";
            }
          }
        }
        double m[2][9];
        for (int t = 0; t < 2; ++t) {
          auto med = [&](double Phase::*f) {
            std::vector<double> v;
            for (const Phase& p : by_table[t]) v.push_back(p.*f);
            return median(v);
          };
          std::vector<double> n;
          for (const Phase& p : by_table[t]) n.push_back(static_cast<double>(p.after_commit_reads));
          const double row[9] = {med(&Phase::point_p50), med(&Phase::point_p99), med(&Phase::range_p50),
                                 med(&Phase::range_p99), med(&Phase::after_p50), med(&Phase::after_p99),
                                 median(n), med(&Phase::reads_per_s), med(&Phase::commits_per_s)};
          std::copy(row, row + 9, m[t]);
          std::printf("  %7d %-6s %8.1f / %-8.1f %8.1f / %-8.1f %10.1f / %-8.1f (%6.0f) %9.0f %9.1f\n", r,
                      t == 0 ? "forein" : "ipk", m[t][0], m[t][1], m[t][2], m[t][3], m[t][4], m[t][5], m[t][6],
                      m[t][7], m[t][8]);
        }
        std::printf("  %7d forein/ipk: point p50 %.2f p99 %.2f, range p50 %.2f p99 %.2f, after a commit p50 %.2f p99 "
                    "%.2f, reads/s %.2f\n",
                    r, m[0][0] / m[1][0], m[0][1] / m[1][1], m[0][2] / m[1][2], m[0][3] / m[1][3], m[0][4] / m[1][4],
                    m[0][5] / m[1][5], m[0][7] / m[1][7]);
        std::fflush(stdout);
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "sqlite_multiconn: %s\n", e.what());
      status = 1;
    }
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::filesystem::remove(path + suffix);
    if (status != 0) break;
  }
  return status;
}

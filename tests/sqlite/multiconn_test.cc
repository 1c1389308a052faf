// Several connections on one database file (issue 47): threads, each with
// its own connection, and forked processes, each with its own connection,
// interleave seeded random writes and reads of a forein table `fr` and a
// native mirror table `m`, in WAL and in rollback-journal (DELETE) mode.
// Every write changes both tables in one transaction (BEGIN IMMEDIATE), so
// every read transaction (point lookups, 20-row ranges, counts) must see the
// same answer from both. SQLITE_BUSY / SQLITE_LOCKED roll the transaction
// back and retry it; they are never a mismatch. At the end a fresh
// connection finds both tables identical and forein_check 'ok'.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <iostream>
#include <latch>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "sqlite/harness.h"
#include "support/seed.h"

using forein::sqlite_test::Db;
using forein::sqlite_test::TempDir;

namespace {

constexpr int kInitialRows = 3000;   // keys 0, 2, 4, ... bulk-loaded
constexpr std::int64_t kKeySpace = 2 * kInitialRows + 500;
constexpr int kOpsPerWorker = 1500;

// SQLITE_BUSY or SQLITE_LOCKED (any extended code): roll back and retry.
struct Busy {
  std::string what;
};
// A wrong answer or an unexpected error: the worker stops and reports it.
struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

bool is_busy(int rc) {
  return (rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED;
}

// One connection, used by one thread only, with its prepared statements.
class Conn {
 public:
  Conn(const std::string& path, bool fullmutex) {
    const int flags = SQLITE_OPEN_READWRITE | (fullmutex ? SQLITE_OPEN_FULLMUTEX : SQLITE_OPEN_NOMUTEX);
    if (sqlite3_open_v2(path.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
      const std::string m = db_ ? sqlite3_errmsg(db_) : "out of memory";
      sqlite3_close_v2(db_);
      throw Failure("open " + path + ": " + m);
    }
    sqlite3_busy_timeout(db_, 10000);
    if (forein_sqlite_register(db_) != SQLITE_OK) {
      sqlite3_close_v2(db_);
      throw Failure("forein_sqlite_register failed");
    }
  }
  ~Conn() {
    for (auto& [sql, s] : stmts_) sqlite3_finalize(s);
    sqlite3_close_v2(db_);
  }
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  // Runs `sql` with the given parameters (integers or text; a leading '#'
  // marks an integer, "NULL" a NULL); returns the rows with storage
  // classes, like harness.h's Db::rows(sql, true). Throws Busy or Failure.
  std::string run(const std::string& sql, const std::vector<std::string>& params = {}) {
    sqlite3_stmt* s = prepare(sql);
    for (std::size_t i = 0; i < params.size(); ++i) {
      const std::string& p = params[i];
      const int idx = static_cast<int>(i) + 1;
      if (p == "NULL") {
        sqlite3_bind_null(s, idx);
      } else if (!p.empty() && p[0] == '#') {
        sqlite3_bind_int64(s, idx, std::stoll(p.substr(1)));
      } else {
        sqlite3_bind_text(s, idx, p.data(), static_cast<int>(p.size()), SQLITE_TRANSIENT);
      }
    }
    std::string out;
    const int rc = forein::sqlite_test::step_rows(s, true, &out);
    if (rc != SQLITE_DONE) {
      const int code = sqlite3_extended_errcode(db_);
      const std::string m = std::string(sqlite3_errmsg(db_)) + " (code " + std::to_string(code) + ") [" + sql + "]";
      sqlite3_reset(s);
      sqlite3_clear_bindings(s);
      if (is_busy(rc) || is_busy(code)) throw Busy{m};
      throw Failure("error: " + m);
    }
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return out;
  }
  int changes() const { return sqlite3_changes(db_); }
  // Ends an open transaction (after Busy or before stopping); errors ignored.
  void rollback_if_open() {
    if (sqlite3_get_autocommit(db_) == 0) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }

 private:
  sqlite3_stmt* prepare(const std::string& sql) {
    auto it = stmts_.find(sql);
    if (it != stmts_.end()) return it->second;
    sqlite3_stmt* s = nullptr;
    const int rc = sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr);
    if (rc != SQLITE_OK) {
      const int code = sqlite3_extended_errcode(db_);
      const std::string m = std::string(sqlite3_errmsg(db_)) + " [" + sql + "]";
      sqlite3_finalize(s);
      if (is_busy(rc) || is_busy(code)) throw Busy{m};
      throw Failure("prepare: " + m);
    }
    stmts_.emplace(sql, s);
    return s;
  }

  sqlite3* db_ = nullptr;
  std::map<std::string, sqlite3_stmt*> stmts_;
};

struct WorkerResult {
  std::string failure;  // empty: every answer matched
  int ops = 0, writes = 0, reads = 0, retries = 0;
  int others_commits = 0;  // read transactions that found PRAGMA data_version changed
};

// The randomized mix on its own connection. Never calls Catch2 (it runs in
// threads and in forked children); returns the first mismatch or error.
// `ready` is called once the connection is open, before the first
// operation: it waits until every worker is there, so that they overlap.
WorkerResult worker(const std::string& path, const std::string& who, std::uint64_t seed, int n_ops,
                    bool fullmutex, const std::function<void()>& ready) {
  WorkerResult r;
  std::string op = "open";
  std::string last_version;
  bool arrived = false;  // ready() is called exactly once, also on a failure before it
  auto arrive = [&] {
    if (!arrived) ready();
    arrived = true;
  };
  try {
    Conn c(path, fullmutex);
    c.run("PRAGMA synchronous=OFF");  // durability is not under test; locking is
    arrive();
    std::mt19937_64 rng(seed);
    auto below = [&](std::uint64_t n) { return static_cast<std::int64_t>(rng() % n); };
    auto value = [&](int i) -> std::string {
      switch (below(5)) {
        case 0: return "NULL";
        case 1: return "#" + std::to_string(static_cast<std::int64_t>(rng() >> 1));
        default:
          return who + "-" + std::to_string(i) + "-" + std::string(static_cast<std::size_t>(below(160)),
                                                               static_cast<char>('a' + below(26)));
      }
    };
    auto mismatch = [&](const std::string& what, const std::string& a, const std::string& b) {
      if (a != b) throw Failure(what + " differ: fr -> [" + a + "], m -> [" + b + "]");
    };
    // Runs `body` in a transaction opened with `begin`; on Busy rolls back
    // and runs it again.
    auto txn = [&](const char* begin, auto&& body) {
      for (int attempt = 0;; ++attempt) {
        try {
          c.run(begin);
          body();
          c.run("COMMIT");
          return;
        } catch (const Busy& b) {
          c.rollback_if_open();
          ++r.retries;
          if (attempt >= 200) throw Failure("still busy after 200 retries: " + b.what);
        }
      }
    };
    for (int i = 0; i < n_ops; ++i) {
      const std::int64_t k = below(kKeySpace);
      const std::string ks = "#" + std::to_string(k);
      const std::int64_t kind = below(100);
      if (kind < 45) {
        // One row changed in both tables, in one write transaction.
        const std::int64_t w = below(5);
        const std::string v = value(i);
        const std::string k2 = "#" + std::to_string(below(kKeySpace));
        static const char* const kNames[] = {"insert-or-ignore", "insert-or-replace", "update", "delete",
                                             "update-key"};
        const bool roll_back = below(12) == 0;
        op = "op " + std::to_string(i) + " " + kNames[w] + " k=" + std::to_string(k) +
             (w == 4 ? " to k=" + k2.substr(1) : " v=" + v) + (roll_back ? " (rolled back)" : "");
        for (int attempt = 0;; ++attempt) {
          try {
            c.run("BEGIN IMMEDIATE");
            int changed[2];
            for (int t = 0; t < 2; ++t) {
              const std::string T = t == 0 ? "fr" : "m";
              switch (w) {
                case 0: c.run("INSERT OR IGNORE INTO " + T + " VALUES (?, ?)", {ks, v}); break;
                case 1: c.run("INSERT OR REPLACE INTO " + T + " VALUES (?, ?)", {ks, v}); break;
                case 2: c.run("UPDATE " + T + " SET v = ? WHERE k = ?", {v, ks}); break;
                case 3: c.run("DELETE FROM " + T + " WHERE k = ?", {ks}); break;
                default: c.run("UPDATE OR REPLACE " + T + " SET k = ? WHERE k = ?", {k2, ks}); break;
              }
              changed[t] = c.changes();
            }
            mismatch("changes()", std::to_string(changed[0]), std::to_string(changed[1]));
            // Read back inside the write transaction.
            const std::string& probe = w == 4 ? k2 : ks;
            mismatch("v after the write", c.run("SELECT v FROM fr WHERE k = ?", {probe}),
                     c.run("SELECT v FROM m WHERE k = ?", {probe}));
            c.run(roll_back ? "ROLLBACK" : "COMMIT");
            break;
          } catch (const Busy& b) {
            c.rollback_if_open();
            ++r.retries;
            if (attempt >= 200) throw Failure("still busy after 200 retries: " + b.what);
          }
        }
        ++r.writes;
      } else if (kind < 75) {
        op = "op " + std::to_string(i) + " point k=" + std::to_string(k);
        txn("BEGIN", [&] {
          const std::string a = c.run("SELECT v FROM fr WHERE k = ?", {ks});
          const std::string b = c.run("SELECT v FROM m WHERE k = ?", {ks});
          mismatch("point lookups", a, b);
          // Changes when another connection committed since the last look.
          const std::string version = c.run("PRAGMA data_version");
          if (!last_version.empty() && version != last_version) ++r.others_commits;
          last_version = version;
        });
        ++r.reads;
      } else if (kind < 97) {
        op = "op " + std::to_string(i) + " range k>=" + std::to_string(k) + " limit 20";
        txn("BEGIN", [&] {
          const std::string a = c.run("SELECT k, v FROM fr WHERE k >= ? ORDER BY k LIMIT 20", {ks});
          const std::string b = c.run("SELECT k, v FROM m WHERE k >= ? ORDER BY k LIMIT 20", {ks});
          mismatch("ranges", a, b);
        });
        ++r.reads;
      } else {
        op = "op " + std::to_string(i) + " count";
        txn("BEGIN", [&] {
          const std::string a = c.run("SELECT count(*) FROM fr");
          const std::string b = c.run("SELECT count(*) FROM m");
          mismatch("counts", a, b);
        });
        ++r.reads;
      }
      ++r.ops;
      // A scheduling hint, not synchronization: with more workers than
      // cores it lets the others in between operations, so that reads meet
      // other connections' commits more often than once a time slice.
      std::this_thread::yield();
    }
    op = "forein_check at the end";
    txn("BEGIN", [&] { mismatch("forein_check", c.run("SELECT forein_check('fr')"), "sok"); });
    c.rollback_if_open();
  } catch (const Failure& e) {
    arrive();
    r.failure = who + " (seed " + std::to_string(seed) + "), " + op + ": " + e.what();
  } catch (const Busy& b) {
    arrive();
    r.failure = who + " (seed " + std::to_string(seed) + "), " + op + ": unexpected busy: " + b.what;
  } catch (const std::exception& e) {
    arrive();
    r.failure = who + " (seed " + std::to_string(seed) + "), " + op + ": exception: " + e.what();
  }
  return r;
}

// Creates fr and m in `mode`, with the same kInitialRows rows, and closes
// the connection.
void create(const std::string& path, const std::string& mode) {
  Db db(path);
  const std::string got = db.rows("PRAGMA journal_mode=" + mode);
  std::string lower = mode;
  for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  REQUIRE(got == lower);
  db.exec("CREATE VIRTUAL TABLE fr USING forein(k INTEGER, v)");
  db.exec("CREATE TABLE m(k INTEGER PRIMARY KEY, v)");
  db.exec("BEGIN");
  for (const char* t : {"fr", "m"}) {
    db.exec(std::string("INSERT INTO ") + t +
            " WITH RECURSIVE c(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM c WHERE x < " +
            std::to_string(kInitialRows - 1) + ") SELECT 2 * x, 'init-' || x FROM c");
  }
  db.exec("COMMIT");
  REQUIRE(db.rows("SELECT count(*) FROM fr") == std::to_string(kInitialRows));
}

// With a fresh connection: both tables identical, forein_check 'ok'.
void final_check(const std::string& path, const std::string& mode, std::uint64_t seed) {
  Db db(path);
  INFO("mode " << mode << ", seed " << seed);
  REQUIRE(db.rows("PRAGMA journal_mode") == (mode == "WAL" ? "wal" : "delete"));
  const std::string count = db.rows("SELECT count(*) FROM fr");
  CHECK(count == db.rows("SELECT count(*) FROM m"));
  CHECK(std::stoll(count) > 0);
  const std::string a = db.rows("SELECT k, v FROM fr ORDER BY k", true);
  const std::string b = db.rows("SELECT k, v FROM m ORDER BY k", true);
  CHECK(a == b);  // no INFO of the contents: thousands of rows
  if (a != b) {
    // The first differing row, to make the report readable.
    std::size_t i = 0;
    while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
    const std::size_t from = a.rfind('\n', i) == std::string::npos ? 0 : a.rfind('\n', i) + 1;
    FAIL("first difference: fr: " << a.substr(from, 200) << "\nm: " << b.substr(from, 200));
  }
  REQUIRE(db.rows("SELECT forein_check('fr')") == "ok");
}

void with_threads(const std::string& mode) {
  REQUIRE(sqlite3_threadsafe() != 0);
  const std::uint64_t seed = forein::testing::test_seed("sqlite multiconn threads " + mode);
  TempDir dir;
  const std::string path = dir.file("mc-threads.db");
  create(path, mode);
  constexpr int kThreads = 4, kOps = kOpsPerWorker;
  std::vector<WorkerResult> results(kThreads);
  const auto t0 = std::chrono::steady_clock::now();
  {
    std::latch start(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        // Even threads open with SQLITE_OPEN_FULLMUTEX, odd ones NOMUTEX.
        results[t] = worker(path, mode + " thread " + std::to_string(t), seed + static_cast<std::uint64_t>(t), kOps,
                            t % 2 == 0, [&] { start.arrive_and_wait(); });
      });
    }
    for (auto& th : threads) th.join();
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  int retries = 0, writes = 0, reads = 0, seen = 0;
  for (int t = 0; t < kThreads; ++t) {
    INFO("mode " << mode << ", threads, seed " << seed << ", thread " << t);
    REQUIRE(results[t].failure == "");
    CHECK(results[t].ops == kOps);
    retries += results[t].retries;
    writes += results[t].writes;
    reads += results[t].reads;
    seen += results[t].others_commits;
  }
  std::cout << "sqlite multiconn threads " << mode << ": " << kThreads << " x " << kOps << " ops (" << writes
            << " writes, " << reads << " reads, " << retries << " busy retries; " << seen
            << " reads saw other connections' commits) in " << secs << " s\n";
  CHECK(seen > 0);  // the connections did interleave
  final_check(path, mode, seed);
}

void with_processes(const std::string& mode) {
  const std::uint64_t seed = forein::testing::test_seed("sqlite multiconn processes " + mode);
  TempDir dir;
  const std::string path = dir.file("mc-procs.db");
  create(path, mode);  // the parent's connection is closed before fork
  constexpr int kProcs = 3, kOps = kOpsPerWorker;
  std::cout.flush();
  std::cerr.flush();
  // The start line: each child blocks reading it until the parent closes
  // the write end, after forking them all.
  int gate[2];
  REQUIRE(::pipe(gate) == 0);
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<pid_t> pids;
  for (int p = 0; p < kProcs; ++p) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      // The child: its own connection, no Catch2, _exit (no destructors:
      // the parent's TempDir must survive).
      ::close(gate[1]);
      const WorkerResult r =
          worker(path, mode + " process " + std::to_string(p), seed + 100 + static_cast<std::uint64_t>(p), kOps, true,
                 [&] {
                   char ch;
                   while (::read(gate[0], &ch, 1) < 0 && errno == EINTR) {
                   }
                 });
      if (!r.failure.empty() || r.ops != kOps) {
        const std::string m = "sqlite multiconn child: " + (r.failure.empty() ? "ops " + std::to_string(r.ops) : r.failure) + "\n";
        (void)!::write(2, m.data(), m.size());
        ::_exit(1);
      }
      const std::string m = "sqlite multiconn " + mode + " process " + std::to_string(p) + ": " +
                            std::to_string(r.writes) + " writes, " + std::to_string(r.reads) + " reads, " +
                            std::to_string(r.retries) + " busy retries; " + std::to_string(r.others_commits) +
                            " reads saw other connections' commits\n";
      (void)!::write(1, m.data(), m.size());
      ::_exit(0);
    }
    if (pid < 0) break;  // the children already forked run, are reaped, then the REQUIRE below
    pids.push_back(pid);
  }
  ::close(gate[0]);
  ::close(gate[1]);
  // Reap every child before any REQUIRE: a failed one would otherwise end
  // the test case and remove the directory under the others.
  std::vector<int> statuses(pids.size(), -1);
  std::vector<pid_t> reaped(pids.size(), -1);
  for (std::size_t p = 0; p < pids.size(); ++p) {
    do {
      reaped[p] = ::waitpid(pids[p], &statuses[p], 0);
    } while (reaped[p] < 0 && errno == EINTR);
  }
  REQUIRE(pids.size() == static_cast<std::size_t>(kProcs));  // fork failed otherwise
  for (int p = 0; p < kProcs; ++p) {
    const int status = statuses[static_cast<std::size_t>(p)];
    const pid_t got = reaped[static_cast<std::size_t>(p)];
    INFO("mode " << mode << ", processes, seed " << seed << ", process " << p
                 << " (its reason, if any, is on stderr); status " << status);
    REQUIRE(got == pids[static_cast<std::size_t>(p)]);
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << "sqlite multiconn processes " << mode << ": " << kProcs << " x " << kOps << " ops in " << secs
            << " s\n";
  final_check(path, mode, seed);
}

}  // namespace

TEST_CASE("sqlite multiconn: threads, WAL", "[sqlite][multiconn]") { with_threads("WAL"); }
TEST_CASE("sqlite multiconn: threads, rollback journal", "[sqlite][multiconn]") { with_threads("DELETE"); }
TEST_CASE("sqlite multiconn: processes, WAL", "[sqlite][multiconn]") { with_processes("WAL"); }
TEST_CASE("sqlite multiconn: processes, rollback journal", "[sqlite][multiconn]") { with_processes("DELETE"); }

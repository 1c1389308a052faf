// The first write after opening a forein table (docs/sqlite.md, "Pages on
// demand"): a fresh connection opens a table of --rows rows with free pages
// (a range of 10% of the keys deleted) and runs one INSERT of 2,000 new keys
// (new leaves: page allocations), timed, inside a transaction that is then
// rolled back so every repetition sees the same table. Hints are off (the
// hint path reads every page when it attaches, whatever the free list).
//
//   sqlite_first_write <dir> [--rows N] [--reps N] [--keep]
//
// <dir>/first_write.db is built once (kept with --keep and reused when it
// exists). The table is measured as stored (format 3 with this build: free
// pages listed in kv_free), then, when this build has kv_free, as a copy in
// the format-2 layout (kv_free dropped, free pages as zeroed images), which
// takes the old path: a scan of every stored page at the first allocation.
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "forein/sqlite.h"

namespace {

using Clock = std::chrono::steady_clock;

void exec(sqlite3* db, const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string m = err ? err : "error";
    sqlite3_free(err);
    throw std::runtime_error(m + " [" + sql + "]");
  }
}

std::string scalar(sqlite3* db, const std::string& sql) {
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) != SQLITE_OK) {
    throw std::runtime_error(std::string(sqlite3_errmsg(db)) + " [" + sql + "]");
  }
  std::string out;
  if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0) != nullptr) {
    out = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
  }
  sqlite3_finalize(s);
  return out;
}

sqlite3* open(const std::string& path) {
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK || forein_sqlite_register(db) != SQLITE_OK) {
    throw std::runtime_error("cannot open " + path);
  }
  return db;
}

std::string rows_sql(long from, long n) {
  return "INSERT INTO kv WITH RECURSIVE c(x) AS (SELECT " + std::to_string(from) +
         " UNION ALL SELECT x + 1 FROM c WHERE x < " + std::to_string(from + n - 1) +
         ") SELECT x, 'value-' || x FROM c";
}

long stat(sqlite3* db, const char* field) {
  return std::stol(scalar(db, std::string("SELECT json_extract(forein_stats('kv'), '$.") + field + "')"));
}

struct Sample {
  double open_ms, insert_ms;
  long pages, read_by_insert;
};

Sample measure(const std::string& path, long rows, int rep) {
  Sample s{};
  const auto t0 = Clock::now();
  sqlite3* db = open(path);
  scalar(db, "SELECT forein_debug_hints('kv', 2)");
  scalar(db, "SELECT v FROM kv WHERE k = 7");  // opens the table: meta and root-to-leaf pages
  const auto t1 = Clock::now();
  s.open_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  s.pages = stat(db, "pages");
  const long read0 = stat(db, "pages_read");
  exec(db, "BEGIN");
  const auto t2 = Clock::now();
  exec(db, rows_sql(rows + 1000000L * (rep + 1), 2000));
  const auto t3 = Clock::now();
  s.insert_ms = std::chrono::duration<double, std::milli>(t3 - t2).count();
  s.read_by_insert = stat(db, "pages_read") - read0;
  exec(db, "ROLLBACK");
  sqlite3_close_v2(db);
  return s;
}

void report(const char* what, const std::string& path, long rows, int reps) {
  std::vector<Sample> v;
  for (int r = 0; r < reps; ++r) v.push_back(measure(path, rows, r));
  std::vector<double> ins, opn;
  for (const Sample& s : v) {
    ins.push_back(s.insert_ms);
    opn.push_back(s.open_ms);
  }
  std::sort(ins.begin(), ins.end());
  std::sort(opn.begin(), opn.end());
  std::printf("%-28s pages %ld  open+lookup median %.2f ms  first INSERT median %.2f ms (min %.2f, max %.2f)  "
              "pages read by it %ld\n",
              what, v[0].pages, opn[opn.size() / 2], ins[ins.size() / 2], ins.front(), ins.back(),
              v[0].read_by_insert);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <dir> [--rows N] [--reps N] [--keep]\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  long rows = 1000000;
  int reps = 5;
  bool keep = false;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--rows" && i + 1 < argc) {
      rows = std::atol(argv[++i]);
    } else if (a == "--reps" && i + 1 < argc) {
      reps = std::atoi(argv[++i]);
    } else if (a == "--keep") {
      keep = true;
    } else {
      std::fprintf(stderr, "unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  try {
    std::filesystem::create_directories(dir);
    const std::string path = dir + "/first_write.db";
    if (!std::filesystem::exists(path)) {
      sqlite3* db = open(path);
      exec(db, "CREATE VIRTUAL TABLE kv USING forein(k INTEGER, v)");
      const auto t0 = Clock::now();
      exec(db, rows_sql(0, rows));
      const auto t1 = Clock::now();
      exec(db, "DELETE FROM kv WHERE k >= " + std::to_string(rows / 2) + " AND k < " +
                   std::to_string(rows / 2 + rows / 10));
      const auto t2 = Clock::now();
      std::printf("built: load %.0f ms, range delete %.0f ms\n",
                  std::chrono::duration<double, std::milli>(t1 - t0).count(),
                  std::chrono::duration<double, std::milli>(t2 - t1).count());
      sqlite3_close_v2(db);
    }
    sqlite3* db = open(path);
    const std::string format = scalar(db, "SELECT format FROM kv_meta");
    const bool has_free = scalar(db, "SELECT count(*) FROM sqlite_schema WHERE name = 'kv_free'") == "1";
    const std::string free_pages =
        has_free ? scalar(db, "SELECT count(*) FROM kv_free")
                 : scalar(db, "SELECT count(*) FROM kv_pages WHERE substr(page, 13, 4) = x'00000000'");
    sqlite3_close_v2(db);
    std::printf("%ld rows, table format %s, %s free pages, sqlite %s\n", rows, format.c_str(),
                free_pages.c_str(), sqlite3_libversion());
    report(has_free ? "as stored (kv_free)" : "as stored (no kv_free)", path, rows, reps);
    if (has_free) {
      const std::string old = dir + "/first_write_format2.db";
      std::filesystem::copy_file(path, old, std::filesystem::copy_options::overwrite_existing);
      sqlite3* o = nullptr;
      if (sqlite3_open(old.c_str(), &o) != SQLITE_OK) throw std::runtime_error("open " + old);
      exec(o, "BEGIN; UPDATE kv_pages SET page = zeroblob(length((SELECT page FROM kv_pages WHERE id = 0))) "
              "WHERE id IN (SELECT id FROM kv_free); DROP TABLE kv_free; UPDATE kv_meta SET format = 2; COMMIT");
      sqlite3_close_v2(o);
      report("format-2 copy (old scan)", old, rows, reps);
      std::filesystem::remove(old);
    }
    if (!keep) std::filesystem::remove(path);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sqlite_first_write: %s\n", e.what());
    return 1;
  }
  return 0;
}

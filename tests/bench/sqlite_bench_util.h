// What the SQLite benchmarks share (sqlite_bench.cc, sqlite_multiconn.cc):
// statement helpers that throw on error, the data set (distinct random
// 62-bit keys, ascending; values of 16..48 letters) and its load.
#pragma once

#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace forein::bench {

// forein_cache_pages for the benchmarks: 4 GB of 8 KiB pages, as SQLite's
// cache_size -4000000, so every table is measured fully cached.
inline constexpr std::uint64_t kForeinCachePages = 524288;

inline void check(sqlite3* db, int rc, const char* what) {
  if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW) {
    throw std::runtime_error(std::string(what) + ": " + sqlite3_errmsg(db));
  }
}

inline void exec(sqlite3* db, const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    const std::string m = err ? err : "?";
    sqlite3_free(err);
    throw std::runtime_error(sql + ": " + m);
  }
}

inline std::string scalar(sqlite3* db, const std::string& sql) {
  sqlite3_stmt* s = nullptr;
  check(db, sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr), sql.c_str());
  std::string out;
  if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0)) {
    out = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
  }
  sqlite3_finalize(s);
  return out;
}

class Stmt {
 public:
  Stmt(sqlite3* db, const std::string& sql) : db_(db) {
    check(db, sqlite3_prepare_v3(db, sql.c_str(), -1, SQLITE_PREPARE_PERSISTENT, &s_, nullptr),
          sql.c_str());
  }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  sqlite3_stmt* get() const { return s_; }
  sqlite3* db() const { return db_; }

 private:
  sqlite3* db_;
  sqlite3_stmt* s_ = nullptr;
};

// n distinct random 62-bit keys, ascending, and a value of 16..48 letters
// for each.
inline void make_rows(std::mt19937_64& rng, std::uint64_t n, std::vector<std::int64_t>* keys,
                      std::vector<std::string>* values) {
  keys->clear();
  keys->reserve(n);
  while (keys->size() < n) {
    for (std::uint64_t i = keys->size(); i < n; ++i) keys->push_back(static_cast<std::int64_t>(rng() >> 2));
    std::sort(keys->begin(), keys->end());
    keys->erase(std::unique(keys->begin(), keys->end()), keys->end());
  }
  values->assign(n, std::string());
  for (auto& v : *values) {
    v.resize(16 + rng() % 33);
    for (char& c : v) c = static_cast<char>('a' + rng() % 26);
  }
}

// Loads the rows into `table` in one transaction; returns seconds.
inline double load_rows(sqlite3* db, const std::string& table, const std::vector<std::int64_t>& keys,
                        const std::vector<std::string>& values) {
  const auto start = std::chrono::steady_clock::now();
  exec(db, "BEGIN");
  Stmt ins(db, "INSERT INTO " + table + " VALUES (?1, ?2)");
  for (std::size_t i = 0; i < keys.size(); ++i) {
    sqlite3_bind_int64(ins.get(), 1, keys[i]);
    sqlite3_bind_text(ins.get(), 2, values[i].data(), static_cast<int>(values[i].size()), SQLITE_STATIC);
    check(db, sqlite3_step(ins.get()), "insert");
    sqlite3_reset(ins.get());
  }
  exec(db, "COMMIT");
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace forein::bench

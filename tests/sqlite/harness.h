// Helpers for the SQLite variant's tests: a connection with the module
// registered, statement execution, results flattened to strings.
#pragma once

#include <catch2/catch.hpp>
#include <sqlite3.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "forein/sqlite.h"

namespace forein::sqlite_test {

// A fresh temporary directory, removed at scope exit.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "forein-sqlite-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// Steps `s` to its end, appending every row to *out: columns joined by
// '|', rows by '\n'; with `typed`, each value after its storage class
// ("ifsbn"), so 1 and '1' differ; blobs in hex. Returns the last step's
// code (SQLITE_DONE unless it failed).
inline int step_rows(sqlite3_stmt* s, bool typed, std::string* out) {
  int rc;
  bool first = true;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    if (!first) *out += '\n';
    first = false;
    for (int i = 0; i < sqlite3_column_count(s); ++i) {
      if (i) *out += '|';
      const int t = sqlite3_column_type(s, i);
      if (typed) *out += "ifsbn"[t - 1];
      if (t == SQLITE_NULL) {
        *out += "NULL";
      } else if (t == SQLITE_BLOB) {
        const auto* p = static_cast<const unsigned char*>(sqlite3_column_blob(s, i));
        static const char* hex = "0123456789abcdef";
        for (int j = 0; j < sqlite3_column_bytes(s, i); ++j) {
          *out += hex[p[j] >> 4];
          *out += hex[p[j] & 15];
        }
      } else {
        const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s, i));
        out->append(p, static_cast<std::size_t>(sqlite3_column_bytes(s, i)));
      }
    }
  }
  return rc;
}

struct SqlFailure : std::runtime_error {
  int rc;
  SqlFailure(int code, const std::string& m) : std::runtime_error(m), rc(code) {}
};

class Db {
 public:
  explicit Db(const std::string& path = ":memory:") {
    if (sqlite3_open(path.c_str(), &db_) != SQLITE_OK) throw std::runtime_error("open " + path);
    sqlite3_busy_timeout(db_, 10000);
    if (forein_sqlite_register(db_) != SQLITE_OK) throw std::runtime_error("register failed");
  }
  ~Db() { sqlite3_close_v2(db_); }
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;
  sqlite3* get() const { return db_; }

  void exec(const std::string& sql) {
    char* err = nullptr;
    const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
    if (rc != SQLITE_OK) {
      std::string m = err ? err : sqlite3_errstr(rc);
      sqlite3_free(err);
      throw SqlFailure(sqlite3_extended_errcode(db_), m + " [" + sql + "]");
    }
  }
  // Runs sql; returns "" on success, else the error message.
  std::string try_exec(const std::string& sql) {
    try {
      exec(sql);
      return "";
    } catch (const SqlFailure& e) {
      return e.what();
    }
  }

  // Every row of the result, columns joined by '|', rows by '\n'. Values
  // are printed with their storage class so 1 and '1' differ.
  std::string rows(const std::string& sql, bool typed = false) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr) != SQLITE_OK) {
      throw SqlFailure(sqlite3_extended_errcode(db_), std::string(sqlite3_errmsg(db_)) + " [" + sql + "]");
    }
    std::string out;
    const int rc = step_rows(s, typed, &out);
    if (rc != SQLITE_DONE) {
      std::string m = sqlite3_errmsg(db_);
      const int code = sqlite3_extended_errcode(db_);
      sqlite3_finalize(s);
      throw SqlFailure(code, m + " [" + sql + "]");
    }
    sqlite3_finalize(s);
    return out;
  }

 private:
  sqlite3* db_ = nullptr;
};

// `t` with every %T replaced by the table name.
inline std::string subst(const std::string& t, const std::string& name) {
  std::string out;
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (t[i] == '%' && i + 1 < t.size() && t[i + 1] == 'T') {
      out += name;
      ++i;
    } else {
      out += t[i];
    }
  }
  return out;
}

// Runs the statement (with %T replaced by the table) on both tables and
// compares results, or that both failed.
class Pair {
 public:
  Pair(Db& db, std::string a, std::string b) : db_(db), a_(std::move(a)), b_(std::move(b)) {}
  void run(const std::string& tmpl) {
    const std::string sa = subst(tmpl, a_), sb = subst(tmpl, b_);
    std::string ra, rb;
    bool fa = false, fb = false;
    try {
      ra = db_.rows(sa, true);
    } catch (const SqlFailure& e) {
      fa = true;
      ra = e.what();
    }
    try {
      rb = db_.rows(sb, true);
    } catch (const SqlFailure& e) {
      fb = true;
      rb = e.what();
    }
    INFO("forein: " << sa << "\n-> " << ra << "\nplain: " << sb << "\n-> " << rb);
    REQUIRE(fa == fb);
    if (!fa) REQUIRE(ra == rb);
    ++ops;
  }
  std::uint64_t ops = 0;

 private:
  Db& db_;
  std::string a_, b_;
};

// One counter from forein_stats(table).
inline std::uint64_t stat(Db& db, const std::string& field, const char* table = "kv") {
  return std::stoull(db.rows(std::string("SELECT json_extract(forein_stats('") + table + "'), '$." +
                             field + "')"));
}

// `n` rows from a recursive CTE: INSERT ... SELECT in one statement.
inline std::string rows_sql(const char* table, int from, int n, const char* verb = "INSERT") {
  return std::string(verb) + " INTO " + table +
         " WITH RECURSIVE c(x) AS (SELECT " + std::to_string(from) + " UNION ALL SELECT x + 1 FROM c WHERE x < " +
         std::to_string(from + n - 1) + ") SELECT x, 'value-' || x FROM c";
}

}  // namespace forein::sqlite_test

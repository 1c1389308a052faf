// Key constraints with values of every type compare as SQLite compares
// them. An INTEGER key's bounds are exact and SQLite does not re-check
// them (best_index.cc omits them), so a wrong conversion would change an
// answer: every constraint value is tried with every operator against a
// native table holding the same rows. TEXT keys are checked under other
// collations and against columns of numeric affinity, where the matches
// are no range in BINARY key order.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "sqlite/harness.h"
#include "support/seed.h"

using forein::sqlite_test::Db;
using forein::sqlite_test::Pair;
using forein::sqlite_test::TempDir;

namespace {

const char* const kOps[] = {"=", "<", "<=", ">", ">="};

// Constraint values for an INTEGER key: integers, reals (whole, fractional,
// beyond int64, negative zero), text that numeric affinity turns into a
// number and text it leaves alone, blobs and NULL.
const std::vector<std::string> kIntValues = {
    "0", "5", "-5", "7", "49", "50", "51", "-51",
    "9223372036854775807", "-9223372036854775808", "9223372036854775806",
    "9007199254740993", "4.5", "-4.5", "5.0", "-0.0", "0.5", "-0.5", "49.999", "1e300", "-1e300",
    "9.2233720368547758e18", "-9.2233720368547758e18", "9.2233720368547748e18",
    "'5'", "' 5'", "'5.0'", "'4.5'", "'-3'", "'1e1'", "'0x10'", "'abc'", "''",
    "'9223372036854775807'", "'9223372036854775808'", "x'35'", "x''", "NULL",
    "CAST(5 AS TEXT)", "CAST('7' AS BLOB)"};

// Constraint values for a TEXT key.
const std::vector<std::string> kTextValues = {
    "'a'", "'A'", "'b'", "'B'", "'c'", "'10'", "'9'", "'100'", "''", "'a '", "10", "9", "9.5",
    "-1", "x'61'", "x''", "NULL"};

void fill(Db& db, const char* fr, const char* native, const std::vector<std::string>& keys) {
  for (const std::string& k : keys) {
    for (const char* t : {fr, native}) {
      db.exec(std::string("INSERT INTO ") + t + " VALUES (" + k + ", 'v' || " + k + ")");
    }
  }
}

// Every value with every operator, both orders; then seeded random pairs
// of constraints, IN lists and BETWEEN.
std::uint64_t compare_all(Pair& p, const std::vector<std::string>& values, const std::string& collate,
                          std::mt19937_64& rng) {
  for (const std::string& v : values) {
    for (const char* op : kOps) {
      for (const char* order : {"", " ORDER BY k", " ORDER BY k DESC"}) {
        p.run("SELECT k, v FROM %T WHERE k " + collate + std::string(op) + " " + v + order);
      }
      p.run("SELECT count(*) FROM %T WHERE " + v + " " + op + " k" + collate);
    }
  }
  auto any = [&] { return values[rng() % values.size()]; };
  for (int i = 0; i < 1500; ++i) {
    switch (rng() % 4) {
      case 0:
        p.run("SELECT k FROM %T WHERE k " + collate + kOps[rng() % 5] + " " + any() + " AND k " +
              collate + kOps[rng() % 5] + " " + any() + " ORDER BY k" + (rng() % 2 ? " DESC" : ""));
        break;
      case 1:
        p.run("SELECT k FROM %T WHERE k " + collate + "IN (" + any() + ", " + any() + ", " + any() +
              ") ORDER BY k" + (rng() % 2 ? " DESC" : ""));
        break;
      case 2:
        p.run("SELECT k FROM %T WHERE k " + collate + "BETWEEN " + any() + " AND " + any() +
              " ORDER BY k");
        break;
      default:
        p.run("SELECT k FROM %T WHERE k " + collate + kOps[rng() % 5] + " " + any() +
              " ORDER BY k LIMIT " + std::to_string(1 + rng() % 5));
        break;
    }
  }
  return p.ops;
}

// The key against each column of `other` (a table of a few rows), with
// every operator: the other side's affinity takes part in the comparison.
void compare_joins(Pair& p, const std::string& other) {
  for (const char* col : {"x", "y", "z"}) {
    for (const char* op : kOps) {
      p.run("SELECT " + other + ".rowid, %T.k FROM " + other + " JOIN %T ON %T.k " + op + " " + other +
            "." + col + " ORDER BY 1, 2");
    }
  }
}

}  // namespace

TEST_CASE("sqlite constraints: INTEGER key bounds are exact for every value type", "[sqlite]") {
  const std::uint64_t seed = forein::testing::test_seed("sqlite constraint types integer");
  std::mt19937_64 rng(seed);
  TempDir dir;
  Db db(dir.file("c.db"));
  db.exec("CREATE VIRTUAL TABLE fr USING forein(k INTEGER, v)");
  // No index on the native side: every row is compared as the WHERE
  // clause says. (A rowid table's seek is not: it finds no row for
  // k = -9.2233720368547758e18, although that real equals INT64_MIN.)
  // Rows go in in key order, so unordered answers come in the same order.
  db.exec("CREATE TABLE nat(k INTEGER, v)");
  std::vector<std::int64_t> ints = {INT64_MIN, INT64_MIN + 1, INT64_MAX - 1, INT64_MAX,
                                    9007199254740992, 9007199254740993, 9007199254740994};
  for (int k = -50; k <= 50; ++k) ints.push_back(k);
  std::sort(ints.begin(), ints.end());
  std::vector<std::string> keys;
  for (const std::int64_t k : ints) keys.push_back(std::to_string(k));
  fill(db, "fr", "nat", keys);
  Pair p(db, "fr", "nat");
  const std::uint64_t ops = compare_all(p, kIntValues, "", rng);
  // The other side's affinity does not matter to an INTEGER key: a TEXT
  // column's '5' compares as 5.
  db.exec("CREATE TABLE other(x TEXT, y BLOB, z)");
  db.exec("INSERT INTO other VALUES ('5', x'35', '5'), ('4.5', 4.5, 'abc'), ('abc', NULL, 7)");
  compare_joins(p, "other");
  // Prepared statements see bound values of every type the same way.
  sqlite3_stmt* st = nullptr;
  REQUIRE(sqlite3_prepare_v2(db.get(), "SELECT count(*) FROM fr WHERE k >= ?1 AND k < ?2", -1, &st,
                             nullptr) == SQLITE_OK);
  sqlite3_stmt* nt = nullptr;
  REQUIRE(sqlite3_prepare_v2(db.get(), "SELECT count(*) FROM nat WHERE k >= ?1 AND k < ?2", -1, &nt,
                             nullptr) == SQLITE_OK);
  for (int i = 0; i < 500; ++i) {
    const double a = static_cast<double>(static_cast<int>(rng() % 1200) - 600) / 10.0;
    const std::string b = std::to_string(static_cast<int>(rng() % 120) - 60);
    for (sqlite3_stmt* s : {st, nt}) {
      sqlite3_reset(s);
      sqlite3_bind_double(s, 1, a);
      sqlite3_bind_text(s, 2, b.c_str(), -1, SQLITE_TRANSIENT);
      REQUIRE(sqlite3_step(s) == SQLITE_ROW);
    }
    INFO("k >= " << a << " AND k < '" << b << "'");
    REQUIRE(sqlite3_column_int64(st, 0) == sqlite3_column_int64(nt, 0));
  }
  sqlite3_finalize(st);
  sqlite3_finalize(nt);
  std::cout << "sqlite constraints (integer): " << p.ops << " queries compared, seed " << seed << "\n";
  CHECK(ops > 1000);
}

TEST_CASE("sqlite constraints: TEXT key under collations and numeric affinity", "[sqlite]") {
  const std::uint64_t seed = forein::testing::test_seed("sqlite constraint types text");
  std::mt19937_64 rng(seed);
  TempDir dir;
  Db db(dir.file("c.db"));
  db.exec("CREATE VIRTUAL TABLE fr USING forein(k TEXT, v)");
  db.exec("CREATE TABLE nat(k TEXT PRIMARY KEY NOT NULL, v) WITHOUT ROWID");
  fill(db, "fr", "nat",
       {"'a'", "'B'", "'b '", "'c'", "'C'", "'10'", "'9'", "'100'", "'5'", "''", "'-1'", "'9.5'", "'aa'"});
  Pair p(db, "fr", "nat");
  for (const char* collate : {"", "COLLATE NOCASE ", "COLLATE RTRIM ", "COLLATE BINARY "}) {
    compare_all(p, kTextValues, collate, rng);
  }
  // A column of INTEGER affinity on the other side gives the key numeric
  // affinity: '10' >= 9 compares as numbers there.
  db.exec("CREATE TABLE nums(x INTEGER, y REAL, z TEXT)");
  db.exec("INSERT INTO nums VALUES (9, 9.5, '9'), (10, -1, 'b'), (NULL, 100, '10')");
  compare_joins(p, "nums");
  std::cout << "sqlite constraints (text): " << p.ops << " queries compared, seed " << seed << "\n";
  CHECK(p.ops > 4000);
}

TEST_CASE("sqlite constraints: LIMIT and OFFSET only size the scan's batches", "[sqlite]") {
  // best_index.cc passes a scan's LIMIT (and OFFSET) to xFilter, which
  // sizes the first batch of rows with it; SQLite still applies both. A
  // WHERE term SQLite checks itself (on v) makes it ask for rows past the
  // LIMIT; a LIMIT larger than a leaf, or than the table, ends nothing.
  const std::uint64_t seed = forein::testing::test_seed("sqlite limit offset");
  std::mt19937_64 rng(seed);
  TempDir dir;
  Db db(dir.file("l.db"));
  db.exec("CREATE VIRTUAL TABLE fr USING forein(k INTEGER, v, page_size=4096)");
  db.exec("CREATE TABLE nat(k INTEGER PRIMARY KEY, v)");
  for (const char* t : {"fr", "nat"}) {
    db.exec(std::string("INSERT INTO ") + t +
            " WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3000)"
            " SELECT x * 2, 'v' || (x % 13) FROM c");
  }
  Pair p(db, "fr", "nat");
  const char* const limits[] = {"0", "1", "7", "100", "130", "1000", "5000", "-1", "'3'", "2 + 3", "(SELECT 4)"};
  for (const char* lim : limits) {
    for (int i = 0; i < 4; ++i) {
      const std::string k = std::to_string(static_cast<std::int64_t>(rng() % 6100) - 50);
      const std::string off = std::to_string(rng() % 300);
      for (const char* dir_ : {"", " DESC"}) {
        const std::string order = std::string(" ORDER BY k") + dir_;
        p.run("SELECT k, v FROM %T WHERE k >= " + k + order + " LIMIT " + lim);
        p.run("SELECT k, v FROM %T WHERE k < " + k + order + " LIMIT " + lim + " OFFSET " + off);
        p.run("SELECT k FROM %T WHERE k > " + k + " AND v = 'v3'" + order + " LIMIT " + lim);
        p.run("SELECT k FROM %T" + order + " LIMIT " + lim + ", 5");
        p.run("SELECT count(*) FROM (SELECT k FROM %T WHERE k BETWEEN " + k + " AND " + k + " + 900" + order +
              " LIMIT " + lim + ")");
      }
    }
  }
  // Limits and offsets at the ends of the int64 range.
  p.run("SELECT k FROM %T WHERE k > 5900 ORDER BY k LIMIT 9223372036854775807 OFFSET 9223372036854775807");
  p.run("SELECT k FROM %T WHERE k > 5900 ORDER BY k LIMIT 9223372036854775807 OFFSET 3");
  p.run("SELECT k FROM %T WHERE k > 5900 ORDER BY k LIMIT 5 OFFSET -9223372036854775808");
  p.run("SELECT k FROM %T WHERE k > 5900 ORDER BY k LIMIT -9223372036854775808");
  // A LIMIT that is not an integer is SQLite's error on both tables.
  p.run("SELECT k FROM %T ORDER BY k LIMIT 2.5");
  p.run("SELECT k FROM %T ORDER BY k LIMIT 'x'");
  // A bound LIMIT, changed between executions of one statement.
  for (const char* t : {"fr", "nat"}) {
    sqlite3_stmt* st = nullptr;
    const std::string sql = std::string("SELECT k FROM ") + t + " WHERE k >= ?1 ORDER BY k LIMIT ?2";
    REQUIRE(sqlite3_prepare_v2(db.get(), sql.c_str(), -1, &st, nullptr) == SQLITE_OK);
    std::vector<std::int64_t> got;
    for (const int lim : {3, 200, 1, 0, 64, 129}) {
      sqlite3_bind_int64(st, 1, 1001);
      sqlite3_bind_int(st, 2, lim);
      int n = 0;
      while (sqlite3_step(st) == SQLITE_ROW) {
        got.push_back(sqlite3_column_int64(st, 0));
        ++n;
      }
      CHECK(n == lim);
      sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    CHECK(got.size() == 3 + 200 + 1 + 0 + 64 + 129);
    CHECK(got.front() == 1002);
  }
  std::cout << "limit/offset: " << p.ops << " statements compared\n";
}

// Savepoints against a plain table: seeded random transactions, nested
// savepoints, RELEASE, ROLLBACK TO, failing multi-row statements and bulk
// changes that split and merge leaves, applied to a forein table and a
// plain oracle table in the same transactions. The tables must agree after
// every step, and so must a second connection after every commit. Also:
// schema changes inside a transaction (SQLite then connects a new vtab
// object for the table) keep the unwritten changes.
#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <vector>

#include "sqlite/harness.h"
#include "support/seed.h"

using forein::sqlite_test::Db;
using forein::sqlite_test::TempDir;
using forein::sqlite_test::subst;

namespace {

const char* kDigest = "SELECT count(*), total(k), total(length(v)), total(k * length(v) % 1000003) FROM %T";

}  // namespace

TEST_CASE("sqlite savepoints: random nesting against a plain table", "[sqlite]") {
  const std::uint64_t seed = forein::testing::test_seed("sqlite savepoints");
  std::mt19937_64 rng(seed);
  auto below = [&](std::uint64_t n) { return rng() % n; };
  TempDir dir;
  for (const char* journal : {"WAL", "DELETE"}) {
    const std::string path = dir.file(std::string("sp-") + journal + ".db");
    Db db(path), reader(path);
    db.exec(std::string("PRAGMA journal_mode=") + journal);
    db.exec("PRAGMA synchronous=OFF");
    db.exec("PRAGMA cache_size=-65536");
    db.exec("CREATE VIRTUAL TABLE kv USING forein(k INTEGER, v)");
    db.exec("CREATE TABLE ref(k INTEGER PRIMARY KEY, v)");
    db.exec("CREATE TABLE src(x INTEGER PRIMARY KEY)");
    db.exec("INSERT INTO src WITH RECURSIVE c(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM c WHERE x < 2999) SELECT x FROM c");
    bool in_txn = false;
    int depth = 0;  // open savepoints s1..s<depth>
    std::uint64_t steps = 0, failures = 0, rollbacks_to = 0;
    for (int step = 0; step < 1200; ++step) {
      std::string sql;
      bool on_both = true;  // a %T statement run on kv and on ref
      switch (below(16)) {
        case 0:
          if (!in_txn && depth == 0) {
            sql = "BEGIN";
            on_both = false;
            in_txn = true;
          }
          break;
        case 1:
          if (in_txn && depth == 0) {
            sql = below(3) == 0 ? "ROLLBACK" : "COMMIT";
            on_both = false;
            in_txn = false;
          }
          break;
        case 2: case 3:
          sql = "SAVEPOINT s" + std::to_string(++depth);
          on_both = false;
          break;
        case 4:
          if (depth > 0) {
            const int to = 1 + static_cast<int>(below(static_cast<std::uint64_t>(depth)));
            sql = "RELEASE s" + std::to_string(to);
            depth = to - 1;
            on_both = false;
          }
          break;
        case 5: case 6:
          if (depth > 0) {
            const int to = 1 + static_cast<int>(below(static_cast<std::uint64_t>(depth)));
            sql = "ROLLBACK TO s" + std::to_string(to);
            depth = to;
            on_both = false;
            ++rollbacks_to;
          }
          break;
        case 7: case 8: case 9: {
          // Bulk insert-or-replace: splits leaves (values up to 400 bytes).
          const std::uint64_t n = 1 + below(1000), a = 1 + below(97), b = below(100000), m = 2000 + below(25000);
          sql = "INSERT OR REPLACE INTO %T SELECT (x * " + std::to_string(a) + " + " + std::to_string(b) + ") % " +
                std::to_string(m) + ", zeroblob((x * " + std::to_string(a) + ") % 400) FROM src WHERE x < " +
                std::to_string(n);
          break;
        }
        case 10: {
          // A plain INSERT that may fail on a duplicate halfway through.
          const std::uint64_t n = 1 + below(600), b = below(25000);
          sql = "INSERT INTO %T SELECT x * 3 + " + std::to_string(b) + ", 'ins' || x FROM src WHERE x < " + std::to_string(n);
          break;
        }
        case 11: {
          // Range delete: merges leaves.
          const std::uint64_t lo = below(25000);
          sql = "DELETE FROM %T WHERE k BETWEEN " + std::to_string(lo) + " AND " + std::to_string(lo + below(8000));
          break;
        }
        case 12:
          sql = "UPDATE %T SET v = zeroblob(" + std::to_string(below(300)) + ") WHERE k % " +
                std::to_string(2 + below(40)) + " = 1";
          break;
        case 13:
          // Moving keys: may fail midway on a taken key.
          sql = "UPDATE %T SET k = k + " + std::to_string(below(50)) + " WHERE k BETWEEN " +
                std::to_string(below(25000)) + " AND " + std::to_string(below(25000));
          break;
        case 14:
          sql = "INSERT OR IGNORE INTO %T VALUES (" + std::to_string(below(25000)) + ", 'one')";
          break;
        default:
          if (!in_txn && depth == 0) {
            // Between transactions: a second connection sees what was committed.
            INFO("seed " << seed << " step " << step);
            REQUIRE(reader.rows(subst(kDigest, "kv")) == reader.rows(subst(kDigest, "ref")));
          }
          break;
      }
      if (sql.empty()) continue;
      ++steps;
      INFO(journal << " seed " << seed << " step " << step << ": " << sql);
      if (on_both) {
        const std::string ea = db.try_exec(subst(sql, "kv")), eb = db.try_exec(subst(sql, "ref"));
        REQUIRE(ea.empty() == eb.empty());
        failures += !ea.empty();
      } else {
        db.exec(sql);  // outside BEGIN, SAVEPOINT s1 opens a transaction and RELEASE s1 commits it
      }
      REQUIRE(db.rows(subst(kDigest, "kv")) == db.rows(subst(kDigest, "ref")));
      if (step % 100 == 0) REQUIRE(db.rows("SELECT * FROM kv ORDER BY k", true) == db.rows("SELECT * FROM ref ORDER BY k", true));
    }
    if (depth > 0) db.exec("RELEASE s1");
    if (in_txn) db.exec("COMMIT");
    REQUIRE(db.rows("SELECT * FROM kv ORDER BY k", true) == db.rows("SELECT * FROM ref ORDER BY k", true));
    REQUIRE(reader.rows("SELECT * FROM kv ORDER BY k", true) == reader.rows("SELECT * FROM ref ORDER BY k", true));
    CHECK(db.rows("SELECT forein_check('kv')") == "ok");
    CHECK(reader.rows("SELECT forein_check('kv')") == "ok");
    std::cout << "sqlite savepoints " << journal << ": " << steps << " statements, " << failures
              << " failed on both, " << rollbacks_to << " ROLLBACK TO; " << db.rows("SELECT forein_stats('kv')")
              << "\n";
  }
}

TEST_CASE("sqlite savepoints: schema changes inside a transaction keep unwritten changes", "[sqlite]") {
  TempDir dir;
  Db db(dir.file("schema.db"));
  db.exec("CREATE VIRTUAL TABLE kv USING forein(k INTEGER, v)");
  db.exec("CREATE TABLE other(a)");
  db.exec("BEGIN");
  db.exec("INSERT INTO kv WITH RECURSIVE c(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM c WHERE x < 4999) SELECT x, 'v' || x FROM c");
  // Makes SQLite reload the schema and connect a new object for kv.
  db.exec("ALTER TABLE other ADD COLUMN b");
  db.exec("INSERT INTO kv VALUES (-1, 'after alter')");
  db.exec("SAVEPOINT a");
  db.exec("ALTER TABLE other ADD COLUMN c");
  db.exec("DELETE FROM kv WHERE k < 1000");
  db.exec("ROLLBACK TO a");
  db.exec("ALTER TABLE kv RENAME TO kv2");
  db.exec("INSERT INTO kv2 VALUES (-2, 'after rename')");
  CHECK(db.rows("SELECT count(*), min(k) FROM kv2") == "5002|-2");
  db.exec("COMMIT");
  CHECK(db.rows("SELECT count(*), min(k), max(k) FROM kv2") == "5002|-2|4999");
  Db other(dir.file("schema.db"));
  CHECK(other.rows("SELECT count(*), min(k), max(k) FROM kv2") == "5002|-2|4999");
  CHECK(other.rows("SELECT forein_check('kv2')") == "ok");

  // Dropping a table changed in this transaction is refused (by SQLite,
  // "database table is locked", or by forein: its changes would be lost if
  // a ROLLBACK TO brought it back); afterwards it works.
  db.exec("BEGIN");
  db.exec("INSERT INTO kv2 VALUES (-3, 'x')");
  for (const char* sp : {"", "SAVEPOINT d; "}) {
    const std::string drop_err = db.try_exec(std::string(sp) + "DROP TABLE kv2");
    INFO(drop_err);
    CHECK((drop_err.find("locked") != std::string::npos || drop_err.find("uncommitted changes") != std::string::npos));
  }
  db.exec("ROLLBACK TO d; RELEASE d; COMMIT");
  CHECK(db.rows("SELECT count(*) FROM kv2") == "5003");
  db.exec("BEGIN; SAVEPOINT d; DROP TABLE kv2; ROLLBACK TO d; COMMIT");
  CHECK(db.rows("SELECT count(*) FROM kv2") == "5003");
  db.exec("DROP TABLE kv2");
  CHECK(db.rows("SELECT count(*) FROM sqlite_schema WHERE name LIKE 'kv2%'") == "0");
}

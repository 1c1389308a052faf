// Write-back at commit and page-level refresh: a transaction writes each
// changed page once; statement and savepoint rollbacks undo in-memory
// changes that were never written; a COMMIT refused with SQLITE_BUSY can be
// retried; another connection's commit makes a connection re-read only the
// pages that changed.
#include <catch2/catch.hpp>

#include <cstdio>
#include <string>

#include "sqlite/harness.h"

using forein::sqlite_test::Db;
using forein::sqlite_test::SqlFailure;
using forein::sqlite_test::TempDir;

namespace {

using forein::sqlite_test::rows_sql;
using forein::sqlite_test::stat;

std::string all(Db& db, const char* t) {
  return db.rows(std::string("SELECT * FROM ") + t + " ORDER BY k", true);
}

// Rows [from, from + n) with ascending keys through one prepared INSERT,
// as an application loads: 'value-NNNNNN' bound with its length (a value
// without a terminator), every 97th row's value bound as UTF-16.
void load(Db& db, int from, int n) {
  sqlite3_stmt* ins = nullptr;
  REQUIRE(sqlite3_prepare_v2(db.get(), "INSERT INTO kv VALUES (?1, ?2)", -1, &ins, nullptr) == SQLITE_OK);
  for (int k = from; k < from + n; ++k) {
    char v[16];
    std::snprintf(v, sizeof v, "value-%06d", k % 1000000);
    sqlite3_bind_int(ins, 1, k);
    if (k % 97 == 0) {
      char16_t w[16];
      for (int i = 0; i < 12; ++i) w[i] = static_cast<char16_t>(v[i]);
      sqlite3_bind_text16(ins, 2, w, 24, SQLITE_TRANSIENT);
    } else {
      sqlite3_bind_text(ins, 2, v, 12, SQLITE_TRANSIENT);
    }
    REQUIRE(sqlite3_step(ins) == SQLITE_DONE);
    sqlite3_reset(ins);
  }
  sqlite3_finalize(ins);
}

// What load(db, from, n) wrote: count, sum of keys, and whether every
// value is the text it should be.
std::string load_summary(int from, int n) {
  const long long sum = (static_cast<long long>(from) * 2 + n - 1) * n / 2;
  return std::to_string(n) + "|" + std::to_string(sum) + "|" + std::to_string(n);
}
std::string summary(Db& db, int from, int to) {
  return db.rows("SELECT count(*), sum(k), sum(typeof(v) = 'text' AND v = printf('value-%06d', k % 1000000)) "
                 "FROM kv WHERE k >= " + std::to_string(from) + " AND k < " + std::to_string(to));
}

}  // namespace

TEST_CASE("sqlite writeback: a transaction writes each page once", "[sqlite]") {
  TempDir dir;
  Db db(dir.file("w.db"));
  db.exec("CREATE VIRTUAL TABLE kv USING forein(k INTEGER, v)");
  const std::uint64_t created = stat(db, "pages_written");

  // One statement of 100,000 rows.
  db.exec(rows_sql("kv", 0, 100000));
  const std::uint64_t pages = stat(db, "pages");
  CHECK(pages > 300);
  CHECK(stat(db, "pages_written") - created <= pages);

  // 50,000 single-row statements in one transaction.
  const std::uint64_t before = stat(db, "pages_written");
  db.exec("BEGIN");
  sqlite3_stmt* ins = nullptr;
  REQUIRE(sqlite3_prepare_v2(db.get(), "INSERT INTO kv VALUES (?1, 'single')", -1, &ins, nullptr) == SQLITE_OK);
  for (int i = 0; i < 50000; ++i) {
    sqlite3_bind_int(ins, 1, 200000 + i);
    REQUIRE(sqlite3_step(ins) == SQLITE_DONE);
    sqlite3_reset(ins);
  }
  sqlite3_finalize(ins);
  CHECK(stat(db, "pages_written") == before);  // nothing written before COMMIT
  db.exec("COMMIT");
  CHECK(stat(db, "pages_written") - before <= stat(db, "pages"));

  Db other(dir.file("w.db"));
  CHECK(other.rows("SELECT count(*), sum(k) FROM kv") == "150000|" + std::to_string(4999950000LL + 50000LL * 200000 + 1249975000LL));
  CHECK(other.rows("SELECT forein_check('kv')") == "ok");
}

TEST_CASE("sqlite writeback: statement rollback keeps earlier unwritten changes", "[sqlite]") {
  TempDir dir;
  Db db(dir.file("s.db"));
  db.exec("CREATE VIRTUAL TABLE kv USING forein(k INTEGER, v)");
  db.exec("CREATE TABLE ref(k INTEGER PRIMARY KEY, v)");
  for (const char* t : {"kv", "ref"}) db.exec(rows_sql(t, 0, 2000));
  db.exec("BEGIN");
  for (const char* t : {"kv", "ref"}) {
    const std::string T = t;
    db.exec("INSERT INTO " + T + " VALUES (100000, 'single')");                 // no statement journal
    db.exec("UPDATE " + T + " SET v = 'upd' WHERE k % 7 = 0");                  // statement journal
    // Fails at its 1,001st row (key 0 exists): SQLite undoes the
    // statement, after its first thousand rows split leaves.
    CHECK_FALSE(db.try_exec(rows_sql(t, -1000, 3000)).empty());
    db.exec("DELETE FROM " + T + " WHERE k BETWEEN 10 AND 500");
    // Fails at its last row (5 exists), after nine moved keys.
    CHECK_FALSE(db.try_exec("UPDATE " + T + " SET k = CASE WHEN k = 1999 THEN 5 ELSE k + 10000 END "
                            "WHERE k >= 1990 AND k < 2000").empty());
  }
  CHECK(all(db, "kv") == all(db, "ref"));
  db.exec("COMMIT");
  CHECK(all(db, "kv") == all(db, "ref"));
  Db other(dir.file("s.db"));
  CHECK(all(other, "kv") == all(other, "ref"));
  CHECK(other.rows("SELECT forein_check('kv')") == "ok");
}

TEST_CASE("sqlite writeback: COMMIT refused with SQLITE_BUSY can be retried", "[sqlite]") {
  TempDir dir;
  const std::string path = dir.file("busy.db");
  Db a(path), b(path);
  a.exec("PRAGMA journal_mode=DELETE");
  a.exec("CREATE VIRTUAL TABLE kv USING forein(k INTEGER, v)");
  a.exec("CREATE TABLE ref(k INTEGER PRIMARY KEY, v)");
  a.exec("PRAGMA busy_timeout=0");
  for (int attempt = 0; attempt < 2; ++attempt) {
    a.exec("BEGIN");
    a.exec("SAVEPOINT s");
    for (const char* t : {"kv", "ref"}) a.exec(rows_sql(t, attempt * 10000, 3000));
    // b holds a SHARED lock: a's COMMIT (after xSync wrote the pages) fails.
    b.exec("BEGIN");
    CHECK(b.rows("SELECT count(*) FROM ref") == std::to_string(attempt * 2000));
    std::string err = a.try_exec("COMMIT");
    CHECK(err.find("locked") != std::string::npos);
    CHECK(sqlite3_get_autocommit(a.get()) == 0);  // still in the transaction
    if (attempt == 1) {
      // More changes, then undo some of them, before retrying.
      a.exec("SAVEPOINT t");
      for (const char* t : {"kv", "ref"}) a.exec(std::string("DELETE FROM ") + t + " WHERE k % 2 = 0");
      a.exec("ROLLBACK TO t");
      for (const char* t : {"kv", "ref"}) a.exec(std::string("DELETE FROM ") + t + " WHERE k % 3 = 0");
      a.exec("RELEASE t");
    }
    b.exec("COMMIT");
    a.exec("COMMIT");
    CHECK(all(a, "kv") == all(a, "ref"));
    CHECK(all(b, "kv") == all(b, "ref"));
    Db c(path);
    CHECK(all(c, "kv") == all(c, "ref"));
    CHECK(c.rows("SELECT forein_check('kv')") == "ok");
    // Keep the counts checked above in step: 2000 rows per attempt.
    a.exec("DELETE FROM kv WHERE k >= " + std::to_string(attempt * 10000 + 2000) + "; DELETE FROM ref WHERE k >= " +
           std::to_string(attempt * 10000 + 2000));
  }
}

TEST_CASE("sqlite writeback: another connection's commit re-reads only changed pages", "[sqlite]") {
  TempDir dir;
  for (const char* mode : {"WAL", "DELETE"}) {
    const std::string path = dir.file(std::string("r-") + mode + ".db");
    Db a(path), b(path);
    a.exec(std::string("PRAGMA journal_mode=") + mode);
    a.exec("CREATE VIRTUAL TABLE kv USING forein(k INTEGER, v)");
    a.exec(rows_sql("kv", 0, 50000));
    CHECK(b.rows("SELECT v FROM kv WHERE k = 777") == "value-777");
    const std::uint64_t pages = stat(b, "pages");
    // The meta page and a root-to-leaf path: the hint path reads no page
    // of its own.
    CHECK(stat(b, "pages_read") <= stat(b, "height") + 1);
    // b's cache warmed: a scan reads every leaf, lookups the inner nodes
    // on their paths.
    CHECK(b.rows("SELECT count(*) FROM kv") == "50000");
    auto lookups = [&b] {
      for (int i = 0; i < 100; ++i) b.rows("SELECT v FROM kv WHERE k = " + std::to_string(i * 13));
    };
    lookups();
    const std::uint64_t loads = stat(b, "loads"), read = stat(b, "pages_read");
    CHECK(loads == 1);
    CHECK(read >= pages * 9 / 10);

    // Reads without foreign commits read no page.
    lookups();
    CHECK(stat(b, "pages_read") == read);

    // One row changed: a leaf and the meta page.
    a.exec("UPDATE kv SET v = 'changed' WHERE k = 777");
    CHECK(b.rows("SELECT v FROM kv WHERE k = 777") == "changed");
    CHECK(stat(b, "loads") == 1);
    CHECK(stat(b, "refreshes") >= 1);
    CHECK(stat(b, "pages_read") - read <= 3);

    // Splits and merges on the other side.
    a.exec(rows_sql("kv", 100000, 5000));
    a.exec("DELETE FROM kv WHERE k BETWEEN 1000 AND 5000");
    CHECK(b.rows("SELECT count(*), min(k), max(k) FROM kv WHERE k >= 900") == "50099|900|104999");
    CHECK(stat(b, "loads") == 1);
    CHECK(stat(b, "pages_read") - read < pages / 2);
    // b changes it back; a sees b's commit the same way.
    b.exec("UPDATE kv SET v = 'back' WHERE k = 777");
    CHECK(a.rows("SELECT v FROM kv WHERE k = 777") == "back");
    CHECK(a.rows("SELECT forein_check('kv')") == "ok");
    CHECK(b.rows("SELECT forein_check('kv')") == "ok");
  }
}

TEST_CASE("sqlite writeback: rename inside a transaction keeps unwritten changes", "[sqlite]") {
  TempDir dir;
  Db db(dir.file("rn.db"));
  db.exec("CREATE VIRTUAL TABLE kv USING forein(k INTEGER, v)");
  db.exec("BEGIN");
  db.exec(rows_sql("kv", 0, 3000));
  db.exec("ALTER TABLE kv RENAME TO kv2");
  db.exec("INSERT INTO kv2 VALUES (-1, 'after')");
  db.exec("COMMIT");
  Db other(dir.file("rn.db"));
  CHECK(other.rows("SELECT count(*), min(k) FROM kv2") == "3001|-1");
  CHECK(other.rows("SELECT forein_check('kv2')") == "ok");
}

TEST_CASE("sqlite writeback: closing inside a transaction rolls back and closes", "[sqlite]") {
  TempDir dir;
  const std::string path = dir.file("close.db");
  {
    Db db(path);
    db.exec("CREATE VIRTUAL TABLE kv USING forein(k INTEGER, v)");
    db.exec(rows_sql("kv", 0, 100));
  }
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  REQUIRE(forein_sqlite_register(db) == SQLITE_OK);
  REQUIRE(sqlite3_exec(db, "BEGIN; DELETE FROM kv WHERE k < 50; INSERT INTO kv VALUES (1000, 'new')", nullptr,
                       nullptr, nullptr) == SQLITE_OK);
  // sqlite3_close (not _v2) fails with SQLITE_BUSY if a statement of ours
  // were left unfinalized.
  CHECK(sqlite3_close(db) == SQLITE_OK);
  Db again(path);
  CHECK(again.rows("SELECT count(*), min(k), max(k) FROM kv") == "100|0|99");
}

TEST_CASE("sqlite writeback: an ascending load fills its pages; rolled back, it leaves nothing",
          "[sqlite]") {
  const int hints = GENERATE(0, 2);  // from the offload path; none
  INFO("forein_debug_hints mode " << hints);
  TempDir dir;
  Db db(dir.file("l.db"));
  db.exec("PRAGMA journal_mode=WAL");
  db.exec("CREATE VIRTUAL TABLE kv USING forein(k INTEGER, v)");
  db.rows("SELECT forein_debug_hints('kv', " + std::to_string(hints) + ")");
  load(db, 0, 2000);
  const std::string base = summary(db, 0, 1 << 30);
  CHECK(base == load_summary(0, 2000));
  const std::uint64_t base_pages = stat(db, "pages");
  const std::string stored = db.rows("SELECT count(*), sum(gen) FROM kv_pages");

  // A large load rolled back: first to a savepoint inside it, then whole.
  db.exec("BEGIN");
  load(db, 10000, 150000);
  db.exec("SAVEPOINT s");
  load(db, 160000, 50000);
  CHECK(summary(db, 10000, 1 << 30) == load_summary(10000, 200000));
  db.exec("ROLLBACK TO s");
  CHECK(summary(db, 10000, 1 << 30) == load_summary(10000, 150000));
  load(db, 160000, 20000);  // appends again after the restore
  CHECK(summary(db, 10000, 1 << 30) == load_summary(10000, 170000));
  CHECK(db.rows("SELECT forein_check('kv')") == "ok");
  db.exec("ROLLBACK");
  CHECK(summary(db, 0, 1 << 30) == base);
  CHECK(db.rows("SELECT count(*), sum(gen) FROM kv_pages") == stored);  // nothing written
  CHECK(db.rows("SELECT forein_check('kv')") == "ok");

  // The same load committed: ascending splits leave full pages. A row is
  // a 24-byte slot (key and length) plus 17 bytes of encoded value, about
  // 198 to an 8 KiB page; half-full pages would need twice the 1,010.
  // (The pages the rolled-back load had taken are free; allocation hands
  // out the lowest free ids first.)
  db.exec("BEGIN");
  load(db, 10000, 200000);
  db.exec("COMMIT");
  const std::uint64_t pages = stat(db, "pages");
  CHECK(pages - base_pages <= 1010 + 20);
  CHECK(db.rows("SELECT forein_check('kv')") == "ok");
  CHECK(summary(db, 0, 1 << 30) == "202000|" + std::to_string(1999000LL + 200000LL * 10000 + 19999900000LL) +
                                       "|202000");
  Db other(dir.file("l.db"));
  CHECK(summary(other, 10000, 1 << 30) == load_summary(10000, 200000));
  CHECK(other.rows("SELECT forein_check('kv')") == "ok");
  // Inserting below the loaded keys afterwards still works.
  other.exec("INSERT INTO kv SELECT k + 3000, 'between' FROM kv WHERE k < 2000");
  CHECK(other.rows("SELECT count(*) FROM kv WHERE v = 'between'") == "2000");
  CHECK(other.rows("SELECT forein_check('kv')") == "ok");
}

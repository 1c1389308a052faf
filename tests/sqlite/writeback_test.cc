// Write-back at commit and page-level refresh: a transaction writes each
// changed page once; statement and savepoint rollbacks undo in-memory
// changes that were never written; a COMMIT refused with SQLITE_BUSY can be
// retried; another connection's commit makes a connection re-read only the
// pages that changed.
#include <catch2/catch.hpp>

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

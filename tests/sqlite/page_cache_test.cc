// Pages on demand: opening a table reads its meta and root pages, not the
// tree; the page cache stays within forein_cache_pages during a scan of a
// larger table; another connection's commit drops only the pages it changed;
// the hint path (on by default) reads no page of its own: it plans from
// the pages descents read.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "sqlite/harness.h"
#include "support/seed.h"

using forein::sqlite_test::Db;
using forein::sqlite_test::rows_sql;
using forein::sqlite_test::stat;
using forein::sqlite_test::TempDir;

namespace {

constexpr int kRows = 200000;

// A database file holding kv with kRows rows, written by a connection
// that is closed again.
struct FilledFile {
  TempDir dir;
  std::string path;
  explicit FilledFile(const char* name) : path(dir.file(name)) {
    Db a(path);
    a.exec("CREATE VIRTUAL TABLE kv USING forein(k INTEGER, v)");
    a.exec(rows_sql("kv", 0, kRows));
  }
};

void hints_off(Db& db) { db.rows("SELECT forein_debug_hints('kv', 2)"); }

}  // namespace

TEST_CASE("sqlite page cache: opening a table reads a root-to-leaf path", "[sqlite]") {
  const FilledFile file("open.db");
  Db b(file.path);
  hints_off(b);
  CHECK(b.rows("SELECT v FROM kv WHERE k = 123456") == "value-123456");
  const std::uint64_t height = stat(b, "height");
  CHECK(stat(b, "pages") > 500);
  CHECK(stat(b, "loads") == 1);
  // The meta page, then one page per level.
  CHECK(stat(b, "pages_read") <= height + 1);
  CHECK(stat(b, "cached_pages") <= height + 1);
}

TEST_CASE("sqlite page cache: a full scan stays within the cache size", "[sqlite]") {
  const FilledFile file("scan.db");
  Db b(file.path);
  hints_off(b);
  CHECK(b.rows("SELECT forein_cache_pages('kv', 64)") == "64");
  CHECK(b.rows("SELECT forein_cache_pages('kv')") == "64");
  CHECK(!b.try_exec("SELECT forein_cache_pages('kv', 3)").empty());
  // Samples the cache while the scan runs (forein_stats between rows).
  const std::string samples = b.rows(
      "SELECT max(json_extract(s, '$.cached_pages')), count(*) FROM "
      "(SELECT forein_stats('kv') AS s FROM kv WHERE k % 5000 = 0)");
  const std::uint64_t height = stat(b, "height");
  const auto bar = samples.find('|');
  CHECK(std::stoull(samples.substr(bar + 1)) == kRows / 5000);
  CHECK(std::stoull(samples.substr(0, bar)) <= 64 + height);
  CHECK(b.rows("SELECT count(*), sum(length(v)) FROM kv") == std::to_string(kRows) + "|2288890");
  const std::uint64_t pages = stat(b, "pages");
  CHECK(stat(b, "pages_read") >= pages - 1);  // every page was read, some twice
  CHECK(stat(b, "cached_pages") <= 64 + height);
  CHECK(b.rows("SELECT forein_check('kv')") == "ok");
}

TEST_CASE("sqlite page cache: another connection's commit drops only its pages", "[sqlite]") {
  const FilledFile file("refresh.db");
  Db a(file.path), b(file.path);
  hints_off(b);
  CHECK(b.rows("SELECT count(*) FROM kv") == std::to_string(kRows));
  const std::uint64_t read = stat(b, "pages_read"), cached = stat(b, "cached_pages");
  CHECK(cached >= stat(b, "pages") * 9 / 10);  // the default cache holds the leaves

  a.exec("UPDATE kv SET v = 'changed' WHERE k = 777");
  CHECK(b.rows("SELECT v FROM kv WHERE k = 777") == "changed");
  // The changed leaf and meta page, read again; the rest stayed cached.
  CHECK(stat(b, "pages_read") - read <= 2);
  CHECK(stat(b, "refreshes") == 1);
  CHECK(stat(b, "loads") == 1);
  CHECK(b.rows("SELECT count(*) FROM kv WHERE v = 'changed'") == "1");
  CHECK(stat(b, "pages_read") - read <= 2);

  // Splits on the other side, then b writes on top of them.
  a.exec(rows_sql("kv", kRows, 20000));
  b.exec("DELETE FROM kv WHERE k < 1000");
  CHECK(a.rows("SELECT count(*), min(k), max(k) FROM kv") ==
        std::to_string(kRows + 19000) + "|1000|" + std::to_string(kRows + 19999));
  CHECK(a.rows("SELECT forein_check('kv')") == "ok");
  CHECK(b.rows("SELECT forein_check('kv')") == "ok");
}

// Another connection's changed pages are found through an index on
// kv_pages(gen), not by reading every row: made with the table (as
// kv_pages_gen, or with a number after it if that name is taken), kept
// through RENAME, made at the first write-back of a table from before it,
// dropped with the table.
TEST_CASE("sqlite page cache: changed pages are found through the gen index", "[sqlite]") {
  const FilledFile file("gen_index.db");
  Db a(file.path), b(file.path);
  const auto index_of = [](Db& db, const std::string& table) {
    return db.rows("SELECT count(*), group_concat(name) FROM sqlite_schema WHERE type = 'index' AND tbl_name = '" +
                   table + "_pages'");
  };
  const auto plan = [](Db& db, const std::string& table) {
    return db.rows("EXPLAIN QUERY PLAN SELECT id FROM " + table + "_pages WHERE gen > 3");
  };
  CHECK(index_of(a, "kv") == "1|kv_pages_gen");
  CHECK(plan(a, "kv").find("COVERING INDEX kv_pages_gen") != std::string::npos);
  CHECK(b.rows("SELECT count(*) FROM kv") == std::to_string(kRows));
  a.exec("UPDATE kv SET v = 'x' WHERE k = 5");
  CHECK(b.rows("SELECT v FROM kv WHERE k = 5") == "x");

  // A table from before the index: reads go on without it, the next
  // write-back makes it; b's refresh after that commit is still exact.
  a.exec("DROP INDEX kv_pages_gen");
  Db c(file.path);
  CHECK(c.rows("SELECT v FROM kv WHERE k = 5") == "x");
  CHECK(index_of(c, "kv") == "0|NULL");
  c.exec("UPDATE kv SET v = 'y' WHERE k = 6");
  CHECK(index_of(c, "kv") == "1|kv_pages_gen");
  CHECK(b.rows("SELECT v FROM kv WHERE k IN (5, 6) ORDER BY k") == "x\ny");
  CHECK(b.rows("SELECT forein_check('kv')") == "ok");

  // RENAME keeps it (under its old name); a new table of the old name
  // gets the next free name.
  c.exec("ALTER TABLE kv RENAME TO kv2");
  CHECK(index_of(c, "kv2") == "1|kv_pages_gen");
  CHECK(plan(c, "kv2").find("COVERING INDEX kv_pages_gen") != std::string::npos);
  c.exec("CREATE VIRTUAL TABLE kv USING forein(k INTEGER, v)");
  CHECK(index_of(c, "kv") == "1|kv_pages_gen2");
  c.exec("INSERT INTO kv2 VALUES (-1, 'new')");
  CHECK(a.rows("SELECT v FROM kv2 WHERE k = -1") == "new");
  CHECK(index_of(a, "kv2") == "1|kv_pages_gen");  // the connection that had it

  // Someone else's object under the name: left alone.
  c.exec("DROP TABLE kv");
  c.exec("DROP INDEX kv_pages_gen");
  c.exec("CREATE TABLE kv2_pages_gen(mine)");
  Db d(file.path);
  d.exec("UPDATE kv2 SET v = 'z' WHERE k = 7");
  CHECK(index_of(d, "kv2") == "1|kv2_pages_gen2");
  CHECK(a.rows("SELECT v FROM kv2 WHERE k = 7") == "z");
  d.exec("DROP TABLE kv2");
  CHECK(d.rows("SELECT group_concat(name) FROM sqlite_schema") == "kv2_pages_gen");
}

// The hint path learns only what the cache holds (hints.cc): a fresh
// connection's first hinted queries, the ones after another connection's
// commit and after a rollback read their root-to-leaf paths, not the tree,
// and the cache stays within its bound, while the hints are used and the
// answers are the native mirror's.
TEST_CASE("sqlite page cache: hinted queries read only their paths", "[sqlite]") {
  const std::uint64_t seed = forein::testing::test_seed("sqlite hinted queries read only their paths");
  std::mt19937_64 rng(seed);
  INFO("seed " << seed);
  TempDir dir;
  const std::string path = dir.file("hinted.db");
  constexpr int kSpacing = 3;  // keys 0, 3, 6, ...: lookups of absent keys too
  {
    Db a(path);
    a.exec("CREATE VIRTUAL TABLE kv USING forein(k INTEGER, v)");
    a.exec("CREATE TABLE nat(k INTEGER PRIMARY KEY, v)");
    for (const char* t : {"kv", "nat"}) {
      a.exec(std::string("INSERT INTO ") + t + " WITH RECURSIVE c(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM c " +
             "WHERE x < " + std::to_string(kRows - 1) + ") SELECT x * " + std::to_string(kSpacing) +
             ", 'value-' || x FROM c");
    }
  }
  Db a(path), b(path);
  constexpr std::uint64_t kCache = 64;
  CHECK(b.rows("SELECT forein_cache_pages('kv', " + std::to_string(kCache) + ")") == std::to_string(kCache));
  // forein_stats opened the table (meta and root pages) and ran the hint
  // path's first refresh, which reads nothing.
  const std::uint64_t height = stat(b, "height");
  const std::uint64_t pages = stat(b, "pages");
  CHECK(pages > 1000);
  CHECK(height >= 3);
  CHECK(stat(b, "pages_read") <= 2);

  const std::int64_t key_space = std::int64_t{kRows} * kSpacing;
  auto key = [&] { return std::to_string(static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(key_space + 10)) - 5); };
  // One point query: the native answer, at most a root-to-leaf path (plus
  // the meta page) read, the cache within its bound.
  auto point = [&](const std::string& k) {
    const std::uint64_t before = stat(b, "pages_read");
    const std::string q = " WHERE k = " + k;
    CHECK(b.rows("SELECT k, v FROM kv" + q) == b.rows("SELECT k, v FROM nat" + q));
    CHECK(stat(b, "pages_read") - before <= height + 1);
    CHECK(stat(b, "cached_pages") <= kCache + height);
  };
  for (int i = 0; i < 10; ++i) point(key());
  CHECK(stat(b, "hinted") >= 10);
  CHECK(stat(b, "hint_hits") > 0);

  // A range: its path and the leaves it spans (keys per leaf: at least a
  // third of the average, as ascending inserts leave them), the cache
  // sampled while the scan runs.
  {
    const std::string lo = std::to_string(key_space / 3), hi = std::to_string(key_space / 3 + 3000);
    const std::string range = " WHERE k >= " + lo + " AND k < " + hi + " ORDER BY k";
    const std::uint64_t before = stat(b, "pages_read"), hinted = stat(b, "hinted");
    CHECK(b.rows("SELECT k, v FROM kv" + range) == b.rows("SELECT k, v FROM nat" + range));
    const std::uint64_t leaves = 1000 * 3 * pages / kRows + 1;
    CHECK(stat(b, "pages_read") - before <= height + 1 + leaves);
    CHECK(stat(b, "hinted") == hinted + 1);
    const std::string samples =
        b.rows("SELECT max(json_extract(s, '$.cached_pages')), count(*) FROM (SELECT forein_stats('kv') AS s FROM kv" +
               range + ")");
    const auto bar = samples.find('|');
    CHECK(samples.substr(bar + 1) == "1000");
    CHECK(std::stoull(samples.substr(0, bar)) <= kCache + height);
  }

  // Many hinted lookups (the hint path refreshes as the cache fills and
  // churns): never more than a path each, hints mostly accepted.
  {
    const std::uint64_t before = stat(b, "pages_read"), hinted = stat(b, "hinted"), hits = stat(b, "hint_hits");
    const std::uint64_t refreshes = stat(b, "hint_refreshes");
    constexpr int kLookups = 6000;
    std::string ks;
    for (int i = 0; i < kLookups; ++i) ks += (i ? "," : "") + key();
    // One statement, one IN list: a hinted lookup per key.
    const std::string in = " WHERE k IN (" + ks + ")";
    CHECK(b.rows("SELECT count(*), sum(k), sum(length(v)) FROM kv" + in) ==
          b.rows("SELECT count(*), sum(k), sum(length(v)) FROM nat" + in));
    CHECK(stat(b, "pages_read") - before <= kLookups * (height + 1));
    CHECK(stat(b, "hinted") - hinted >= kLookups * 9 / 10);
    CHECK((stat(b, "hint_hits") - hits) * 10 >= (stat(b, "hinted") - hinted) * 9);
    CHECK(stat(b, "hint_refreshes") > refreshes);
    CHECK(stat(b, "cached_pages") <= kCache + height);
  }

  // Another connection's commit (leaf splits), then a rollback here: the
  // next queries read their paths again, the hint path does not start over.
  a.exec("INSERT INTO kv WITH RECURSIVE c(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM c WHERE x < 999) "
         "SELECT x * 3000 + 1, 'new' FROM c");
  a.exec("INSERT INTO nat SELECT k, v FROM kv WHERE v = 'new'");
  for (int i = 0; i < 5; ++i) point(key());
  b.exec("BEGIN");
  b.exec("INSERT INTO kv WITH RECURSIVE c(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM c WHERE x < 999) "
         "SELECT x * 3000 + 2, 'gone' FROM c");
  b.exec("ROLLBACK");
  for (int i = 0; i < 5; ++i) point(key());
  point("3001");
  point(std::to_string(key_space / 2 * 1));

  // Invariants of the counters.
  INFO(b.rows("SELECT forein_stats('kv')"));
  CHECK(stat(b, "hint_hits") + stat(b, "fallbacks") <= stat(b, "hinted"));
  CHECK(stat(b, "hinted") <= stat(b, "lookups"));
  CHECK(stat(b, "loads") == 1);
  CHECK(b.rows("SELECT count(*), sum(k) FROM kv") == b.rows("SELECT count(*), sum(k) FROM nat"));
}

// Scans hand out rows straight from leaf frames (cursor.cc): with a
// 16-page cache every step may evict frames, and writes on the same
// connection change the leaf under an open scan. Each scan checks: keys in
// strict order, every row returned is the row's value at that moment (the
// native mirror `nat` gets the same writes), and every key no write
// touched during the scan is returned.
TEST_CASE("sqlite page cache: scans interleaved with writes through a 16-page cache", "[sqlite]") {
  const std::uint64_t seed = forein::testing::test_seed("sqlite scans interleaved with writes");
  std::mt19937_64 rng(seed);
  constexpr int kN = 30000;
  TempDir dir;
  Db db(dir.file("interleaved.db"));
  db.exec("CREATE VIRTUAL TABLE kv USING forein(k INTEGER, v)");
  db.exec("CREATE TABLE nat(k INTEGER PRIMARY KEY, v)");
  db.exec(rows_sql("kv", 0, kN));
  db.exec(rows_sql("nat", 0, kN));
  hints_off(db);
  CHECK(db.rows("SELECT forein_cache_pages('kv', 16)") == "16");
  CHECK(stat(db, "pages") > 100);

  auto write_both = [&](const std::string& sql_kv) {
    db.exec(sql_kv);
    std::string n = sql_kv;
    for (std::size_t at; (at = n.find(" kv ")) != std::string::npos;) n.replace(at, 4, " nat ");
    db.exec(n);
  };
  for (const bool in_txn : {true, false}) {
    for (const char* order : {"ASC", "DESC"}) {
      INFO((in_txn ? "in a transaction, " : "autocommit, ") << order);
      if (in_txn) db.exec("BEGIN");
      const std::int64_t lo = static_cast<std::int64_t>(rng() % 1000), hi = lo + 20000;
      const std::string sql = "SELECT k, v FROM kv WHERE k BETWEEN " + std::to_string(lo) + " AND " +
                              std::to_string(hi) + " ORDER BY k " + order;
      // The keys present when the scan starts (the mirror's).
      std::set<std::int64_t> before;
      {
        const std::string keys = db.rows("SELECT group_concat(k) FROM nat WHERE k BETWEEN " + std::to_string(lo) +
                                         " AND " + std::to_string(hi));
        for (std::size_t at = 0; at < keys.size();) {
          const std::size_t comma = std::min(keys.find(',', at), keys.size());
          before.insert(std::stoll(keys.substr(at, comma - at)));
          at = comma + 1;
        }
      }
      sqlite3_stmt* st = nullptr;
      REQUIRE(sqlite3_prepare_v2(db.get(), sql.c_str(), -1, &st, nullptr) == SQLITE_OK);
      std::set<std::int64_t> touched;
      std::vector<std::int64_t> got;
      std::size_t stale = 0;
      int rc;
      while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const std::int64_t k = sqlite3_column_int64(st, 0);
        const std::string v(reinterpret_cast<const char*>(sqlite3_column_text(st, 1)));
        got.push_back(k);
        if (db.rows("SELECT v FROM nat WHERE k = " + std::to_string(k)) != v) ++stale;
        // Writes near the scan position and elsewhere, on this connection.
        const std::int64_t near = k + static_cast<std::int64_t>(rng() % 41) - 20;
        const std::int64_t far = static_cast<std::int64_t>(rng() % (2 * kN));
        switch (rng() % 4) {
          case 0:
            write_both("UPDATE kv SET v = 'u" + std::to_string(k) + "' WHERE k = " + std::to_string(near));
            break;
          case 1:
            write_both("DELETE FROM kv WHERE k BETWEEN " + std::to_string(near) + " AND " + std::to_string(near + 3));
            for (std::int64_t d = near; d <= near + 3; ++d) touched.insert(d);
            break;
          case 2:
            write_both("INSERT OR REPLACE INTO kv VALUES (" + std::to_string(far) + ", 'i" + std::to_string(k) +
                       std::string(rng() % 200, 'x') + "')");
            break;
          default:
            break;
        }
        touched.insert(near);
        touched.insert(far);
      }
      CHECK(rc == SQLITE_DONE);
      sqlite3_finalize(st);
      if (in_txn) db.exec("COMMIT");
      CHECK(stale == 0);
      for (std::size_t i = 1; i < got.size(); ++i) {
        if (order[0] == 'A') {
          REQUIRE(got[i - 1] < got[i]);
        } else {
          REQUIRE(got[i - 1] > got[i]);
        }
      }
      const std::set<std::int64_t> got_set(got.begin(), got.end());
      std::size_t missing = 0;
      for (const std::int64_t k : before) {
        if (touched.count(k) == 0 && got_set.count(k) == 0) ++missing;
      }
      CHECK(before.size() > 2000);  // the deletes of earlier scans thin the range
      CHECK(missing == 0);
    }
  }
  // Outer rows read after inner scans trimmed the cache; a delete through a
  // subquery over the same table.
  const char* join =
      "SELECT a.k, b.k, a.v, b.v FROM %s a, %s b WHERE a.k BETWEEN 100 AND 130 AND b.k BETWEEN a.k * 100 AND "
      "a.k * 100 + 150 ORDER BY a.k, b.k";
  char kv_sql[512], nat_sql[512];
  std::snprintf(kv_sql, sizeof kv_sql, join, "kv", "kv");
  std::snprintf(nat_sql, sizeof nat_sql, join, "nat", "nat");
  CHECK(db.rows(kv_sql) == db.rows(nat_sql));
  // The subquery's scan (about 40 leaves) evicts the outer row's leaf
  // before SQLite reads the outer columns.
  const char* correlated =
      "SELECT (SELECT count(*) FROM %s b WHERE b.k BETWEEN a.k AND a.k + 8000), a.k, a.v FROM %s a "
      "WHERE a.k BETWEEN 100 AND 140 ORDER BY a.k";
  std::snprintf(kv_sql, sizeof kv_sql, correlated, "kv", "kv");
  std::snprintf(nat_sql, sizeof nat_sql, correlated, "nat", "nat");
  CHECK(db.rows(kv_sql) == db.rows(nat_sql));
  write_both("DELETE FROM kv WHERE k IN (SELECT k FROM kv WHERE k % 3 = 0 AND k < 25000)");
  CHECK(db.rows("SELECT count(*), sum(k), sum(length(v)) FROM kv") ==
        db.rows("SELECT count(*), sum(k), sum(length(v)) FROM nat"));
  CHECK(db.rows("SELECT group_concat(k || v) FROM kv") == db.rows("SELECT group_concat(k || v) FROM nat"));
  CHECK(db.rows("SELECT forein_check('kv')") == "ok");
}

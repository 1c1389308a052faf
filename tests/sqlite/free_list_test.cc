// The free list in <name>_free (format 3): the first write after opening a
// table reads no page to find the free ones; commits, rollbacks and
// savepoints keep <name>_free in step with <name>_pages (forein_check
// verifies that every page is reachable or free, never both or neither);
// tables of the previous layout (format 2: free pages as zero-magic
// images, no <name>_free) keep working and are converted by the first
// commit that needed their free list; RENAME, DROP and the shadow-table
// protection cover <name>_free. Hints are off where a test counts pages
// (the hint path lists every node when it attaches).
#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "forein/page_store.h"
#include "sqlite/harness.h"

using forein::sqlite_test::Db;
using forein::sqlite_test::rows_sql;
using forein::sqlite_test::stat;
using forein::sqlite_test::TempDir;

namespace {

constexpr int kRows = 200000;

void hints_off(Db& db, const char* table = "kv") {
  db.rows(std::string("SELECT forein_debug_hints('") + table + "', 2)");
}

std::uint64_t count(Db& db, const std::string& sql) { return std::stoull(db.rows(sql)); }

bool table_exists(Db& db, const std::string& name) {
  return db.rows("SELECT count(*) FROM sqlite_schema WHERE name = '" + name + "'") == "1";
}

std::string all(Db& db, const char* t) {
  return db.rows(std::string("SELECT k, v FROM ") + t + " ORDER BY k", true);
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::string lower_mode(std::string m) {
  for (char& c : m) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return m;
}

// A connection without the module: writes the shadow tables directly, as
// an earlier build or a damaged file would have left them.
class Raw {
 public:
  explicit Raw(const std::string& path) {
    if (sqlite3_open(path.c_str(), &db_) != SQLITE_OK) throw std::runtime_error("open " + path);
  }
  ~Raw() { sqlite3_close_v2(db_); }
  Raw(const Raw&) = delete;
  Raw& operator=(const Raw&) = delete;
  void exec(const std::string& sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
      std::string m = err ? err : "error";
      sqlite3_free(err);
      throw std::runtime_error(m + " [" + sql + "]");
    }
  }
  std::vector<std::int64_t> ids(const std::string& sql) {
    std::vector<std::int64_t> out;
    sqlite3_stmt* s = nullptr;
    REQUIRE(sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr) == SQLITE_OK);
    while (sqlite3_step(s) == SQLITE_ROW) out.push_back(sqlite3_column_int64(s, 0));
    sqlite3_finalize(s);
    return out;
  }
  std::vector<std::byte> blob(std::int64_t id) {
    sqlite3_stmt* s = nullptr;
    REQUIRE(sqlite3_prepare_v2(db_, "SELECT page FROM kv_pages WHERE id = ?1", -1, &s, nullptr) == SQLITE_OK);
    sqlite3_bind_int64(s, 1, id);
    REQUIRE(sqlite3_step(s) == SQLITE_ROW);
    const auto* p = static_cast<const std::byte*>(sqlite3_column_blob(s, 0));
    std::vector<std::byte> out(p, p + sqlite3_column_bytes(s, 0));
    sqlite3_finalize(s);
    return out;
  }
  void put(std::int64_t id, const std::vector<std::byte>& page) {
    sqlite3_stmt* s = nullptr;
    REQUIRE(sqlite3_prepare_v2(db_, "UPDATE kv_pages SET page = ?2 WHERE id = ?1", -1, &s, nullptr) == SQLITE_OK);
    sqlite3_bind_int64(s, 1, id);
    sqlite3_bind_blob(s, 2, page.data(), static_cast<int>(page.size()), SQLITE_TRANSIENT);
    REQUIRE(sqlite3_step(s) == SQLITE_DONE);
    sqlite3_finalize(s);
  }

 private:
  sqlite3* db_ = nullptr;
};

// Rewrites kv (format 3, committed, no connection using it) in the format-2
// layout an earlier build wrote: no kv_free, each free page's row holding
// its image with magic 0 (the node it was, with a valid checksum) or a
// zeroed image, or no row at all (below max(id)). Returns the free ids.
std::vector<std::int64_t> make_format2(const std::string& path) {
  Raw raw(path);
  const std::vector<std::int64_t> free_ids = raw.ids("SELECT id FROM kv_free ORDER BY id");
  REQUIRE(free_ids.size() >= 10);
  const std::int64_t max_id = raw.ids("SELECT max(id) FROM kv_pages").at(0);
  const std::int64_t live = raw.ids("SELECT id FROM kv_pages WHERE length(page) > 0 AND id > 0 LIMIT 1").at(0);
  const std::vector<std::byte> node = raw.blob(live);
  for (std::size_t i = 0; i < free_ids.size(); ++i) {
    const std::int64_t id = free_ids[i];
    if (i == 0 && id < max_id) {
      raw.exec("DELETE FROM kv_pages WHERE id = " + std::to_string(id));  // not stored
    } else if (i % 2 == 1) {
      // A freed node as the old write-back stored it: magic cleared, the
      // rest as it was, checksummed.
      std::vector<std::byte> img = node;
      std::memset(img.data(), 0, forein::kPageChecksumOffset + 4);
      std::memset(img.data() + forein::kPageMagicOffset, 0, 4);
      const std::uint32_t crc = forein::crc32c(img.data(), img.size());
      for (int b = 0; b < 4; ++b) {
        img[forein::kPageChecksumOffset + b] = static_cast<std::byte>(crc >> (8 * b));
      }
      raw.put(id, img);
    } else {
      raw.exec("UPDATE kv_pages SET page = zeroblob(" + std::to_string(node.size()) + ") WHERE id = " +
               std::to_string(id));
    }
  }
  raw.exec("DROP TABLE kv_free");
  raw.exec("UPDATE kv_meta SET format = 2");
  return free_ids;
}

// A file with kv (and its native mirror ref) of `rows` rows, of which
// [lo, hi) were deleted again, committed; the connection is closed.
void filled_with_holes(const std::string& path, int rows, int lo, int hi) {
  Db a(path);
  a.exec("CREATE VIRTUAL TABLE kv USING forein(k INTEGER, v)");
  a.exec("CREATE TABLE ref(k INTEGER PRIMARY KEY, v)");
  for (const char* t : {"kv", "ref"}) {
    a.exec(rows_sql(t, 0, rows));
    a.exec(std::string("DELETE FROM ") + t + " WHERE k >= " + std::to_string(lo) + " AND k < " +
           std::to_string(hi));
  }
  REQUIRE(a.rows("SELECT forein_check('kv')") == "ok");
}

}  // namespace

TEST_CASE("sqlite free list: the first INSERT after opening reads a few pages and reuses free ones",
          "[sqlite]") {
  TempDir dir;
  const std::string path = dir.file("first.db");
  filled_with_holes(path, kRows, 20000, 180000);
  Db b(path);
  hints_off(b);
  const std::uint64_t pages = stat(b, "pages"), height = stat(b, "height");
  const std::uint64_t read0 = stat(b, "pages_read");
  const std::uint64_t free0 = count(b, "SELECT count(*) FROM kv_free");
  CHECK(pages > 500);
  CHECK(free0 > pages / 2);  // most leaves were merged away
  CHECK(count(b, "SELECT count(*) FROM kv_pages WHERE id IN (SELECT id FROM kv_free) AND length(page) > 0") == 0);

  // 3,000 new keys at the end: several new leaves, all from the free list.
  b.exec(rows_sql("kv", 300000, 3000));
  const std::uint64_t free1 = count(b, "SELECT count(*) FROM kv_free");
  const std::uint64_t read = stat(b, "pages_read") - read0;
  INFO("pages " << pages << ", height " << height << ", free " << free0 << " -> " << free1 << ", read " << read);
  CHECK(free1 < free0);
  CHECK(stat(b, "pages") == pages);  // no page beyond the stored ones
  // A root-to-leaf path and the reused (empty) pages, not the table.
  CHECK(read <= height + 2 + (free0 - free1));
  CHECK(read < 64);
  b.exec(rows_sql("ref", 300000, 3000));
  CHECK(all(b, "kv") == all(b, "ref"));
  CHECK(b.rows("SELECT forein_check('kv')") == "ok");
  Db c(path);
  CHECK(c.rows("SELECT forein_check('kv')") == "ok");
  CHECK(all(c, "kv") == all(c, "ref"));
}

TEST_CASE("sqlite free list: rollbacks and savepoints keep it consistent", "[sqlite]") {
  TempDir dir;
  const std::string path = dir.file("rollback.db");
  filled_with_holes(path, 60000, 10000, 30000);
  Db a(path), b(path);
  const std::string free_before = a.rows("SELECT group_concat(id) FROM (SELECT id FROM kv_free ORDER BY id)");
  const std::uint64_t pages = stat(a, "pages");

  // Frees pages, reuses them and allocates new ones, then rolls back.
  a.exec("BEGIN");
  a.exec("DELETE FROM kv WHERE k >= 40000 AND k < 55000");
  CHECK(a.rows("SELECT forein_check('kv')") == "ok");  // in memory, mid-transaction
  a.exec(rows_sql("kv", 100000, 80000));
  CHECK(stat(a, "pages") > pages);
  CHECK(a.rows("SELECT forein_check('kv')") == "ok");
  a.exec("ROLLBACK");
  CHECK(a.rows("SELECT group_concat(id) FROM (SELECT id FROM kv_free ORDER BY id)") == free_before);
  CHECK(all(a, "kv") == all(a, "ref"));
  CHECK(stat(a, "pages") > pages);  // not reloaded (forein_check would reload)

  // The store still counts the rolled-back pages: the next allocations
  // take the free ones first, then those, in order (no gaps in kv_pages).
  const std::uint64_t free_now = count(a, "SELECT count(*) FROM kv_free");
  for (const char* t : {"kv", "ref"}) a.exec(rows_sql(t, 200000, 40000));
  CHECK(count(a, "SELECT count(*) FROM kv_free") == 0);
  CHECK(count(a, "SELECT max(id) + 1 FROM kv_pages") > pages);  // more than the free pages were needed
  CHECK(free_now > 0);
  CHECK(a.rows("SELECT forein_check('kv')") == "ok");
  CHECK(count(a, "SELECT max(id) + 1 - count(*) FROM kv_pages") == 0);
  CHECK(count(a, "SELECT max(id) + 1 - count(*) FROM kv_pages") == 0);

  // Savepoints: freed, reused, partly undone, in one transaction.
  auto both = [&](const std::string& sql) {
    for (const char* t : {"kv", "ref"}) {
      std::string s = sql;
      s.replace(s.find("$"), 1, t);
      a.exec(s);
    }
  };
  a.exec("BEGIN");
  a.exec("SAVEPOINT s1");
  both("DELETE FROM $ WHERE k >= 30000 AND k < 45000");
  a.exec("SAVEPOINT s2");
  for (const char* t : {"kv", "ref"}) a.exec(rows_sql(t, 300000, 8000));
  CHECK(a.rows("SELECT forein_check('kv')") == "ok");
  a.exec("ROLLBACK TO s2");
  CHECK(a.rows("SELECT forein_check('kv')") == "ok");
  for (const char* t : {"kv", "ref"}) a.exec(rows_sql(t, 400000, 4000));
  a.exec("SAVEPOINT s3");
  both("DELETE FROM $ WHERE k >= 400000 AND k < 402000");
  a.exec("ROLLBACK TO s1");
  both("DELETE FROM $ WHERE k >= 45000 AND k < 50000");
  for (const char* t : {"kv", "ref"}) a.exec(rows_sql(t, 500000, 6000));
  a.exec("RELEASE s1");
  CHECK(a.rows("SELECT forein_check('kv')") == "ok");
  a.exec("COMMIT");
  CHECK(a.rows("SELECT forein_check('kv')") == "ok");
  CHECK(all(a, "kv") == all(a, "ref"));

  // Another connection: its cache is refreshed, then it allocates from
  // the free list as committed by a.
  CHECK(b.rows("SELECT forein_check('kv')") == "ok");
  b.exec("BEGIN");
  for (const char* t : {"kv", "ref"}) b.exec(rows_sql(t, 600000, 10000));
  b.exec("COMMIT");
  a.exec("DELETE FROM kv WHERE k >= 600000 AND k < 605000; DELETE FROM ref WHERE k >= 600000 AND k < 605000");
  b.exec(rows_sql("kv", 700000, 3000));
  b.exec(rows_sql("ref", 700000, 3000));
  CHECK(a.rows("SELECT forein_check('kv')") == "ok");
  CHECK(b.rows("SELECT forein_check('kv')") == "ok");
  CHECK(all(a, "kv") == all(b, "ref"));
  CHECK(count(a, "SELECT max(id) + 1 - count(*) FROM kv_pages") == 0);
}

TEST_CASE("sqlite free list: a format-2 table works and is converted by its first allocating commit",
          "[sqlite]") {
  const char* mode = GENERATE("DELETE", "WAL");
  INFO("journal_mode " << mode);
  TempDir dir;
  const std::string path = dir.file("old.db");
  {
    Db a(path);
    a.exec(std::string("PRAGMA journal_mode=") + mode);
  }
  filled_with_holes(path, 60000, 10000, 40000);
  const std::vector<std::int64_t> free_ids = make_format2(path);
  {
    Db a(path);
    CHECK(a.rows("PRAGMA journal_mode") == lower_mode(mode));
    CHECK(a.rows("SELECT format FROM kv_meta") == "2");
    CHECK(!table_exists(a, "kv_free"));
    CHECK(a.rows("SELECT forein_check('kv')") == "ok");  // the old scan finds the free pages
    CHECK(all(a, "kv") == all(a, "ref"));
    // A commit that allocates and frees nothing leaves the layout alone.
    a.exec("UPDATE kv SET v = 'x' WHERE k = 5; UPDATE ref SET v = 'x' WHERE k = 5");
    CHECK(a.rows("SELECT format FROM kv_meta") == "2");
    CHECK(!table_exists(a, "kv_free"));
  }
  {
    // The first allocation scans every stored page (the old cost), then
    // the commit keeps the scan as kv_free.
    Db a(path);
    hints_off(a);
    const std::uint64_t pages = stat(a, "pages"), read0 = stat(a, "pages_read");
    for (const char* t : {"kv", "ref"}) a.exec(rows_sql(t, 100000, 3000));
    CHECK(stat(a, "pages_read") - read0 >= pages - 1);
    CHECK(stat(a, "pages") == pages);  // the free pages, the unstored one included, were reused
    CHECK(a.rows("SELECT format FROM kv_meta") == "3");
    CHECK(table_exists(a, "kv_free"));
    CHECK(count(a, "SELECT count(*) FROM kv_free") < free_ids.size());
    CHECK(count(a, "SELECT count(*) FROM kv_pages WHERE id IN (SELECT id FROM kv_free) AND length(page) > 0") == 0);
    CHECK(count(a, "SELECT max(id) + 1 - count(*) FROM kv_pages") == 0);
    CHECK(a.rows("SELECT forein_check('kv')") == "ok");
    CHECK(all(a, "kv") == all(a, "ref"));
  }
  {
    // Now format 3: a fresh connection's first allocation reads no page
    // to find the free ones.
    Db a(path);
    hints_off(a);
    const std::uint64_t read0 = stat(a, "pages_read");
    const std::uint64_t free0 = count(a, "SELECT count(*) FROM kv_free");
    for (const char* t : {"kv", "ref"}) a.exec(rows_sql(t, 200000, 3000));
    CHECK(stat(a, "pages_read") - read0 <= stat(a, "height") + 2 + (free0 - count(a, "SELECT count(*) FROM kv_free")));
    CHECK(a.rows("SELECT forein_check('kv')") == "ok");
    CHECK(all(a, "kv") == all(a, "ref"));
  }
}

TEST_CASE("sqlite free list: a conversion undone by ROLLBACK or ROLLBACK TO, then redone", "[sqlite]") {
  TempDir dir;
  const std::string path = dir.file("busy.db");
  filled_with_holes(path, 40000, 5000, 25000);
  make_format2(path);
  Db a(path), b(path);
  a.exec("PRAGMA journal_mode=DELETE");
  a.exec("PRAGMA busy_timeout=0");
  for (int attempt = 0; attempt < 3; ++attempt) {
    INFO("attempt " << attempt);
    a.exec("BEGIN");
    a.exec("SAVEPOINT s");
    for (const char* t : {"kv", "ref"}) a.exec(rows_sql(t, 100000 + attempt * 10000, 2000));
    // b holds a SHARED lock: a's COMMIT fails after xSync converted.
    b.exec("BEGIN");
    CHECK(b.rows("SELECT count(*) FROM ref") != "");
    CHECK(contains(a.try_exec("COMMIT"), "locked"));
    CHECK(sqlite3_get_autocommit(a.get()) == 0);
    if (attempt == 0) {
      b.exec("COMMIT");
      a.exec("ROLLBACK");  // the conversion goes with everything else
      CHECK(a.rows("SELECT format FROM kv_meta") == "2");
      CHECK(!table_exists(a, "kv_free"));
    } else if (attempt == 1) {
      // Undone by ROLLBACK TO, then other changes committed: written in
      // format 2 (the scan was of pages since rewritten).
      a.exec("ROLLBACK TO s");
      CHECK(a.rows("SELECT format FROM kv_meta") == "2");
      for (const char* t : {"kv", "ref"}) a.exec(rows_sql(t, 150000, 1000));
      a.exec("RELEASE s");
      b.exec("COMMIT");
      a.exec("COMMIT");
      CHECK(a.rows("SELECT format FROM kv_meta") == "2");
    } else {
      b.exec("COMMIT");
      a.exec("COMMIT");  // the retry
      CHECK(a.rows("SELECT format FROM kv_meta") == "3");
    }
    CHECK(a.rows("SELECT forein_check('kv')") == "ok");
    CHECK(b.rows("SELECT forein_check('kv')") == "ok");
    CHECK(all(a, "kv") == all(a, "ref"));
    CHECK(all(b, "kv") == all(b, "ref"));
  }
  // b writes after a's conversion.
  b.exec(rows_sql("kv", 900000, 3000));
  b.exec(rows_sql("ref", 900000, 3000));
  Db c(path);
  CHECK(c.rows("SELECT forein_check('kv')") == "ok");
  CHECK(all(c, "kv") == all(c, "ref"));
}

TEST_CASE("sqlite free list: a format-2 table beside another table named like its free list", "[sqlite]") {
  TempDir dir;
  const std::string path = dir.file("taken.db");
  filled_with_holes(path, 30000, 5000, 20000);
  make_format2(path);
  {
    Raw raw(path);
    raw.exec("CREATE TABLE kv_free(note TEXT); INSERT INTO kv_free VALUES ('mine')");
  }
  Db a(path);
  for (const char* t : {"kv", "ref"}) a.exec(rows_sql(t, 100000, 3000));
  CHECK(a.rows("SELECT format FROM kv_meta") == "2");  // not converted
  CHECK(a.rows("SELECT * FROM kv_free") == "mine");
  CHECK(a.rows("SELECT forein_check('kv')") == "ok");
  CHECK(all(a, "kv") == all(a, "ref"));
  a.exec("ALTER TABLE kv RENAME TO kv2");
  CHECK(a.rows("SELECT * FROM kv_free") == "mine");  // not renamed
  a.exec("DROP TABLE kv2");
  CHECK(a.rows("SELECT * FROM kv_free") == "mine");  // not dropped
  CHECK(a.rows("SELECT count(*) FROM sqlite_schema WHERE name LIKE 'kv2%'") == "0");
}

TEST_CASE("sqlite free list: RENAME and DROP TABLE take kv_free along", "[sqlite]") {
  TempDir dir;
  const std::string path = dir.file("rename.db");
  filled_with_holes(path, 30000, 5000, 20000);
  Db a(path);
  const std::string free_ids = a.rows("SELECT group_concat(id) FROM (SELECT id FROM kv_free ORDER BY id)");
  a.exec("ALTER TABLE kv RENAME TO kv2");
  CHECK(!table_exists(a, "kv_free"));
  CHECK(a.rows("SELECT group_concat(id) FROM (SELECT id FROM kv2_free ORDER BY id)") == free_ids);
  for (const char* t : {"kv2", "ref"}) a.exec(rows_sql(t, 100000, 3000));
  CHECK(a.rows("SELECT forein_check('kv2')") == "ok");

  // Inside a transaction that freed pages: the commit writes the renamed tables.
  a.exec("BEGIN");
  a.exec("DELETE FROM kv2 WHERE k >= 20000 AND k < 28000");
  a.exec("ALTER TABLE kv2 RENAME TO kv3");
  a.exec("DELETE FROM ref WHERE k >= 20000 AND k < 28000");
  a.exec("COMMIT");
  CHECK(!table_exists(a, "kv2_free"));
  CHECK(count(a, "SELECT count(*) FROM kv3_free") > 0);
  CHECK(a.rows("SELECT forein_check('kv3')") == "ok");
  CHECK(all(a, "kv3") == all(a, "ref"));
  {
    Db b(path);
    CHECK(b.rows("SELECT forein_check('kv3')") == "ok");
    CHECK(all(b, "kv3") == all(b, "ref"));
  }
  a.exec("DROP TABLE kv3");
  CHECK(a.rows("SELECT count(*) FROM sqlite_schema WHERE name LIKE 'kv%'") == "0");
}

TEST_CASE("sqlite free list: kv_free is a protected shadow table", "[sqlite]") {
  TempDir dir;
  const std::string path = dir.file("defensive.db");
  filled_with_holes(path, 30000, 5000, 20000);
  Db a(path);
  int on = 1;
  REQUIRE(sqlite3_db_config(a.get(), SQLITE_DBCONFIG_DEFENSIVE, 1, &on) == SQLITE_OK);
  REQUIRE(on == 1);
  CHECK(contains(a.try_exec("INSERT INTO kv_free VALUES (999999)"), "may not be modified"));
  CHECK(contains(a.try_exec("DELETE FROM kv_free"), "may not be modified"));
  CHECK(!a.try_exec("DROP TABLE kv_free").empty());
  // The module writes it all the same.
  for (const char* t : {"kv", "ref"}) a.exec(rows_sql(t, 100000, 3000));
  a.exec("DELETE FROM kv WHERE k < 4000; DELETE FROM ref WHERE k < 4000");
  CHECK(a.rows("SELECT forein_check('kv')") == "ok");
  CHECK(all(a, "kv") == all(a, "ref"));
  // And renames and drops it.
  a.exec("ALTER TABLE kv RENAME TO kv9");
  CHECK(table_exists(a, "kv9_free"));
  CHECK(a.rows("SELECT forein_check('kv9')") == "ok");
  a.exec("DROP TABLE kv9");
  CHECK(a.rows("SELECT count(*) FROM sqlite_schema WHERE name LIKE 'kv%'") == "0");
}

TEST_CASE("sqlite free list: the conversion runs in defensive mode", "[sqlite]") {
  TempDir dir;
  const std::string path = dir.file("defensive2.db");
  filled_with_holes(path, 30000, 5000, 20000);
  make_format2(path);
  Db a(path);
  int on = 1;
  REQUIRE(sqlite3_db_config(a.get(), SQLITE_DBCONFIG_DEFENSIVE, 1, &on) == SQLITE_OK);
  for (const char* t : {"kv", "ref"}) a.exec(rows_sql(t, 100000, 3000));
  CHECK(a.rows("SELECT format FROM kv_meta") == "3");
  CHECK(contains(a.try_exec("DELETE FROM kv_free"), "may not be modified"));
  CHECK(a.rows("SELECT forein_check('kv')") == "ok");
  CHECK(all(a, "kv") == all(a, "ref"));
}

TEST_CASE("sqlite free list: forein_check reports a page free and reachable, or neither", "[sqlite]") {
  TempDir dir;
  const std::string path = dir.file("corrupt.db");
  filled_with_holes(path, 30000, 5000, 20000);
  std::int64_t live = 0, freed = 0;
  {
    Raw raw(path);
    live = raw.ids("SELECT max(id) FROM kv_pages WHERE length(page) > 0").at(0);
    freed = raw.ids("SELECT min(id) FROM kv_free").at(0);
  }
  {
    Raw raw(path);
    raw.exec("INSERT INTO kv_free VALUES (" + std::to_string(live) + ")");
  }
  {
    Db a(path);
    const std::string err = a.try_exec("SELECT forein_check('kv')");
    INFO(err);
    CHECK(contains(err, "page " + std::to_string(live) + " is both free (listed in kv_free) and reachable"));
  }
  {
    Raw raw(path);
    raw.exec("DELETE FROM kv_free WHERE id = " + std::to_string(live));
    raw.exec("DELETE FROM kv_free WHERE id = " + std::to_string(freed));
  }
  {
    Db a(path);
    const std::string err = a.try_exec("SELECT forein_check('kv')");
    INFO(err);
    CHECK(contains(err, "page " + std::to_string(freed) + " is neither reachable from the tree nor free"));
    CHECK(contains(err, "leaked"));
  }
  {
    Raw raw(path);
    raw.exec("INSERT INTO kv_free VALUES (" + std::to_string(freed) + ")");
    raw.exec("UPDATE kv_pages SET page = (SELECT page FROM kv_pages WHERE id = " + std::to_string(live) +
             ") WHERE id = " + std::to_string(freed));
  }
  {
    Db a(path);
    const std::string err = a.try_exec("SELECT forein_check('kv')");
    INFO(err);
    CHECK(contains(err, "page " + std::to_string(freed) + " is listed in kv_free but its stored image is a node"));
  }
}

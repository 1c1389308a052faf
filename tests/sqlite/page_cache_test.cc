// Pages on demand: opening a table reads its meta and root pages, not the
// tree; the page cache stays within forein_cache_pages during a scan of a
// larger table; another connection's commit drops only the pages it changed.
// Hints are off (forein_debug_hints mode 2) where a test counts pages:
// the hint path lists every node when it attaches.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <string>

#include "sqlite/harness.h"

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

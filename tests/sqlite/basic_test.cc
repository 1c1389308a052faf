#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <string>

#include "sqlite/harness.h"
#include "support/backend_names.h"
#include "support/seed.h"

using forein::sqlite_test::Db;

TEST_CASE("sqlite: create insert select", "[sqlite]") {
  Db db;
  db.exec("CREATE VIRTUAL TABLE kv USING forein(k INTEGER, v, extra)");
  db.exec("INSERT INTO kv VALUES (42, 'x', 1)");
  CHECK(db.rows("SELECT v FROM kv WHERE k = 42") == "x");
}

TEST_CASE("sqlite: OR IGNORE skips taken keys without counting them in changes()", "[sqlite]") {
  Db db;
  db.exec("CREATE VIRTUAL TABLE fr USING forein(k INTEGER, v)");
  db.exec("CREATE TABLE m(k INTEGER PRIMARY KEY, v)");
  for (const char* t : {"fr", "m"}) db.exec(std::string("INSERT INTO ") + t + " VALUES (1, 'a'), (2, 'b')");
  // Each statement on both tables: the same rows and the same changes() (a
  // native table's is SQLite's definition). total_changes() also counts the
  // pages the table writes into its shadow table at commit (docs/sqlite.md).
  for (const char* sql : {"INSERT OR IGNORE INTO %T VALUES (1, 'x')", "UPDATE OR IGNORE %T SET k = 2 WHERE k = 1",
                          "INSERT OR IGNORE INTO %T VALUES (3, 'c'), (1, 'x'), (4, 'd')",
                          "INSERT OR REPLACE INTO %T VALUES (2, 'r')", "UPDATE OR IGNORE %T SET k = 5 WHERE k = 4"}) {
    std::string counts[2];
    int i = 0;
    for (const std::string t : {"fr", "m"}) {
      std::string s = sql;
      s.replace(s.find("%T"), 2, t);
      db.exec(s);
      counts[i++] = db.rows("SELECT changes()");
    }
    INFO(sql);
    CHECK(counts[0] == counts[1]);
    CHECK(db.rows("SELECT k, v FROM fr ORDER BY k") == db.rows("SELECT k, v FROM m ORDER BY k"));
  }
}

TEST_CASE("sqlite: offload=NAME takes a registered backend", "[sqlite]") {
  Db db;
  const std::string bogus = db.try_exec("CREATE VIRTUAL TABLE a USING forein(k INTEGER, v, offload=honeycomb)");
  CHECK(bogus.find("unknown offload backend 'honeycomb'") != std::string::npos);
  CHECK(bogus.find("registered backends: " + forein::testing::registered_names_from_registry()) !=
        std::string::npos);
  // A registered backend that gives no start hints is refused, saying why.
  const std::string visibility =
      db.try_exec("CREATE VIRTUAL TABLE v USING forein(k INTEGER, v, offload=switch_visibility)");
  CHECK(visibility.find("gives no start hints") != std::string::npos);
  CHECK(visibility.find("use one of: " + forein::testing::lookup_names_from_registry()) != std::string::npos);
  const std::string twice =
      db.try_exec("CREATE VIRTUAL TABLE b USING forein(k INTEGER, v, page_size=8192, page_size=4096)");
  CHECK(twice.find("given twice") != std::string::npos);

  // The same data under none and switch_lpm: same answers, hints only from switch_lpm.
  db.exec("CREATE VIRTUAL TABLE n USING forein(k INTEGER, v, offload=none)");
  db.exec("CREATE VIRTUAL TABLE s USING forein(k INTEGER, v, offload=switch_lpm)");
  db.exec("BEGIN");
  for (const char* t : {"n", "s"}) {
    db.exec(std::string("INSERT INTO ") + t +
            " WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 20000)"
            " SELECT x, 'v' || x FROM c");
  }
  db.exec("COMMIT");
  for (int k : {1, 777, 12345, 20000}) {
    const std::string q = " WHERE k = " + std::to_string(k);
    CHECK(db.rows("SELECT v FROM n" + q) == db.rows("SELECT v FROM s" + q));
  }
  CHECK(db.rows("SELECT json_extract(forein_stats('n'), '$.backend')") == "none");
  CHECK(db.rows("SELECT json_extract(forein_stats('s'), '$.backend')") == "switch_lpm");
  CHECK(db.rows("SELECT json_extract(forein_stats('n'), '$.hint_hits')") == "0");
  CHECK(db.rows("SELECT json_extract(forein_stats('n'), '$.installed_entries')") == "0");
  CHECK(db.rows("SELECT json_extract(forein_stats('s'), '$.hint_hits') > 0") == "1");
  CHECK(db.rows("SELECT json_extract(forein_stats('s'), '$.installed_entries') > 0") == "1");
}

TEST_CASE("sqlite: offload=fattree, offload=fpga and offload=dpa give the answers of offload=none", "[sqlite]") {
  // fattree's capacity in in-switch nodes; fpga's in cache bytes (4 GB of
  // on-board DRAM, 8 KB a cached interior node); dpa's in DPA bytes (1 GiB
  // of DPA memory holding the learned index over the leaf boundaries).
  const auto backend = GENERATE(as<std::pair<std::string, std::uint64_t>>{},
                                std::pair<std::string, std::uint64_t>{"fattree", 21504},
                                std::pair<std::string, std::uint64_t>{"fpga", std::uint64_t{4} << 30},
                                std::pair<std::string, std::uint64_t>{"dpa", std::uint64_t{1} << 30});
  INFO("offload=" << backend.first);
  const std::uint64_t seed = forein::testing::test_seed("sqlite " + backend.first);
  std::mt19937_64 rng(seed);
  Db db;
  // Small pages: ~150,000 keys make more leaves than the fat root has
  // ranges, so the plan also fills node sets below it; for fpga, a
  // three-level tree whose middle level is cached in DRAM.
  db.exec("CREATE VIRTUAL TABLE n USING forein(k INTEGER, v, page_size=4096, offload=none)");
  db.exec("CREATE VIRTUAL TABLE f USING forein(k INTEGER, v, page_size=4096, offload=" + backend.first + ")");
  db.exec("BEGIN");
  for (const char* t : {"n", "f"}) {
    db.exec(std::string("INSERT INTO ") + t +
            " WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 150000)"
            " SELECT x * 3, 'v' || x FROM c");
  }
  db.exec("COMMIT");
  auto stat = [&](const char* f) {
    return db.rows(std::string("SELECT json_extract(forein_stats('f'), '$.") + f + "')");
  };
  CHECK(stat("backend") == backend.first);
  CHECK(stat("capacity_entries") == std::to_string(backend.second));
  const std::uint64_t hits0 = std::stoull(stat("hint_hits"));
  auto same = [&](const std::string& q) {
    std::string qn = q, qf = q;
    for (std::size_t i; (i = qn.find("%T")) != std::string::npos;) qn.replace(i, 2, "n");
    for (std::size_t i; (i = qf.find("%T")) != std::string::npos;) qf.replace(i, 2, "f");
    INFO("seed " << seed << ": " << qf);
    CHECK(db.rows(qf) == db.rows(qn));
  };
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 100; ++i) {
      const std::int64_t a = static_cast<std::int64_t>(rng() % 450020) - 10;
      const std::int64_t b = a + static_cast<std::int64_t>(rng() % 3000);
      const std::string sa = std::to_string(a), sb = std::to_string(b);
      same("SELECT k, v FROM %T WHERE k = " + sa);
      same("SELECT k, v FROM %T WHERE k = " + std::to_string(a - a % 3));
      same("SELECT k FROM %T WHERE k IN (" + sa + ", " + sb + ", 3, 450000, 450003)");
      same("SELECT count(*), sum(k) FROM %T WHERE k >= " + sa + " AND k < " + sb);
      same("SELECT k FROM %T WHERE k > " + sa + " ORDER BY k LIMIT 20");
      same("SELECT k FROM %T WHERE k <= " + sb + " ORDER BY k DESC LIMIT 20");
    }
    same("SELECT count(*), sum(k), min(k), max(k) FROM %T");
    // Splits and merges between rounds: the installed hints go stale and
    // are refreshed inline.
    const std::string r = std::to_string(round);
    for (const char* t : {"n", "f"}) {
      db.exec(std::string("INSERT OR IGNORE INTO ") + t + " SELECT k + 1, v FROM " + t + " WHERE k % 7 = " + r);
      db.exec(std::string("DELETE FROM ") + t + " WHERE k % 11 = " + r + " OR (k > 100000 AND k < 160000)");
    }
  }
  CHECK(std::stoull(stat("hint_hits")) > hits0);
  // Point lookups only: a forward scan counts its step to the next leaf as
  // a hinted start (the right link), so scans add hint hits even under
  // offload=none; point lookups get hints only from the backend.
  auto hits = [&](const char* t) {
    return std::stoull(db.rows(std::string("SELECT json_extract(forein_stats('") + t + "'), '$.hint_hits')"));
  };
  const std::uint64_t f0 = hits("f"), n0 = hits("n");
  for (int i = 0; i < 200; ++i) {
    const std::string k = std::to_string(rng() % 450000);
    CHECK(db.rows("SELECT v FROM f WHERE k = " + k) == db.rows("SELECT v FROM n WHERE k = " + k));
  }
  CHECK(hits("f") > f0);
  CHECK(hits("n") == n0);
  CHECK(std::stoull(stat("installed_entries")) > 0);
  CHECK(std::stoull(stat("installed_entries")) <= backend.second);
  CHECK(db.rows("SELECT forein_check('f')") == "ok");
}

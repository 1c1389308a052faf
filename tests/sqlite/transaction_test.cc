// Transactions, savepoints, conflicts, bad input, several connections.
#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "sqlite/harness.h"
#include "support/seed.h"

using forein::sqlite_test::Db;
using forein::sqlite_test::TempDir;

namespace {
std::string all(Db& db, const char* t = "kv") {
  return db.rows(std::string("SELECT * FROM ") + t + " ORDER BY k", true);
}
}  // namespace

TEST_CASE("sqlite: rollback and nested savepoints", "[sqlite]") {
  TempDir dir;
  Db db(dir.file("t.db"));
  db.exec("CREATE VIRTUAL TABLE kv USING forein(k INTEGER, v)");
  db.exec("INSERT INTO kv VALUES (1, 'a'), (2, 'b')");
  const std::string base = all(db);
  db.exec("BEGIN; INSERT INTO kv VALUES (3, 'c'); DELETE FROM kv WHERE k = 1; ROLLBACK");
  CHECK(all(db) == base);
  db.exec("BEGIN; INSERT INTO kv VALUES (3, 'c'); SAVEPOINT s1; INSERT INTO kv VALUES (4, 'd');"
          "SAVEPOINT s2; UPDATE kv SET k = 10 WHERE k = 2; ROLLBACK TO s2;"
          "INSERT INTO kv VALUES (5, 'e'); ROLLBACK TO s1; INSERT INTO kv VALUES (6, 'f');"
          "RELEASE s1; COMMIT");
  CHECK(all(db) == "i1|sa\ni2|sb\ni3|sc\ni6|sf");
  // Many rows inside a savepoint that is rolled back (splits undone).
  db.exec("BEGIN; SAVEPOINT big");
  for (int i = 100; i < 3000; ++i) db.exec("INSERT INTO kv VALUES (" + std::to_string(i) + ", zeroblob(100))");
  CHECK(db.rows("SELECT count(*) FROM kv") == "2904");
  db.exec("ROLLBACK TO big; RELEASE big; COMMIT");
  CHECK(all(db) == "i1|sa\ni2|sb\ni3|sc\ni6|sf");
  CHECK(db.rows("SELECT forein_check('kv')") == "ok");
  Db other(dir.file("t.db"));
  CHECK(all(other) == "i1|sa\ni2|sb\ni3|sc\ni6|sf");
}

TEST_CASE("sqlite: conflicts per ON CONFLICT mode", "[sqlite]") {
  Db db;
  db.exec("CREATE VIRTUAL TABLE kv USING forein(k INTEGER, v)");
  db.exec("CREATE TABLE ref(k INTEGER PRIMARY KEY, v)");
  for (const char* t : {"kv", "ref"}) {
    db.exec(std::string("INSERT INTO ") + t + " VALUES (1, 'a'), (2, 'b')");
  }
  const char* stmts[] = {
      "INSERT INTO %T VALUES (3, 'c'), (1, 'dup'), (4, 'd')",            // ABORT
      "INSERT OR FAIL INTO %T VALUES (5, 'e'), (1, 'dup'), (6, 'f')",    // FAIL keeps 5
      "INSERT OR IGNORE INTO %T VALUES (7, 'g'), (1, 'dup'), (8, 'h')",
      "INSERT OR REPLACE INTO %T VALUES (9, 'i'), (1, 'new')",
      "UPDATE %T SET k = 2 WHERE k = 1",                                 // conflict, ABORT
      "UPDATE OR REPLACE %T SET k = 2 WHERE k = 1",
      "UPDATE OR IGNORE %T SET k = 5 WHERE k = 2",
  };
  for (const char* s : stmts) {
    std::string a = s, b = s;
    a.replace(a.find("%T"), 2, "kv");
    b.replace(b.find("%T"), 2, "ref");
    const bool fa = !db.try_exec(a).empty();
    const bool fb = !db.try_exec(b).empty();
    INFO(s);
    CHECK(fa == fb);
    CHECK(all(db, "kv") == all(db, "ref"));
  }
  // ROLLBACK mode undoes the whole transaction.
  db.exec("BEGIN; INSERT INTO kv VALUES (50, 'x'); INSERT INTO ref VALUES (50, 'x')");
  CHECK_FALSE(db.try_exec("INSERT OR ROLLBACK INTO kv VALUES (2, 'dup')").empty());
  CHECK(sqlite3_get_autocommit(db.get()) == 1);
  db.exec("DELETE FROM ref WHERE k = 50");
  CHECK(all(db, "kv") == all(db, "ref"));
  CHECK(db.rows("SELECT forein_check('kv')") == "ok");
}

TEST_CASE("sqlite: bad input is a clear error and changes nothing", "[sqlite]") {
  Db db;
  CHECK(db.try_exec("CREATE VIRTUAL TABLE a USING forein()").find("missing key column") != std::string::npos);
  CHECK(db.try_exec("CREATE VIRTUAL TABLE a USING forein(k REAL, v)").find("must have INTEGER affinity") != std::string::npos);
  CHECK(db.try_exec("CREATE VIRTUAL TABLE a USING forein(k, v)").find("must have INTEGER affinity") != std::string::npos);
  CHECK(db.try_exec("CREATE VIRTUAL TABLE a USING forein(k INTEGER, k TEXT)").find("duplicate") != std::string::npos);
  CHECK(db.try_exec("CREATE VIRTUAL TABLE a USING forein(k INTEGER, v TEXT CHECK(1))").find("forein:") != std::string::npos);
  CHECK(db.try_exec("CREATE VIRTUAL TABLE a USING forein(k INTEGER, page_size=1000)").find("page_size") != std::string::npos);
  CHECK(db.try_exec("CREATE VIRTUAL TABLE a USING forein(k INTEGER, bogus=1)").find("unknown option") != std::string::npos);
  CHECK(db.rows("SELECT count(*) FROM sqlite_schema") == "0");

  db.exec("CREATE VIRTUAL TABLE kv USING forein(k INTEGER, v)");
  db.exec("CREATE VIRTUAL TABLE kt USING forein(name TEXT, v)");
  db.exec("INSERT INTO kv VALUES (1, 'a'); INSERT INTO kt VALUES ('x', 1)");
  CHECK(db.try_exec("INSERT INTO kv VALUES (NULL, 'n')").find("NOT NULL") != std::string::npos);
  CHECK(db.try_exec("INSERT INTO kv VALUES ('abc', 'n')").find("INTEGER key") != std::string::npos);
  CHECK(db.try_exec("INSERT INTO kv VALUES (2.5, 'n')").find("INTEGER key") != std::string::npos);
  CHECK(db.try_exec("INSERT INTO kv VALUES (x'01', 'n')").find("INTEGER key") != std::string::npos);
  CHECK(db.try_exec("INSERT INTO kt VALUES (x'01', 'n')").find("TEXT key") != std::string::npos);
  CHECK(db.try_exec("INSERT INTO kv VALUES (3, zeroblob(5000))").find("exceeds the limit") != std::string::npos);
  CHECK(db.try_exec("INSERT INTO kv VALUES (4, 'ok'), (5, NULL), (NULL, 'bad')").find("NOT NULL") != std::string::npos);
  CHECK(db.try_exec("UPDATE kv SET k = NULL WHERE k = 1").find("NOT NULL") != std::string::npos);
  CHECK(all(db) == "i1|sa");
  CHECK(db.rows("SELECT name FROM kt", true) == "sx");
  // Affinity: '42' and 7.0 are integers for an INTEGER key.
  db.exec("INSERT INTO kv VALUES ('42', 'b'), (7.0, 'c')");
  CHECK(db.rows("SELECT k FROM kv ORDER BY k", true) == "i1\ni7\ni42");
  CHECK(db.rows("SELECT v FROM kv WHERE k = '42'") == "b");
  CHECK(db.rows("SELECT k FROM kv WHERE k > 6.5 AND k < 41.9") == "7");
  CHECK(db.try_exec("SELECT forein_check('nope')").find("forein: no such table: nope") != std::string::npos);
  CHECK(db.rows("SELECT forein_check('kv')") == "ok");
}

TEST_CASE("sqlite: several connections see committed data", "[sqlite]") {
  TempDir dir;
  for (const char* mode : {"WAL", "DELETE"}) {
    const std::string path = dir.file(std::string("m-") + mode + ".db");
    Db a(path), b(path);
    a.exec(std::string("PRAGMA journal_mode=") + mode);
    a.exec("CREATE VIRTUAL TABLE kv USING forein(k INTEGER, v)");
    a.exec("INSERT INTO kv VALUES (1, 'a')");
    CHECK(b.rows("SELECT v FROM kv WHERE k = 1") == "a");
    a.exec("BEGIN; INSERT INTO kv VALUES (2, 'b')");
    if (std::string(mode) == "WAL") CHECK(b.rows("SELECT count(*) FROM kv") == "1");
    a.exec("COMMIT");
    CHECK(b.rows("SELECT count(*) FROM kv") == "2");
    b.exec("UPDATE kv SET v = 'bb' WHERE k = 2");
    CHECK(a.rows("SELECT v FROM kv WHERE k = 2") == "bb");
    for (int i = 10; i < 1500; ++i) b.exec("INSERT INTO kv VALUES (" + std::to_string(i) + ", 'x')");
    CHECK(a.rows("SELECT count(*) FROM kv WHERE k >= 10") == "1490");
    CHECK(a.rows("SELECT forein_check('kv')") == "ok");
  }
}

TEST_CASE("sqlite: hints from the offload path and random hints change no result", "[sqlite]") {
  // Every offload backend that gives hints, with its unit's capacity.
  const auto backend = GENERATE(as<std::pair<std::string, std::uint64_t>>{},
                                std::pair<std::string, std::uint64_t>{"switch_lpm", 73000},
                                std::pair<std::string, std::uint64_t>{"fattree", 21504},
                                std::pair<std::string, std::uint64_t>{"fpga", std::uint64_t{4} << 30},
                                std::pair<std::string, std::uint64_t>{"dpa", std::uint64_t{1} << 30});
  const std::uint64_t seed = forein::testing::test_seed("sqlite hints");
  std::mt19937_64 rng(seed);
  INFO("offload=" << backend.first);
  Db db;
  db.exec("CREATE VIRTUAL TABLE kv USING forein(k INTEGER, v, offload=" + backend.first + ")");
  CHECK(db.rows("SELECT json_extract(forein_stats('kv'), '$.backend')") == backend.first);
  db.exec("BEGIN");
  for (int i = 0; i < 20000; ++i) db.exec("INSERT INTO kv VALUES (" + std::to_string(i * 3) + ", " + std::to_string(i) + ")");
  db.exec("COMMIT");
  auto stat = [&](const char* f) {
    return std::stoull(db.rows(std::string("SELECT json_extract(forein_stats('kv'), '$.") + f + "')"));
  };
  auto queries = [&] {
    std::vector<std::string> q;
    for (int i = 0; i < 40; ++i) {
      const std::string k = std::to_string(rng() % 70000), k2 = std::to_string(rng() % 70000);
      q.push_back("SELECT * FROM kv WHERE k = " + k);
      q.push_back("SELECT * FROM kv WHERE k IN (" + k + ", " + k2 + ", 5, 59997)");
      q.push_back("SELECT k FROM kv WHERE k > " + k + " AND k <= " + k2 + " ORDER BY k DESC LIMIT 50");
      q.push_back("SELECT count(*), sum(v) FROM kv WHERE k >= " + k);
    }
    return q;
  };
  for (int round = 0; round < 6; ++round) {
    const std::vector<std::string> qs = queries();
    // The reference: no hints, every operation descends from the root.
    db.rows("SELECT forein_debug_hints('kv', 2)");
    std::vector<std::string> expect;
    for (const auto& q : qs) expect.push_back(db.rows(q));
    // The real path: offload manager + the table's backend.
    db.rows("SELECT forein_debug_hints('kv', 0)");
    const std::uint64_t hits = stat("hint_hits");
    for (std::size_t i = 0; i < qs.size(); ++i) {
      INFO("offload hints, seed " << seed << ": " << qs[i]);
      CHECK(db.rows(qs[i]) == expect[i]);
    }
    CHECK(stat("hint_hits") > hits);
    // fpga counts DRAM cache bytes: a two-level tree's root sits in
    // on-chip SRAM and takes none.
    CHECK((stat("installed_entries") > 0 || backend.first == "fpga"));
    CHECK(stat("capacity_entries") == backend.second);
    CHECK(stat("installed_entries") <= backend.second);
    // Random hints: any page, any level, past the end.
    db.rows("SELECT forein_debug_hints('kv', 1, " + std::to_string(rng()) + ")");
    for (std::size_t i = 0; i < qs.size(); ++i) {
      INFO("random hints, seed " << seed << ": " << qs[i]);
      CHECK(db.rows(qs[i]) == expect[i]);
    }
    // Writes under random hints, then under the offload path's (stale
    // after the splits and merges) hints.
    db.exec("INSERT OR REPLACE INTO kv SELECT k + 1, v FROM kv WHERE k % 7 = " + std::to_string(round));
    db.exec("DELETE FROM kv WHERE k % 11 = " + std::to_string(round));
    db.rows("SELECT forein_debug_hints('kv', 0)");
    db.exec("UPDATE kv SET v = v + 1 WHERE k % 13 = " + std::to_string(round));
    db.exec("INSERT OR IGNORE INTO kv SELECT k + 2, v FROM kv WHERE k % 5 = " + std::to_string(round));
  }
  const std::string stats = db.rows("SELECT forein_stats('kv')");
  INFO(stats);
  CHECK(stat("fallbacks") < stat("hinted"));
  CHECK(db.rows("SELECT forein_check('kv')") == "ok");
}

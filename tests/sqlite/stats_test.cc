// forein_stats: what each counter counts, and the invariants that hold
// after any workload: hint_hits + fallbacks <= hinted <= lookups,
// writes <= lookups, installed_entries <= capacity_entries, keys = rows,
// and no counter going down on a connection.
#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <random>
#include <string>

#include "sqlite/harness.h"
#include "support/seed.h"

using forein::sqlite_test::Db;
using forein::sqlite_test::TempDir;

namespace {

using Stats = std::map<std::string, std::uint64_t>;

const char* const kCounters[] = {"lookups",   "writes", "hinted", "hint_hits", "fallbacks", "hint_refreshes",
                                 "loads",     "refreshes", "pages_read", "pages_written"};

Stats stats(Db& db, const std::string& table) {
  Stats s;
  const std::string json = db.rows("SELECT forein_stats('" + table + "')");
  const auto field = [&](const char* f) {
    s[f] = std::stoull(db.rows("SELECT json_extract('" + json + "', '$." + f + "')"));
  };
  for (const char* f : kCounters) field(f);
  for (const char* f : {"installed_entries", "capacity_entries", "keys"}) field(f);
  return s;
}

// Checks the invariants, and that no counter went down since `before`.
void check_invariants(Db& db, const std::string& table, const Stats& s, const Stats& before) {
  CHECK(s.at("hint_hits") + s.at("fallbacks") <= s.at("hinted"));
  CHECK(s.at("hinted") <= s.at("lookups"));
  CHECK(s.at("writes") <= s.at("lookups"));
  CHECK(s.at("installed_entries") <= s.at("capacity_entries"));
  CHECK(std::to_string(s.at("keys")) == db.rows("SELECT count(*) FROM " + table));
  for (const char* f : kCounters) {
    INFO(f);
    CHECK(s.at(f) >= before.at(f));
  }
}

std::uint64_t delta(const Stats& after, const Stats& before, const char* f) { return after.at(f) - before.at(f); }

}  // namespace

TEST_CASE("sqlite stats: each statement's tree operations", "[sqlite]") {
  Db db;
  db.exec("CREATE VIRTUAL TABLE kv USING forein(k INTEGER, v)");
  db.exec("INSERT INTO kv VALUES (1, 'a')");
  const struct {
    const char* sql;
    std::uint64_t lookups, writes, hinted;
  } steps[] = {
      {"INSERT INTO kv VALUES (2, 'b')", 1, 1, 1},            // insert unless taken: one descent
      {"INSERT OR REPLACE INTO kv VALUES (2, 'b')", 2, 1, 2}, // conflict check, put
      {"SELECT v FROM kv WHERE k = 2", 1, 0, 1},              // point lookup
      {"UPDATE kv SET v = 'c' WHERE k = 2", 2, 1, 2},         // lookup, put
      {"UPDATE kv SET k = 3 WHERE k = 2", 4, 2, 4},           // lookup, conflict check, erase, put
      {"DELETE FROM kv WHERE k = 1", 2, 1, 2},                // lookup, erase
      {"SELECT count(*) FROM kv", 1, 0, 0},                   // a scan from the first key: no hint
      {"SELECT k FROM kv WHERE k >= 2 ORDER BY k", 1, 0, 1},  // a scan from a key
  };
  const Stats first = stats(db, "kv");
  Stats before = first;
  for (const auto& step : steps) {
    INFO(step.sql);
    db.rows(step.sql);
    const Stats after = stats(db, "kv");
    CHECK(delta(after, before, "lookups") == step.lookups);
    CHECK(delta(after, before, "writes") == step.writes);
    CHECK(delta(after, before, "hinted") == step.hinted);
    before = after;
  }
  check_invariants(db, "kv", before, first);
}

TEST_CASE("sqlite stats: invariants after a mixed workload", "[sqlite]") {
  const std::uint64_t seed = forein::testing::test_seed("sqlite stats");
  std::mt19937_64 rng(seed);
  TempDir dir;
  const std::string path = dir.file("stats.db");
  for (const char* backend : {"switch_lpm", "none", "fattree"}) {
    INFO("offload=" << backend);
    std::filesystem::remove(path);
    Db db(path), other(path);
    db.exec("PRAGMA journal_mode=WAL");
    db.exec(std::string("CREATE VIRTUAL TABLE kv USING forein(k INTEGER, v, page_size=4096, offload=") +
            backend + ")");
    Stats before = stats(db, "kv");
    for (int step = 0; step < 300; ++step) {
      const auto key = [&rng] { return std::to_string(rng() % 20000); };
      switch (rng() % 10) {
        case 0:  // a batch, sometimes rolled back (the tree reloads)
          db.exec("BEGIN");
          db.exec("INSERT OR REPLACE INTO kv WITH RECURSIVE c(x) AS (SELECT " + key() +
                  " UNION ALL SELECT x + 1 FROM c WHERE x < 20000) SELECT x * 7 % 20000, 'b' || x FROM c LIMIT " +
                  std::to_string(rng() % 400));
          db.exec(rng() % 3 == 0 ? "ROLLBACK" : "COMMIT");
          break;
        case 1:
          db.try_exec("INSERT INTO kv VALUES (" + key() + ", 'x')");  // may conflict
          db.exec("INSERT OR IGNORE INTO kv VALUES (" + key() + ", 'y')");
          break;
        case 2:
          db.exec("UPDATE kv SET v = v || '.' WHERE k BETWEEN " + key() + " AND " + key());
          break;
        case 3:
          db.exec("UPDATE OR REPLACE kv SET k = " + key() + " WHERE k = " + key());
          break;
        case 4:
          db.exec("DELETE FROM kv WHERE k >= " + key() + " AND k < " + key() + " + 50");
          break;
        case 5:
          db.rows("SELECT v FROM kv WHERE k IN (" + key() + ", " + key() + ", " + key() + ")");
          break;
        case 6:
          db.rows("SELECT k FROM kv WHERE k < " + key() + " ORDER BY k DESC LIMIT 20");
          break;
        case 7:  // another connection's commit: page-level refresh here
          other.exec("INSERT OR REPLACE INTO kv VALUES (" + key() + ", 'o')");
          break;
        case 8:  // random hints, or none, for a while
          db.rows("SELECT forein_debug_hints('kv', " + std::to_string(rng() % 3) + ", " +
                  std::to_string(rng()) + ")");
          break;
        default:
          db.rows("SELECT count(*), sum(k) FROM kv WHERE k > " + key());
          break;
      }
      if (step % 25 == 24) {
        INFO("seed " << seed << " step " << step);
        const Stats now = stats(db, "kv");
        check_invariants(db, "kv", now, before);
        before = now;
      }
    }
    CHECK(db.rows("SELECT forein_check('kv')") == "ok");
  }
}

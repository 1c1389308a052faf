// Differential test: seeded random operations against a forein table and a
// plain SQLite table holding the same rows; every result must be identical.
#include <catch2/catch.hpp>

#include <random>
#include <string>

#include "sqlite/harness.h"
#include "support/seed.h"

using forein::sqlite_test::Db;
using forein::sqlite_test::Pair;
using forein::sqlite_test::TempDir;

namespace {

struct Gen {
  std::mt19937_64 rng;
  bool text_keys;
  std::int64_t key_space;
  std::uint64_t below(std::uint64_t n) { return rng() % n; }
  std::string key() {
    const std::int64_t k = static_cast<std::int64_t>(below(static_cast<std::uint64_t>(key_space))) -
                           key_space / 4;
    if (text_keys) return "'k" + std::to_string(k * 7919 % 100003) + "'";
    return std::to_string(k);
  }
  std::string value() {
    switch (below(6)) {
      case 0: return "NULL";
      case 1: return std::to_string(static_cast<std::int64_t>(rng()));
      case 2: return std::to_string(static_cast<double>(below(100000)) / 7.0);
      case 3: return "x'" + std::string(below(8) * 2, 'a') + "'";
      case 4: return "'" + std::string(below(200), static_cast<char>('a' + below(26))) + "'";
      default: return "'v" + std::to_string(below(1000)) + "'";
    }
  }
  const char* cmp() {
    static const char* ops[] = {"<", "<=", ">", ">=", "="};
    return ops[below(5)];
  }
};

void differential(bool text_keys, int n_ops, const char* journal) {
  const std::uint64_t seed = forein::testing::test_seed(std::string("sqlite differential ") +
                                                        (text_keys ? "text" : "integer"));
  TempDir dir;
  Db db(dir.file("diff.db"));
  db.exec(std::string("PRAGMA journal_mode=") + journal);
  db.exec("PRAGMA synchronous=OFF");
  const char* kt = text_keys ? "TEXT" : "INTEGER";
  db.exec(std::string("CREATE VIRTUAL TABLE kv USING forein(k ") + kt + ", v, extra)");
  if (text_keys) {
    db.exec("CREATE TABLE ref(k TEXT PRIMARY KEY NOT NULL, v, extra) WITHOUT ROWID");
  } else {
    db.exec("CREATE TABLE ref(k INTEGER PRIMARY KEY, v, extra)");
  }
  Gen g{std::mt19937_64(seed), text_keys, text_keys ? 3000 : 4000};
  Pair p(db, "kv", "ref");
  bool in_txn = false;
  for (int i = 0; i < n_ops; ++i) {
    if (!in_txn && g.below(50) == 0) {
      db.exec("BEGIN");
      in_txn = true;
    } else if (in_txn && g.below(100) == 0) {
      db.exec(g.below(4) == 0 ? "ROLLBACK" : "COMMIT");
      in_txn = false;
    }
    if (g.below(5000) == 0) {
      const int mode = static_cast<int>(g.below(3));
      db.rows("SELECT forein_debug_hints('kv', " + std::to_string(mode) + ", " +
              std::to_string(g.rng()) + ")");
    }
    const std::string k = g.key();
    switch (g.below(20)) {
      case 0: case 1: case 2: case 3:
        p.run("INSERT OR REPLACE INTO %T VALUES (" + k + ", " + g.value() + ", " + g.value() + ")");
        break;
      case 4:
        p.run("INSERT INTO %T VALUES (" + k + ", " + g.value() + ", " + g.value() + ")");
        break;
      case 5:
        p.run("INSERT OR IGNORE INTO %T VALUES (" + k + ", " + g.value() + ", " + g.value() +
              "), (" + g.key() + ", " + g.value() + ", 1)");
        break;
      case 6:
        p.run("UPDATE %T SET v = " + g.value() + " WHERE k = " + k);
        break;
      case 7:
        p.run(std::string(g.below(2) ? "UPDATE OR REPLACE" : "UPDATE") + " %T SET k = " + g.key() +
              " WHERE k = " + k);
        break;
      case 8:
        p.run("DELETE FROM %T WHERE k = " + k);
        break;
      case 9:
        if (g.below(40) == 0) p.run("DELETE FROM %T WHERE k >= " + k + " AND k < " + g.key());
        else p.run("DELETE FROM %T WHERE k = " + g.key());
        break;
      case 10: case 11: case 12:
        p.run("SELECT k, v, extra FROM %T WHERE k = " + k);
        break;
      case 13: case 14:
        p.run("SELECT k, v FROM %T WHERE k " + std::string(g.cmp()) + " " + k + " AND k " +
              g.cmp() + " " + g.key() + " ORDER BY k" + (g.below(2) ? " DESC" : "") + " LIMIT " +
              std::to_string(1 + g.below(40)));
        break;
      case 15:
        p.run("SELECT k, extra FROM %T WHERE k BETWEEN " + k + " AND " + g.key() + " ORDER BY k" +
              (g.below(2) ? " DESC" : " ASC"));
        break;
      case 16:
        p.run("SELECT k, v FROM %T WHERE k IN (" + k + ", " + g.key() + ", " + g.key() + ", " +
              g.key() + ") ORDER BY k" + (g.below(2) ? " DESC" : ""));
        break;
      case 17:
        p.run("SELECT count(*), sum(length(v)) FROM %T WHERE k > " + k);
        break;
      case 18:
        p.run("SELECT k FROM %T ORDER BY k DESC LIMIT 5 OFFSET " + std::to_string(g.below(50)));
        break;
      default:
        p.run("SELECT k, v FROM %T WHERE k < " + k + " ORDER BY k DESC LIMIT 3");
        break;
    }
  }
  if (in_txn) db.exec("COMMIT");
  p.run("SELECT * FROM %T ORDER BY k");
  CHECK(db.rows("SELECT forein_check('kv')") == "ok");
  const std::string stats = db.rows("SELECT forein_stats('kv')");
  INFO(stats);
  CHECK(stats.find("\"hint_hits\":") != std::string::npos);
  std::cout << "sqlite differential: " << p.ops << " operations compared; stats " << stats << "\n";
  CHECK(p.ops >= static_cast<std::uint64_t>(n_ops));
}

}  // namespace

TEST_CASE("sqlite differential: INTEGER key, 100k ops, WAL", "[sqlite]") {
  differential(false, 100000, "WAL");
}

TEST_CASE("sqlite differential: TEXT key, 30k ops, rollback journal", "[sqlite]") {
  differential(true, 30000, "DELETE");
}

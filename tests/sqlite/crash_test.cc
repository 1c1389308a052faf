// Crash test: a child process runs transactions that change a forein table
// and a plain oracle table together; it is killed with SIGKILL at random
// moments. On reopen forein_check must be 'ok' and both tables equal (the
// oracle commits atomically with the forein pages, so it is exactly the
// committed state).
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <random>
#include <thread>

#include "sqlite/harness.h"
#include "support/seed.h"

using forein::sqlite_test::Db;
using forein::sqlite_test::TempDir;

namespace {

[[noreturn]] void child(const std::string& path, std::uint64_t seed) {
  try {
    Db db(path);
    std::mt19937_64 rng(seed);
    for (;;) {
      std::string sql = "BEGIN;";
      const int n = 1 + static_cast<int>(rng() % 30);
      for (int i = 0; i < n; ++i) {
        const std::string k = std::to_string(rng() % 5000);
        const std::string v = std::to_string(rng() % 1000000);
        const std::string extra = std::to_string(rng() % 300);
        switch (rng() % 4) {
          case 0:
          case 1:
            for (const char* t : {"kv", "ref"})
              sql += std::string("INSERT OR REPLACE INTO ") + t + " VALUES (" + k + ", " + v + ", zeroblob(" + extra + "));";
            break;
          case 2:
            for (const char* t : {"kv", "ref"}) sql += std::string("DELETE FROM ") + t + " WHERE k = " + k + ";";
            break;
          default:
            for (const char* t : {"kv", "ref"})
              sql += std::string("UPDATE OR REPLACE ") + t + " SET k = " + v + " % 5000 WHERE k = " + k + ";";
            break;
        }
      }
      sql += (rng() % 8 == 0) ? "ROLLBACK;" : "COMMIT;";
      db.exec(sql);
    }
  } catch (...) {
  }
  _exit(3);
}

}  // namespace

TEST_CASE("sqlite crash: SIGKILL at random points, reopen equals oracle", "[sqlite]") {
  const std::uint64_t seed = forein::testing::test_seed("sqlite crash");
  std::mt19937_64 rng(seed);
  TempDir dir;
  for (const char* mode : {"DELETE", "WAL"}) {
    const std::string path = dir.file(std::string("crash-") + mode + ".db");
    {
      Db db(path);
      db.exec(std::string("PRAGMA journal_mode=") + mode);
      db.exec("CREATE VIRTUAL TABLE kv USING forein(k INTEGER, v, extra)");
      db.exec("CREATE TABLE ref(k INTEGER PRIMARY KEY, v, extra)");
    }
    for (int round = 0; round < 25; ++round) {
      const pid_t pid = ::fork();
      REQUIRE(pid >= 0);
      if (pid == 0) child(path, rng());
      std::this_thread::sleep_for(std::chrono::milliseconds(5 + rng() % 120));
      ::kill(pid, SIGKILL);
      int status = 0;
      ::waitpid(pid, &status, 0);
      INFO(mode << " round " << round << " seed " << seed);
      REQUIRE(WIFSIGNALED(status));
      Db db(path);
      REQUIRE(db.rows("SELECT forein_check('kv')") == "ok");
      INFO("only in forein: " << db.rows("SELECT k, v, length(extra) FROM (SELECT * FROM kv EXCEPT SELECT * FROM ref)"));
      INFO("only in oracle: " << db.rows("SELECT k, v, length(extra) FROM (SELECT * FROM ref EXCEPT SELECT * FROM kv)"));
      REQUIRE(db.rows("SELECT * FROM kv ORDER BY k", true) == db.rows("SELECT * FROM ref ORDER BY k", true));
    }
    Db db(path);
    std::cout << "sqlite crash " << mode << ": " << db.rows("SELECT count(*) FROM ref") << " rows after 25 kills\n";
  }
}

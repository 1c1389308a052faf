#include <catch2/catch.hpp>
#include "sqlite/harness.h"

using forein::sqlite_test::Db;

TEST_CASE("sqlite: create insert select", "[sqlite]") {
  Db db;
  db.exec("CREATE VIRTUAL TABLE kv USING forein(k INTEGER, v, extra)");
  db.exec("INSERT INTO kv VALUES (42, 'x', 1)");
  CHECK(db.rows("SELECT v FROM kv WHERE k = 42") == "x");
}

TEST_CASE("sqlite: offload=NAME takes a registered backend", "[sqlite]") {
  Db db;
  const std::string bogus = db.try_exec("CREATE VIRTUAL TABLE a USING forein(k INTEGER, v, offload=fattree)");
  CHECK(bogus.find("unknown offload backend 'fattree'") != std::string::npos);
  CHECK(bogus.find("none, switch_lpm") != std::string::npos);
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

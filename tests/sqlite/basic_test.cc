#include <catch2/catch.hpp>
#include "sqlite/harness.h"

using forein::sqlite_test::Db;

TEST_CASE("sqlite: create insert select", "[sqlite]") {
  Db db;
  db.exec("CREATE VIRTUAL TABLE kv USING forein(k INTEGER, v, extra)");
  db.exec("INSERT INTO kv VALUES (42, 'x', 1)");
  CHECK(db.rows("SELECT v FROM kv WHERE k = 42") == "x");
}

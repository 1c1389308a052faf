// CREATE VIRTUAL TABLE ... USING forein(...): key types by SQLite's column
// affinity rules (https://www.sqlite.org/datatype3.html, 3.1), options and
// their errors.
#include <catch2/catch.hpp>

#include <string>

#include "sqlite/harness.h"

using forein::sqlite_test::Db;

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("sqlite args: a key type containing INT is an integer key", "[sqlite]") {
  const char* types[] = {"INT",   "INTEGER", "BIGINT", "TINYINT", "SMALLINT", "MEDIUMINT", "UNSIGNED BIG INT",
                         "INT2",  "INT8",    "bigint", "Integer", "FLOATING POINT"};
  for (const char* type : types) {
    INFO(type);
    Db db;
    db.exec(std::string("CREATE VIRTUAL TABLE t USING forein(k ") + type + ", v)");
    // INTEGER affinity: '42' and 7.0 become integers, 'abc' is refused.
    db.exec("INSERT INTO t VALUES ('42', 'a'), (7.0, 'b'), (-3, 'c')");
    CHECK(db.rows("SELECT k, v FROM t ORDER BY k", true) == "i-3|sc\ni7|sb\ni42|sa");
    CHECK(db.rows("SELECT v FROM t WHERE k = 42") == "a");
    CHECK(contains(db.try_exec("INSERT INTO t VALUES ('abc', 'x')"), "forein"));
    // The declared type is kept as written.
    CHECK(db.rows(std::string("SELECT type LIKE '") + type + "' FROM pragma_table_info('t') WHERE name = 'k'") ==
          "1");
  }
}

TEST_CASE("sqlite args: a key type containing CHAR, CLOB or TEXT is a text key", "[sqlite]") {
  const char* types[] = {"TEXT",     "VARCHAR(255)", "CHARACTER(20)", "VARYING CHARACTER(255)",
                         "NCHAR(55)", "NATIVE CHARACTER(70)", "NVARCHAR(100)", "CLOB", "text"};
  for (const char* type : types) {
    INFO(type);
    Db db;
    db.exec(std::string("CREATE VIRTUAL TABLE t USING forein(k ") + type + ", v)");
    // TEXT affinity: numbers are stored as text, and order as text.
    db.exec("INSERT INTO t VALUES (42, 'a'), ('b', 'b'), (100, 'c')");
    CHECK(db.rows("SELECT k, v FROM t ORDER BY k", true) == "s100|sc\ns42|sa\nsb|sb");
    CHECK(db.rows("SELECT v FROM t WHERE k = '42'") == "a");
  }
}

TEST_CASE("sqlite args: BLOB, REAL, NUMERIC and untyped keys are refused", "[sqlite]") {
  const struct {
    const char* column;
    const char* affinity;
  } cases[] = {{"k", "got no type (BLOB affinity)"},  {"k BLOB", "(BLOB affinity)"},
               {"k REAL", "(REAL affinity)"},         {"k DOUBLE PRECISION", "(REAL affinity)"},
               {"k FLOAT", "(REAL affinity)"},        {"k NUMERIC", "(NUMERIC affinity)"},
               {"k DECIMAL(10,5)", "(NUMERIC affinity)"}, {"k BOOLEAN", "(NUMERIC affinity)"},
               {"k DATETIME", "(NUMERIC affinity)"}};
  for (const auto& c : cases) {
    INFO(c.column);
    Db db;
    const std::string err = db.try_exec(std::string("CREATE VIRTUAL TABLE t USING forein(") + c.column + ", v)");
    CHECK(contains(err, "the first column 'k' is the key"));
    CHECK(contains(err, "INTEGER affinity (a name containing INT: INTEGER, INT, BIGINT, ...)"));
    CHECK(contains(err, "TEXT affinity (containing CHAR, CLOB or TEXT: TEXT, VARCHAR(n), ...)"));
    CHECK(contains(err, c.affinity));
    CHECK(db.rows("SELECT count(*) FROM sqlite_schema") == "0");
  }
}

TEST_CASE("sqlite args: options once each, unknown ones named", "[sqlite]") {
  Db db;
  CHECK(contains(db.try_exec("CREATE VIRTUAL TABLE t USING forein(k INT, v, page_size=8192, page_size=4096)"),
                 "forein: option 'page_size' given twice (page_size=4096)"));
  // Case and blanks do not make an option new.
  CHECK(contains(db.try_exec("CREATE VIRTUAL TABLE t USING forein(k INT, PAGE_SIZE=8192, page_size = 8192)"),
                 "option 'page_size' given twice"));
  CHECK(contains(db.try_exec("CREATE VIRTUAL TABLE t USING forein(k INT, offload=none, offload=none)"),
                 "option 'offload' given twice"));
  CHECK(contains(db.try_exec("CREATE VIRTUAL TABLE t USING forein(k INT, v, pagesize=8192)"),
                 "forein: unknown option 'pagesize' (the options are page_size=N and offload=NAME)"));
  CHECK(contains(db.try_exec("CREATE VIRTUAL TABLE t USING forein(k INT, page_size=1000)"),
                 "page_size must be a power of two in [4096, 32768], got '1000'"));
  CHECK(contains(db.try_exec("CREATE VIRTUAL TABLE t USING forein(k INT, v, V)"), "duplicate column name 'V'"));
  CHECK(contains(db.try_exec("CREATE VIRTUAL TABLE t USING forein(k INT, v TEXT NOT NULL)"),
                 "only a type name is allowed"));
  CHECK(contains(db.try_exec("CREATE VIRTUAL TABLE t USING forein(page_size=8192)"), "missing key column"));
  CHECK(db.rows("SELECT count(*) FROM sqlite_schema") == "0");
  // Each option once is fine.
  db.exec("CREATE VIRTUAL TABLE t USING forein(k INT, v, page_size=4096, offload=none)");
  CHECK(db.rows("SELECT json_extract(forein_stats('t'), '$.page_size')") == "4096");
}

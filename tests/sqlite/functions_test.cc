// How forein_stats, forein_check and forein_debug_hints find their table:
// SQLite's own name resolution (temp, main, attached in order), forein
// virtual tables only, and never another table's data by a name trick.
#include <catch2/catch.hpp>

#include <string>

#include "sqlite/harness.h"

using forein::sqlite_test::Db;
using forein::sqlite_test::TempDir;

namespace {

// A field of forein_stats(args).
std::string field(Db& db, const std::string& args, const std::string& name) {
  const std::string j = db.rows("SELECT forein_stats(" + args + ")");
  const std::string tag = "\"" + name + "\":";
  const auto p = j.find(tag);
  REQUIRE(p != std::string::npos);
  const auto b = p + tag.size();
  return j.substr(b, j.find_first_of(",}", b) - b);
}
std::string keys(Db& db, const std::string& args) { return field(db, args, "keys"); }

// Fills `table` (SQL text, possibly qualified) with n rows.
void fill(Db& db, const std::string& table, int n) {
  db.exec("WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < " +
          std::to_string(n) + ") INSERT INTO " + table + " SELECT i, 'v' || i FROM s");
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("sqlite functions: same name in main, an attached db and temp", "[sqlite]") {
  TempDir dir;
  Db db(dir.file("main.db"));
  db.exec("ATTACH '" + dir.file("aux1.db") + "' AS aux1");
  db.exec("ATTACH '" + dir.file("aux2.db") + "' AS Aux2");
  db.exec("CREATE VIRTUAL TABLE main.kv USING forein(k INTEGER, v)");
  db.exec("CREATE VIRTUAL TABLE aux1.kv USING forein(k INTEGER, v)");
  db.exec("CREATE VIRTUAL TABLE aux2.only2 USING forein(k INTEGER, v)");
  fill(db, "main.kv", 3);
  fill(db, "aux1.kv", 5);
  fill(db, "aux2.only2", 7);

  // Unqualified: main before attached databases; attached in attach order.
  CHECK(keys(db, "'kv'") == "3");
  CHECK(keys(db, "'KV'") == "3");  // names are case-insensitive
  CHECK(keys(db, "'only2'") == "7");
  // Qualified: exactly that schema (schema names are case-insensitive too).
  CHECK(keys(db, "'main.kv'") == "3");
  CHECK(keys(db, "'aux1.kv'") == "5");
  CHECK(keys(db, "'AUX1.Kv'") == "5");
  CHECK(keys(db, "'\"aux1\".\"kv\"'") == "5");
  CHECK(keys(db, "'[aux1].`kv`'") == "5");
  CHECK(keys(db, "'aux2.only2'") == "7");
  // The (schema, table) form takes both names literally; NULL: unqualified.
  CHECK(keys(db, "'aux1', 'kv'") == "5");
  CHECK(keys(db, "NULL, 'kv'") == "3");
  CHECK(db.rows("SELECT forein_check('aux1', 'kv'), forein_check('aux1.kv'), forein_check('kv')") ==
        "ok|ok|ok");
  // Not found where the name is not: no fallback to another schema.
  CHECK(contains(db.try_exec("SELECT forein_stats('aux2.kv')"), "no such table: aux2.kv"));
  CHECK(contains(db.try_exec("SELECT forein_stats('main.only2')"), "no such table: main.only2"));
  CHECK(contains(db.try_exec("SELECT forein_stats('nosuch.kv')"), "no such table: nosuch.kv"));
  CHECK(contains(db.try_exec("SELECT forein_stats('aux2', 'kv')"), "no such table"));

  // forein_debug_hints changes only the table it names: random hints (mode
  // 1) come with every lookup, no hints (mode 2) with none.
  CHECK(db.rows("SELECT forein_debug_hints('aux1.kv', 1, 7), forein_debug_hints('main.kv', 2)") ==
        "1|2");
  const std::string aux_hinted = field(db, "'aux1.kv'", "hinted");
  const std::string main_hinted = field(db, "'main.kv'", "hinted");
  CHECK(db.rows("SELECT v FROM aux1.kv WHERE k = 4") == "v4");
  CHECK(db.rows("SELECT v FROM main.kv WHERE k = 2") == "v2");
  CHECK(std::stoll(field(db, "'aux1.kv'", "hinted")) > std::stoll(aux_hinted));
  CHECK(field(db, "'main.kv'", "hinted") == main_hinted);
  db.exec("SELECT forein_debug_hints('aux1.kv', 0), forein_debug_hints('main.kv', 0)");

  // Once the main table is gone, the unqualified name finds the attached one.
  db.exec("DROP TABLE main.kv");
  CHECK(keys(db, "'kv'") == "5");
  CHECK(contains(db.try_exec("SELECT forein_stats('main.kv')"), "no such table: main.kv"));

  // A temp table shadows main, as in SQLite, and forein temp tables work.
  db.exec("CREATE VIRTUAL TABLE main.kv USING forein(k INTEGER, v)");
  fill(db, "main.kv", 2);
  db.exec("CREATE VIRTUAL TABLE temp.kv USING forein(k INTEGER, v)");
  fill(db, "temp.kv", 11);
  CHECK(db.rows("SELECT count(*) FROM kv") == "11");
  CHECK(keys(db, "'kv'") == "11");
  CHECK(keys(db, "'temp.kv'") == "11");
  CHECK(keys(db, "'main.kv'") == "2");
  CHECK(keys(db, "'aux1.kv'") == "5");
  // A temp object that is not a forein table shadows main's forein table:
  // SQLite would read the temp view, so the functions refuse.
  db.exec("DROP TABLE temp.kv");
  db.exec("CREATE TEMP VIEW kv AS SELECT 1 AS k");
  CHECK(contains(db.try_exec("SELECT forein_stats('kv')"), "'kv' is not a forein table"));
  CHECK(keys(db, "'main.kv'") == "2");

  // Each table's data stays its own after all this.
  CHECK(db.rows("SELECT (SELECT count(*) FROM main.kv), (SELECT count(*) FROM aux1.kv), "
                "(SELECT count(*) FROM aux2.only2)") == "2|5|7");
}

TEST_CASE("sqlite functions: same name in two attached databases", "[sqlite]") {
  TempDir dir;
  Db db;  // main is in memory and has no kv
  db.exec("ATTACH '" + dir.file("b.db") + "' AS b");
  db.exec("ATTACH '" + dir.file("a.db") + "' AS a");
  db.exec("CREATE VIRTUAL TABLE a.kv USING forein(k INTEGER, v)");
  db.exec("CREATE VIRTUAL TABLE b.kv USING forein(k INTEGER, v)");
  fill(db, "a.kv", 4);
  fill(db, "b.kv", 9);
  // Attach order, not name order: b was attached first.
  CHECK(db.rows("SELECT count(*) FROM kv") == "9");
  CHECK(keys(db, "'kv'") == "9");
  CHECK(keys(db, "'a.kv'") == "4");
  CHECK(keys(db, "'b.kv'") == "9");
  db.exec("DETACH b");
  CHECK(keys(db, "'kv'") == "4");
  CHECK(contains(db.try_exec("SELECT forein_stats('b.kv')"), "no such table: b.kv"));
}

TEST_CASE("sqlite functions: only forein tables", "[sqlite]") {
  Db db;
  db.exec("CREATE VIRTUAL TABLE kv USING forein(k INTEGER, v)");
  fill(db, "kv", 3);
  db.exec("CREATE TABLE plain(k INTEGER PRIMARY KEY, v)");
  db.exec("CREATE VIEW vw AS SELECT * FROM kv");
  // Other modules' virtual tables, also one whose arguments say forein.
  db.exec("CREATE VIRTUAL TABLE other USING rtree(id, x0, x1)");
  db.exec("CREATE VIRTUAL TABLE \"using forein\" USING rtree(forein, a, b)");
  db.exec("CREATE INDEX plain_v ON plain(v)");

  for (const char* name : {"kv_pages", "kv_meta", "plain", "vw", "other", "other_node",
                           "using forein", "main.kv_pages", "main.vw"}) {
    INFO(name);
    for (const char* fn : {"forein_stats('%s')", "forein_check('%s')", "forein_debug_hints('%s', 1)"}) {
      std::string call = fn;
      call.replace(call.find("%s"), 2, name);
      const std::string err = db.try_exec("SELECT " + call);
      INFO(call << ": " << err);
      CHECK(contains(err, std::string("'") + name + "' is not a forein table"));
    }
  }
  for (const char* name : {"nosuch", "plain_v", "sqlite_schema", "main.nosuch", "temp.kv"}) {
    INFO(name);
    CHECK(contains(db.try_exec(std::string("SELECT forein_stats('") + name + "')"),
                   std::string("no such table: ") + name));
  }
  // Malformed names are refused, not guessed at.
  for (const char* name : {"", ".kv", "kv.", "main.kv.x", "\"kv", "[kv", "\"kv\"x", "a.b.c"}) {
    INFO(name);
    CHECK(contains(db.try_exec(std::string("SELECT forein_stats('") + name + "')"),
                   "cannot parse table name"));
  }
  CHECK(contains(db.try_exec("SELECT forein_stats(NULL)"), "table name expected"));
  CHECK(keys(db, "'kv'") == "3");
}

TEST_CASE("sqlite functions: odd names", "[sqlite]") {
  TempDir dir;
  Db db;
  db.exec("ATTACH '" + dir.file("x.db") + "' AS \"we.ird\"");
  // A table whose name holds a dot, in main; and b in an attached schema a.
  db.exec("CREATE VIRTUAL TABLE \"a.b\" USING forein(k INTEGER, v)");
  db.exec("ATTACH '" + dir.file("a.db") + "' AS a");
  db.exec("CREATE VIRTUAL TABLE a.b USING forein(k INTEGER, v)");
  fill(db, "\"a.b\"", 2);
  fill(db, "a.b", 6);
  CHECK(keys(db, "'\"a.b\"'") == "2");       // quoted: the name holding a dot
  CHECK(keys(db, "'main.\"a.b\"'") == "2");
  CHECK(keys(db, "'[a.b]'") == "2");
  CHECK(keys(db, "'a.b'") == "6");           // bare: schema a, table b
  CHECK(keys(db, "'main', 'a.b'") == "2");   // the literal form needs no quotes
  CHECK(keys(db, "'a', 'b'") == "6");

  // Quotes inside names, and a schema whose name holds a dot.
  db.exec("CREATE VIRTUAL TABLE \"we.ird\".\"q\"\"t'x\" USING forein(k TEXT, v)");
  db.exec("INSERT INTO \"we.ird\".\"q\"\"t'x\" VALUES ('a', 1), ('b', 2), ('c', 3), ('d', 4)");
  CHECK(keys(db, "'\"we.ird\".\"q\"\"t''x\"'") == "4");
  CHECK(keys(db, "'we.ird', 'q\"t''x'") == "4");
  CHECK(keys(db, "'q\"t''x'") == "4");  // bare: any character but a dot
  CHECK(keys(db, "'`q\"t''x`'") == "4");
  CHECK(contains(db.try_exec("SELECT forein_stats('we.ird.q')"), "cannot parse table name"));

  // A forein table named like another table's shadow cannot be made (the
  // name is taken), and a table whose own name ends in _pages reads its
  // own pages, not those of the table it sounds like.
  CHECK(!db.try_exec("CREATE VIRTUAL TABLE \"a.b_pages\" USING forein(k INTEGER, v)").empty());
  db.exec("CREATE VIRTUAL TABLE t USING forein(k INTEGER, v)");
  db.exec("CREATE VIRTUAL TABLE t_pages_pages USING forein(k INTEGER, v)");
  fill(db, "t", 8);
  CHECK(keys(db, "'t_pages_pages'") == "0");
  CHECK(keys(db, "'t'") == "8");
  CHECK(contains(db.try_exec("SELECT forein_stats('t_pages')"), "'t_pages' is not a forein table"));
  CHECK(db.rows("SELECT forein_check('t_pages_pages'), forein_check('t'), forein_check('\"a.b\"'), "
                "forein_check('a.b')") == "ok|ok|ok|ok");

  // Renamed tables resolve under their new name only.
  db.exec("ALTER TABLE a.b RENAME TO \"c.d\"");
  CHECK(keys(db, "'a.\"c.d\"'") == "6");
  CHECK(contains(db.try_exec("SELECT forein_stats('a.b')"), "no such table: a.b"));
  CHECK(keys(db, "'\"a.b\"'") == "2");
}

// Links the static forein_sqlite library, registers the module on a
// connection and runs the statements from docs/sqlite.md.
//   forein_sqlite_example [database-file]   (default: in memory)
#include <sqlite3.h>

#include <cstdio>
#include <cstring>

#include "forein/sqlite.h"

namespace {

int print_row(void*, int n, char** vals, char** names) {
  for (int i = 0; i < n; ++i) std::printf("%s%s=%s", i ? " " : "", names[i], vals[i] ? vals[i] : "NULL");
  std::printf("\n");
  return 0;
}

bool run(sqlite3* db, const char* sql) {
  char* err = nullptr;
  std::printf("> %s\n", sql);
  if (sqlite3_exec(db, sql, print_row, nullptr, &err) != SQLITE_OK) {
    std::fprintf(stderr, "error: %s\n", err ? err : "?");
    sqlite3_free(err);
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  sqlite3* db = nullptr;
  if (sqlite3_open(argc > 1 ? argv[1] : ":memory:", &db) != SQLITE_OK) return 1;
  if (forein_sqlite_register(db) != SQLITE_OK) {
    std::fprintf(stderr, "forein_sqlite_register failed\n");
    return 1;
  }
  const char* script[] = {
      "CREATE VIRTUAL TABLE kv USING forein(k INTEGER, v, extra)",
      "INSERT INTO kv VALUES (42, 'x', 1), (7, 'seven', NULL), (99, 'late', 2.5)",
      "SELECT v FROM kv WHERE k = 42",
      "SELECT k FROM kv WHERE k BETWEEN 10 AND 99 ORDER BY k DESC",
      "UPDATE kv SET k = 43 WHERE k = 42",
      "DELETE FROM kv WHERE k = 7",
      "SELECT * FROM kv ORDER BY k",
      "SELECT forein_check('kv') AS check_result",
      "SELECT forein_stats('kv') AS stats",
  };
  for (const char* sql : script) {
    if (!run(db, sql)) return 1;
  }
  sqlite3_close(db);
  std::printf("example: ok\n");
  return 0;
}

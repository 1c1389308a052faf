#!/usr/bin/env bash
# What `make install` ships for the SQLite variant, used as an application
# would: installs the sqlite component into a temporary prefix, builds the
# example (C++) and a C program against it with pkg-config alone, runs
# them, and loads the installed extension into the sqlite3 CLI; the
# example also with the link line docs/sqlite.md gives without pkg-config.
#   install_test.sh BUILD_DIR EXAMPLE_CC
# Environment: CXX, CC (compilers), SQLITE3 (the CLI).
set -euo pipefail
build=$1
example=$2
sqlite3_bin=${SQLITE3:-sqlite3}
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT

cmake --install "$build" --component sqlite --prefix "$prefix/usr" >/dev/null
for f in include/forein/sqlite.h lib/libforein_sqlite.a lib/forein/forein.so lib/pkgconfig/forein-sqlite.pc; do
  [ -f "$prefix/usr/$f" ] || { echo "not installed: $f"; exit 1; }
done
# The archive links alone: nothing of the build tree is on any path below.
export PKG_CONFIG_PATH=$prefix/usr/lib/pkgconfig
pc() { pkg-config "$@" forein-sqlite; }
echo "link line: $(pc --cflags --libs)"

# shellcheck disable=SC2046  # pkg-config's flags are words
"${CXX:-c++}" -o "$prefix/example" "$example" $(pc --cflags --libs)
"$prefix/example" | tee "$prefix/example.out"
grep -qx "example: ok" "$prefix/example.out"
# The link line docs/sqlite.md gives for use without pkg-config.
"${CXX:-c++}" -o "$prefix/example2" "$example" -I"$prefix/usr/include" -L"$prefix/usr/lib" -lforein_sqlite \
  -lsqlite3 -pthread
"$prefix/example2" | grep -qx "example: ok"

# A C program links with cc and the static link line.
cat >"$prefix/c.c" <<'C'
#include <stdio.h>
#include <forein/sqlite.h>
int main(void) {
  sqlite3* db;
  char* err = NULL;
  if (sqlite3_open(":memory:", &db) != SQLITE_OK || forein_sqlite_register(db) != SQLITE_OK) return 1;
  if (sqlite3_exec(db, "CREATE VIRTUAL TABLE t USING forein(k BIGINT, v);"
                       "INSERT INTO t VALUES (1, 'one');", NULL, NULL, &err) != SQLITE_OK) {
    fprintf(stderr, "%s\n", err);
    return 1;
  }
  puts("c: ok");
  return sqlite3_close(db);
}
C
# shellcheck disable=SC2046
"${CC:-cc}" -o "$prefix/c" "$prefix/c.c" $(pc --cflags --libs --static)
"$prefix/c" | grep -qx "c: ok"

# The installed extension in the CLI (path without suffix, as documented).
out=$(cd "$prefix" && "$sqlite3_bin" -bail :memory: <<SQL
.load $prefix/usr/lib/forein/forein
CREATE VIRTUAL TABLE kv USING forein(k INTEGER, v);
INSERT INTO kv VALUES (42, 'x');
SELECT v FROM kv WHERE k = 42;
SELECT forein_check('kv');
SQL
)
[ "$out" = "x
ok" ] || { echo "unexpected CLI output: $out"; exit 1; }
echo "install: ok"

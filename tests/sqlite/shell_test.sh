#!/usr/bin/env bash
# Runs the real sqlite3 CLI with `.load` on the loadable extension.
#   shell_test.sh <path-to-forein.so-without-suffix>
set -euo pipefail
ext="$1"
sqlite3_bin="${SQLITE3:-sqlite3}"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
db="$dir/shell.db"

out="$("$sqlite3_bin" "$db" <<SQL
.load $ext
CREATE VIRTUAL TABLE kv USING forein(k INTEGER, v, extra);
INSERT INTO kv VALUES (42, 'x', 1), (10, 'ten', 2), (99, 'n', 3), (5, 'five', 4);
SELECT v FROM kv WHERE k = 42;
SELECT k FROM kv WHERE k BETWEEN 10 AND 99 ORDER BY k DESC;
SELECT forein_check('kv');
SQL
)"
expected="x
99
42
10
ok"
if [ "$out" != "$expected" ]; then
  echo "unexpected output:"; echo "$out"; exit 1
fi

# A second process sees the committed rows; stats are JSON with the fields.
out2="$("$sqlite3_bin" "$db" ".load $ext" "SELECT count(*) FROM kv;" "SELECT forein_stats('kv');")"
echo "$out2"
echo "$out2" | head -1 | grep -qx 4
for f in lookups hint_hits fallbacks installed_entries capacity_entries; do
  echo "$out2" | grep -q "\"$f\":" || { echo "forein_stats lacks $f"; exit 1; }
done

# Errors are reported, and change nothing.
if "$sqlite3_bin" "$db" ".load $ext" "INSERT INTO kv VALUES (NULL, 'n', 0);" 2>"$dir/err"; then
  echo "NULL key accepted"; exit 1
fi
grep -q "NOT NULL" "$dir/err"
[ "$("$sqlite3_bin" "$db" ".load $ext" "SELECT count(*) FROM kv;")" = 4 ]
echo "shell test: ok"

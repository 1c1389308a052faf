#!/usr/bin/env bash
# Opening a large forein table (docs/sqlite-benchmark.md, "Opening a 10M-row
# table"): the first query of a fresh sqlite3 process on a table of ROWS
# rows (default 10,000,000), with hints off and on (the default), REPS
# times each (default 5). Before each run the OS page cache is dropped when this runs
# as root and /proc/sys/vm/drop_caches is writable ("cold"); otherwise the
# file stays cached ("warm") and the report says so. The time is the
# sqlite3 shell's own `.timer` for the first statement (connect: meta page
# and root read, descent, answer), after the extension is loaded.
#
#   bash tests/bench/run_sqlite_open_bench.sh <build-dir>
#
# ROWS, REPS and DIR (where the database is made and kept for reruns,
# default /tmp) change the defaults. Builds nothing.
set -euo pipefail

if [ $# -lt 1 ]; then
  echo "usage: $0 <build-dir>" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
ext="$build/sqlite_vfs/forein"
if [ ! -f "$ext.so" ]; then
  echo "run_sqlite_open_bench: $ext.so not found; build it first (make)" >&2
  exit 1
fi
rows=${ROWS:-10000000}
reps=${REPS:-5}
dir=${DIR:-/tmp}
db="$dir/forein-open-bench-$rows.db"
sqlite=${SQLITE3:-sqlite3}

echo "== SQLite variant: opening a $rows-row table"
echo "date:    $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
echo "machine: $(uname -srm), $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "commit:  $(git -C "$(dirname "$0")" rev-parse --short HEAD 2>/dev/null || echo none)"
echo "command: ROWS=$rows REPS=$reps DIR=$dir bash $0 $1"

if [ ! -f "$db" ]; then
  echo "making $db ..."
  start=$(date +%s)
  "$sqlite" "$db" ".load $ext" \
    "CREATE VIRTUAL TABLE fr USING forein(k INTEGER, v);" \
    "INSERT INTO fr WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < $rows)
     SELECT x, 'value-' || x FROM c;" >/dev/null
  echo "  made in $(( $(date +%s) - start )) s"
fi
echo "file:    $(du -h "$db" | cut -f1), $("$sqlite" "$db" "SELECT count(*) FROM fr_pages;") pages"

cold=no
drop() {
  sync
  if [ "$(id -u)" = 0 ] && { echo 3 > /proc/sys/vm/drop_caches; } 2>/dev/null; then
    cold=yes
  fi
}

# One fresh process: load the extension, then time the first query.
# Prints the statements' real time in ms (with hints off, the switch-off
# call, which opens the table, plus the query) and the pages read.
first_query() {
  local hints=$1 key=$2
  local setup=""
  [ "$hints" = off ] && setup="SELECT forein_debug_hints('fr', 2);"
  # On standard input: the shell prints .timer lines only for statements
  # it reads there, not for those given as arguments.
  printf '%s\n' ".load $ext" ".timer on" "$setup" "SELECT v FROM fr WHERE k = $key;" ".timer off" \
    "SELECT json_extract(forein_stats('fr'), '\$.pages_read');" | "$sqlite" "$db" 2>&1 |
    awk '/^Run Time/ { t += $4 * 1000; next } NF { last = $0 } END { printf "%.1f %s\n", t, last }'
}

for hints in off on; do
  times=()
  for i in $(seq "$reps"); do
    drop
    key=$(( (RANDOM * 32768 + RANDOM) % rows + 1 ))
    read -r ms pages <<<"$(first_query "$hints" "$key")"
    times+=("$ms")
    echo "  hints $hints, run $i: ${ms} ms, $pages pages read"
  done
  median=$(printf '%s\n' "${times[@]}" | sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }')
  echo "hints $hints: median ${median} ms over $reps runs (page cache dropped: $cold)"
done

#!/usr/bin/env bash
# Runs the SQLite variant benchmark (docs/sqlite-benchmark.md) with its
# defaults (1M rows, 5 repetitions); the per-cell CSV goes to
# <build-dir>/sqlite_bench.csv (the medians are in the report and in
# docs/sqlite-benchmark.md). Builds nothing: `make` has already built
# <build-dir>.
#
#   bash tests/bench/run_sqlite_bench.sh <build-dir> [extra sqlite_bench args]
#   bash tests/bench/run_sqlite_bench.sh <build-dir> --multiconn [sqlite_multiconn args]
#
# --multiconn runs the many-connections benchmark instead (readers beside a
# steady one-row writer, WAL and rollback journal; docs/sqlite-benchmark.md,
# "Many connections"), its CSV in <build-dir>/sqlite_multiconn.csv.
#
# FOREIN_SEED picks the keys, values and probe sequences (default 42, so
# runs are comparable); extra arguments go to the benchmark after the
# defaults (e.g. --rows 200000 for a quick look).
set -euo pipefail

if [ $# -lt 1 ]; then
  echo "usage: $0 <build-dir> [sqlite_bench args]" >&2
  exit 2
fi
build=$1
shift

root=$(cd "$(dirname "$0")/../.." && pwd)
case "$build" in
  /*) ;;
  *) build="$PWD/$build" ;;
esac
name=sqlite_bench
if [ "${1:-}" = --multiconn ]; then
  name=sqlite_multiconn
  shift
fi
bench="$build/tests/bench/$name"
if [ ! -x "$bench" ]; then
  echo "run_sqlite_bench: $bench not found; build it first (make)" >&2
  exit 1
fi

cd "$root"
csv="$build/$name.csv"
export FOREIN_SEED=${FOREIN_SEED:-42}

compiler=unknown
if [ -f "$build/CMakeCache.txt" ]; then
  cxx=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt")
  btype=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt")
  if [ -n "$cxx" ]; then
    compiler="$("$cxx" --version 2>/dev/null | head -1) ($cxx, CMAKE_BUILD_TYPE=${btype:-none})"
  fi
fi
commit=$(git rev-parse --short HEAD 2>/dev/null || echo "none (no commits)")
if [ -n "$(git status --porcelain 2>/dev/null | head -1)" ]; then
  commit="$commit, working tree modified"
fi

echo "== SQLite variant benchmark ($name)"
echo "date:     $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
echo "machine:  $(uname -srm), $(nproc) cores online"
echo "cpu:      $(lscpu 2>/dev/null | sed -n 's/^Model name:[[:space:]]*//p' | head -1)"
echo "memory:"
free -g | sed 's/^/  /'
echo "load:     $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"
echo "compiler: $compiler"
echo "sqlite:   $(sqlite3 --version 2>/dev/null | cut -d' ' -f1-2 || echo unknown)"
echo "commit:   $commit"
echo "command:  FOREIN_SEED=$FOREIN_SEED $bench --csv $csv $*"
echo

rc=0
"$bench" --csv "$csv" "$@" || rc=$?
echo
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"
exit $rc

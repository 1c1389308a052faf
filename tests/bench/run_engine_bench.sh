#!/usr/bin/env bash
# Runs the engine lookup benchmark (docs/engine-benchmark.md) with its
# defaults and writes docs/bench/engine_lookup.csv and, for readers with
# writers, docs/bench/engine_mixed.csv. Builds nothing: `make
# bench` has already built <build-dir>.
#
#   bash tests/bench/run_engine_bench.sh <build-dir> [extra engine_lookup_bench args]
#
# FOREIN_SEED picks the keys and probe sequences (default 42, so runs are
# comparable); extra arguments go to the benchmark after the defaults.
# BENCH_OUT=<dir> writes the CSVs there instead of docs/bench.
set -euo pipefail

if [ $# -lt 1 ]; then
  echo "usage: $0 <build-dir> [engine_lookup_bench args]" >&2
  exit 2
fi
build=$1
shift

root=$(cd "$(dirname "$0")/../.." && pwd)
case "$build" in
  /*) ;;
  *) build="$PWD/$build" ;;
esac
bench="$build/tests/bench/engine_lookup_bench"
if [ ! -x "$bench" ]; then
  echo "run_engine_bench: $bench not found; build it first (make bench)" >&2
  exit 1
fi

cd "$root"
outdir=${BENCH_OUT:-docs/bench}  # BENCH_OUT: elsewhere (the smoke test)
mkdir -p "$outdir"
csv=$outdir/engine_lookup.csv
mixed_csv=$outdir/engine_mixed.csv
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

echo "== engine lookup benchmark"
echo "date:     $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
echo "machine:  $(uname -srm), $(nproc) cores online"
echo "cpu:      $(lscpu 2>/dev/null | sed -n 's/^Model name:[[:space:]]*//p' | head -1)"
echo "memory:"
free -g | sed 's/^/  /'
echo "load:     $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"
echo "compiler: $compiler"
echo "commit:   $commit"
echo "command:  FOREIN_SEED=$FOREIN_SEED $bench --csv $csv --mixed-csv $mixed_csv $*"
echo

rc=0
"$bench" --csv "$csv" --mixed-csv "$mixed_csv" "$@" || rc=$?
echo
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"
exit $rc

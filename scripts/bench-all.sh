#!/usr/bin/env bash
# bench-all.sh: every benchmark that docs/BENCHMARKS.md reports, in one
# run, then the report (make bench-all; docs/BENCHMARKS.md, "Rerun it").
#
#   bash scripts/bench-all.sh [--build DIR] [--out DIR] [--stages LIST] [--smoke]
#
# Stages, in this order (--stages picks some, comma-separated):
#   engine       backend_compare: every backend and the oracle on one tree
#                (1M and 10M keys, uniform and Zipf 0.5/0.9/0.99)
#   pg-backends  run_pg_offload_bench.sh: 1M nested-loop probes and pgbench
#                -S per backend against btree (private cluster)
#   testbed      scripts/testbed.sh per backend (root: TAP ports)
#   sysbench     run_sysbench.sh: oltp_point_select/read_only/read_write,
#                10 tables x 1M rows, forein vs btree
#   pgbench      run_pg_bench.sh at scale 20 and 100: -S, TPC-B-like, -N
#   report       scripts/bench_report.py: tables, plots, docs/BENCHMARKS.md
# Each stage writes under OUT (default build/bench-all); the report copies
# the CSVs and plots to docs/bench/all/ and rewrites the generated blocks
# of docs/BENCHMARKS.md. --smoke runs every stage at toy size (about two
# minutes, CI's check that the scripts still run) and writes its report
# under OUT only, never into docs/. The whole run takes about 80 minutes
# on the 2-core machine of docs/BENCHMARKS.md.
#
# Needs the programs built (make) and the extension installed (make
# install-pg); `make bench-all` does both. Exit 1 if a stage fails (the
# others still run), 2 on a bad flag.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$ROOT/build
OUT=""
STAGES=engine,pg-backends,testbed,sysbench,pgbench,report
SMOKE=0

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
bad() {
	echo "bench-all: $*" >&2
	echo "bench-all: see 'scripts/bench-all.sh --help'" >&2
	exit 2
}
while [ $# -gt 0 ]; do
	case $1 in
		--build | --out | --stages)
			[ $# -ge 2 ] || bad "$1 needs a value"
			case $1 in
				--build) BUILD=$(cd "$2" 2>/dev/null && pwd) || bad "--build: no folder $2" ;;
				--out) OUT=$2 ;;
				--stages) STAGES=$2 ;;
			esac
			shift
			;;
		--smoke) SMOKE=1 ;;
		-h | --help) usage; exit 0 ;;
		*) bad "unknown argument '$1'" ;;
	esac
	shift
done
IFS=, read -r -a stage_list <<<"$STAGES"
for s in "${stage_list[@]}"; do
	case $s in engine | pg-backends | testbed | sysbench | pgbench | report) ;;
		*) bad "--stages: unknown stage '$s' (engine, pg-backends, testbed, sysbench, pgbench, report)" ;;
	esac
done
OUT=${OUT:-$BUILD/bench-all}
mkdir -p "$OUT" || bad "--out: cannot create $OUT"
OUT=$(cd "$OUT" && pwd)
wants() { [[ ",$STAGES," == *",$1,"* ]]; }

# The backends an index can use, from the registry (backend_compare
# --help lists them), so a new backend joins without editing this file.
backends=$("$BUILD/tests/bench/backend_compare" --help 2>&1 | sed -n 's/^ *--backends //p' | tr -d ' ' | tr ',' ' ')
[ -n "$backends" ] || { echo "bench-all: $BUILD/tests/bench/backend_compare not built (make)" >&2; exit 1; }
hinting=$(tr ' ' '\n' <<<"$backends" | grep -vx none | paste -sd, -)

COMMIT="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo none)$([ -z "$(git -C "$ROOT" status --porcelain 2>/dev/null | head -1)" ] || echo '+modified')"
{
	echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "commit: $COMMIT"
	echo "machine: $(uname -srm), $(nproc) cores, $(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -1), $(free -g | awk '/^Mem:/ {print $2}') GiB"
	echo "postgresql: $(pg_config --version 2>/dev/null || echo none)"
	echo "sysbench: $(sysbench --version 2>/dev/null || echo none)"
	echo "command: scripts/bench-all.sh --stages $STAGES$([ "$SMOKE" = 0 ] || echo ' --smoke')"
	echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$OUT/machine.txt"
cat "$OUT/machine.txt"

failed=()
stage() {
	local name=$1
	shift
	echo
	echo "=== $name: $*"
	local t0=$SECONDS
	if "$@" >"$OUT/$name.log" 2>&1; then
		echo "=== $name: done in $((SECONDS - t0)) s (log: $OUT/$name.log)"
	else
		echo "=== $name: FAILED after $((SECONDS - t0)) s; last lines of $OUT/$name.log:" >&2
		tail -n 20 "$OUT/$name.log" >&2
		failed+=("$name")
	fi
	echo "$name,$((SECONDS - t0)),$COMMIT,$(date -u '+%Y-%m-%d %H:%M UTC')" >>"$OUT/durations.csv"
}
# expect STAGE FILE: a stage that exits 0 must also have left its results.
expect() {
	if [[ " ${failed[*]} " != *" $1 "* ]] && [ "$(wc -l <"$2" 2>/dev/null || echo 0)" -lt 2 ]; then
		echo "=== $1: FAILED: it left no results in $2" >&2
		failed+=("$1")
	fi
}
# One row per stage run: a later run of some stages adds rows, and the
# report shows each stage's last run with the commit it measured. A smoke
# run keeps nothing of earlier ones.
[ "$SMOKE" = 0 ] || rm -f "$OUT/durations.csv"
[ -f "$OUT/durations.csv" ] || echo "stage,seconds,commit,finished" >"$OUT/durations.csv"

if [ "$SMOKE" = 1 ]; then
	engine_args=(--keys 20000 --zipf 0,0.99 --ops 20000 --reps 1 --by-level)
	pg_backends_env=(ROWS=20000 PROBES=20000 REPS=1 SCALE=1 PGBENCH_SECONDS=2)
	testbed_args=(--keys 20000 --servers 2 --seconds 1 --rounds 1)
	sysbench_env=(SMOKE=1)
	pgbench_scales=(1)
	pgbench_env=(REPS=1 PGBENCH_SECONDS=2 PROBES=10000 INSERT_ROWS=10000 SHARED_BUFFERS=128MB)
else
	engine_args=(--keys 1000000,10000000 --zipf 0,0.5,0.9,0.99 --ops 1000000 --reps 5)
	pg_backends_env=(ROWS=1000000 PROBES=1000000 REPS=3 SCALE=10 PGBENCH_SECONDS=20)
	testbed_args=(--seconds 10 --rounds 3)
	sysbench_env=(TABLES=10 TABLE_SIZE=1000000 RUN_SECONDS=60 REPS=3)
	pgbench_scales=(20 100)
	pgbench_env=(REPS=3 PGBENCH_SECONDS=30)
fi

if wants engine; then
	mkdir -p "$OUT/engine"
	stage engine "$BUILD/tests/bench/backend_compare" "${engine_args[@]}" --csv "$OUT/engine/backend_compare.csv"
	expect engine "$OUT/engine/backend_compare.csv"
fi
if wants pg-backends; then
	stage pg-backends env "${pg_backends_env[@]}" BACKENDS="$backends" \
		bash "$ROOT/tests/bench/run_pg_offload_bench.sh" "$OUT/pg-backends"
	expect pg-backends "$OUT/pg-backends/pg_offload_bench.csv"
fi
if wants testbed && { [ "$(id -u)" -ne 0 ] || [ ! -c /dev/net/tun ] || ! ip netns list >/dev/null 2>&1; }; then
	echo
	echo "=== testbed: SKIPPED: forein-switch's TAP ports need root, /dev/net/tun and 'ip netns' (iproute2: the testbed runs in a network namespace of its own); the report says it did not run" >&2
	rm -rf "$OUT/testbed"
elif wants testbed; then
	rm -rf "$OUT/testbed"
	stage testbed bash "$ROOT/scripts/testbed.sh" --build "$BUILD" --backend "$hinting" \
		"${testbed_args[@]}" --results "$OUT/testbed"
	expect testbed "$OUT/testbed/summary.csv"
fi
if wants sysbench; then
	stage sysbench env "${sysbench_env[@]}" bash "$ROOT/tests/bench/run_sysbench.sh" "$OUT/sysbench"
	expect sysbench "$OUT/sysbench/sysbench.csv"
fi
if wants pgbench; then
	for scale in "${pgbench_scales[@]}"; do
		stage "pgbench-s$scale" env "${pgbench_env[@]}" SCALE="$scale" \
			bash "$ROOT/tests/bench/run_pg_bench.sh" "$OUT/pgbench-s$scale"
		expect "pgbench-s$scale" "$OUT/pgbench-s$scale/pg_bench.csv"
	done
fi
if wants report; then
	report_args=("$OUT")
	[ "$SMOKE" = 1 ] || report_args+=(--docs "$ROOT/docs")
	stage report python3 "$ROOT/scripts/bench_report.py" "${report_args[@]}"
	expect report "$OUT/report/papers.md"
	[ "$SMOKE" = 1 ] || echo "report: $ROOT/docs/BENCHMARKS.md, plots and CSVs in $ROOT/docs/bench/all/"
fi

echo
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/machine.txt"
if [ ${#failed[@]} -gt 0 ]; then
	echo "bench-all: failed stages: ${failed[*]} (logs in $OUT)" >&2
	exit 1
fi
echo "bench-all: every stage ran; results in $OUT"

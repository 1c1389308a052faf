#!/usr/bin/env bash
# smoke_scripts.sh: one benchmark script of tests/bench/ at toy size (CI's
# check that the scripts still run: benchmarks are not part of CI, their
# smoke runs are). Each writes under OUT, never into docs/, must exit 0
# and must leave its results file with at least one row.
#
#   bash tests/bench/smoke_scripts.sh BUILD OUT NAME
#
# NAME: engine, sqlite, sqlite-multiconn, sqlite-open, forein-experiments,
# fattree-experiments, fpga-experiments, dpa-experiments, pg-build, pg-shards,
# dpdk-speedup, switch-forwarding, switch-delta. bench-all's scripts
# (pg-backends, testbed, sysbench, pgbench) are the ctest
# bench_all_smoke. Exit 77 (skipped) where the script cannot run here:
# no DPDK build (forein-switch) or, for switch-delta, not root or no
# /dev/net/tun.
set -euo pipefail

[ $# -eq 3 ] || { echo "usage: $0 BUILD OUT NAME" >&2; exit 2; }
BUILD=$1
OUT=$2
NAME=$3
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=$ROOT/tests/bench
rm -rf "$OUT"
mkdir -p "$OUT"
export BENCH_OUT=$OUT FOREIN_SEED=${FOREIN_SEED:-42}

skip() {
	echo "smoke_scripts: $NAME skipped: $*"
	exit 77
}
need_dpdk() { [ -x "$BUILD/net/switch/forein-switch" ] || [ -x "$BUILD/forein-switch" ] || skip "forein-switch not built (libdpdk-dev)"; }

case $NAME in
	engine)
		bash "$B/run_engine_bench.sh" "$BUILD" --keys 10000 --reps 1 --probes 20000 --warmup 1000 --mixed 0
		result=$OUT/engine_lookup.csv ;;
	sqlite)
		bash "$B/run_sqlite_bench.sh" "$BUILD" --rows 5000 --point-ops 2000 --range-ops 200 --reps 1 \
			--dir "$OUT" --csv "$OUT/sqlite_bench.csv"
		result=$OUT/sqlite_bench.csv ;;
	sqlite-multiconn)
		bash "$B/run_sqlite_bench.sh" "$BUILD" --multiconn --rows 5000 --readers 1,2 --seconds 0.3 --rounds 1 \
			--dir "$OUT" --csv "$OUT/sqlite_multiconn.csv"
		result=$OUT/sqlite_multiconn.csv ;;
	sqlite-open)
		ROWS=20000 REPS=1 DIR=$OUT bash "$B/run_sqlite_open_bench.sh" "$BUILD" | tee "$OUT/report.txt"
		result=$OUT/report.txt ;;
	forein-experiments)
		bash "$B/run_forein_experiments.sh" "$BUILD" --quick
		result=$OUT/fig9.csv ;;
	fattree-experiments)
		bash "$B/run_fattree_experiments.sh" "$BUILD" --quick
		result=$(ls "$OUT"/*.csv | head -1) ;;
	fpga-experiments)
		bash "$B/run_fpga_experiments.sh" "$BUILD" --quick
		result=$(ls "$OUT"/*.csv | head -1) ;;
	dpa-experiments)
		bash "$B/run_dpa_experiments.sh" "$BUILD" --smoke
		result=$(ls "$OUT"/*.csv | head -1) ;;
	pg-build)
		ROWS=10000 REPS=1 bash "$B/run_pg_build_bench.sh" "$OUT"
		result=$OUT/pg_build_bench.csv ;;
	pg-shards)
		SCALE=1 REPS=1 PGBENCH_SECONDS=1 SHARED_BUFFERS=128MB bash "$B/run_pg_shards_bench.sh" "$OUT"
		result=$OUT/pg_shards_bench.csv ;;
	dpdk-speedup)
		need_dpdk
		KEYS=10000 SECS=1 ROUNDS=1 bash "$B/run_dpdk_speedup.sh" "$BUILD" | tee "$OUT/report.txt"
		result=$BUILD/dpdk-speedup/runs.csv ;;
	switch-forwarding)
		need_dpdk
		KEYS=10000 SECS=1 REPS=1 DOC=- bash "$B/run_switch_forwarding.sh" "$BUILD" | tee "$OUT/report.txt"
		result=$BUILD/switch-forwarding/runs.csv ;;
	switch-delta)
		need_dpdk
		{ [ "$(id -u)" -eq 0 ] && [ -c /dev/net/tun ]; } || skip "needs root and /dev/net/tun"
		bash "$B/run_switch_delta.sh" --build "$BUILD" --keys 10000 --seconds 1 --rounds 1 --levels 4 \
			--experiments latency --results "$OUT/results"
		result=$OUT/results/summary.csv ;;
	*)
		echo "smoke_scripts: unknown script '$NAME'" >&2
		exit 2 ;;
esac

rows=$(wc -l <"$result" 2>/dev/null || echo 0)
if [ "$rows" -lt 2 ]; then
	echo "smoke_scripts: $NAME left no results in $result" >&2
	exit 1
fi
echo "smoke_scripts: $NAME ran; $result has $rows lines"

#!/usr/bin/env bash
# run_sysbench.sh: sysbench's OLTP read tests (Debian's sysbench 1.0.20,
# pgsql driver) on forein against PostgreSQL's btree, in one private
# cluster, measured in the same run, alternating, medians reported.
#
#   bash tests/bench/run_sysbench.sh [OUTDIR]     (default build/sysbench)
#
# Two databases hold the same sysbench tables (sbtest1..N, made once by
# `sysbench ... prepare` and copied): in sb_btree they keep sysbench's
# PRIMARY KEY (id), in sb_forein that key is replaced by
#   CREATE UNIQUE INDEX sbtestN_id_forein ON sbtestN USING forein (id)
# (the secondary btree index on k stays in both). Each test runs REPS
# times on both databases, the order alternating per repetition, before
# the next test starts: the read-only tests measure the tables as loaded
# in every repetition, and oltp_read_write, which leaves dead rows and
# index entries behind, comes last. Then oltp_read_only runs again on the
# tables oltp_read_write changed, after a VACUUM ANALYZE of both databases,
# as "oltp_read_only_after_rw" (AFTER_WRITE=0 skips this). A CHECKPOINT
# before every run keeps the previous run's dirty pages out of it.
# sysbench's statements are prepared, and PostgreSQL switches a prepared
# statement to a generic plan after five executions: the script checks
# that the forein runs scanned the forein indexes and never a whole table
# (pg_stat_user_tables / pg_stat_user_indexes), and fails otherwise. The
# server gets forein.max_indexes = 32 (default 8): with the default, two of
# ten indexes would hold no offload slot and get no hints; the script
# fails if any forein index ends without an active hint table.
# shared_buffers = 8GB: both databases' tables and indexes (2.5 GB each at
# 10 x 1M rows) fit, so neither run evicts the other's pages; with 4 GB the
# forein runs, whose database was warmed second, read tens of thousands of
# blocks back from the kernel per run where btree's read none.  Each run's
# buffer reads and hits (pg_stat_database) and the id indexes' size after
# it are in the CSVs.
# max_wal_size = 3GB (default 1GB): oltp_read_write otherwise forces a
# checkpoint every few seconds, whose writes spill into the next runs.
#
# After a test's separate runs, it runs REPS times more on both databases
# at once, THREADS/2 threads each (the same total): the machine's other
# load falls on both alike, where separate runs on a shared machine differ
# by up to 10% from load alone (CONCURRENT=0 skips this).
#
# Needs the extension installed (make install), postgresql-15 and sysbench.
# Writes OUTDIR/sysbench.csv (every alternating run),
# OUTDIR/sysbench_concurrent.csv (every concurrent one) and prints summary
# tables that docs/BENCHMARKS.md quotes. Knobs (environment): TABLES (10),
# TABLE_SIZE (1000000), RUN_SECONDS (60), REPS (3), THREADS (2), TESTS
# ("oltp_point_select oltp_read_only oltp_read_write"), CONCURRENT (1),
# AFTER_WRITE (1),
# SHARED_BUFFERS (8GB; needs that much memory free).
# SMOKE=1 is a quick check (1 table of 10,000 rows, 2-second runs, one
# repetition) for CI.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${1:-$ROOT/build/sysbench}
if [ "${SMOKE:-0}" = 1 ]; then
	: "${TABLES:=1}" "${TABLE_SIZE:=10000}" "${RUN_SECONDS:=2}" "${REPS:=1}" "${SHARED_BUFFERS:=128MB}"
fi
TABLES=${TABLES:-10}
TABLE_SIZE=${TABLE_SIZE:-1000000}
RUN_SECONDS=${RUN_SECONDS:-60}
REPS=${REPS:-3}
THREADS=${THREADS:-2}
TESTS=${TESTS:-oltp_point_select oltp_read_only oltp_read_write}
CONCURRENT=${CONCURRENT:-1}
AFTER_WRITE=${AFTER_WRITE:-1}
SHARED_BUFFERS=${SHARED_BUFFERS:-8GB}
CLUSTER=$OUT/cluster
CSV=$OUT/sysbench.csv
CCSV=$OUT/sysbench_concurrent.csv

command -v sysbench >/dev/null || {
	echo "run_sysbench: sysbench not found (apt-get install sysbench)" >&2
	exit 1
}
mkdir -p "$OUT"
# shellcheck source=tests/bench/pg_bench_cluster.sh
source "$ROOT/tests/bench/pg_bench_cluster.sh"
pg_bench_cluster_start "$CLUSTER" \
	--set shared_buffers="$SHARED_BUFFERS" --set max_parallel_maintenance_workers=0 \
	--set max_parallel_workers_per_gather=0 --set forein.sample_rate=0.01 \
	--set jit=off --set max_connections=50 --set forein.max_indexes=32 \
	--set max_wal_size=3GB --set checkpoint_timeout=30min

psqldb() {
	local db=$1
	shift
	psql -X -q -v ON_ERROR_STOP=1 -At "$@" "$db"
}
sb() {
	local db=$1 test=$2
	shift 2
	sysbench "$test" --db-driver=pgsql --pgsql-host="$PGHOST" --pgsql-port="$PGPORT" \
		--pgsql-user="$PGUSER" --pgsql-db="$db" --tables="$TABLES" --table-size="$TABLE_SIZE" "$@"
}

echo "== setup: $TABLES tables x $TABLE_SIZE rows" >&2
psqldb postgres -c "CREATE DATABASE sb_btree"
sb sb_btree oltp_common prepare >"$OUT/prepare.log" 2>&1
psqldb sb_btree -c "VACUUM ANALYZE"
psqldb postgres -c "CREATE DATABASE sb_forein TEMPLATE sb_btree"
psqldb sb_forein -c "CREATE EXTENSION forein"
for i in $(seq 1 "$TABLES"); do
	psqldb sb_forein -c "ALTER TABLE sbtest$i DROP CONSTRAINT sbtest${i}_pkey" \
		-c "CREATE UNIQUE INDEX sbtest${i}_id_forein ON sbtest$i USING forein (id)"
done
psqldb sb_forein -c "VACUUM ANALYZE"
# Warm both databases' tables and indexes into shared_buffers.
for db in sb_btree sb_forein; do
	for i in $(seq 1 "$TABLES"); do
		psqldb "$db" -c "SET enable_seqscan = off" -c "SELECT count(c) FROM sbtest$i WHERE id > 0" >/dev/null
	done
done
# Install each forein index's hint table now (the background worker would
# within seconds), so every run measures hints from its first query.
for i in $(seq 1 "$TABLES"); do
	psqldb sb_forein -c "SELECT forein_refresh('sbtest${i}_id_forein')" >/dev/null
done

# scans DB: "seq_scan idx_scan_on_id" summed over the sbtest tables.
scans() {
	local idx_name
	if [ "$1" = sb_forein ]; then idx_name="'sbtest' || n || '_id_forein'"; else idx_name="'sbtest' || n || '_pkey'"; fi
	psqldb "$1" -F ' ' -c "SELECT coalesce(sum(t.seq_scan), 0), coalesce(sum(i.idx_scan), 0)
		FROM generate_series(1, $TABLES) n
		JOIN pg_stat_user_tables t ON t.relname = 'sbtest' || n
		JOIN pg_stat_user_indexes i ON i.relname = t.relname AND i.indexrelname = $idx_name"
}

# id_index_bytes DB: the id indexes' size summed over the sbtest tables
# (dead entries that deletion has not yet removed grow it)
id_index_bytes() {
	local idx_name
	if [ "$1" = sb_forein ]; then idx_name="'sbtest' || n || '_id_forein'"; else idx_name="'sbtest' || n || '_pkey'"; fi
	psqldb "$1" -c "SELECT sum(pg_relation_size(($idx_name)::regclass)) FROM generate_series(1, $TABLES) n"
}

# buffers DB: "blks_read blks_hit" of DB (pg_stat_database): reads that
# missed shared_buffers, and hits.
buffers() {
	psqldb postgres -F ' ' -c "SELECT blks_read, blks_hit FROM pg_stat_database WHERE datname = '$1'"
}

# settled DB: waits until sysbench's backends on DB have exited; a backend
# flushes its statistics counters before it leaves pg_stat_activity.
settled() {
	local n
	for _ in $(seq 1 600); do
		n=$(psqldb postgres -c "SELECT count(*) FROM pg_stat_activity WHERE datname = '$1' AND pid <> pg_backend_pid()")
		[ "$n" = 0 ] && return 0
		psqldb postgres -c "SELECT pg_sleep(0.05)" >/dev/null
	done
	echo "run_sysbench: sysbench's connections to $1 did not close" >&2
	return 1
}

# run_once DB TEST REP THREADS LOG CSV [LABEL]: one sysbench run; checks
# that it kept to the id index and appends its row, named LABEL (default
# TEST), to CSV (false if it failed)
run_once() {
	local db=$1 test=$2 rep=$3 threads=$4 log=$5 csv=$6 label=${7:-$2} before after tps qps seq idx
	local buf_before buf_after reads hits idx_bytes
	before=$(scans "$db")
	buf_before=$(buffers "$db")
	sb "$db" "$test" --threads="$threads" --time="$RUN_SECONDS" --report-interval=0 run >"$log" 2>&1 || {
		echo "run_sysbench: $test on $db failed (see $log):" >&2
		tail -5 "$log" >&2
		return 1
	}
	settled "$db"
	after=$(scans "$db")
	buf_after=$(buffers "$db")
	reads=$(($(cut -d' ' -f1 <<<"$buf_after") - $(cut -d' ' -f1 <<<"$buf_before")))
	hits=$(($(cut -d' ' -f2 <<<"$buf_after") - $(cut -d' ' -f2 <<<"$buf_before")))
	tps=$(sed -n 's/^ *transactions: *[0-9]* *(\([0-9.]*\) per sec.*/\1/p' "$log")
	qps=$(sed -n 's/^ *queries: *[0-9]* *(\([0-9.]*\) per sec.*/\1/p' "$log")
	seq=$(($(cut -d' ' -f1 <<<"$after") - $(cut -d' ' -f1 <<<"$before")))
	idx=$(($(cut -d' ' -f2 <<<"$after") - $(cut -d' ' -f2 <<<"$before")))
	idx_bytes=$(id_index_bytes "$db")
	echo "$label,${db#sb_},$rep,$tps,$qps,$seq,$idx,$reads,$hits,$idx_bytes" >>"$csv"
	echo "   rep $rep $label ${db#sb_}: $tps tps, $qps qps, $seq seq scans, $idx id-index scans, $reads buffer reads, $hits hits, id indexes $idx_bytes bytes" >&2
	if [ "$seq" != 0 ] || [ "$idx" = 0 ]; then
		echo "run_sysbench: $test on $db did not keep to the id index ($seq sequential scans, $idx index scans)" >&2
		return 1
	fi
}

# measure TEST [LABEL]: TEST's separate runs, then its concurrent ones
measure() {
	local test=$1 label=${2:-$1} rep order db half pid_b pid_f
	for rep in $(seq 1 "$REPS"); do
		order="sb_btree sb_forein"
		[ $((rep % 2)) = 0 ] && order="sb_forein sb_btree"
		for db in $order; do
			psqldb postgres -c CHECKPOINT
			run_once "$db" "$test" "$rep" "$THREADS" "$OUT/${label}_${db}_$rep.log" "$CSV" "$label" || status=1
		done
	done
	[ "$CONCURRENT" = 1 ] || return 0
	half=$(((THREADS + 1) / 2))
	echo "== $label: both databases at once, $half thread(s) each" >&2
	for rep in $(seq 1 "$REPS"); do
		psqldb postgres -c CHECKPOINT
		# scans() counts per database, so the two runs' checks do not mix
		run_once sb_btree "$test" "$rep" "$half" "$OUT/${label}_concurrent_btree_$rep.log" "$CCSV" "$label" &
		pid_b=$!
		run_once sb_forein "$test" "$rep" "$half" "$OUT/${label}_concurrent_forein_$rep.log" "$CCSV" "$label" &
		pid_f=$!
		wait "$pid_b" || status=1
		wait "$pid_f" || status=1
	done
}

header="test,index,rep,tps,qps,seq_scans,id_index_scans,blks_read,blks_hit,id_index_bytes"
echo "$header" >"$CSV"
if [ "$CONCURRENT" = 1 ]; then echo "$header" >"$CCSV"; fi
status=0
wrote=0
for test in $TESTS; do
	measure "$test"
	if [ "$test" = oltp_read_write ]; then wrote=1; fi
done
if [ "$AFTER_WRITE" = 1 ] && [ "$wrote" = 1 ]; then
	echo "== oltp_read_only after oltp_read_write (VACUUM ANALYZE first)" >&2
	for db in sb_btree sb_forein; do
		psqldb "$db" -c "VACUUM ANALYZE"
	done
	measure oltp_read_only oltp_read_only_after_rw
fi

# every forein index held a slot and gave hints
psqldb sb_forein -F '|' -c "SELECT 'sbtest' || n || '_id_forein', s.status, s.lookups, s.hint_hits
	FROM generate_series(1, $TABLES) n, forein_stats(('sbtest' || n || '_id_forein')::regclass) s" |
	while IFS='|' read -r idx st lookups hits; do
		echo "   $idx: $st, $hits of $lookups lookups hinted" >&2
		if [ "$st" != active ] || [ "$hits" = 0 ]; then
			echo "run_sysbench: $idx gave no hints (status $st)" >&2
			exit 1
		fi
	done || status=1

echo "== summary (medians of $REPS; $TABLES tables x $TABLE_SIZE rows, $THREADS threads, ${RUN_SECONDS}s runs)" >&2
python3 - "$CSV" "$CCSV" <<'EOF'
import csv, os, statistics, sys
for path, title in ((sys.argv[1], "alternating"), (sys.argv[2], "concurrent")):
    if not os.path.exists(path):
        continue
    rows = list(csv.DictReader(open(path)))
    tests = list(dict.fromkeys(r["test"] for r in rows))
    print(f"{title}:")
    print("| test | btree tps | forein tps | forein / btree |")
    print("| --- | ---: | ---: | ---: |")
    for t in tests:
        med = {}
        for index in ("btree", "forein"):
            vals = [float(r["tps"]) for r in rows if r["test"] == t and r["index"] == index and r["tps"]]
            med[index] = statistics.median(vals) if vals else float("nan")
        print(f"| {t} | {med['btree']:.1f} | {med['forein']:.1f} | {med['forein'] / med['btree']:.3f} |")
EOF
exit $status

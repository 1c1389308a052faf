#!/usr/bin/env bash
# run_pg_bench.sh: forein against PostgreSQL's btree in one private cluster,
# both indexes measured in the same run, alternating, medians reported.
#
#   bash tests/bench/run_pg_bench.sh [OUTDIR]     (default build/pg-bench)
#
# Needs the extension installed (make install) and postgresql-15. Writes
# OUTDIR/pg_bench.csv (every repetition) and prints a summary table that
# docs/pg-benchmark.md quotes. Knobs (environment): SCALE (20), REPS (5),
# PROBES (1000000), PGBENCH_SECONDS (20), INSERT_ROWS (1000000),
# SHARED_BUFFERS (4GB).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${1:-$ROOT/build/pg-bench}
SCALE=${SCALE:-20}
REPS=${REPS:-5}
PROBES=${PROBES:-1000000}
PGBENCH_SECONDS=${PGBENCH_SECONDS:-20}
INSERT_ROWS=${INSERT_ROWS:-1000000}
# 4GB: both accounts copies and their indexes (3 GB at scale 100) stay in
# shared_buffers, so lookups measure the indexes, not reads from the
# kernel's page cache (with 1 GB most -S lookups at scale 100 read their
# heap page back from the kernel, the same cost for both indexes).
SHARED_BUFFERS=${SHARED_BUFFERS:-4GB}
CLUSTER=$OUT/cluster
CSV=$OUT/pg_bench.csv

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd) # absolute: the interleaved runs work in a subdirectory
# shellcheck source=tests/bench/pg_bench_cluster.sh
source "$ROOT/tests/bench/pg_bench_cluster.sh"
pg_bench_cluster_start "$CLUSTER" \
	--set shared_buffers="$SHARED_BUFFERS" --set max_parallel_maintenance_workers=0 \
	--set max_parallel_workers_per_gather=0 --set forein.sample_rate=0.01 \
	--set jit=off

psqlq() { psql -X -q -v ON_ERROR_STOP=1 -At "$@" postgres; }
# ms SQL...: wall milliseconds of one statement, from psql's \timing
ms() {
	psql -X -q -v ON_ERROR_STOP=1 postgres -c '\timing on' -c "SET max_parallel_workers_per_gather = 0" \
		-c "SET enable_hashjoin = off" -c "SET enable_mergejoin = off" -c "SET enable_seqscan = off" \
		-c "SET enable_bitmapscan = off" -c "$1" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | tail -1
}

echo "metric,index,rep,value" > "$CSV"
record() { echo "$1,$2,$3,$4" >> "$CSV"; }

echo "== setup: pgbench scale $SCALE (keys on branches and tellers; accounts copied without)" >&2
psqlq -c "CREATE EXTENSION IF NOT EXISTS forein"
pgbench -q -i -s "$SCALE" -I dtgvp postgres >/dev/null 2>&1
psqlq -c "DROP TABLE IF EXISTS acc_b, acc_f, probes, ins_b, ins_f" \
	-c "CREATE TABLE acc_b AS SELECT * FROM pgbench_accounts" \
	-c "CREATE TABLE acc_f AS SELECT * FROM pgbench_accounts" \
	-c "CREATE TABLE probes AS SELECT (random() * ($SCALE * 100000 - 1))::int + 1 AS id FROM generate_series(1, $PROBES)"

echo "== build time and size ($REPS reps each, alternating)" >&2
for rep in $(seq 1 "$REPS"); do
	psqlq -c "DROP INDEX IF EXISTS acc_b_aid, acc_f_aid"
	record build_ms btree "$rep" "$(ms "CREATE INDEX acc_b_aid ON acc_b USING btree (aid)")"
	record build_ms forein "$rep" "$(ms "CREATE INDEX acc_f_aid ON acc_f USING forein (aid)")"
done
record size_pages btree 1 "$(psqlq -c "SELECT pg_relation_size('acc_b_aid') / 8192")"
record size_pages forein 1 "$(psqlq -c "SELECT pg_relation_size('acc_f_aid') / 8192")"
psqlq -c "VACUUM ANALYZE acc_b" -c "VACUUM ANALYZE acc_f" -c "VACUUM ANALYZE probes"

echo "== probes: $PROBES random point probes, nested loop, index-only and heap" >&2
psqlq -c "SELECT forein_refresh('acc_f_aid')" >/dev/null 2>&1 || echo "   (forein_refresh failed: no hints)" >&2
for t in b f; do  # warm both indexes and heaps
	ms "SELECT sum(a.abalance) FROM probes p JOIN acc_$t a ON a.aid = p.id" >/dev/null
done
for rep in $(seq 1 "$REPS"); do
	record probe_ios_ms btree "$rep" "$(ms "SELECT count(*) FROM probes p JOIN acc_b a ON a.aid = p.id")"
	record probe_ios_ms forein "$rep" "$(ms "SELECT count(*) FROM probes p JOIN acc_f a ON a.aid = p.id")"
	record probe_heap_ms btree "$rep" "$(ms "SELECT sum(a.abalance) FROM probes p JOIN acc_b a ON a.aid = p.id")"
	record probe_heap_ms forein "$rep" "$(ms "SELECT sum(a.abalance) FROM probes p JOIN acc_f a ON a.aid = p.id")"
done
psql -X postgres -c "SELECT * FROM forein_stats('acc_f_aid')" >&2 || true

echo "== pgbench -M prepared -c 2 -j 2 -T $PGBENCH_SECONDS on pgbench_accounts.aid: -S, TPC-B-like, -N" >&2
# The two copies take turns being pgbench_accounts (a rename is instant), so
# runs alternate without rebuilding an index between them; one untimed run
# each warms caches first. The TPC-B-like runs update both copies'
# balances alike (same mix, same duration); pgbench_history grows.
psqlq -c "DROP TABLE pgbench_accounts"
for mode in S tpcb N; do
	case $mode in
		S) flags=(-S) metric=pgbench_S_tps ;;
		tpcb) flags=() metric=pgbench_tpcb_tps ;;
		N) flags=(-N) metric=pgbench_N_tps ;;
	esac
	for rep in $(seq 0 "$REPS"); do
		order="btree forein"
		[ $((rep % 2)) = 1 ] && order="forein btree"
		for kind in $order; do
			t=acc_${kind:0:1}
			# Each timed run starts from the same state, whichever copy ran
			# before: the run before left dead versions and unpruned pages
			# in its copy, the shared tables and pgbench_history, and dirty
			# buffers everywhere. With nothing vacuumed the first run of each
			# pair was the slower, whichever index it had (TPC-B-like at
			# scale 20: all three repetitions, twice); with only the copy
			# about to run vacuumed, the faster (all three, once).
			[ "$rep" = 0 ] || psqlq -c "VACUUM acc_b, acc_f, pgbench_tellers, pgbench_branches, pgbench_history" \
				-c CHECKPOINT
			psqlq -c "ALTER TABLE $t RENAME TO pgbench_accounts"
			tps=$(pgbench -n "${flags[@]}" -M prepared -c 2 -j 2 -T "$([ "$rep" = 0 ] && echo 3 || echo "$PGBENCH_SECONDS")" postgres 2>/dev/null |
				sed -n 's/^tps = \([0-9.]*\).*/\1/p' | tail -1)
			psqlq -c "ALTER TABLE pgbench_accounts RENAME TO $t"
			[ "$rep" = 0 ] || record "$metric" "$kind" "$rep" "$tps"
		done
	done
done

# The TPC-B-like and -N runs left dead row versions, unpruned pages and
# dirty buffers in both copies: vacuum and checkpoint here, so that
# autovacuum and the checkpointer do not work through them during the
# interleaved runs (which would slow both scripts alike and blur the ratio).
psqlq -c "VACUUM ANALYZE acc_b" -c "VACUUM ANALYZE acc_f" -c "CHECKPOINT"

# Interleaved runs: one pgbench run whose two scripts (the same statements
# on each copy) are picked at random per transaction, so both indexes meet
# the same machine load at the same moments; each script's mean
# transaction time (sampled --log) is the measure. Separate runs on a
# shared machine differ by up to 10% from load alone (TPC-B-like: 20-30%);
# this ratio does not.
MIXDIR=$OUT/mixed
# interleaved NAME METRIC: one pgbench run of $OUT/NAME_btree.sql and
# $OUT/NAME_forein.sql picked at random per transaction (after an untimed
# warm-up run); records each script's mean transaction time per repetition.
interleaved() {
	local name=$1 metric=$2 rep
	for rep in $(seq 0 "$REPS"); do
		rm -rf "$MIXDIR" && mkdir -p "$MIXDIR"
		(cd "$MIXDIR" && pgbench -n -M prepared -c 2 -j 2 -T "$([ "$rep" = 0 ] && echo 3 || echo "$PGBENCH_SECONDS")" \
			-l --sampling-rate=0.2 -f "$OUT/${name}_btree.sql" -f "$OUT/${name}_forein.sql" postgres >/dev/null 2>&1)
		[ "$rep" = 0 ] && continue
		# log line: client transaction latency_us script_no epoch_s epoch_us
		cat "$MIXDIR"/pgbench_log.* | awk '{s[$4] += $3; n[$4]++} END {printf "%.3f %.3f\n", s[0] / n[0], s[1] / n[1]}' |
			while read -r b_us f_us; do
				record "$metric" btree "$rep" "$b_us"
				record "$metric" forein "$rep" "$f_us"
			done
	done
	rm -rf "$MIXDIR"
}

echo "== pgbench -S interleaved: both copies in one run, mean transaction time per index" >&2
for kind in btree forein; do
	printf '\\set aid random(1, %d)\nSELECT abalance FROM acc_%s WHERE aid = :aid;\n' \
		"$((SCALE * 100000))" "${kind:0:1}" >"$OUT/select_$kind.sql"
done
interleaved select pgbench_S_mixed_us

# TPC-B-like the same way: pgbench's built-in script on either copy of
# the accounts; tellers, branches and history are shared, so both scripts
# meet the same row lock waits too.
echo "== pgbench TPC-B-like interleaved: both copies in one run, mean transaction time per index" >&2
for kind in btree forein; do
	cat >"$OUT/tpcb_$kind.sql" <<SQL
\\set aid random(1, $((SCALE * 100000)))
\\set bid random(1, $SCALE)
\\set tid random(1, $((SCALE * 10)))
\\set delta random(-5000, 5000)
BEGIN;
UPDATE acc_${kind:0:1} SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM acc_${kind:0:1} WHERE aid = :aid;
UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;
UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
END;
SQL
done
interleaved tpcb pgbench_tpcb_mixed_us

echo "== insert throughput: $INSERT_ROWS random keys into an indexed empty table" >&2
for rep in $(seq 1 "$REPS"); do
	for kind in btree forein; do
		t=ins_${kind:0:1}
		for logging in UNLOGGED LOGGED; do
			psqlq -c "DROP TABLE IF EXISTS $t" -c "CREATE $([ $logging = UNLOGGED ] && echo UNLOGGED) TABLE $t (k int8, v int4)" \
				-c "CREATE INDEX ON $t USING $kind (k)"
			metric=$([ $logging = UNLOGGED ] && echo insert_ms || echo insert_logged_ms)
			record "$metric" "$kind" "$rep" "$(ms "INSERT INTO $t SELECT (random() * 1e12)::int8, i FROM generate_series(1, $INSERT_ROWS) i")"
		done
	done
done

echo "== summary (medians; ratio = forein relative to btree, >1 is better for forein)" >&2
python3 - "$CSV" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
def med(metric, index):
    vals = [float(r["value"]) for r in rows if r["metric"] == metric and r["index"] == index and r["value"]]
    return statistics.median(vals) if vals else float("nan")
higher_better = {"pgbench_S_tps", "pgbench_tpcb_tps", "pgbench_N_tps"}
print("| metric | btree | forein | forein vs btree |")
print("| --- | ---: | ---: | ---: |")
for metric in ["build_ms", "size_pages", "probe_ios_ms", "probe_heap_ms", "pgbench_S_tps", "pgbench_S_mixed_us", "pgbench_tpcb_tps", "pgbench_tpcb_mixed_us", "pgbench_N_tps", "insert_ms", "insert_logged_ms"]:
    b, f = med(metric, "btree"), med(metric, "forein")
    ratio = f / b if metric in higher_better else b / f
    note = "speedup" if metric not in ("size_pages", "build_ms") else ("size ratio (forein/btree)" if metric == "size_pages" else "time ratio (forein/btree)")
    if metric in ("size_pages", "build_ms"):
        ratio = f / b
    print(f"| {metric} | {b:.1f} | {f:.1f} | {ratio:.3f} ({note}) |")
EOF

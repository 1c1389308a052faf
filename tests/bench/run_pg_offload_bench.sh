#!/usr/bin/env bash
# run_pg_offload_bench.sh: nested-loop point probes against PostgreSQL's
# btree and forein indexes with each offload backend, in one private
# cluster, interleaved per repetition, medians reported. Separates what the
# hints give (forein with a backend vs forein with offload = 'none', same
# tree shape) from the rest (forein 'none' vs btree). Then pgbench -S
# (-M prepared, 2 clients) on pgbench_accounts with aid indexed by btree
# and by forein with each backend, the copies taking turns (a rename) in
# every repetition.
#
#   bash tests/bench/run_pg_offload_bench.sh [OUTDIR]   (default build/pg-offload-bench)
#
# Needs the extension installed (make install). Knobs (environment): ROWS
# (2000000), PROBES (1000000), REPS (5), BACKENDS ("none switch_lpm fattree
# fpga dpa"), SCALE (10: pgbench's scale, 100,000 accounts each),
# PGBENCH_SECONDS (20; 0 skips pgbench). Writes OUTDIR/pg_offload_bench.csv
# (metric,index,rep,value: probe_ms and pgbench_S_tps, every repetition)
# and prints a table.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${1:-$ROOT/build/pg-offload-bench}
ROWS=${ROWS:-2000000}
PROBES=${PROBES:-1000000}
REPS=${REPS:-5}
BACKENDS=${BACKENDS:-none switch_lpm fattree fpga dpa}
SCALE=${SCALE:-10}
PGBENCH_SECONDS=${PGBENCH_SECONDS:-20}
CLUSTER=$OUT/cluster
CSV=$OUT/pg_offload_bench.csv
mkdir -p "$OUT"
# shellcheck source=tests/bench/pg_bench_cluster.sh
source "$ROOT/tests/bench/pg_bench_cluster.sh"
pg_bench_cluster_start "$CLUSTER" \
	--set shared_buffers=1GB --set max_parallel_workers_per_gather=0 \
	--set max_parallel_maintenance_workers=0 --set jit=off --set forein.max_indexes=32
psqlq() { psql -X -q -v ON_ERROR_STOP=1 -At "$@" postgres; }
# ms SQL: wall milliseconds of one statement (psql's \timing), nested loop forced
ms() {
	psql -X -q -v ON_ERROR_STOP=1 postgres -c '\timing on' -c "SET enable_hashjoin = off" \
		-c "SET enable_mergejoin = off" -c "SET enable_seqscan = off" \
		-c "SET enable_bitmapscan = off" -c "$1" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | tail -1
}

echo "== machine: $(uname -srm), $(nproc) cores, $(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -1)"
echo "== date: $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$ROOT" rev-parse --short HEAD), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== command: ROWS=$ROWS PROBES=$PROBES REPS=$REPS BACKENDS=\"$BACKENDS\" SCALE=$SCALE PGBENCH_SECONDS=$PGBENCH_SECONDS bash tests/bench/run_pg_offload_bench.sh"
psqlq -c "CREATE EXTENSION IF NOT EXISTS forein"
indexes="btree"
psqlq -c "CREATE TABLE probes AS SELECT (random() * ($ROWS - 1))::int8 + 1 AS id FROM generate_series(1, $PROBES)"
psqlq -c "CREATE TABLE t_btree (k int8, v int8)" \
	-c "INSERT INTO t_btree SELECT g, g FROM generate_series(1, $ROWS) g" \
	-c "CREATE INDEX ON t_btree USING btree (k)"
for b in $BACKENDS; do
	psqlq -c "CREATE TABLE t_$b AS SELECT * FROM t_btree" \
		-c "CREATE INDEX t_${b}_k ON t_$b USING forein (k) WITH (offload = '$b')"
	indexes="$indexes $b"
done
psqlq -c "VACUUM ANALYZE"
for b in $BACKENDS; do
	psqlq -c "SELECT forein_refresh('t_${b}_k')" >/dev/null
done
echo "metric,index,rep,value" > "$CSV"
query() { echo "SELECT count(*), sum(t.v) FROM probes p JOIN t_$1 t ON t.k = p.id"; }
# One warm pass each, and the answers must agree.
want=$(psqlq -c "$(query btree)")
for b in $BACKENDS; do
	got=$(psqlq -c "$(query "$b")")
	if [ "$got" != "$want" ]; then
		echo "run_pg_offload_bench: offload '$b' answered $got, btree $want" >&2
		exit 1
	fi
done
for b in $BACKENDS; do psqlq -c "SELECT forein_refresh('t_${b}_k')" >/dev/null; done
for rep in $(seq 1 "$REPS"); do
	for i in $indexes; do
		echo "probe_ms,$i,$rep,$(ms "$(query "$i")")" >> "$CSV"
	done
done
if [ "$PGBENCH_SECONDS" != 0 ]; then
	echo "== pgbench -S -M prepared -c 2 -j 2 -T $PGBENCH_SECONDS, scale $SCALE, per index" >&2
	pgbench -q -i -s "$SCALE" -I dtgv postgres >/dev/null 2>&1
	psqlq -c "ALTER TABLE pgbench_accounts RENAME TO acc_btree" \
		-c "CREATE INDEX acc_btree_aid ON acc_btree USING btree (aid)"
	for b in $BACKENDS; do
		psqlq -c "CREATE TABLE acc_$b AS SELECT * FROM acc_btree" \
			-c "CREATE INDEX acc_${b}_aid ON acc_$b USING forein (aid) WITH (offload = '$b')"
	done
	psqlq -c "VACUUM ANALYZE"
	for b in $BACKENDS; do psqlq -c "SELECT forein_refresh('acc_${b}_aid')" >/dev/null; done
	# Repetition 0 is a short untimed warm-up of every copy; the order
	# rotates from repetition to repetition.
	set -- $indexes
	n=$#
	for rep in $(seq 0 "$REPS"); do
		for j in $(seq 0 $((n - 1))); do
			k=$(( (rep + j) % n + 1 ))
			i=${!k}
			psqlq -c "ALTER TABLE acc_$i RENAME TO pgbench_accounts"
			tps=$(pgbench -n -S -M prepared -c 2 -j 2 -T "$([ "$rep" = 0 ] && echo 2 || echo "$PGBENCH_SECONDS")" postgres 2>/dev/null |
				sed -n 's/^tps = \([0-9.]*\).*/\1/p' | tail -1)
			psqlq -c "ALTER TABLE pgbench_accounts RENAME TO acc_$i"
			[ -n "$tps" ] || { echo "run_pg_offload_bench: pgbench -S on acc_$i failed" >&2; exit 1; }
			[ "$rep" = 0 ] || echo "pgbench_S_tps,$i,$rep,$tps" >> "$CSV"
		done
	done
	# Every copy must have been read through its own index.
	unused=$(psqlq -c "SELECT string_agg(indexrelname, ', ') FROM pg_stat_user_indexes WHERE indexrelname LIKE 'acc\_%\_aid' AND idx_scan = 0")
	[ -z "$unused" ] || { echo "run_pg_offload_bench: pgbench never used $unused" >&2; exit 1; }
fi

echo
printf '%-12s %12s %10s %12s %12s\n' index "median ms" "vs btree" "vs none" "hint hits"
median() { grep "^${2:-probe_ms},$1," "$CSV" | cut -d, -f4 | sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
base=$(median btree)
none=""
case " $BACKENDS " in *" none "*) none=$(median none) ;; esac
for i in $indexes; do
	m=$(median "$i")
	vs_none="-"
	[ -n "$none" ] && [ "$i" != btree ] && vs_none=$(awk -v a="$none" -v b="$m" 'BEGIN {printf "%.3f", a / b}')
	hits="-"
	[ "$i" != btree ] && hits=$(psqlq -c "SELECT hint_hits || '/' || lookups FROM forein_stats('t_${i}_k')")
	printf '%-12s %12s %10s %12s %12s\n' "$i" "$m" "$(awk -v a="$base" -v b="$m" 'BEGIN {printf "%.3f", a / b}')" "$vs_none" "$hits"
done
echo "(vs btree, vs none: speed ratios of medians, >1 = faster; CSV: $CSV)"
if [ "$PGBENCH_SECONDS" != 0 ]; then
	echo
	printf '%-12s %12s %10s %12s\n' index "median tps" "vs btree" "vs none"
	base=$(median btree pgbench_S_tps)
	[ -z "$none" ] || none=$(median none pgbench_S_tps)
	for i in $indexes; do
		m=$(median "$i" pgbench_S_tps)
		vs_none="-"
		[ -n "$none" ] && [ "$i" != btree ] && vs_none=$(awk -v a="$none" -v b="$m" 'BEGIN {printf "%.3f", b / a}')
		printf '%-12s %12s %10s %12s\n' "$i" "$m" "$(awk -v a="$base" -v b="$m" 'BEGIN {printf "%.3f", b / a}')" "$vs_none"
	done
	echo "(pgbench -S tps: vs btree, vs none >1 = faster)"
fi

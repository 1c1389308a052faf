#!/usr/bin/env bash
# run_pg_build_bench.sh: CREATE INDEX time, forein against btree, for int8,
# text (md5 strings) and uuid keys at several table sizes, in one private
# cluster, both access methods measured in the same run, alternating (the
# order flips every repetition), medians reported.
#
#   bash tests/bench/run_pg_build_bench.sh [OUTDIR]   (default build/pg-build-bench)
#
# Needs the extension installed (make install) and postgresql-15.  Writes
# OUTDIR/pg_build_bench.csv (every repetition) and prints the table that
# docs/pg-benchmark.md quotes.  Knobs (environment): ROWS ("1000000
# 5000000"), REPS (5), MWM (maintenance_work_mem, 64MB: the default).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${1:-$ROOT/build/pg-build-bench}
ROWS=${ROWS:-1000000 5000000}
REPS=${REPS:-5}
MWM=${MWM:-64MB}
CLUSTER=$OUT/cluster
CSV=$OUT/pg_build_bench.csv

mkdir -p "$OUT"
# shellcheck source=tests/bench/pg_bench_cluster.sh
source "$ROOT/tests/bench/pg_bench_cluster.sh"
# forein builds serially (docs/postgresql.md), so btree gets no workers either
pg_bench_cluster_start "$CLUSTER" \
	--set shared_buffers=1GB --set max_parallel_maintenance_workers=0 \
	--set maintenance_work_mem="$MWM" --set jit=off

psqlq() { psql -X -q -v ON_ERROR_STOP=1 -At "$@" postgres; }
# build_ms TABLE AM: wall milliseconds of CREATE INDEX, from psql's \timing
build_ms() {
	psql -X -q -v ON_ERROR_STOP=1 postgres -c '\timing on' \
		-c "CREATE INDEX bench_ix ON $1 USING $2 (k)" -c "DROP INDEX bench_ix" |
		sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | head -1
}

echo "rows,type,index,rep,ms" > "$CSV"
psqlq -c "CREATE EXTENSION IF NOT EXISTS forein"
for n in $ROWS; do
	echo "== $n rows: int8 (scrambled), text (md5), uuid (from md5)" >&2
	psqlq -c "DROP TABLE IF EXISTS k_int8, k_text, k_uuid" \
		-c "CREATE TABLE k_int8 AS SELECT (hashint8(i) % 1000000000000)::int8 AS k FROM generate_series(1, $n) i" \
		-c "CREATE TABLE k_text AS SELECT md5(i::text) AS k FROM generate_series(1, $n) i" \
		-c "CREATE TABLE k_uuid AS SELECT md5(i::text || 'u')::uuid AS k FROM generate_series(1, $n) i" \
		-c "VACUUM ANALYZE k_int8" -c "VACUUM ANALYZE k_text" -c "VACUUM ANALYZE k_uuid"
	for rep in $(seq 1 "$REPS"); do
		order="btree forein"
		[ $((rep % 2)) = 0 ] && order="forein btree"
		for type in int8 text uuid; do
			for am in $order; do
				echo "$n,$type,$am,$rep,$(build_ms "k_$type" "$am")" >> "$CSV"
			done
		done
	done
done
psqlq -c "DROP TABLE IF EXISTS k_int8, k_text, k_uuid"

echo "== summary (medians of $REPS; ratio = forein's time / btree's)" >&2
python3 - "$CSV" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
def med(n, t, am):
    return statistics.median(float(r["ms"]) for r in rows
                             if r["rows"] == n and r["type"] == t and r["index"] == am)
print("| rows | key type | btree, ms | forein, ms | forein / btree |")
print("| ---: | --- | ---: | ---: | ---: |")
for n in dict.fromkeys(r["rows"] for r in rows):
    for t in ("int8", "text", "uuid"):
        b, f = med(n, t, "btree"), med(n, t, "forein")
        print(f"| {int(n):,} | {t} | {b:.0f} | {f:.0f} | {f / b:.2f}x |")
EOF

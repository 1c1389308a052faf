#!/usr/bin/env bash
# run_pg_wal_bench.sh: the WAL forein writes against btree's, for the same
# work on identical tables, with full_page_writes on and off.
#
#   bash tests/bench/run_pg_wal_bench.sh [OUTDIR]     (default build/pg-wal-bench)
#
# Workloads (each on a fresh table, after a CHECKPOINT, so that both
# indexes start from the same state and full-page images count alike):
#   inserts   INSERT_ROWS random int8 keys into a table with one index
#             (1,000,000)
#   tpcb      pgbench's TPC-B-like script, TPCB_TXNS transactions (20,000)
#             from one client with a fixed random seed, at scale
#             TPCB_SCALE (20); the three keys (accounts, branches,
#             tellers) indexed by the index under test
#   vacuum    VACUUM after deleting every tenth row of the inserts' table
#             (the table and its index are built once, then measured)
# WAL is counted with pg_walinspect's pg_get_wal_stats between two LSNs:
# all of it ("total", tables included) and the index's own resource
# manager ("index": forein or Btree).  WAL volume is deterministic for the
# same work, so each point is measured once.  forein must be preloaded
# (its own WAL records; without them it writes generic WAL).
#
# Writes OUTDIR/pg_wal_bench.csv (workload,full_page_writes,index,
# total_bytes,index_bytes,index_records,index_fpi_bytes) and prints a
# table of ratios that docs/postgresql.md quotes.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${1:-$ROOT/build/pg-wal-bench}
INSERT_ROWS=${INSERT_ROWS:-1000000}
TPCB_SCALE=${TPCB_SCALE:-20}
TPCB_TXNS=${TPCB_TXNS:-20000}
CLUSTER=$OUT/cluster
CSV=$OUT/pg_wal_bench.csv

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
# shellcheck source=tests/bench/pg_bench_cluster.sh
source "$ROOT/tests/bench/pg_bench_cluster.sh"
pg_bench_cluster_start "$CLUSTER" --set shared_buffers=1GB --set max_wal_size=8GB \
	--set autovacuum=off --set max_parallel_maintenance_workers=0 \
	--set checkpoint_timeout=1h

psqlq() { psql -X -q -v ON_ERROR_STOP=1 -At "$@" postgres; }
psqlq -c "CREATE EXTENSION IF NOT EXISTS forein" -c "CREATE EXTENSION IF NOT EXISTS pg_walinspect"
if ! psqlq -c "SHOW shared_preload_libraries" | grep -qw forein; then
	echo "run_pg_wal_bench: forein is not preloaded (shared_preload_libraries)" >&2
	exit 1
fi

echo "workload,full_page_writes,index,total_bytes,index_bytes,index_records,index_fpi_bytes" > "$CSV"

lsn() { psqlq -c "SELECT pg_current_wal_insert_lsn()"; }
rmgr_of() { if [ "$1" = forein ]; then echo forein; else echo Btree; fi; }

# record WORKLOAD FPW INDEX START: the WAL from START to now
record() {
	local workload=$1 fpw=$2 index=$3 start=$4 end stats
	end=$(lsn)
	# pg_walinspect reads flushed WAL only: wait for the WAL writer
	psqlq -c "DO \$\$ BEGIN
		WHILE pg_current_wal_flush_lsn() < '$end' LOOP PERFORM pg_sleep(0.05); END LOOP;
	END \$\$"
	stats=$(psqlq -F, -c "
		SELECT sum(combined_size),
		       coalesce(sum(combined_size) FILTER (WHERE rm = '$(rmgr_of "$index")'), 0),
		       coalesce(sum(count) FILTER (WHERE rm = '$(rmgr_of "$index")'), 0),
		       coalesce(sum(fpi_size) FILTER (WHERE rm = '$(rmgr_of "$index")'), 0)
		  FROM pg_get_wal_stats('$start', '$end') s(rm, count, count_pct, record_size,
		       record_pct, fpi_size, fpi_pct, combined_size, combined_pct)")
	echo "$workload,$fpw,$index,$stats" >> "$CSV"
	echo "  $workload fpw=$fpw $index: total,index,records,fpi = $stats" >&2
}

for fpw in on off; do
	psqlq -c "ALTER SYSTEM SET full_page_writes = $fpw" -c "SELECT pg_reload_conf()" >/dev/null
	for index in forein btree; do
		echo "== full_page_writes=$fpw, $index" >&2
		# inserts: random keys (a fixed permutation), one row a statement
		# batch of the INSERT ... SELECT (the index sees them one by one)
		psqlq -c "DROP TABLE IF EXISTS w_ins" \
			-c "CREATE TABLE w_ins (k int8) WITH (autovacuum_enabled = off)" \
			-c "CREATE INDEX w_ins_k ON w_ins USING $index (k)" -c "CHECKPOINT"
		start=$(lsn)
		psqlq -c "INSERT INTO w_ins SELECT hashint8(g) FROM generate_series(1, $INSERT_ROWS) g"
		record inserts "$fpw" "$index" "$start"

		# vacuum: every tenth row deleted, then VACUUM measured
		psqlq -c "DELETE FROM w_ins WHERE k % 10 = 0" -c "CHECKPOINT"
		start=$(lsn)
		psqlq -c "VACUUM w_ins"
		record vacuum "$fpw" "$index" "$start"
		psqlq -c "DROP TABLE w_ins"

		# tpcb: pgbench's tables without keys, then the keys as this index
		pgbench -q -i -s "$TPCB_SCALE" -I dtgv postgres >/dev/null 2>&1
		psqlq -c "CREATE UNIQUE INDEX ON pgbench_accounts USING $index (aid)" \
			-c "CREATE UNIQUE INDEX ON pgbench_branches USING $index (bid)" \
			-c "CREATE UNIQUE INDEX ON pgbench_tellers USING $index (tid)" \
			-c "VACUUM ANALYZE" -c "CHECKPOINT"
		start=$(lsn)
		pgbench -n -c 1 -t "$TPCB_TXNS" --random-seed=4242 postgres >/dev/null
		record tpcb "$fpw" "$index" "$start"
	done
done

python3 - "$CSV" <<'EOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
by = {(r["workload"], r["full_page_writes"], r["index"]): r for r in rows}
print("| workload | full_page_writes | forein total | btree total | ratio | forein index WAL | btree index WAL | ratio |")
print("|---|---|---:|---:|---:|---:|---:|---:|")
for w in ("inserts", "tpcb", "vacuum"):
    for fpw in ("on", "off"):
        f, b = by.get((w, fpw, "forein")), by.get((w, fpw, "btree"))
        if not f or not b:
            continue
        ft, bt = int(f["total_bytes"]), int(b["total_bytes"])
        fi, bi = int(f["index_bytes"]), int(b["index_bytes"])
        mb = lambda x: f"{x / 1e6:.2f} MB"
        print(f"| {w} | {fpw} | {mb(ft)} | {mb(bt)} | {ft / bt:.3f}x | {mb(fi)} | {mb(bi)} | "
              f"{(fi / bi if bi else float('nan')):.3f}x |")
EOF

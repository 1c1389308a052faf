#!/usr/bin/env bash
# run_pg_shards_bench.sh: pgbench -S through a postgres_fdw coordinator onto
# three shards (scripts/pg-shards.sh), forein shards against btree shards,
# both measured in the same run, alternating, medians reported.
#
#   bash tests/bench/run_pg_shards_bench.sh [OUTDIR]   (default build/pg-shards-bench)
#
# One set of servers holds both: scripts/pg-shards.sh start --index both
# gives every shard pgbench_accounts (its range of aid, unique forein index)
# and an identical pgbench_accounts_btree (btree), and the coordinator a
# partitioned table of foreign partitions for each. pgbench's -S statement
# (SELECT abalance FROM <table> WHERE aid = :aid, aid uniform over the
# scale) runs on the coordinator as a custom script per table:
#   pgbench_S_tps        separate runs, forein and btree alternating (the
#                        order flips every repetition), -M prepared;
#   pgbench_S_mixed_us   one run of both scripts picked at random per
#                        transaction, each script's mean latency (--log,
#                        every transaction): both meet the same machine
#                        load; pgbench_S_mixed_median_us: their medians.
# A 3-second untimed run of each warms the caches first (repetition 0).
# Writes OUTDIR/pg_shards_bench.csv (metric,index,rep,value: every
# repetition), OUTDIR/hints.txt (each shard's forein_stats after the runs)
# and OUTDIR/meta.txt (settings, commit, load average), and prints a
# summary table (median, min, max, forein vs btree) that
# docs/pg-benchmark.md quotes.
#
# Needs the extension installed (make install), postgresql-15 and
# postgresql-contrib (postgres_fdw). Knobs (environment): SCALE (100),
# REPS (5), PGBENCH_SECONDS (20), CLIENTS (2), JOBS (CLIENTS),
# SHARED_BUFFERS (per server, 1536MB: a shard's two copies stay in it at
# scale 100). Smoke run: SCALE=1 REPS=1 PGBENCH_SECONDS=2.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${1:-$ROOT/build/pg-shards-bench}
SCALE=${SCALE:-100}
REPS=${REPS:-5}
PGBENCH_SECONDS=${PGBENCH_SECONDS:-20}
CLIENTS=${CLIENTS:-2}
JOBS=${JOBS:-$CLIENTS}
SHARED_BUFFERS=${SHARED_BUFFERS:-1536MB}

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
SHARDS=$OUT/shards
CSV=$OUT/pg_shards_bench.csv
SHARDS_SH=$ROOT/scripts/pg-shards.sh

bash "$SHARDS_SH" stop "$SHARDS" fast >/dev/null 2>&1 || true
trap 'bash "$SHARDS_SH" stop "$SHARDS" fast >/dev/null 2>&1 || true' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

echo "== start: 3 shards and a coordinator, scale $SCALE, forein and btree copies" >&2
start_s=$SECONDS
bash "$SHARDS_SH" start "$SHARDS" --scale "$SCALE" --index both \
	--set shared_buffers="$SHARED_BUFFERS" --set jit=off \
	--set max_parallel_workers_per_gather=0 >&2
echo "   (loaded in $((SECONDS - start_s)) s)" >&2
# shellcheck disable=SC1091
source "$SHARDS/env"

{
	echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "commit: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
	echo "machine: $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo)," \
		"$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
	echo "settings: SCALE=$SCALE REPS=$REPS PGBENCH_SECONDS=$PGBENCH_SECONDS CLIENTS=$CLIENTS JOBS=$JOBS SHARED_BUFFERS=$SHARED_BUFFERS"
	echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$OUT/meta.txt"

echo "metric,index,rep,value" >"$CSV"
record() { echo "$1,$2,$3,$4" >>"$CSV"; }

for kind in forein btree; do
	tbl=pgbench_accounts
	[ $kind = forein ] || tbl=pgbench_accounts_btree
	printf '\\set aid random(1, %d)\nSELECT abalance FROM %s WHERE aid = :aid;\n' \
		"$((SCALE * 100000))" "$tbl" >"$OUT/select_$kind.sql"
done

# seconds REP: the run's length (repetition 0 warms up)
seconds() { if [ "$1" = 0 ]; then echo 3; else echo "$PGBENCH_SECONDS"; fi; }

echo "== pgbench -S -M prepared -c $CLIENTS -j $JOBS through the coordinator, separate runs ($REPS reps, alternating)" >&2
for rep in $(seq 0 "$REPS"); do
	order="btree forein"
	[ $((rep % 2)) = 1 ] && order="forein btree"
	for kind in $order; do
		tps=$(pgbench -n -M prepared -c "$CLIENTS" -j "$JOBS" -T "$(seconds "$rep")" \
			-f "$OUT/select_$kind.sql" postgres 2>/dev/null |
			sed -n 's/^tps = \([0-9.]*\).*/\1/p' | tail -1)
		[ -n "$tps" ] || { echo "pgbench failed ($kind, rep $rep)" >&2; exit 1; }
		[ "$rep" = 0 ] || record pgbench_S_tps "$kind" "$rep" "$tps"
		echo "   rep $rep $kind: $tps tps" >&2
	done
done

echo "== pgbench -S interleaved: both scripts in one run, mean latency per index ($REPS reps)" >&2
MIXDIR=$OUT/mixed
for rep in $(seq 0 "$REPS"); do
	rm -rf "$MIXDIR" && mkdir -p "$MIXDIR"
	(cd "$MIXDIR" && pgbench -n -M prepared -c "$CLIENTS" -j "$JOBS" -T "$(seconds "$rep")" \
		-l -f "$OUT/select_btree.sql" -f "$OUT/select_forein.sql" postgres >/dev/null 2>&1)
	[ "$rep" = 0 ] && continue
	# log line: client transaction latency_us script_no epoch_s epoch_us;
	# every transaction logged: under load the latencies have a long tail,
	# and the median is the steadier of the two
	read -r b_us f_us b_med f_med n < <(cat "$MIXDIR"/pgbench_log.* | python3 -c '
import statistics, sys
lat = {0: [], 1: []}
for line in sys.stdin:
    f = line.split()
    lat[int(f[3])].append(int(f[2]))
print("%.3f %.3f %.1f %.1f %d" % (statistics.mean(lat[0]), statistics.mean(lat[1]),
      statistics.median(lat[0]), statistics.median(lat[1]), len(lat[0]) + len(lat[1])))')
	record pgbench_S_mixed_us btree "$rep" "$b_us"
	record pgbench_S_mixed_us forein "$rep" "$f_us"
	record pgbench_S_mixed_median_us btree "$rep" "$b_med"
	record pgbench_S_mixed_median_us forein "$rep" "$f_med"
	echo "   rep $rep ($n transactions): mean btree $b_us us, forein $f_us us; median btree $b_med us, forein $f_med us" >&2
done
rm -rf "$MIXDIR"

echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/meta.txt"
# the shards' hints: every forein lookup above should have started from one
for i in 1 2 3; do
	echo "shard$i:"
	bash "$SHARDS_SH" psql "$SHARDS" "shard$i" -c \
		"SELECT lookups, hint_hits, move_rights, fallbacks, installed_entries, status FROM forein_stats('pgbench_accounts_aid')"
done >"$OUT/hints.txt"
cat "$OUT/hints.txt" >&2

echo "== summary (ratio: forein relative to btree, > 1 is better for forein)" >&2
cat "$OUT/meta.txt"
python3 - "$CSV" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
def vals(metric, index):
    return [float(r["value"]) for r in rows if r["metric"] == metric and r["index"] == index]
print("| metric | btree median (min..max) | forein median (min..max) | forein vs btree |")
print("| --- | ---: | ---: | ---: |")
for metric, higher_better in (("pgbench_S_tps", True), ("pgbench_S_mixed_us", False),
                              ("pgbench_S_mixed_median_us", False)):
    b, f = vals(metric, "btree"), vals(metric, "forein")
    if not b or not f:
        continue
    mb, mf = statistics.median(b), statistics.median(f)
    ratio = mf / mb if higher_better else mb / mf
    print(f"| {metric} | {mb:.1f} ({min(b):.1f}..{max(b):.1f}) | {mf:.1f} ({min(f):.1f}..{max(f):.1f}) | {ratio:.3f}x |")
EOF

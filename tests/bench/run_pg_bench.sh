#!/usr/bin/env bash
# run_pg_bench.sh: forein against PostgreSQL's btree in one private cluster,
# both indexes measured in the same run, alternating, medians reported. The
# probe measure also runs the alternatives a user would pick for point
# lookups, each on its own identical copy of the accounts: PostgreSQL's hash
# index, and a TID scan (the heap fetch with no index: each probe's ctid
# precomputed), plus forein with its hints off (forein.offload) on the same
# tree.
#
#   bash tests/bench/run_pg_bench.sh [OUTDIR]     (default build/pg-bench)
#
# Needs the extension installed (make install) and postgresql-15. Writes
# OUTDIR/pg_bench.csv (every repetition) and prints a summary table that
# docs/pg-benchmark.md quotes. Knobs (environment): SCALE (20), REPS (5),
# PROBES (1000000), PGBENCH_SECONDS (20), INSERT_ROWS (1000000),
# SHARED_BUFFERS (4GB), MEASURES ("build probes pgbench interleaved
# insert": which measures run, in that order whatever the order given;
# without build the indexes are built once, untimed; e.g. MEASURES=probes).
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
MEASURES=${MEASURES:-build probes pgbench interleaved insert}
MEASURES=${MEASURES//,/ }
for m in $MEASURES; do
	case $m in
		build | probes | pgbench | interleaved | insert) ;;
		*) echo "run_pg_bench.sh: unknown measure '$m' in MEASURES (build probes pgbench interleaved insert)" >&2; exit 2 ;;
	esac
done
wants() { [[ " $MEASURES " == *" $1 "* ]]; }
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

echo "== machine: $(uname -srm), $(nproc) cores, $(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -1)" >&2
echo "== date: $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?'), load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
echo "== command: SCALE=$SCALE REPS=$REPS PROBES=$PROBES PGBENCH_SECONDS=$PGBENCH_SECONDS INSERT_ROWS=$INSERT_ROWS SHARED_BUFFERS=$SHARED_BUFFERS MEASURES=\"$MEASURES\" bash tests/bench/run_pg_bench.sh" >&2

# The accounts' copies, identical (same rows in the same heap order: a
# CREATE TABLE AS of the same table): acc_b (btree), acc_f (forein); for
# the probe measure also acc_h (PostgreSQL's hash index) and acc_t (no
# index: its probes fetch by ctid), dropped after the probes.
copies="acc_b acc_f"
kinds="btree forein"
if wants probes; then
	copies="$copies acc_h acc_t"
	kinds="$kinds hash"
fi
echo "== setup: pgbench scale $SCALE (keys on branches and tellers; accounts copied without): $copies" >&2
psqlq -c "CREATE EXTENSION IF NOT EXISTS forein"
pgbench -q -i -s "$SCALE" -I dtgvp postgres >/dev/null 2>&1
psqlq -c "SET client_min_messages = warning" -c "DROP TABLE IF EXISTS acc_b, acc_f, acc_h, acc_t, probes, probe_keys, ins_b, ins_f"
for t in $copies; do
	psqlq -c "CREATE TABLE $t AS SELECT * FROM pgbench_accounts"
done

# build_index KIND: CREATE INDEX acc_X_aid on KIND's copy; prints its ms
build_index() { ms "CREATE INDEX acc_${1:0:1}_aid ON acc_${1:0:1} USING $1 (aid)"; }
if wants build; then
	echo "== build time and size ($REPS reps each: $kinds)" >&2
	for rep in $(seq 1 "$REPS"); do
		psqlq -c "DROP INDEX IF EXISTS acc_b_aid, acc_f_aid, acc_h_aid"
		for kind in $kinds; do
			record build_ms "$kind" "$rep" "$(build_index "$kind")"
		done
	done
else
	for kind in $kinds; do
		build_index "$kind" >/dev/null
	done
fi
for kind in $kinds; do
	record size_pages "$kind" 1 "$(psqlq -c "SELECT pg_relation_size('acc_${kind:0:1}_aid') / 8192")"
done
# The hash and TID paths only where all four copies and their indexes fit
# in shared_buffers (90% of it), as btree's and forein's do alone: with
# the default 4GB that is up to about scale 60 (at scale 100 the four
# take 5.9 GB, and every run would read pages evicted by the others'
# from the kernel; SHARED_BUFFERS=8GB runs them there).
alt_paths="hash tid"
if wants probes; then
	need=$(psqlq -c "SELECT sum(pg_total_relation_size(c)) FROM unnest(ARRAY['acc_b', 'acc_f', 'acc_h', 'acc_t']::regclass[]) c")
	have=$(psqlq -c "SELECT setting::bigint * 8192 FROM pg_settings WHERE name = 'shared_buffers'")
	if [ $((need * 10)) -gt $((have * 9)) ]; then
		echo "   (hash and TID paths left out: the four copies with their indexes take $((need >> 20)) MB, more than 90% of shared_buffers ($((have >> 20)) MB); raise SHARED_BUFFERS to run them)" >&2
		psqlq -c "DROP TABLE acc_h, acc_t"
		copies="acc_b acc_f"
		alt_paths=""
	fi
fi
for t in $copies; do
	psqlq -c "VACUUM ANALYZE $t"
done

if wants probes; then
	echo "== probes: $PROBES random point probes, nested loop, index-only and heap; btree, forein (hints on and off)$([ -z "$alt_paths" ] || echo ", hash, TID scan")" >&2
	# probes: the keys in a fixed order (n), each with its row's ctid (the
	# copies' heaps are identical, so acc_b's ctid is acc_t's: the check
	# below fails otherwise). Every path reads the same table in the same
	# order; the index paths join on the key, the TID path on the ctid.
	psqlq -c "CREATE TABLE probe_keys AS SELECT n, (random() * ($SCALE * 100000 - 1))::int + 1 AS id FROM generate_series(1, $PROBES) n" \
		-c "CREATE TABLE probes AS SELECT k.id, a.ctid AS tid FROM probe_keys k JOIN acc_b a ON a.aid = k.id ORDER BY k.n" \
		-c "DROP TABLE probe_keys" -c "VACUUM ANALYZE probes"
	psqlq -c "SELECT forein_refresh('acc_f_aid')" >/dev/null 2>&1 || echo "   (forein_refresh failed: no hints)" >&2
	paths="btree forein forein_nohint${alt_paths:+ $alt_paths}"
	# path_from PATH: the join of probes with PATH's copy
	path_from() {
		case $1 in
			btree) echo "probes p JOIN acc_b a ON a.aid = p.id" ;;
			forein | forein_nohint) echo "probes p JOIN acc_f a ON a.aid = p.id" ;;
			hash) echo "probes p JOIN acc_h a ON a.aid = p.id" ;;
			tid) echo "probes p JOIN acc_t a ON a.ctid = p.tid" ;;
		esac
	}
	# has_ios PATH: whether PATH has an index-only form (hash indexes store
	# only the key's hash, and a TID scan reads the heap)
	has_ios() { [ "$1" != hash ] && [ "$1" != tid ]; }
	# path_scan PATH IOS: the scan node PATH's plan must have
	path_scan() {
		case $1 in
			btree | forein | forein_nohint | hash) echo "$([ "$2" = 1 ] && echo "Index Only Scan" || echo "Index Scan") using acc_$(echo "$1" | cut -c1)_aid" ;;
			tid) echo "Tid Scan on acc_t" ;;
		esac
	}
	# probe PATH SQL: "MS CPU_MS RUNQ_MS RESULT" of SQL (a nested loop forced,
	# no Memoize: every probe does its own lookup) with PATH's settings:
	# forein_nohint runs with forein.offload off (every descent from the
	# root), the rest on. MS: wall time (psql's \timing); CPU_MS and
	# RUNQ_MS: the backend's time on a CPU and waiting for one during the
	# statement (/proc/self/schedstat; empty where it cannot be read). On
	# a machine shared with other work the wall time moves with the load,
	# the CPU time much less.
	probe() {
		psql -X -q -v ON_ERROR_STOP=1 -At postgres <<SQL |
SET max_parallel_workers_per_gather = 0;
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SET enable_memoize = off;
SET forein.offload = $([ "$1" = forein_nohint ] && echo off || echo on);
\set ON_ERROR_STOP 0
SELECT 'schedstat ' || rtrim(pg_read_file('/proc/self/schedstat'), E'\n');
\set ON_ERROR_STOP 1
\timing on
$2;
\timing off
\set ON_ERROR_STOP 0
SELECT 'schedstat ' || rtrim(pg_read_file('/proc/self/schedstat'), E'\n');
SQL
			awk '/^schedstat / {n++; c[n] = $2; w[n] = $3; next} /^Time: / {t = $2; next} {r = r (r == "" ? "" : ";") $0}
				END {if (n == 2) printf "%s %.3f %.3f %s\n", t, (c[2] - c[1]) / 1e6, (w[2] - w[1]) / 1e6, r; else print t, "-", "-", r}'
	}
	# The plans: a nested loop over probes with each path's scan inside
	for path in $paths; do
		for ios in 0 1; do
			[ "$ios" = 1 ] && ! has_ios "$path" && continue
			plan=$(probe "$path" "EXPLAIN SELECT $([ "$ios" = 1 ] && echo "count(*)" || echo "sum(a.abalance)") FROM $(path_from "$path")" | cut -d' ' -f4-)
			if [[ $plan != *"Nested Loop"* || $plan != *"$(path_scan "$path" "$ios")"* || $plan == *Memoize* ]]; then
				echo "run_pg_bench.sh: the $path probe plan is not a nested loop over '$(path_scan "$path" "$ios")': $plan" >&2
				exit 1
			fi
		done
	done
	# Warm-up and correctness, untimed: every path finds every probe's row
	# (count, sum of the keys found = sum of the probes' keys, balances)
	want="$PROBES;$(psqlq -c "SELECT sum(id) FROM probes")"
	for path in $paths; do
		got=$(probe "$path" "SELECT count(*), sum(a.aid), sum(a.abalance) FROM $(path_from "$path")" | cut -d' ' -f4-)
		[ -n "${first_got:-}" ] || first_got=$got
		if [[ "${got%|*}" != "${want/;/|}" || "$got" != "$first_got" ]]; then
			echo "run_pg_bench.sh: the $path probes found '$got' (count|sum(aid)|sum(abalance)), expected '${want/;/|}|...' as the other paths ('$first_got')" >&2
			exit 1
		fi
	done
	# REPS repetitions; each one runs the paths in an order rotated by one
	# from the repetition before, so that no path always follows the same
	# one; index-only (count) first, then with the heap fetch (sum).
	# Each result must equal the untimed run's.
	npaths=$(echo "$paths" | wc -w)
	for rep in $(seq 1 "$REPS"); do
		shift_by=$(((rep - 1) % npaths))
		order=$(echo "$paths" "$paths" | cut -d' ' -f$((shift_by + 1))-$((shift_by + npaths)))
		for ios in 1 0; do
			for path in $order; do
				[ "$ios" = 1 ] && ! has_ios "$path" && continue
				read -r t cpu runq res < <(probe "$path" "SELECT $([ "$ios" = 1 ] && echo "count(*)" || echo "sum(a.abalance)") FROM $(path_from "$path")")
				expect=$([ "$ios" = 1 ] && echo "$PROBES" || echo "${first_got##*|}")
				if [ "$res" != "$expect" ]; then
					echo "run_pg_bench.sh: the $path probes (rep $rep) returned '$res', not '$expect'" >&2
					exit 1
				fi
				metric=$([ "$ios" = 1 ] && echo probe_ios || echo probe_heap)
				record "${metric}_ms" "$path" "$rep" "$t"
				[ "$cpu" = - ] || record "${metric}_cpu_ms" "$path" "$rep" "$cpu"
				[ "$runq" = - ] || record "${metric}_runq_ms" "$path" "$rep" "$runq"
			done
		done
	done
	psql -X postgres -c "SELECT * FROM forein_stats('acc_f_aid')" >&2 || true
	psqlq -c "DROP TABLE IF EXISTS acc_h, acc_t"
fi

if wants pgbench; then
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
fi

if wants interleaved; then
	# The TPC-B-like and -N runs left dead row versions, unpruned pages and
	# dirty buffers in both copies: vacuum and checkpoint here, so that
	# autovacuum and the checkpointer do not work through them during the
	# interleaved runs (which would slow both scripts alike and blur the ratio).
	psqlq -c "VACUUM ANALYZE acc_b" -c "VACUUM ANALYZE acc_f" -c "CHECKPOINT"
	# Both copies and their indexes into shared_buffers: a CREATE TABLE AS
	# writes through a small ring of buffers, so without the separate
	# pgbench runs before (MEASURES without pgbench) the first interleaved
	# runs read most heap pages from the kernel (at scale 100: 170 us per
	# -S transaction in the first repetition, 80 in the third)
	psqlq -c "CREATE EXTENSION IF NOT EXISTS pg_prewarm" \
		-c "SELECT pg_prewarm(c) FROM unnest(ARRAY['acc_b', 'acc_b_aid', 'acc_f', 'acc_f_aid']::regclass[]) c" >/dev/null ||
		echo "   (pg_prewarm failed: the copies are not prewarmed)" >&2

	# Interleaved runs: one pgbench run whose two scripts (the same statements
	# on each copy) are picked at random per transaction, so both indexes meet
	# the same machine load at the same moments; each script's mean
	# transaction time (sampled --log) is the measure. Separate runs on a
	# shared machine differ by up to 10% from load alone (TPC-B-like: 20-30%);
	# this ratio does not.
	MIXDIR=$OUT/mixed
	# interleaved NAME METRIC [KIND...]: one pgbench run of $OUT/NAME_KIND.sql
	# for every KIND (default: btree forein) picked at random per transaction
	# (after an untimed warm-up run); records each script's mean transaction
	# time per repetition.
	interleaved() {
		local name=$1 metric=$2 rep
		shift 2
		local kinds=("$@")
		[ ${#kinds[@]} -gt 0 ] || kinds=(btree forein)
		local scripts=() kind
		for kind in "${kinds[@]}"; do scripts+=(-f "$OUT/${name}_$kind.sql"); done
		for rep in $(seq 0 "$REPS"); do
			rm -rf "$MIXDIR" && mkdir -p "$MIXDIR"
			(cd "$MIXDIR" && pgbench -n -M prepared -c 2 -j 2 -T "$([ "$rep" = 0 ] && echo 3 || echo "$PGBENCH_SECONDS")" \
				-l --sampling-rate=0.2 "${scripts[@]}" postgres >/dev/null 2>&1)
			[ "$rep" = 0 ] && continue
			# log line: client transaction latency_us script_no epoch_s epoch_us
			cat "$MIXDIR"/pgbench_log.* | awk -v n="${#kinds[@]}" \
				'{s[$4] += $3; c[$4]++} END {for (i = 0; i < n; i++) printf "%d %.3f\n", i, (c[i] ? s[i] / c[i] : "")}' |
				while read -r i us; do
					record "$metric" "${kinds[$i]}" "$rep" "$us"
				done
		done
		rm -rf "$MIXDIR"
	}

	echo "== pgbench -S interleaved: both copies in one run, mean transaction time per index" >&2
	for kind in btree forein; do
		printf '\\set aid random(1, %d)\nSELECT abalance FROM acc_%s WHERE aid = :aid;\n' \
			"$((SCALE * 100000))" "${kind:0:1}" >"$OUT/select_$kind.sql"
	done
	# Two references in the same run, to say how far any index could take -S
	# here: "tid" fetches a random row of acc_b's heap by its ctid (a random
	# block, a random line pointer among the rows a page holds on average), so
	# it does the statement's work but the index's; "noindex" selects the key
	# itself and reads no table (the protocol, executor and client alone). No
	# index can make a -S transaction cheaper than "tid": btree / tid bounds
	# forein / btree. (A line pointer that an update made dead or a redirect
	# returns no row, which only makes "tid" cheaper and the bound looser.)
	acc_b_blocks=$(psqlq -c "SELECT pg_relation_size('acc_b') / current_setting('block_size')::int")
	printf '\\set blk random(0, %d)\n\\set off random(1, %d)\nSELECT abalance FROM acc_b WHERE ctid = format('"'(%%s,%%s)'"', :blk::int4, :off::int4)::tid;\n' \
		"$((acc_b_blocks - 1))" "$((SCALE * 100000 / acc_b_blocks))" >"$OUT/select_tid.sql"
	printf '\\set aid random(1, %d)\nSELECT :aid::int4 AS abalance;\n' "$((SCALE * 100000))" >"$OUT/select_noindex.sql"
	interleaved select pgbench_S_mixed_us btree forein tid noindex

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
fi

if wants insert; then
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
fi

echo "== summary (medians; ratio = forein relative to btree, >1 is better for forein)" >&2
python3 - "$CSV" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
def vals(metric, index):
    return {r["rep"]: float(r["value"]) for r in rows if r["metric"] == metric and r["index"] == index and r["value"]}
def med(metric, index):
    v = list(vals(metric, index).values())
    return statistics.median(v) if v else float("nan")
higher_better = {"pgbench_S_tps", "pgbench_tpcb_tps", "pgbench_N_tps"}
print("| metric | btree | forein | forein vs btree |")
print("| --- | ---: | ---: | ---: |")
for metric in ["build_ms", "size_pages", "probe_ios_ms", "probe_heap_ms", "pgbench_S_tps", "pgbench_S_mixed_us", "pgbench_tpcb_tps", "pgbench_tpcb_mixed_us", "pgbench_N_tps", "insert_ms", "insert_logged_ms"]:
    b, f = med(metric, "btree"), med(metric, "forein")
    if b != b or f != f:
        continue  # not measured in this run (MEASURES)
    ratio = f / b if metric in higher_better else b / f
    note = "speedup" if metric not in ("size_pages", "build_ms") else ("size ratio (forein/btree)" if metric == "size_pages" else "time ratio (forein/btree)")
    if metric in ("size_pages", "build_ms"):
        ratio = f / b
    print(f"| {metric} | {b:.1f} | {f:.1f} | {ratio:.3f} ({note}) |")
# The probe measure against every path: median ms (min-max), and forein's
# speed relative to each path, median of the per-repetition ratios (min-max)
paths = [p for p in ("btree", "hash", "tid", "forein_nohint", "forein") if vals("probe_heap_ms", p)]
if "forein" in paths and len(paths) > 2:
    def cell(metric, p):
        v = list(vals(metric, p).values())
        return f"{statistics.median(v):.0f} ({min(v):.0f}-{max(v):.0f})" if v else "-"
    def ratio(metric, p):
        f, o = vals(metric, "forein"), vals(metric, p)
        r = [o[k] / f[k] for k in f if k in o]
        return f"{statistics.median(r):.3f} ({min(r):.2f}-{max(r):.2f})" if r else "-"
    names = {"btree": "btree", "hash": "hash", "tid": "TID scan", "forein_nohint": "forein, hints off", "forein": "forein"}
    others = [p for p in paths if p != "forein"]
    print()
    print("| probes, ms: median (min-max) | " + " | ".join(names[p] for p in paths) + " | " +
          " | ".join(f"forein vs {names[p]}" for p in others) + " |")
    print("| --- |" + " ---: |" * (len(paths) + len(others)))
    for metric, label in (("probe_heap_ms", "with the heap fetch (sum(abalance)), wall"),
                          ("probe_heap_cpu_ms", "with the heap fetch, the backend's CPU time"),
                          ("probe_ios_ms", "index-only (count(*)), wall"),
                          ("probe_ios_cpu_ms", "index-only, the backend's CPU time")):
        if not vals(metric, "forein"):
            continue
        print(f"| {label} | " + " | ".join(cell(metric, p) for p in paths) + " | " +
              " | ".join(ratio(metric, p) for p in others) + " |")
# -S interleaved with its references in the same run: each script's mean
# transaction time and btree's time over it (median of the per-repetition
# ratios, min-max); btree / tid is the most any index could give -S here
refs = [p for p in ("btree", "forein", "tid", "noindex") if vals("pgbench_S_mixed_us", p)]
if "tid" in refs:
    b = vals("pgbench_S_mixed_us", "btree")
    names = {"btree": "btree", "forein": "forein", "tid": "no index: heap fetch by ctid (the bound)",
             "noindex": "no table: SELECT of the key"}
    print()
    print("| -S interleaved, mean us a transaction | median (min-max) | btree / it |")
    print("| --- | ---: | ---: |")
    for p in refs:
        v = vals("pgbench_S_mixed_us", p)
        r = [b[k] / v[k] for k in v if k in b]
        print(f"| {names[p]} | {statistics.median(v.values()):.2f} ({min(v.values()):.2f}-{max(v.values()):.2f}) | "
              f"{statistics.median(r):.3f} ({min(r):.3f}-{max(r):.3f}) |")
EOF

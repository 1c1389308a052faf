#!/usr/bin/env bash
# run-pg-regress.sh: forein's pg_regress suite (regress/) against a private
# cluster that scripts/pg-cluster.sh starts on a free port.
#
#   scripts/run-pg-regress.sh [--build DIR] [--no-preload] [TEST...]
#   scripts/run-pg-regress.sh --vs-btree [--build DIR]
#
# The extension must be installed first (make -C pg_extension with_llvm=no
# install).  Results go to DIR/pg-tests/regress (DIR defaults to build/);
# on failure regression.diffs there holds the differences.  The cluster
# (scripts/pg-cluster.sh) lives in a scratch directory under
# ${TMPDIR:-/tmp}, removed at the end; its server log is copied to
# DIR/pg-tests/regress-cluster/log.  pg_regress and psql run as the
# invoking user; as root the server runs as $PG_CLUSTER_USER (postgres).
#
# --vs-btree runs the type/scan/vacuum files with USING btree instead (no
# extension needed) and compares the answers with regress/expected/: every
# line that differs is a place where forein answers differently from btree
# (plans aside).  Its diff is DIR/pg-tests/regress-btree/regression.diffs.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd -P)
build=$root/build
preload=1
vs_btree=0
tests=()
while [ $# -gt 0 ]; do
	case $1 in
		--build) build=$(cd "$2" && pwd -P); shift ;;
		--no-preload) preload=0 ;;
		--vs-btree) vs_btree=1 ;;
		-h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
		-*) echo "run-pg-regress: unknown option $1" >&2; exit 2 ;;
		*) tests+=("$1") ;;
	esac
	shift
done

PG_CONFIG=${PG_CONFIG:-pg_config}
command -v "$PG_CONFIG" >/dev/null 2>&1 || {
	echo "run-pg-regress: pg_config not found (install postgresql-server-dev-15)" >&2
	exit 2
}
bindir=$("$PG_CONFIG" --bindir)
pg_regress=$("$PG_CONFIG" --pkglibdir)/pgxs/src/test/regress/pg_regress
[ -x "$pg_regress" ] || { echo "run-pg-regress: $pg_regress missing" >&2; exit 2; }

# The tests that only use what btree has too (see regress/schedule).
generic=(integer text datetime uuid nulls empty unique scans joins multicolumn vacuum)

if [ $vs_btree -eq 1 ]; then
	work=$build/pg-tests/regress-btree
	cluster=$build/pg-tests/regress-btree-cluster
else
	work=$build/pg-tests/regress
	cluster=$build/pg-tests/regress-cluster
fi

"$root/scripts/pg-cluster.sh" stop "$cluster" immediate 2>/dev/null || true
rm -rf "$work" "$cluster"
mkdir -p "$work"
# The suite creates far more forein indexes than the default 8 offload
# slots (forein.max_indexes); give offload.sql one.
cluster_opts=(--set forein.max_indexes=128)
[ $preload -eq 1 ] && [ $vs_btree -eq 0 ] || cluster_opts=(--no-preload)
# The cluster's data, socket and server log live in a scratch directory
# under ${TMPDIR:-/tmp} (scripts/pg-cluster.sh); stopping it, also on a
# failure or a signal, copies the server log to $cluster/log and removes it.
trap '"$root/scripts/pg-cluster.sh" stop "$cluster" fast' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP
port=$("$root/scripts/pg-cluster.sh" start "$cluster" "${cluster_opts[@]+"${cluster_opts[@]}"}")
sockdir=$(cat "$cluster/sockdir")

# With --use-existing pg_regress neither creates nor drops the database:
# create it as pg_regress would (C locale, its per-database settings).
"$bindir/psql" -X -q -v ON_ERROR_STOP=1 -h "$sockdir" -p "$port" -U postgres -d postgres <<'SQL'
CREATE DATABASE forein_regression TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C';
ALTER DATABASE forein_regression SET lc_messages TO 'C';
ALTER DATABASE forein_regression SET lc_monetary TO 'C';
ALTER DATABASE forein_regression SET lc_numeric TO 'C';
ALTER DATABASE forein_regression SET lc_time TO 'C';
ALTER DATABASE forein_regression SET bytea_output TO 'hex';
ALTER DATABASE forein_regression SET timezone_abbreviations TO 'Default';
SQL

common=(--use-existing --bindir="$bindir" --host="$sockdir" --port="$port"
	--user=postgres --dbname=forein_regression --outputdir="$work")

if [ $vs_btree -eq 1 ]; then
	# Btree copies of the tests and of forein's expected answers.  A no-op
	# forein_check keeps the files' structure.  Deduplication is off: in
	# PostgreSQL 15.20 a scrollable cursor that runs off the end of a run
	# of duplicates in a posting list and turns back returns wrong rows
	# (scans.sql, cursor c3), and btree is the reference here.
	dedup_off='s/(USING btree \([^;]*\));/\1 WITH (deduplicate_items = off);/'
	shim="CREATE OR REPLACE FUNCTION forein_check(regclass, boolean DEFAULT false) RETURNS void LANGUAGE plpgsql AS 'BEGIN END';"
	mkdir -p "$work/input/sql" "$work/input/expected"
	for t in "${generic[@]}"; do
		{ echo "$shim"; sed 's/USING forein/USING btree/g' "$root/regress/sql/$t.sql" | sed -E "$dedup_off"; } \
			>"$work/input/sql/$t.sql"
		if [ -f "$root/regress/expected/$t.out" ]; then
			{ echo "$shim"; sed 's/USING forein/USING btree/g' "$root/regress/expected/$t.out" | sed -E "$dedup_off"; } \
				>"$work/input/expected/$t.out"
		else
			: >"$work/input/expected/$t.out"
		fi
	done
	echo "run-pg-regress: btree answers vs regress/expected (port $port)"
	set +e
	"$pg_regress" "${common[@]}" --inputdir="$work/input" "${generic[@]}"
	rc=$?
	set -e
	[ $rc -eq 0 ] || echo "run-pg-regress: differences from btree: $work/regression.diffs"
	exit $rc
fi

echo "run-pg-regress: cluster on port $port (log $cluster/log)"
sched=()
if [ ${#tests[@]} -eq 0 ]; then
	sched=(--schedule="$root/regress/schedule")
fi
set +e
"$pg_regress" "${common[@]}" --inputdir="$root/regress" "${sched[@]+"${sched[@]}"}" "${tests[@]+"${tests[@]}"}"
rc=$?
set -e
if [ $rc -ne 0 ]; then
	echo "run-pg-regress: FAILED; differences in $work/regression.diffs" >&2
	if [ -f "$work/regression.diffs" ]; then
		head -n 200 "$work/regression.diffs" >&2
	fi
	if grep -q -E 'PANIC|TRAP|terminated by signal' "$cluster/log" 2>/dev/null; then
		echo "run-pg-regress: the server crashed; from $cluster/log:" >&2
		grep -E -B2 -A5 'PANIC|TRAP|terminated by signal' "$cluster/log" | head -n 60 >&2
	fi
fi
exit $rc

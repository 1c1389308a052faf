#!/usr/bin/env bash
# demo.sh: the main job. Builds what the demo needs (the PostgreSQL
# extension and tools/forein_demo, nothing else: no tests, no benchmarks),
# installs the extension, starts a private PostgreSQL with forein
# preloaded, creates forein indexes on pgbench's accounts and on a text
# column, shows the planner using them, installs the switch LPM entries,
# and shows lookups starting from hardware hints (forein_stats), then the
# engine's own demo. Run through `make demo`.
#
#   scripts/demo.sh [--build-only | --no-build]
#
# --build-only builds and stops (no install, no cluster); --no-build runs
# the demo on what is already built and installed.
# The build prints one line per step; compiler output goes to
# $BUILD/demo-build.log, shown when a step fails.  The C++ tools build in
# $BUILD (the tree `make` and `make check` use, configured the same way),
# the extension with PGXS in pg_extension/.
#
# The cluster (scripts/pg-cluster.sh) keeps its data, socket and server log
# in a scratch directory under ${TMPDIR:-/tmp} that the server's user can
# always write; its port, client settings (env) and server log are under
# build/demo-pg.  When the demo succeeds the cluster is left running, for
# psql (the demo's last lines say how), until `make demo-stop`; on a
# failure or Ctrl-C it is stopped and its scratch directory removed.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
CLUSTER=$BUILD/demo-pg
JOBS=${JOBS:-$(nproc)}
CMAKE_TYPE=${CMAKE_TYPE:-RelWithDebInfo}
LOG=$BUILD/demo-build.log

do_build=1 do_demo=1
case ${1:-} in
	--build-only) do_demo=0 ;;
	--no-build) do_build=0 ;;
	"") ;;
	*) echo "usage: $0 [--build-only | --no-build]" >&2; exit 2 ;;
esac

say() { echo "[demo] $*"; }

# step WHAT NOTE COMMAND...: says WHAT (and NOTE), runs COMMAND with its
# output appended to $LOG; on a failure shows the log's end and stops.
step() {
	local what=$1 note=$2 t0=$SECONDS; shift 2
	say "$what${note:+ ($note)} ..."
	echo "===== $what: $*" >>"$LOG"
	if ! "$@" >>"$LOG" 2>&1; then
		echo "----- the last 60 lines of $LOG:" >&2
		tail -n 60 "$LOG" >&2
		say "FAILED: $what (full log: $LOG)" >&2
		exit 1
	fi
	say "   done in $((SECONDS - t0)) s"
}

if [ $do_build -eq 1 ]; then
	mkdir -p "$BUILD"
	: >"$LOG"
	say "building only what the demo needs, with $JOBS jobs; compiler output in $LOG"
	step "configuring $BUILD (cmake)" "" \
		cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE="$CMAKE_TYPE"
	step "building tools/forein_demo: the engine and offload libraries" "first time: about 2 min on 2 cores" \
		cmake --build "$BUILD" -j "$JOBS" --target forein_demo
	step "building the PostgreSQL extension, its C and C++ objects" "first time: about 3 min on 2 cores" \
		make -C "$ROOT/pg_extension" -j "$JOBS" with_llvm=no
	[ $do_demo -eq 1 ] || { say "built (not installed)"; exit 0; }
	step "installing the extension into $(pg_config --pkglibdir)" "" \
		make -C "$ROOT/pg_extension" with_llvm=no install
fi
[ $do_demo -eq 1 ] || exit 0

[ ! -f "$CLUSTER/scratch" ] || say "stopping the cluster the previous demo left running"
bash "$ROOT/scripts/pg-cluster.sh" stop "$CLUSTER" fast >/dev/null 2>&1 || true
say "starting a private PostgreSQL with forein preloaded"
rm -rf "$CLUSTER"   # a fresh cluster every time
# Stopped on a failure or a signal; left running when the demo succeeds.
keep=0
trap '[ $keep -eq 1 ] || bash "$ROOT/scripts/pg-cluster.sh" stop "$CLUSTER" fast >/dev/null 2>&1 || true' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP
bash "$ROOT/scripts/pg-cluster.sh" start "$CLUSTER" --set shared_buffers=256MB >/dev/null
# shellcheck disable=SC1091
source "$CLUSTER/env"

run() { psql -X -v ON_ERROR_STOP=1 -e postgres "$@"; }

echo "== PostgreSQL $(pg_config --version) on port $PGPORT, data in $PGDATA"
echo "   (a scratch directory, removed by \`make demo-stop\`; server log: $CLUSTER/log)"
pgbench -q -i -s 5 -I dtgv postgres >/dev/null 2>&1
run -c "CREATE EXTENSION forein"
run -c "CREATE INDEX accounts_aid_forein ON pgbench_accounts USING forein (aid)"
run -c "CREATE TABLE users (id int, email text)" \
	-c "INSERT INTO users SELECT i, 'user' || i || '@example.com' FROM generate_series(1, 100000) i" \
	-c "CREATE UNIQUE INDEX users_email_forein ON users USING forein (email)" \
	-c "VACUUM ANALYZE pgbench_accounts" -c "VACUUM ANALYZE users"
run -c "EXPLAIN (COSTS OFF) SELECT abalance FROM pgbench_accounts WHERE aid = 4242" \
	-c "SELECT aid, abalance FROM pgbench_accounts WHERE aid = 4242" \
	-c "SELECT aid FROM pgbench_accounts WHERE aid BETWEEN 10 AND 14 ORDER BY aid DESC" \
	-c "SELECT id FROM users WHERE email = 'user77@example.com'"
run -c "INSERT INTO users VALUES (0, 'user77@example.com')" || echo "(the unique index refused the duplicate, as it should)"

echo "== install the switch's LPM entries for the accounts index (73,000-entry table)"
echo "   (each entry: keys whose 64-bit word begins with prefix_hex (prefix_len high bits)"
echo "    start their lookup at node, an index block, on level: 0 = leaf, 1 = its parent, ...)"
run -c "SELECT forein_refresh('accounts_aid_forein') AS installed_entries" \
	-c "SELECT * FROM forein_offload_entries('accounts_aid_forein') LIMIT 5"

echo "== 20,000 random point lookups, each starting at the hinted leaf"
run -c "DO \$\$ DECLARE k int; BEGIN FOR i IN 1..20000 LOOP k := 1 + (random() * 499999)::int; PERFORM abalance FROM pgbench_accounts WHERE aid = k; END LOOP; END \$\$"
run -c "SELECT * FROM forein_stats('accounts_aid_forein')"
run -c "SELECT forein_check('accounts_aid_forein', true)" -c "SELECT forein_check('users_email_forein', true)"
echo "== forein_check passed: order, bounds, sibling links, levels, every heap tuple indexed"

echo
echo "== the engine and the modelled switch, in process"
"$BUILD/tools/forein_demo"

keep=1
echo
echo "== the demo's PostgreSQL is still running (port $PGPORT), with the tables and indexes above."
echo "   Connect:  bash scripts/pg-cluster.sh psql ${CLUSTER#"$ROOT"/}"
echo "   or set PGHOST, PGPORT, ... in your shell:  . ${CLUSTER#"$ROOT"/}/env; psql"
echo "   Try:      SELECT * FROM forein_offload_entries('accounts_aid_forein') LIMIT 5;"
echo "             EXPLAIN ANALYZE SELECT * FROM users WHERE email = 'user9@example.com';"
stop="make demo-stop"
[ "$BUILD" = "$ROOT/build" ] || stop="make demo-stop BUILD=$BUILD"
echo "   Stop it (and remove its data):  $stop"

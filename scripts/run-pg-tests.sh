#!/usr/bin/env bash
# run-pg-tests.sh: every PostgreSQL test of forein.
#
#   scripts/run-pg-tests.sh [--build DIR] [--no-install] [--regress-only]
#                           [--tap-only] [TAP-FILE...]
#
#   1. make -C pg_extension with_llvm=no install   (skipped by --no-install)
#   2. the pg_regress suite (scripts/run-pg-regress.sh, regress/)
#   3. the TAP tests regress/t/*.pl (or the named ones) with prove
#
# Everything runs in private clusters on free ports.  The clusters (data,
# sockets, server logs) and the TAP tests' working copies live in mode-0700
# scratch directories under ${TMPDIR:-/tmp} (scripts/pg-scratch.sh), removed
# at the end, also on failure or a signal; results, regression diffs and
# logs are copied to DIR/pg-tests (DIR defaults to build/).  As root, the
# servers and the TAP tests run as the unprivileged user $PG_CLUSTER_USER
# (default postgres), who need not be able to reach the checkout.
# Exit status: 0 all passed, 1 a failure, 77 PostgreSQL is not installed
# (CTest reports the test as skipped).
#
# Randomized TAP tests print their seed; FOREIN_SEED=<n> replays one.
# FOREIN_PG_TEST_JOBS (default 2) TAP files run at once (prove -j): each
# starts its own clusters on ports PostgreSQL::Test reserves under
# PG_TEST_PORT_DIR, and most of a TAP test's time is spent waiting (server
# starts, replication, checkpoints), so two at a time nearly halve the wall
# time on two cores.
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd -P)
build=$root/build
install=1
do_regress=1
do_tap=1
tap_files=()
while [ $# -gt 0 ]; do
	case $1 in
		--build) mkdir -p "$2"; build=$(cd "$2" && pwd -P); shift ;;
		--no-install) install=0 ;;
		--regress-only) do_tap=0 ;;
		--tap-only) do_regress=0 ;;
		-h|--help) sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
		-*) echo "run-pg-tests: unknown option $1" >&2; exit 2 ;;
		*) tap_files+=("$1") ;;
	esac
	shift
done

PG_CONFIG=${PG_CONFIG:-pg_config}
export PG_CONFIG
PG_CLUSTER_USER=${PG_CLUSTER_USER:-postgres}
export PG_CLUSTER_USER
tap_jobs=${FOREIN_PG_TEST_JOBS:-2}
case $tap_jobs in
	'' | *[!0-9]* | 0) echo "run-pg-tests: FOREIN_PG_TEST_JOBS must be a positive integer, not '$tap_jobs'" >&2; exit 2 ;;
esac
# shellcheck source=pg-scratch.sh
. "$root/scripts/pg-scratch.sh"

skip() {
	echo "run-pg-tests: SKIPPED: $*" >&2
	exit 77
}
if ! command -v "$PG_CONFIG" >/dev/null 2>&1; then
	skip "pg_config not found; install postgresql-15 postgresql-server-dev-15 postgresql-contrib libipc-run-perl (scripts/install-deps.sh)"
fi
bindir=$("$PG_CONFIG" --bindir)
pkglibdir=$("$PG_CONFIG" --pkglibdir)
pgxs=$("$PG_CONFIG" --pgxs)
pg_regress=$pkglibdir/pgxs/src/test/regress/pg_regress
perl_lib=$pkglibdir/pgxs/src/test/perl
[ -f "$pgxs" ] || skip "PGXS ($pgxs) missing: install postgresql-server-dev-15"
[ -x "$bindir/postgres" ] || skip "no server in $bindir: install postgresql-15"
[ -x "$pg_regress" ] || skip "$pg_regress missing: install postgresql-server-dev-15"

failed=()
step() { printf '\n===== %s =====\n' "$*"; }

# 1. build and install the extension
if [ $install -eq 1 ] && [ "$(id -u)" -ne 0 ] && ! [ -w "$pkglibdir" ]; then
	skip "installing the extension into $pkglibdir needs root: run
  sudo make -C pg_extension with_llvm=no install
then $0 --no-install"
fi
if [ $install -eq 1 ]; then
	step "make -C pg_extension with_llvm=no install"
	if ! make -C "$root/pg_extension" with_llvm=no >"$build/pg-extension-build.log" 2>&1; then
		tail -n 40 "$build/pg-extension-build.log"
		echo "run-pg-tests: FAILED to build the extension (log: $build/pg-extension-build.log)" >&2
		exit 1
	fi
	if ! make -C "$root/pg_extension" with_llvm=no install >>"$build/pg-extension-build.log" 2>&1; then
		tail -n 20 "$build/pg-extension-build.log"
		if [ "$(id -u)" -ne 0 ]; then
			echo "run-pg-tests: FAILED to install into $pkglibdir: run as root, or" >&2
			echo "  sudo make -C pg_extension with_llvm=no install; then $0 --no-install" >&2
		fi
		exit 1
	fi
	echo "installed forein into $pkglibdir"
fi
[ -f "$pkglibdir/forein.so" ] || { echo "run-pg-tests: forein.so is not installed in $pkglibdir" >&2; exit 1; }

mkdir -p "$build/pg-tests"

runner=()
if [ "$(id -u)" -eq 0 ]; then
	runner=(runuser -u "$PG_CLUSTER_USER" --)
fi
tap_scratch= tap_pid=
# tap_cleanup: stop the TAP test and its servers, copy the logs into the
# build tree, remove the scratch directory (PG_TEST_NOCLEAN keeps it).
tap_cleanup() {
	[ -n "$tap_scratch" ] || return 0
	if [ -n "$tap_pid" ]; then
		pg_kill_tree "$tap_pid"
		wait "$tap_pid" 2>/dev/null || true
		tap_pid=
	fi
	pg_scratch_stop_servers "$tap_scratch"
	if [ -d "$tap_scratch/tmp_check/log" ]; then
		rm -rf "$tapdir/log"
		cp -R "$tap_scratch/tmp_check/log" "$tapdir/log" 2>/dev/null || true
		echo "TAP logs: $tapdir/log/"
	fi
	if [ -n "${PG_TEST_NOCLEAN:-}" ]; then
		echo "run-pg-tests: PG_TEST_NOCLEAN: kept $tap_scratch (remove it yourself)"
	else
		pg_scratch_remove "$tap_scratch"
	fi
	rm -f "$tapdir/scratch"
	tap_scratch=
}
# tap_log_digest: what the servers of a failed TAP run said about crashes,
# PANICs and fatal errors, so that a CI log shows why a cluster went away
# (the full logs stay in $tapdir/log, which CI does not keep).
tap_log_alarms() {
	grep -E 'PANIC|FATAL|TRAP|terminated by signal|exited with exit code [2-9]|server process .* was terminated' "$1" |
		grep -v 'due to administrator command' || true
}
tap_log_digest() {
	local f n
	[ -d "$tapdir/log" ] || return 0
	for f in "$tapdir"/log/*.log; do
		[ -f "$f" ] || continue
		case ${f##*/} in regress_log_*) continue ;; esac
		# (a normal shutdown's FATALs "due to administrator command" and
		# its workers' exit code 1 are left out)
		n=$(tap_log_alarms "$f" | wc -l)
		[ "$n" -gt 0 ] || continue
		echo "--- ${f##*/}: $n crash/fatal lines (first 20, then the log's last 15 lines)"
		tap_log_alarms "$f" | head -n 20
		echo "..."
		tail -n 15 "$f"
	done
}
regress_pid=
# cleanup: on exit, also on a signal: stop what still runs, remove the
# scratch directories.
cleanup() {
	if [ -n "$regress_pid" ]; then
		pg_kill_tree "$regress_pid"
		wait "$regress_pid" 2>/dev/null || true
		regress_pid=
		"$root/scripts/pg-cluster.sh" stop "$build/pg-tests/regress-cluster" immediate || true
	fi
	tap_cleanup
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

# 2. pg_regress
if [ $do_regress -eq 1 ]; then
	step "pg_regress suite (regress/)"
	"$root/scripts/run-pg-regress.sh" --build "$build" &
	regress_pid=$!
	wait "$regress_pid"
	regress_rc=$?
	regress_pid=
	if [ $regress_rc -eq 0 ]; then
		echo "pg_regress: PASSED"
	else
		failed+=("pg_regress (diffs: $build/pg-tests/regress/regression.diffs, server log: $build/pg-tests/regress-cluster/log)")
	fi
fi

# 3. TAP tests
if [ $do_tap -eq 1 ]; then
	step "TAP tests (regress/t/)"
	if ! perl -MIPC::Run -e 1 2>/dev/null; then
		failed+=("TAP: perl module IPC::Run missing (apt-get install libipc-run-perl)")
	else
		tapdir=$build/pg-tests/tap
		# what an interrupted earlier run left behind
		pg_scratch_remove "$(cat "$tapdir/scratch" 2>/dev/null || true)"
		rm -rf "$tapdir"
		mkdir -p "$tapdir"
		files=()
		if [ ${#tap_files[@]} -eq 0 ]; then
			files=("$root"/regress/t/*.pl)
		else
			for f in "${tap_files[@]}"; do
				case $f in
					/*) files+=("$f") ;;
					*/*) files+=("$root/$f") ;;
					*) files+=("$root/regress/t/$f") ;;
				esac
			done
		fi
		# The TAP tests (prove, the tests, PostgreSQL::Test's clusters,
		# logs, sockets and temporary files) run in a scratch directory
		# that the cluster user owns, with copies of the test files: as
		# root they run as that user, who may not reach the checkout.
		if tap_scratch=$(pg_scratch_new forein-tap); then
			echo "$tap_scratch" >"$tapdir/scratch"
			echo "TAP clusters in $tap_scratch (removed afterwards; logs copied to $tapdir/log)"
			mkdir -p "$tap_scratch/t" "$tap_scratch/tmp"
			cp "$root"/regress/t/*.pm "$tap_scratch/t/"
			# the sharding recipe's SQL for 025_sharding.pl
			cp -R "$root/scripts/pg-shards" "$tap_scratch/pg-shards"
			# the engine's word tool for 010_words.pl, where the user can run it
			cp "$build/tools/forein_word" "$tap_scratch/" 2>/dev/null || true
			run_files=()
			for f in "${files[@]}"; do
				cp "$f" "$tap_scratch/t/" || continue
				run_files+=("$tap_scratch/t/${f##*/}")
			done
			[ ${#run_files[@]} -gt 0 ] || run_files=("$tap_scratch/t/no-such-test.pl")
			[ "$(id -u)" -ne 0 ] || chown -R "$PG_CLUSTER_USER:" "$tap_scratch"
			# prove in the background, so that a signal reaches the
			# trap (tap_cleanup) at once
			(cd "$tap_scratch" && exec "${runner[@]+"${runner[@]}"}" env \
				PATH="$bindir:$PATH" PG_REGRESS="$pg_regress" \
				PG_TEST_PORT_DIR="$tap_scratch" TMPDIR="$tap_scratch/tmp" \
				FOREIN_WORD_TOOL="$tap_scratch/forein_word" \
				FOREIN_SHARDS_SQL="$tap_scratch/pg-shards" \
				prove -j "$tap_jobs" -I "$perl_lib" -I "$tap_scratch/t" --timer "${run_files[@]}") &
			tap_pid=$!
			wait "$tap_pid"
			tap_rc=$?
			tap_pid=
			tap_cleanup
			if [ $tap_rc -eq 0 ] && [ ${#run_files[@]} -eq ${#files[@]} ]; then
				echo "TAP: PASSED"
			else
				tap_log_digest
				failed+=("TAP (logs: $tapdir/log/)")
			fi
		else
			failed+=("TAP: no scratch directory for the clusters")
		fi
	fi
fi

step "summary"
if [ ${#failed[@]} -eq 0 ]; then
	echo "run-pg-tests: ALL PASSED"
	exit 0
fi
for f in "${failed[@]}"; do echo "run-pg-tests: FAILED: $f"; done
exit 1

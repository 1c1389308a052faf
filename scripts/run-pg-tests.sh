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
# Everything runs in private clusters on free ports, with data under
# DIR/pg-tests (DIR defaults to build/).  As root, the servers and the TAP
# tests run as the unprivileged user $PG_CLUSTER_USER (default postgres).
# Exit status: 0 all passed, 1 a failure, 77 PostgreSQL is not installed
# (CTest reports the test as skipped).
#
# Randomized TAP tests print their seed; FOREIN_SEED=<n> replays one.
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
		-h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
		-*) echo "run-pg-tests: unknown option $1" >&2; exit 2 ;;
		*) tap_files+=("$1") ;;
	esac
	shift
done

PG_CONFIG=${PG_CONFIG:-pg_config}
export PG_CONFIG
PG_CLUSTER_USER=${PG_CLUSTER_USER:-postgres}
export PG_CLUSTER_USER

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

# 2. pg_regress
if [ $do_regress -eq 1 ]; then
	step "pg_regress suite (regress/)"
	if "$root/scripts/run-pg-regress.sh" --build "$build"; then
		echo "pg_regress: PASSED"
	else
		failed+=("pg_regress (diffs: $build/pg-tests/regress/regression.diffs)")
	fi
fi

# 3. TAP tests
if [ $do_tap -eq 1 ]; then
	step "TAP tests (regress/t/)"
	if ! perl -MIPC::Run -e 1 2>/dev/null; then
		failed+=("TAP: perl module IPC::Run missing (apt-get install libipc-run-perl)")
	else
		tapdir=$build/pg-tests/tap
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
		runner=()
		if [ "$(id -u)" -eq 0 ]; then
			id "$PG_CLUSTER_USER" >/dev/null 2>&1 ||
				useradd --system --no-create-home --shell /usr/sbin/nologin "$PG_CLUSTER_USER"
			chown -R "$PG_CLUSTER_USER:" "$tapdir"
			runner=(runuser -u "$PG_CLUSTER_USER" --)
		fi
		# PostgreSQL::Test::Utils puts tmp_check (clusters, logs) in the
		# current directory: the build tree.
		if (cd "$tapdir" && "${runner[@]+"${runner[@]}"}" env \
			PATH="$bindir:$PATH" PG_REGRESS="$pg_regress" \
			PG_TEST_PORT_DIR="$tapdir" FOREIN_BUILD_DIR="$build" \
			prove -I "$perl_lib" -I "$root/regress/t" --timer "${files[@]}"); then
			echo "TAP: PASSED"
		else
			failed+=("TAP (logs: $tapdir/tmp_check/log/)")
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

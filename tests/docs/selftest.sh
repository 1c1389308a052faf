#!/usr/bin/env bash
# selftest.sh: run-doc-blocks.sh over its fixtures (tests/docs/fixtures/).
#
#   tests/docs/selftest.sh KIND [--ext PATH | --build DIR]
#
# pass/ must run (every marked KIND block, unmarked blocks not at all);
# fail/ must fail, naming the failing block and only it; malformed/ must
# fail on each bad marker.  Exits 77 when the runner skips (psql without
# PostgreSQL), so CTest reports the test skipped.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd -P)
kind=$1
shift
runner=(bash "$here/run-doc-blocks.sh" --kind "$kind" "$@")
out=$(mktemp)
trap 'rm -f "$out"' EXIT
bad=0
fail() { echo "selftest: FAILED: $*"; bad=1; }
expect_line() { grep -qxF -- "$1" "$out" || fail "expected the line: $1"; }
reject_line() { ! grep -qF -- "$1" "$out" || fail "unexpected: $1"; }

run() {
	echo "===== run-doc-blocks --kind $kind $1"
	"${runner[@]}" "$here/fixtures/$1" >"$out" 2>&1
	local rc=$?
	cat "$out"
	echo "(exit status $rc)"
	return $rc
}

run pass; rc=$?
[ $rc -ne 77 ] || exit 77
[ $rc -eq 0 ] || fail "pass/ exited $rc"
case $kind in
	sqlite3)
		expect_line "PASS sample.md block 1 (line 10, sqlite3)"
		expect_line "PASS sample.md block 2 (line 23, sqlite3)"
		reject_line "psql)"
		grep -q "ran 2 block(s), 0 failure(s)" "$out" || fail "pass/: not 2 blocks run" ;;
	psql)
		expect_line "PASS sample.md block 3 (line 38, psql)"
		expect_line "PASS sample.md block 4 (line 48, psql)"
		expect_line "PASS second.md block 3 (line 16, psql)"
		expect_line "PASS second.md block 4 (line 22, psql)"
		reject_line "sqlite3)"
		grep -q "ran 6 block(s), 0 failure(s)" "$out" || fail "pass/: not 6 blocks run" ;;
	netns)
		expect_line "PASS netns.md block 1 (line 3, netns)"
		reject_line "sqlite3)"
		reject_line "psql)"
		grep -q "ran 1 block(s), 0 failure(s)" "$out" || fail "pass/: not 1 block run" ;;
esac

run fail; rc=$?
[ $rc -ne 77 ] || exit 77
[ $rc -eq 1 ] || fail "fail/ exited $rc, not 1"
case $kind in
	sqlite3)
		expect_line "PASS fail.md block 1 (line 3, sqlite3)"
		expect_line "FAIL fail.md block 2 (line 9, sqlite3)"
		grep -q "no such table: no_such_table" "$out" || fail "fail/: the error is not shown" ;;
	psql)
		expect_line "PASS fail.md block 3 (line 16, psql)"
		expect_line "FAIL fail.md block 4 (line 21, psql)"
		grep -q 'relation "no_such_table" does not exist' "$out" || fail "fail/: the error is not shown" ;;
	netns)
		expect_line "PASS netns.md block 1 (line 3, netns)"
		expect_line "FAIL netns.md block 2 (line 8, netns)"
		grep -q "left network namespace forein-doc-left-behind behind, with processes" "$out" ||
			fail "fail/: the namespace left behind is not named"
		! ip netns list | grep -q '^forein-doc-left-behind' || {
			fail "fail/: the namespace left behind was not deleted"
			ip netns del forein-doc-left-behind
		} ;;
esac
grep -qx "not reached" "$out" && fail "fail/: ran past the failing statement"
grep -q "ran 2 block(s), 1 failure(s)" "$out" || fail "fail/: not 2 blocks run, 1 failed"

run malformed; rc=$?
[ $rc -eq 1 ] || fail "malformed/ exited $rc, not 1"
expect_line "FAIL malformed.md line 3: marker not followed by a fenced code block"
expect_line "FAIL malformed.md line 6: unknown kind \"sqlite\" (sqlite3, psql or netns)"
expect_line "FAIL malformed.md line 11: the marked block is not closed"

[ $bad -eq 0 ] || exit 1
echo "selftest $kind: ok"

#!/usr/bin/env bash
# run-doc-blocks.sh: runs the fenced code blocks of the docs that claim to
# run, exactly as written.
#
#   tests/docs/run-doc-blocks.sh [--kind sqlite3|psql|netns] [--ext PATH] [--build DIR] DOCS_DIR
#
# A block claims to run when the line before its opening fence (blank
# lines aside) is a marker:
#
#   <!-- runs: sqlite3 -->   the sqlite3 shell (-bail), reading the block on
#                            its standard input, started in a fresh
#                            directory laid out like the repository root
#                            after `make`: build/sqlite_vfs/forein.so is a
#                            link to the extension (--ext, the built
#                            forein.so), so `.load build/sqlite_vfs/forein`
#                            works as written.  An in-memory database.
#   <!-- runs: psql -->      psql -X -v ON_ERROR_STOP=1 -f BLOCK, in a fresh
#                            database of a private PostgreSQL cluster on a
#                            free port (scripts/pg-cluster.sh, with forein
#                            preloaded), stopped on exit, also on failure.
#   <!-- runs: netns -->     bash (-e, pipefail), as root, in a fresh
#                            directory where build/ is a link to the
#                            build folder (--build, default the
#                            repository's build/): a block of the network
#                            programs that makes its own network namespace
#                            and runs them inside it (docs/network.md).
#                            After the block, a forein-* namespace it left
#                            is emptied (its processes killed) and deleted,
#                            and the block fails; so does a block that
#                            changed the root namespace's interfaces or
#                            addresses. Skipped (77) without root,
#                            `ip netns` or a built forein-switch.
#
# Every block runs on its own: nothing carries over from the block before.
# Each DOCS_DIR/*.md is read; --kind runs only blocks of that kind (marker
# errors are reported whatever the kind).  A marker not followed by a
# fenced block, an unclosed block or an unknown kind is a failure.
#
# Exit status: 0 every block ran; 1 a block (or a marker) failed, each
# failure named as "FAIL <doc> block <n> (line <l>, <kind>)" with the
# block and its output; 77 psql blocks are due but PostgreSQL or the
# installed forein extension is missing, or netns blocks are due but
# cannot run here (CTest: skipped), and nothing failed.  Environment: SQLITE3 (the shell, default sqlite3), PG_CONFIG,
# PG_CLUSTER_USER (see scripts/pg-cluster.sh).
set -uo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd -P)
only=""
ext=""
build=$root/build
while [ $# -gt 0 ]; do
	case $1 in
		--kind) only=$2; shift ;;
		--ext) ext=$2; shift ;;
		--build) build=$2; shift ;;
		-h|--help) sed -n '2,46p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
		-*) echo "run-doc-blocks: unknown option $1" >&2; exit 2 ;;
		*) break ;;
	esac
	shift
done
[ $# -eq 1 ] || { echo "usage: $0 [--kind sqlite3|psql|netns] [--ext PATH] [--build DIR] DOCS_DIR" >&2; exit 2; }
docs=$(cd "$1" && pwd -P) || exit 2
case $only in ""|sqlite3|psql|netns) ;; *) echo "run-doc-blocks: unknown kind $only" >&2; exit 2 ;; esac

SQLITE3=${SQLITE3:-sqlite3}
PG_CONFIG=${PG_CONFIG:-pg_config}

work=$(mktemp -d "${TMPDIR:-/tmp}/forein-docs.XXXXXX")
cluster=""
cdir=""
# shellcheck disable=SC2317  # run by the traps
cleanup() {
	if [ -n "$cluster" ]; then
		bash "$root/scripts/pg-cluster.sh" stop "$cluster" fast >/dev/null 2>&1 ||
			bash "$root/scripts/pg-cluster.sh" stop "$cluster" immediate >/dev/null 2>&1
	fi
	[ -z "$cdir" ] || rm -rf "$cdir"
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# 1. Extract: $work/blocks/<doc>/<n> holds block n of <doc>; the index has
#    "doc<TAB>n<TAB>line<TAB>kind" per block, the errors file one line per
#    malformed marker.
mkdir -p "$work/blocks"
index=$work/index
errors=$work/errors
: >"$index"
: >"$errors"
shopt -s nullglob
docfiles=("$docs"/*.md)
for f in "${docfiles[@]}"; do
	doc=$(basename "$f")
	mkdir -p "$work/blocks/$doc"
	awk -v doc="$doc" -v dir="$work/blocks/$doc" -v index_file="$index" -v err="$errors" '
	function fence_of(s) { sub(/^ */, "", s); match(s, /^(```+|~~~+)/); return substr(s, 1, RLENGTH) }
	function closes(s, f) { sub(/^ */, "", s); sub(/[ \t]*$/, "", s); return s ~ ("^" f) && s ~ /^(`+|~+)$/ && length(s) >= length(f) }
	BEGIN { state = 0; n = 0 }
	{
		line = $0
		if (state == 0) {
			if (line ~ /^[ \t]*<!--[ \t]*runs:/) {
				kind = line
				if (kind !~ /^[ \t]*<!--[ \t]*runs:[ \t]*[A-Za-z0-9_]+[ \t]*-->[ \t]*$/) {
					print doc " line " NR ": malformed marker: " line > err; next
				}
				sub(/^[ \t]*<!--[ \t]*runs:[ \t]*/, "", kind); sub(/[ \t]*-->[ \t]*$/, "", kind)
				if (kind != "sqlite3" && kind != "psql" && kind != "netns") {
					print doc " line " NR ": unknown kind \"" kind "\" (sqlite3, psql or netns)" > err; next
				}
				mline = NR; state = 1; next
			}
			if (line ~ /^ *(```|~~~)/) { fence = fence_of(line); state = 3 }
			next
		}
		if (state == 1) {
			if (line ~ /^[ \t]*$/) next
			if (line ~ /^ *(```|~~~)/) {
				fence = fence_of(line); match(line, /^ */); indent = RLENGTH
				n++; out = dir "/" n; printf "" > out
				state = 2; next
			}
			print doc " line " mline ": marker not followed by a fenced code block" > err
			state = 0; next
		}
		if (state == 2) {
			if (closes(line, fence)) {
				close(out); print doc "\t" n "\t" mline "\t" kind >> index_file
				state = 0; next
			}
			for (i = 0; i < indent && substr(line, 1, 1) == " "; i++) line = substr(line, 2)
			print line >> out; next
		}
		if (state == 3) { if (closes(line, fence)) state = 0; next }
	}
	END {
		if (state == 1) print doc " line " mline ": marker not followed by a fenced code block" > err
		if (state == 2) print doc " line " mline ": the marked block is not closed" > err
	}' "$f" || echo "$doc: could not be read" >>"$errors"
done

failures=0
ran=0
while IFS= read -r e; do
	echo "FAIL $e"
	failures=$((failures + 1))
done <"$errors"

# report STATUS DOC N LINE KIND BLOCKFILE OUTFILE
report() {
	echo "$1 $2 block $3 (line $4, $5)"
	if [ "$1" = FAIL ]; then
		echo "----- block -----"
		cat "$6"
		echo "----- output -----"
		cat "$7"
		echo "-----------------"
	fi
}

# conclude RC DOC N LINE KIND: counts block N of DOC as run, passed when RC
# is 0 (its block and output are $work/blocks/DOC/N and $work/run-DOC-N.out).
conclude() {
	local rc=$1 doc=$2 n=$3 line=$4 kind=$5 out=$work/run-$2-$3.out
	if [ "$rc" -eq 0 ]; then
		report PASS "$doc" "$n" "$line" "$kind"
	else
		echo "(exit status $rc)" >>"$out"
		report FAIL "$doc" "$n" "$line" "$kind" "$work/blocks/$doc/$n" "$out"
		failures=$((failures + 1))
	fi
	ran=$((ran + 1))
}

# 2. sqlite3 blocks.
run_sqlite3() {
	local doc=$1 n=$2 line=$3 block=$work/blocks/$1/$2
	local dir=$work/run-$doc-$n
	mkdir -p "$dir/build/sqlite_vfs"
	ln -s "$ext" "$dir/build/sqlite_vfs/forein.so"
	local rc=0
	(cd "$dir" && timeout 300 "$SQLITE3" -init /dev/null -bail <"$block" >"$dir.out" 2>&1) || rc=$?
	conclude "$rc" "$doc" "$n" "$line" sqlite3
}

# 3. psql blocks: one cluster for the run, a fresh database per block.
skipped=""
pg_ready() {
	[ -n "$cluster" ] && return 0
	command -v "$PG_CONFIG" >/dev/null 2>&1 || { skipped="pg_config not found"; return 1; }
	local bindir pkglibdir sharedir
	bindir=$("$PG_CONFIG" --bindir)
	pkglibdir=$("$PG_CONFIG" --pkglibdir)
	sharedir=$("$PG_CONFIG" --sharedir)
	if ! [ -x "$bindir/postgres" ] || ! [ -x "$bindir/initdb" ] || ! [ -x "$bindir/psql" ]; then
		skipped="no PostgreSQL server in $bindir (install postgresql-15)"
		return 1
	fi
	if ! [ -f "$pkglibdir/forein.so" ] || ! [ -f "$sharedir/extension/forein.control" ]; then
		skipped="the forein extension is not installed (make install)"
		return 1
	fi
	# The cluster lives in a world-searchable temp dir: as root, the server
	# runs as $PG_CLUSTER_USER, who may not enter the checkout (/root/...).
	cdir=$(mktemp -d "${TMPDIR:-/tmp}/forein-docs-pg.XXXXXX") || return 1
	chmod 755 "$cdir"
	cluster=$cdir/c
	if ! bash "$root/scripts/pg-cluster.sh" start "$cluster" </dev/null >"$work/pg-start.log" 2>&1; then
		cat "$work/pg-start.log"
		echo "FAIL: the PostgreSQL cluster did not start"
		exit 1
	fi
	return 0
}

run_psql() {
	local doc=$1 n=$2 line=$3 block=$work/blocks/$1/$2
	# One database per block of the whole run: block numbers restart in
	# every doc.
	local dir=$work/run-$doc-$n db="docblock_$((ran + 1))"
	mkdir -p "$dir"
	chmod 755 "$work" "$dir"
	local sql="$doc-block$n.sql"
	cp "$block" "$dir/$sql"
	chmod 644 "$dir/$sql"
	local rc=0
	# In the background, so that a signal runs the traps (stopping the
	# cluster ends the block's session) instead of waiting for it.
	{
		bash "$root/scripts/pg-cluster.sh" psql "$cluster" -q -d postgres \
			-c "CREATE DATABASE $db" &&
			(cd "$dir" && timeout 300 bash "$root/scripts/pg-cluster.sh" psql "$cluster" -d "$db" -f "$sql")
	} </dev/null >"$dir.out" 2>&1 &
	wait $! || rc=$?
	conclude "$rc" "$doc" "$n" "$line" psql
}

# 4. netns blocks: network programs in a namespace the block makes.
netns_skipped=""
netns_reported=""
netns_ready() {
	[ -z "$netns_skipped" ] || return 1
	if [ "$(id -u)" -ne 0 ]; then netns_skipped="they need root"
	elif ! ip netns list >/dev/null 2>&1; then netns_skipped="'ip netns' does not work here (iproute2)"
	elif [ ! -c /dev/net/tun ]; then netns_skipped="no /dev/net/tun"
	elif [ ! -x "$build/net/switch/forein-switch" ]; then netns_skipped="no $build/net/switch/forein-switch (libdpdk-dev)"
	fi
	[ -z "$netns_skipped" ]
}
forein_namespaces() { ip netns list 2>/dev/null | awk '{print $1}' | grep '^forein-' | sort || true; }

run_netns() {
	local doc=$1 n=$2 line=$3 block=$work/blocks/$1/$2
	local dir=$work/run-$doc-$n rc=0 before left ns pids
	local guard=$root/tests/net/root_netns_guard.sh
	mkdir -p "$dir"
	ln -s "$(cd "$build" && pwd -P)" "$dir/build"
	before=$(forein_namespaces)
	bash "$guard" snapshot "$dir.root-netns" >/dev/null
	# In the background, so that a signal runs the traps instead of waiting.
	(cd "$dir" && timeout 300 bash -e -o pipefail "$block") </dev/null >"$dir.out" 2>&1 &
	wait $! || rc=$?
	left=$(comm -13 <(echo "$before") <(forein_namespaces))
	for ns in $left; do
		pids=$(ip netns pids "$ns" 2>/dev/null || true)
		# shellcheck disable=SC2086
		[ -z "$pids" ] || kill -KILL $pids 2>/dev/null || true
		ip netns del "$ns" 2>/dev/null || true
		echo "(the block left network namespace $ns behind${pids:+, with processes $(echo $pids)}: deleted)" >>"$dir.out"
		[ "$rc" -ne 0 ] || rc=1
	done
	if ! bash "$guard" compare "$dir.root-netns" >>"$dir.out" 2>&1 && [ "$rc" -eq 0 ]; then rc=1; fi
	conclude "$rc" "$doc" "$n" "$line" netns
}

while IFS=$'\t' read -r -u 3 doc n line kind; do
	[ -z "$only" ] || [ "$only" = "$kind" ] || continue
	case $kind in
		sqlite3)
			if [ -z "$ext" ] || ! [ -f "$ext" ]; then
				echo "FAIL $doc block $n (line $line, sqlite3): no extension to load (--ext ${ext:-missing})"
				failures=$((failures + 1))
				continue
			fi
			run_sqlite3 "$doc" "$n" "$line"
			;;
		psql)
			[ -z "$skipped" ] || continue
			if ! pg_ready; then
				echo "SKIP psql blocks: $skipped"
				continue
			fi
			run_psql "$doc" "$n" "$line"
			;;
		netns)
			if ! netns_ready; then
				[ -n "$netns_reported" ] || echo "SKIP netns blocks: $netns_skipped"
				netns_reported=1
				continue
			fi
			run_netns "$doc" "$n" "$line"
			;;
	esac
done 3<"$index"

echo "run-doc-blocks: $docs: ran $ran block(s), $failures failure(s)${skipped:+, psql blocks skipped}${netns_skipped:+, netns blocks skipped}"
[ $failures -eq 0 ] || exit 1
[ -z "$skipped" ] && [ -z "$netns_skipped" ] || exit 77
exit 0

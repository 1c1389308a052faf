#!/usr/bin/env bash
# test_testbed.sh: tests of scripts/testbed.sh (docs/network.md, "testbed").
#
#   bash tests/testbed/test_testbed.sh args
#       bad flags are refused with exit 2 and a message naming the flag;
#       --help prints the usage and exits 0. Needs nothing built.
#   bash tests/testbed/test_testbed.sh dpdk BUILD_DIR
#       a short --mode dpdk run (20,000 keys, fattree, one round of 1 s):
#       the JSON line has its keys, wrong == 0, every hinted GET hit and
#       visited fewer tree nodes, the server's CPU per request measured,
#       nothing left behind. No root (memif); exit 77 without a built
#       forein-switch or 2 cores.
#   bash tests/testbed/test_testbed.sh e2e BUILD_DIR
#       a short real run (20,000 keys, 3 servers, 1 s runs, switch_lpm):
#       the JSON line has its keys, wrong == 0, hints hit, and no process,
#       TAP device or network namespace is left; then a run stopped by
#       SIGTERM mid-way, whose TAP ports were in its namespace and never
#       in the machine's own, leaves none either; the root namespace's
#       interfaces and addresses are unchanged; a run killed by SIGKILL
#       leaves its namespace, which netns_sweep (run by the next run)
#       empties and deletes. Exit 77 (skipped) without
#       root, /dev/net/tun, `ip netns` or a built forein-switch.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TESTBED=$ROOT/scripts/testbed.sh
failures=0
check() { # check DESCRIPTION COMMAND...: runs COMMAND, counts a failure
	local what=$1
	shift
	if "$@"; then echo "ok: $what"; else
		echo "FAILED: $what" >&2
		failures=$((failures + 1))
	fi
}

# expect_bad "ARGS" PATTERN: testbed.sh ARGS exits 2 and says PATTERN on stderr.
expect_bad() {
	local args=$1 pattern=$2 rc=0 err
	# shellcheck disable=SC2086
	err=$(bash "$TESTBED" $args 2>&1 >/dev/null) || rc=$?
	if [ "$rc" -ne 2 ]; then
		echo "  testbed.sh $args: exit $rc, want 2 ($err)" >&2
		return 1
	fi
	if ! grep -qE -- "$pattern" <<<"$err"; then
		echo "  testbed.sh $args: stderr '$err' does not match '$pattern'" >&2
		return 1
	fi
}

args_tests() {
	local out
	check "--help prints the usage, exit 0" bash -c "bash '$TESTBED' --help | grep -q -- '--backend NAME'"
	check "unknown flag" expect_bad "--bogus" "unknown flag '--bogus'"
	check "positional argument" expect_bad "switch_lpm" "unknown flag 'switch_lpm'"
	check "missing value" expect_bad "--keys" "--keys needs a value"
	check "flag as value" expect_bad "--keys --servers 3" "--keys needs a value"
	check "keys not a number" expect_bad "--keys 1e6" "--keys: '1e6' is not a whole number"
	check "keys zero" expect_bad "--keys 0" "--keys: '0'"
	check "servers zero" expect_bad "--servers 0" "--servers: '0' is not a whole number from 1 to 64"
	check "servers too many" expect_bad "--servers 65" "--servers: '65'"
	check "fewer keys than servers" expect_bad "--keys 2 --servers 3" "2 keys cannot fill 3 server shards"
	check "unknown workload" expect_bad "--workload x" "--workload: 'x' is not one of a b c d e f getputdel"
	check "zipf 1" expect_bad "--zipf 1" "--zipf: '1'"
	check "zipf 0" expect_bad "--zipf 0" "--zipf: '0'"
	check "zipf text" expect_bad "--zipf=high" "--zipf: 'high'"
	check "seconds 0" expect_bad "--seconds 0" "--seconds: '0'"
	check "seconds negative" expect_bad "--seconds -1" "--seconds: '-1'"
	check "rounds 0" expect_bad "--rounds 0" "--rounds: '0'"
	check "outstanding too many" expect_bad "--outstanding 5000" "--outstanding: '5000'"
	check "backend none" expect_bad "--backend none" "'none' writes no hints"
	check "backend bad name" expect_bad "--backend Switch-LPM" "--backend: 'Switch-LPM' is not a backend name"
	check "backend empty item" expect_bad "--backend switch_lpm,,fattree" "--backend: '' is not a backend name"
	check "backend twice" expect_bad "--backend fattree,fattree" "named twice"
	check "--flag=value form" expect_bad "--servers=x" "--servers: 'x'"
	check "unknown mode" expect_bad "--mode rdma" "--mode: 'rdma' is not one of kv remote-read dpdk"
	check "remote-read flag in kv mode" expect_bad "--fanout 16" "--fanout is a --mode remote-read flag"
	check "remote-read: workload d" expect_bad "--mode remote-read --workload d" "--workload: 'd' is not one of a b c"
	check "remote-read: fanout 3" expect_bad "--mode remote-read --fanout 3" "--fanout: '3'"
	check "remote-read: node bytes not a multiple of 8" expect_bad "--mode remote-read --node-bytes 8190" \
		"--node-bytes: '8190' is not a multiple of 8"
	check "remote-read: fanout and node bytes" expect_bad "--mode remote-read --fanout 16 --node-bytes 8192" \
		"give --fanout or --node-bytes, not both"
	check "remote-read: value bytes" expect_bad "--mode remote-read --value-bytes 40000" "--value-bytes: '40000'"
	check "remote-read: outstanding 300" expect_bad "--mode remote-read --outstanding 300" "--outstanding: '300'"
	check "dpdk: workload b" expect_bad "--mode dpdk --workload b" "--workload: 'b' is not c \(--mode dpdk"
	check "dpdk: two servers" expect_bad "--mode dpdk --servers 2" "--servers: '2' is not 1 \(--mode dpdk"
	check "dpdk: a remote-read flag" expect_bad "--mode dpdk --node-bytes 8192" "--node-bytes is a --mode remote-read flag"
	check "dpdk: keys zero" expect_bad "--mode dpdk --keys 0" "--keys: '0'"
	check "dpdk: outstanding 0" expect_bad "--mode dpdk --outstanding 0" "--outstanding: '0'"
	check "--help names --mode dpdk" bash -c "bash '$TESTBED' --help | grep -q -- 'kv|remote-read|dpdk'"
	# Valid flags get past the parser (whatever happens next is not exit 2).
	local rc=0
	bash "$TESTBED" --keys 10 --servers 1 --build /nonexistent/build >/dev/null 2>&1 || rc=$?
	check "valid flags are not refused as flags (exit $rc)" test "$rc" -ne 2
}

# dpdk_tests BUILD_DIR: a short --mode dpdk run (memif: no root, no TAP):
# the JSON line has every key, wrong 0, hints hit and save tree nodes, the
# server's CPU per request is measured both ways, and the run's memif
# socket folder and programs are gone after it. Exit 77 without a built
# forein-switch or fewer than 2 cores.
dpdk_tests() {
	local build=$1 out rc=0 line key dir
	if [ ! -x "$build/net/switch/forein-switch" ] || [ ! -x "$build/net/switch/gen/forein-switch-gen" ]; then
		echo "skipped: $build/net/switch/forein-switch(-gen) is not built (libdpdk-dev)"
		exit 77
	fi
	if [ "$(nproc)" -lt 2 ] || ! command -v taskset >/dev/null 2>&1; then
		echo "skipped: --mode dpdk pins the server to a core of its own: needs 2 cores and taskset"
		exit 77
	fi
	results=$(mktemp -d)
	trap 'rm -rf "$results"' EXIT
	out=$(bash "$TESTBED" --build "$build" --mode dpdk --keys 20000 --seconds 1 --rounds 1 --backend fattree \
		--results "$results/dpdk" 2>"$results/dpdk.stderr") || rc=$?
	echo "$out"
	check "dpdk: exits 0 (stderr: $(tail -n 3 "$results/dpdk.stderr" | tr '\n' ' '))" test "$rc" -eq 0
	line=$(grep '^{"backend":"fattree","mode":"dpdk"' <<<"$out" || true)
	check "dpdk: a JSON line for fattree" test -n "$line"
	for key in ops_per_s_hinted ops_per_s_plain ratio ratio_per_round p50_us_hinted p50_us_plain p99_us_hinted \
		p99_us_plain nodes_per_op_hinted nodes_per_op_plain reads_per_op_hinted reads_per_op_plain \
		server_cpu_us_per_op_hinted server_cpu_us_per_op_plain \
		server_busy_us_per_op_hinted server_busy_us_per_op_plain server_process_cpu_us_per_op_hinted \
		server_process_cpu_us_per_op_plain hint_hits wrong errors timeouts servers keys \
		height workload dist zipf seconds rounds; do
		check "dpdk: JSON has \"$key\"" grep -q "\"$key\":" <<<"$line"
	done
	check "dpdk: wrong == 0" grep -q '"wrong":0,' <<<"$line"
	check "dpdk: hint_hits > 0" grep -qE '"hint_hits":[1-9]' <<<"$line"
	check "dpdk: keys 20000, one server" grep -q '"servers":1,"keys":20000,' <<<"$line"
	# field LINE KEY: a number of the JSON line.
	field() { sed -n "s/.*\"$2\":\([0-9.]*\).*/\1/p" <<<"$1"; }
	check "dpdk: every hinted GET hit" test "$(field "$line" hint_hits)" = "$(field "$line" hinted_requests)"
	check "dpdk: fewer tree nodes per GET with hints" awk -v h="$(field "$line" nodes_per_op_hinted)" \
		-v p="$(field "$line" nodes_per_op_plain)" 'BEGIN {exit !(h > 0 && h < p)}'
	check "dpdk: reads_per_op is nodes_per_op" test "$(field "$line" reads_per_op_hinted)/$(field "$line" reads_per_op_plain)" = \
		"$(field "$line" nodes_per_op_hinted)/$(field "$line" nodes_per_op_plain)"
	for key in server_cpu_us_per_op_hinted server_cpu_us_per_op_plain server_busy_us_per_op_hinted \
		server_busy_us_per_op_plain ops_per_s_hinted ops_per_s_plain; do
		check "dpdk: $key > 0" awk -v v="$(field "$line" "$key")" 'BEGIN {exit !(v > 0)}'
	done
	check "dpdk: CSV with a row per run" test "$(grep -c '^fattree,1,' "$results/dpdk/testbed.csv")" -eq 2
	check "dpdk: the server's exit line in the logs" grep -q '"memif":' "$results/dpdk/logs/fattree-server.out"
	dir=$(sed -n 's/^== fattree: memif sockets \(.*\)\/0\/c.sock .*/\1/p' <<<"$out")
	check "dpdk: the socket folder was named" test -n "$dir"
	check "dpdk: the socket folder $dir is removed" test ! -e "$dir"
	# (every program of the run has the socket folder in its arguments)
	local left=""
	[ -z "$dir" ] || left=$(pgrep -f -- "$dir/" 2>/dev/null | tr '\n' ' ' || true)
	check "dpdk: no program of the run left ($left)" test -z "$left"
}

# children PID: the pids whose parent is PID.
children() { ps -o pid= --ppid "$1" 2>/dev/null | tr -d ' ' || true; }

e2e_tests() {
	local build=$1 out rc=0 json
	if [ "$(id -u)" -ne 0 ] || [ ! -c /dev/net/tun ] || ! ip netns list >/dev/null 2>&1; then
		echo "skipped: forein-switch's TAP ports need root, /dev/net/tun and 'ip netns' (iproute2)"
		exit 77
	fi
	if [ ! -x "$build/net/switch/forein-switch" ]; then
		echo "skipped: $build/net/switch/forein-switch is not built (libdpdk-dev)"
		exit 77
	fi
	results=$(mktemp -d)
	trap 'rm -rf "$results"' EXIT
	local guard=$ROOT/tests/net/root_netns_guard.sh
	bash "$guard" snapshot "$results/root-netns" >/dev/null

	# 1. A short run: the JSON lines, wrong 0, hints hit.
	out=$(bash "$TESTBED" --build "$build" --keys 20000 --servers 3 --seconds 1 --backend switch_lpm \
		--results "$results/run" 2>"$results/stderr") || rc=$?
	echo "$out"
	check "testbed.sh exits 0 (stderr: $(tail -n 3 "$results/stderr" | tr '\n' ' '))" test "$rc" -eq 0
	json=$(tail -n 1 <<<"$out")
	local key
	for key in backend ops_per_s_hinted ops_per_s_plain ratio hint_hits wrong p50_us_hinted p99_us_hinted \
		p50_us_plain p99_us_plain servers keys workload zipf seconds; do
		check "JSON line has \"$key\"" grep -q "\"$key\":" <<<"$json"
	done
	check "backend switch_lpm" grep -q '"backend":"switch_lpm"' <<<"$json"
	check "wrong == 0" grep -q '"wrong":0,' <<<"$json"
	check "hint_hits > 0" grep -qE '"hint_hits":[1-9]' <<<"$json"
	check "servers 3, keys 20000" grep -q '"servers":3,"keys":20000,' <<<"$json"
	check "CSV written" test -s "$results/run/testbed.csv"
	if command -v gnuplot >/dev/null 2>&1; then check "PNG written" test -s "$results/run/testbed.png"; fi
	local taps ns
	taps=$(sed -n 's/.*switch with hints \([^/]*\)\/\([^ ]*\) .*without \([^/]*\)\/\([^ ]*\) .*/\1 \2 \3 \4/p' <<<"$out")
	ns=$(sed -n 's/^== network namespace: \(forein-testbed-[0-9]*\) .*/\1/p' <<<"$out")
	check "TAP names printed" test -n "$taps"
	check "namespace named forein-testbed-PID" test -n "$ns"
	check "namespace $ns deleted" namespace_gone "$ns"
	for t in $taps; do check "TAP $t never in the root namespace" test ! -e "/sys/class/net/$t"; done

	# 1b. --mode remote-read, short: the JSON lines, wrong 0, the first
	# READs rewritten and fewer READs per lookup with hints.
	rc=0
	out=$(bash "$TESTBED" --build "$build" --mode remote-read --keys 20000 --seconds 1 --outstanding 4 \
		--backend fattree,switch_lpm --results "$results/rr" 2>"$results/rr.stderr") || rc=$?
	echo "$out"
	check "remote-read: exits 0 (stderr: $(tail -n 3 "$results/rr.stderr" | tr '\n' ' '))" test "$rc" -eq 0
	local b line
	for b in fattree switch_lpm; do
		line=$(grep "^{\"backend\":\"$b\",\"mode\":\"remote-read\"" <<<"$out" || true)
		check "remote-read: a JSON line for $b" test -n "$line"
		for key in ops_per_s_hinted ops_per_s_plain ratio p50_us_hinted p50_us_plain p99_us_hinted p99_us_plain \
			reads_per_op_hinted reads_per_op_plain hint_hits wrong; do
			check "remote-read $b: JSON has \"$key\"" grep -q "\"$key\":" <<<"$line"
		done
		check "remote-read $b: wrong == 0" grep -q '"wrong":0,' <<<"$line"
		check "remote-read $b: hint_hits > 0" grep -qE '"hint_hits":[1-9]' <<<"$line"
		check "remote-read $b: fewer READs per lookup with hints" awk -v l="$line" 'BEGIN {
			match(l, /"reads_per_op_hinted":[0-9.]+/); h = substr(l, RSTART + 22, RLENGTH - 22) + 0
			match(l, /"reads_per_op_plain":[0-9.]+/); p = substr(l, RSTART + 21, RLENGTH - 21) + 0
			exit !(h > 0 && h < p) }'
	done

	# 2. SIGTERM mid-run: every process it started is stopped, the TAPs go.
	bash "$TESTBED" --build "$build" --keys 20000 --servers 3 --seconds 5 --backend switch_lpm \
		--results "$results/term" >"$results/term.out" 2>&1 &
	local tb=$! end=$((SECONDS + 60)) kids="" p
	until grep -q "warm-up:" "$results/term.out" 2>/dev/null; do
		if [ "$SECONDS" -ge "$end" ] || ! kill -0 "$tb" 2>/dev/null; then break; fi
		sleep 0.1
	done
	kids=$(children "$tb")
	taps=$(sed -n 's/.*switch with hints \([^/]*\)\/\([^ ]*\) .*without \([^/]*\)\/\([^ ]*\) .*/\1 \2 \3 \4/p' "$results/term.out")
	ns=$(sed -n 's/^== network namespace: \(forein-testbed-[0-9]*\) .*/\1/p' "$results/term.out")
	check "the run got to its measured rounds" grep -q "warm-up:" "$results/term.out"
	check "mid-run: namespace $ns exists" test -e "/run/netns/$ns"
	for t in $taps; do
		check "mid-run: TAP $t is in $ns" has_link "$ns" "$t"
		check "mid-run: TAP $t is not in the root namespace" test ! -e "/sys/class/net/$t"
	done
	# (the forein programs among them, started as the script's own
	# children so that it can stop them and count their CPU; a shell's
	# $(...) may come and go)
	local inside programs=0
	inside=$(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ')
	for p in $kids; do
		[[ $(ps -o comm= -p "$p" 2>/dev/null) == forein-* ]] || continue
		programs=$((programs + 1))
		check "mid-run: $(ps -o comm= -p "$p") ($p) runs in $ns" grep -qw "$p" <<<"$inside"
	done
	check "mid-run: 2 switches and 3 servers among the children (found $programs programs)" test "$programs" -ge 5
	kill -TERM "$tb"
	rc=0
	wait "$tb" || rc=$?
	check "SIGTERM: exit 143 (got $rc)" test "$rc" -eq 143
	check "SIGTERM: it had started children" test -n "$kids"
	for p in $kids; do check "SIGTERM: child $p stopped" test ! -e "/proc/$p"; done
	check "SIGTERM: namespace $ns deleted" namespace_gone "$ns"

	# 3. SIGKILL mid-run: no trap runs, so the namespace and its programs
	# stay; the next run's sweep (netns_sweep) stops them and deletes it.
	bash "$TESTBED" --build "$build" --keys 20000 --servers 1 --seconds 5 --backend switch_lpm \
		--results "$results/kill" >"$results/kill.out" 2>&1 &
	tb=$!
	end=$((SECONDS + 60))
	until grep -q "warm-up:" "$results/kill.out" 2>/dev/null; do
		if [ "$SECONDS" -ge "$end" ] || ! kill -0 "$tb" 2>/dev/null; then break; fi
		sleep 0.1
	done
	ns=$(sed -n 's/^== network namespace: \(forein-testbed-[0-9]*\) .*/\1/p' "$results/kill.out")
	check "SIGKILL run: got to its measured rounds" grep -q "warm-up:" "$results/kill.out"
	kill -KILL "$tb"
	wait "$tb" 2>/dev/null || true
	local left
	left=$(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ')
	check "SIGKILL: $ns and its programs ($left) outlive the script" test -n "$left"
	(
		# shellcheck source=../../scripts/netns.sh
		. "$ROOT/scripts/netns.sh"
		netns_sweep
	)
	check "SIGKILL: the sweep deleted $ns" namespace_gone "$ns"
	for p in $left; do check "SIGKILL: the sweep stopped $p" gone_or_zombie "$p"; done
	check "the root namespace's interfaces and addresses are as before" \
		bash "$guard" compare "$results/root-netns"
}

# gone_or_zombie PID: the process has exited (an orphan's zombie waits for
# init to reap it).
gone_or_zombie() { [ ! -e "/proc/$1" ] || [ "$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)" = Z ]; }
# has_link NS IFACE: the namespace NS has the interface IFACE.
has_link() { ip -n "$1" link show dev "$2" >/dev/null 2>&1; }
# namespace_gone NAME: no network namespace NAME any more.
namespace_gone() { [ -n "$1" ] && [ ! -e "/run/netns/$1" ] && ! ip netns list | awk '{print $1}' | grep -qx -- "$1"; }

case "${1:-}" in
args) args_tests ;;
dpdk)
	[ $# -eq 2 ] || {
		echo "usage: $0 dpdk BUILD_DIR" >&2
		exit 2
	}
	dpdk_tests "$2"
	;;
e2e)
	[ $# -eq 2 ] || {
		echo "usage: $0 e2e BUILD_DIR" >&2
		exit 2
	}
	e2e_tests "$2"
	;;
*)
	echo "usage: $0 args | e2e BUILD_DIR | dpdk BUILD_DIR" >&2
	exit 2
	;;
esac
if [ "$failures" -gt 0 ]; then
	echo "$failures check(s) failed" >&2
	exit 1
fi
echo "all checks passed"

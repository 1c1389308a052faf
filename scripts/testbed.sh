#!/usr/bin/env bash
# testbed.sh: the end-to-end speedup of switch hints (issue 14, section 3),
# on this one machine (docs/network-benchmark.md, "End-to-end speedup").
#
# For each backend: K forein-kv-server processes (server I owns dataset
# shard I of K and mirrors its offload image to the hinting switch's agent
# under index I), two forein-switch processes on TAP ports in front of the
# same servers -- one writing hints, one started with --hints off -- and
# forein-load through one switch at a time, in alternating rounds (hinted
# first in odd rounds, plain first in even ones; both runs of a round use
# the same seed). Reported per backend: median ops/s with and without
# hints, their ratio, median p50/p99, the servers' hint hits (STATS
# `hint_hits`, summed over the servers and the hinted rounds), forein-load's
# `wrong`, and the CPU each role spent per operation.
#
#   bash scripts/testbed.sh [flags]          (scripts/testbed.sh --help)
#   make testbed TESTBED_FLAGS="--seconds 5"
#
# Needs root, /dev/net/tun (the switches' TAP ports), iproute2 (`ip
# netns`) and the built programs (forein-switch is built when libdpdk-dev
# is installed). Every program runs inside one network namespace the run
# makes, forein-testbed-PID (scripts/netns.sh): the TAP devices, their
# 10.77.x.0/24 addresses, the agent's loopback and all the traffic stay
# there, and the namespace is deleted when the run ends, also on a
# failure or a signal; the machine's own namespace is never touched. Writes
# to the results folder: testbed.csv (every run), summary.csv (one row per
# backend), testbed.png (gnuplot, when installed), results.jsonl and every
# program's output. Every process it starts is stopped when it ends, also
# on a failure or Ctrl-C. The last lines on stdout are one JSON object per
# backend. Exit 0; 1 when a program fails, a check fails or `wrong` > 0;
# 2 on a bad flag.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)

usage() {
	cat <<'EOF'
usage: scripts/testbed.sh [--mode kv|remote-read|dpdk] [--backend NAME[,NAME...]]
                          [--keys N] [--servers K] [--workload W] [--dist D] [--zipf THETA]
                          [--seconds S] [--rounds R] [--outstanding O]
                          [--threads T] [--value-bytes B] [--fanout F | --node-bytes B]
                          [--build DIR] [--results DIR]
  --mode M              kv: forein-kv-server behind the switches (the default);
                        remote-read: forein-mem-server memory nodes, the client
                        walking the tree one READ per node, the switch
                        rewriting the first READ (Fat-B+Tree's RDMA setting,
                        docs/remote-read.md); dpdk: forein-switch-gen ->
                        forein-switch -> forein-kv-server over memif, the
                        server's serving thread alone on core 1, the switch
                        and the generator on core 0 (no root, no TAP)
  --backend NAME[,...]  offload backends, one testbed each (default switch_lpm,fattree)
  --keys N              data set keys 0..N-1, sharded over the servers
                        (default 1000000; remote-read: 2000000, the paper's)
  --servers K           server (memory node) processes, 1..64 (default 3; remote-read: 1;
                        dpdk: 1, the only value)
  --workload W          forein-load's workload: a b c d e f getputdel (default c;
                        remote-read: a b c; dpdk: c, GETs only)
  --dist D              key distribution: zipf or uniform (default zipf)
  --zipf THETA          Zipf exponent of the keys, 0 < THETA < 1 (default 0.99)
  --seconds S           seconds of each measured run (default 10)
  --rounds R            rounds per backend; each runs once with hints and once
                        without (default 3; medians are reported)
  --outstanding O       forein-load's operations in flight, 1..4096 (default 16;
                        dpdk: the generator's window, 1..4096)
  --threads T           worker threads per server, 1..64 (default 1; dpdk: the
                        kernel-UDP workers beside the memif thread)
  --value-bytes B       remote-read: bytes per value (default 1000, the paper's)
  --fanout F            remote-read: branches per node, 4..1024 (default 16, the paper's)
  --node-bytes B        remote-read: nodes of B bytes instead (8192: 8 KiB pages)
  --build DIR           the CMake build folder with the programs (default build)
  --results DIR         where the CSVs, the plot and the logs go
                        (default results/testbed-<timestamp>)
  --help                this text
Needs root, /dev/net/tun (the switch's TAP ports) and iproute2: everything
runs inside a network namespace of its own (forein-testbed-PID), deleted at
the end (--mode dpdk: none of them; it needs taskset and 2 cores). The last lines on stdout are one JSON object per backend. Exit 1 if a program fails or any
answer is wrong, 2 on a bad flag.
EOF
}

bad() {
	echo "testbed: $*" >&2
	echo "testbed: see 'scripts/testbed.sh --help' for the flags" >&2
	exit 2
}
is_uint() { [[ $1 =~ ^[0-9]{1,10}$ ]]; }
in_range() { is_uint "$1" && [ "$((10#$1))" -ge "$2" ] && [ "$((10#$1))" -le "$3" ]; }

MODE=kv
BACKENDS=switch_lpm,fattree
KEYS=""
SERVERS=""
WORKLOAD=c
DIST=zipf
VALUE_BYTES=1000
FANOUT=""
NODE_BYTES=""
ZIPF=0.99
SECONDS_PER_RUN=10
ROUNDS=3
OUTSTANDING=16
THREADS=1
BUILD=$ROOT/build
RESULTS=""

while [ $# -gt 0 ]; do
	flag=$1
	shift
	case "$flag" in
	--help | -h)
		usage
		exit 0
		;;
	--*=*)
		set -- "${flag#*=}" "$@"
		flag=${flag%%=*}
		;;
	esac
	case "$flag" in
	--mode | --backend | --keys | --servers | --workload | --dist | --zipf | --seconds | --rounds | --outstanding | --threads | --value-bytes | --fanout | --node-bytes | --build | --results)
		if [ $# -eq 0 ] || [ -z "$1" ] || [[ $1 == --* ]]; then bad "$flag needs a value"; fi
		value=$1
		shift
		;;
	*) bad "unknown flag '$flag'" ;;
	esac
	case "$flag" in
	--mode) MODE=$value ;;
	--value-bytes) VALUE_BYTES=$value ;;
	--fanout) FANOUT=$value ;;
	--node-bytes) NODE_BYTES=$value ;;
	--backend) BACKENDS=$value ;;
	--keys) KEYS=$value ;;
	--servers) SERVERS=$value ;;
	--workload) WORKLOAD=$value ;;
	--dist) DIST=$value ;;
	--zipf) ZIPF=$value ;;
	--seconds) SECONDS_PER_RUN=$value ;;
	--rounds) ROUNDS=$value ;;
	--outstanding) OUTSTANDING=$value ;;
	--threads) THREADS=$value ;;
	--build) BUILD=$value ;;
	--results) RESULTS=$value ;;
	esac
done

case "$DIST" in
zipf | uniform) ;;
*) bad "--dist: '$DIST' is not one of zipf uniform" ;;
esac
case "$MODE" in
kv)
	KEYS=${KEYS:-1000000} SERVERS=${SERVERS:-3}
	for f in VALUE_BYTES:1000:--value-bytes FANOUT::--fanout NODE_BYTES::--node-bytes; do
		IFS=: read -r var def name <<<"$f"
		[ "${!var}" = "$def" ] || bad "$name is a --mode remote-read flag"
	done
	;;
remote-read)
	KEYS=${KEYS:-2000000} SERVERS=${SERVERS:-1}
	in_range "$VALUE_BYTES" 0 32744 || bad "--value-bytes: '$VALUE_BYTES' is not a whole number from 0 to 32744"
	[ -z "$FANOUT" ] || [ -z "$NODE_BYTES" ] || bad "give --fanout or --node-bytes, not both"
	[ -z "$FANOUT" ] || in_range "$FANOUT" 4 1024 || bad "--fanout: '$FANOUT' is not a whole number from 4 to 1024"
	[ -z "$NODE_BYTES" ] || { in_range "$NODE_BYTES" 104 32768 && [ $((10#$NODE_BYTES % 8)) -eq 0 ]; } ||
		bad "--node-bytes: '$NODE_BYTES' is not a multiple of 8 from 104 to 32768"
	case "$WORKLOAD" in
	a | b | c) ;;
	*) bad "--workload: '$WORKLOAD' is not one of a b c (--mode remote-read: reads and updates)" ;;
	esac
	in_range "$OUTSTANDING" 1 256 ||
		bad "--outstanding: '$OUTSTANDING' is not a whole number from 1 to 256 (--mode remote-read: a client thread each)"
	;;
dpdk)
	KEYS=${KEYS:-1000000} SERVERS=${SERVERS:-1}
	for f in VALUE_BYTES:1000:--value-bytes FANOUT::--fanout NODE_BYTES::--node-bytes; do
		IFS=: read -r var def name <<<"${f}"
		[ "${!var}" = "$def" ] || bad "$name is a --mode remote-read flag"
	done
	[ "$WORKLOAD" = c ] || bad "--workload: '$WORKLOAD' is not c (--mode dpdk: forein-switch-gen sends GETs only)"
	[ "$SERVERS" = 1 ] || bad "--servers: '$SERVERS' is not 1 (--mode dpdk: one forein-kv-server on the switch's memif port)"
	;;
*) bad "--mode: '$MODE' is not one of kv remote-read dpdk" ;;
esac

IFS=, read -r -a backend_list <<<"$BACKENDS"
[ "${#backend_list[@]}" -gt 0 ] || bad "--backend: give at least one backend name"
for b in "${backend_list[@]}"; do
	[[ $b =~ ^[a-z][a-z0-9_]*$ ]] || bad "--backend: '$b' is not a backend name (e.g. switch_lpm,fattree)"
	[ "$b" != none ] || bad "--backend: 'none' writes no hints, so there is nothing to compare"
done
[ "$(printf '%s\n' "${backend_list[@]}" | sort | uniq -d)" = "" ] || bad "--backend: a backend is named twice"
in_range "$SERVERS" 1 64 || bad "--servers: '$SERVERS' is not a whole number from 1 to 64"
in_range "$KEYS" 1 4000000000 || bad "--keys: '$KEYS' is not a whole number from 1 to 4000000000"
[ "$((10#$KEYS))" -ge "$((10#$SERVERS))" ] || bad "--keys: $KEYS keys cannot fill $SERVERS server shards"
case "$WORKLOAD" in
a | b | c | d | e | f | getputdel) ;;
*) bad "--workload: '$WORKLOAD' is not one of a b c d e f getputdel" ;;
esac
if ! [[ $ZIPF =~ ^0?\.[0-9]+$ ]] || ! awk -v z="$ZIPF" 'BEGIN {exit !(z > 0 && z < 1)}'; then
	bad "--zipf: '$ZIPF' is not a number with 0 < THETA < 1"
fi
if ! [[ $SECONDS_PER_RUN =~ ^[0-9]+(\.[0-9]+)?$ ]] || ! awk -v s="$SECONDS_PER_RUN" 'BEGIN {exit !(s > 0 && s <= 3600)}'; then
	bad "--seconds: '$SECONDS_PER_RUN' is not a number of seconds, 0 < S <= 3600"
fi
in_range "$ROUNDS" 1 100 || bad "--rounds: '$ROUNDS' is not a whole number from 1 to 100"
in_range "$OUTSTANDING" 1 4096 || bad "--outstanding: '$OUTSTANDING' is not a whole number from 1 to 4096"
in_range "$THREADS" 1 64 || bad "--threads: '$THREADS' is not a whole number from 1 to 64"
KEYS=$((10#$KEYS)) SERVERS=$((10#$SERVERS)) ROUNDS=$((10#$ROUNDS))
OUTSTANDING=$((10#$OUTSTANDING)) THREADS=$((10#$THREADS))
ZIPF=$(awk -v z="$ZIPF" 'BEGIN {print z + 0}')
DIST_ZIPF=""
[ "$DIST" = uniform ] || DIST_ZIPF=" $ZIPF"
SECONDS_PER_RUN=$(awk -v s="$SECONDS_PER_RUN" 'BEGIN {print s + 0}')

fail() {
	echo "testbed: $*" >&2
	exit 1
}

# ---------------------------------------------------------------------------
# What the run needs: root, /dev/net/tun, the programs.
# (--mode dpdk: memif ports, no TAP devices, no namespace, no root)
# shellcheck source=netns.sh
. "$ROOT/scripts/netns.sh"
if [ "$MODE" != dpdk ]; then
	[ "$(id -u)" -eq 0 ] || fail "needs root: forein-switch creates TAP devices (CAP_NET_ADMIN); run it with sudo"
	[ -c /dev/net/tun ] || fail "needs /dev/net/tun for forein-switch's TAP devices (modprobe tun)"
	why=$(netns_check 2>&1) || fail "$why"
fi
BUILD=$(cd "$BUILD" 2>/dev/null && pwd) || fail "--build: no such folder (build first: make)"
SWITCH=$BUILD/net/switch/forein-switch
SERVER=$BUILD/net/kv_server/forein-kv-server
MEM=$BUILD/net/mem_server/forein-mem-server
LOAD=$BUILD/net/load/forein-load
[ "$MODE" = remote-read ] && SERVER=$MEM
# (--mode dpdk: forein-switch-gen is the load, forein-agent keeps the image)
[ "$MODE" = dpdk ] && LOAD=$BUILD/net/switch/gen/forein-switch-gen
for p in "$SERVER" "$LOAD" $([ "$MODE" = dpdk ] && echo "$BUILD/net/agent/forein-agent"); do
	[ -x "$p" ] || fail "$p is not built (make, or cmake --build $BUILD)"
done
[ -x "$SWITCH" ] || fail "$SWITCH is not built: it needs DPDK (apt-get install libdpdk-dev, then reconfigure and build)"
switch_help=$("$SWITCH" --help 2>&1) || true
for f in --servers --hints --keys; do
	grep -q -- "$f" <<<"$switch_help" || fail "this forein-switch has no $f flag (several servers, hints off): rebuild it"
done
server_help=$("$SERVER" --help 2>&1) || true
grep -q -- --shard <<<"$server_help" || fail "this $(basename "$SERVER") has no --shard flag: rebuild it"
registered=$(sed -n 's/^ *backends: *//p' <<<"$server_help" | tr -d ' ' | tr ',' ' ')
[ "$MODE" = remote-read ] && registered="switch_lpm fattree" # the backends a switch rewrites READs with
[ "$MODE" != dpdk ] || command -v taskset >/dev/null 2>&1 || fail "--mode dpdk needs taskset (util-linux)"
for b in "${backend_list[@]}"; do
	[ -z "$registered" ] || [[ " $registered " == *" $b "* ]] ||
		bad "--backend: '$b' is not a registered backend ($registered)"
done

RESULTS=${RESULTS:-$ROOT/results/testbed-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$RESULTS"
RESULTS=$(cd "$RESULTS" && pwd)
LOGS=$RESULTS/logs
mkdir -p "$LOGS"

# ---------------------------------------------------------------------------
# Child processes: every one started is tracked until reaped, and stopped
# (SIGTERM, then SIGKILL after 10 s) when the script ends for any reason.
pids=()
declare -A LABEL # pid -> the name its output files have
track() { pids+=("$1"); }
untrack() {
	local keep=() p
	for p in "${pids[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
	pids=(${keep[@]+"${keep[@]}"})
}
# alive PID: a child that has not exited (a zombie counts as exited).
alive() {
	local st
	st=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) || return 1
	[ -n "$st" ] && [ "$st" != Z ]
}
# stop PID [SECONDS]: SIGTERM, wait up to SECONDS (10) for it to exit, then SIGKILL; reaps it.
stop_proc() {
	local pid=$1 end=$((SECONDS + ${2:-10}))
	kill -TERM "$pid" 2>/dev/null || true
	while alive "$pid" && [ "$SECONDS" -lt "$end" ]; do sleep 0.05; done
	if alive "$pid"; then
		echo "testbed: process $pid ignored SIGTERM; killing it" >&2
		kill -KILL "$pid" 2>/dev/null || true
	fi
	wait "$pid" 2>/dev/null || true
	untrack "$pid"
}
cleanup() {
	local rc=$? i
	trap - EXIT INT TERM HUP
	# Newest first: the load client, then the servers, then the switches.
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill -TERM "${pids[i]}" 2>/dev/null || true; done
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do stop_proc "${pids[i]}"; done
	netns_cleanup
	if [ "$rc" -ne 0 ] && [ -d "${LOGS:-}" ]; then echo "testbed: the programs' output is in $LOGS" >&2; fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

# start NAME CMD...: runs CMD in the background, stdout to logs/NAME.out,
# stderr to logs/NAME.err; sets STARTED to its pid.
start() {
	local name=$1
	shift
	# (ip execs the program: $! is its pid, for stop_proc and the CPU counts)
	ip netns exec "$NETNS" "$@" >"$LOGS/$name.out" 2>"$LOGS/$name.err" &
	STARTED=$!
	LABEL[$STARTED]=$name
	track "$STARTED"
}
# wait_ready NAME PID SECONDS: until NAME printed `ready` (polling, with a deadline).
wait_ready() {
	local name=$1 pid=$2 end=$((SECONDS + $3))
	until grep -qx ready "$LOGS/$name.out" 2>/dev/null; do
		if ! alive "$pid"; then
			local rc=0
			wait "$pid" 2>/dev/null || rc=$?
			untrack "$pid"
			fail "$name exited (status $rc) before it was ready: $(tail -n 5 "$LOGS/$name.err" | tr '\n' ' ')"
		fi
		[ "$SECONDS" -lt "$end" ] || fail "$name printed no 'ready' within $3 s (logs: $LOGS/$name.*)"
		sleep 0.05
	done
}
listen_port() { sed -n 's/^listening .*:\([0-9][0-9]*\)$/\1/p' "$LOGS/$1.out" | head -n 1; }

# json_get JSON KEY: the first "KEY": value (number or string) in JSON.
json_get() {
	local v
	v=$(grep -o "\"$2\":\(\"[^\"]*\"\|[-0-9.eE+]*\)" <<<"$1" | head -n 1 | cut -d: -f2-) || true
	v=${v#\"}
	printf '%s\n' "${v%\"}"
}

# Free UDP ports for the servers (the namespace's /proc/net/udp*, not in use, distinct).
pick_ports() {
	local n=$1 used port tries=0
	used=" $(netns_exec awk 'FNR > 1 {n = split($2, a, ":"); print a[n]}' /proc/net/udp /proc/net/udp6 2>/dev/null |
		while read -r h; do printf '%d ' "$((16#$h))"; done) "
	PORTS=()
	while [ "${#PORTS[@]}" -lt "$n" ]; do
		port=$((20000 + RANDOM % 12000))
		tries=$((tries + 1))
		[ "$tries" -lt 10000 ] || fail "found no free UDP ports"
		[[ $used == *" $port "* ]] && continue
		used="$used$port "
		PORTS+=("$port")
	done
}

# Per backend run: TAP names and /24s, inside the run's own namespace (so
# nothing else can hold them): backend K's hinting switch on 10.77.4K and
# 10.77.4K+1, its plain one on 10.77.4K+2 and 10.77.4K+3.
pick_nets() {
	local k=$1 b=$((4 * $1))
	NETS=("10.77.$b" "10.77.$((b + 1))" "10.77.$((b + 2))" "10.77.$((b + 3))")
	IFACES=("ftb${k}hc" "ftb${k}hs" "ftb${k}pc" "ftb${k}ps")
}

# start_switches K WHAT: backend K's two switches (hints on, hints off),
# each on its own TAP pair and /24s, routing to the same $SERVERS servers
# on fresh ports; sets PORTS, NETS, IFACES, ports_csv, sw_hinted,
# sw_plain and agent_port (the hinting switch's agent). WHAT names the
# servers in the line it prints.
start_switches() {
	pick_ports "$SERVERS"
	pick_nets "$1"
	ports_csv=$(
		IFS=,
		echo "${PORTS[*]}"
	)
	echo
	echo "== $B: $2 on UDP ports $ports_csv; switch with hints ${IFACES[0]}/${IFACES[1]} (${NETS[0]}, ${NETS[1]}), without ${IFACES[2]}/${IFACES[3]} (${NETS[2]}, ${NETS[3]})"
	start "$B-switch-hinted" "$SWITCH" --servers "$ports_csv" --keys "$KEYS" --service-port "$SERVICE_PORT" \
		--hints on --agent-listen 127.0.0.1:0 --client-iface "${IFACES[0]}" --server-iface "${IFACES[1]}" \
		--client-net "${NETS[0]}" --server-net "${NETS[1]}"
	sw_hinted=$STARTED
	wait_ready "$B-switch-hinted" "$sw_hinted" 60
	agent_port=$(listen_port "$B-switch-hinted")
	[ -n "$agent_port" ] || fail "forein-switch printed no 'listening HOST:PORT' line"
	start "$B-switch-plain" "$SWITCH" --servers "$ports_csv" --keys "$KEYS" --service-port "$SERVICE_PORT" \
		--hints off --agent-listen 127.0.0.1:0 --client-iface "${IFACES[2]}" --server-iface "${IFACES[3]}" \
		--client-net "${NETS[2]}" --server-net "${NETS[3]}"
	sw_plain=$STARTED
	wait_ready "$B-switch-plain" "$sw_plain" 60
}

# server_stats PORT: one STATS request to 127.0.0.1:PORT (the namespace's
# loopback) over bash's /dev/udp; prints the JSON counters (the reply's
# value: 24-byte header, no key). Resent up to 5 times, 1 s each.
STATS_REQUEST='\xf0\xe1\x01\x07\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x2a\x00\x00\x00\x00\x00\x00\x00\x00'
stats_once() { # PORT REQUEST: one try, run inside the namespace
	local fd reply
	exec {fd}<>"/dev/udp/127.0.0.1/$1"
	# shellcheck disable=SC2059
	printf "$2" >&"$fd"
	reply=$(timeout 1 dd bs=65536 count=1 status=none <&"$fd" 2>/dev/null | tail -c +25) || true
	exec {fd}>&-
	[[ $reply == '{'* ]] && printf '%s\n' "$reply"
}
server_stats() {
	local port=$1 reply
	for _ in 1 2 3 4 5; do
		reply=$(netns_exec bash -c "$(declare -f stats_once); stats_once $port '$STATS_REQUEST'") || true
		if [[ $reply == '{'* ]]; then
			printf '%s\n' "$reply"
			return 0
		fi
	done
	return 1
}
# snapshot: each server's STATS; sets SNAP_HINTED[i], SNAP_HITS[i], SNAP_REQ[i]
# (requests other than STATS) and the sums S_HINTED, S_HITS, S_REQ,
# S_FALLBACKS, S_NODES (the tree's nodes_visited).
snapshot() {
	local i js f v stat_hinted stat_hint_hits stat_requests stat_stats stat_nodes_visited stat_fallbacks
	S_HINTED=0 S_HITS=0 S_REQ=0 S_FALLBACKS=0 S_NODES=0
	for ((i = 0; i < SERVERS; i++)); do
		js=$(server_stats "${PORTS[i]}") || fail "server $i (port ${PORTS[i]}) did not answer STATS"
		for f in hinted hint_hits requests stats nodes_visited fallbacks; do
			v=$(json_get "$js" "$f")
			[[ $v =~ ^[0-9]+$ ]] || fail "server $i's STATS reply has no counter '$f': $js"
			printf -v "stat_$f" '%s' "$v"
		done
		SNAP_HINTED[i]=$stat_hinted
		SNAP_HITS[i]=$stat_hint_hits
		SNAP_REQ[i]=$((stat_requests - stat_stats))
		S_NODES=$((S_NODES + stat_nodes_visited))
		S_HINTED=$((S_HINTED + SNAP_HINTED[i]))
		S_HITS=$((S_HITS + SNAP_HITS[i]))
		S_REQ=$((S_REQ + SNAP_REQ[i]))
		S_FALLBACKS=$((S_FALLBACKS + stat_fallbacks))
	done
}

# CPU time (clock ticks) a process has used, and the machine's busy and total ticks.
proc_ticks() { sed 's/^.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'; }
machine_ticks() { awk '/^cpu / {t = 0; for (i = 2; i <= NF; i++) t += $i; print t - $5 - $6, t}' /proc/stat; }
role_ticks() { # sums proc_ticks over the pids given
	local t=0 p
	for p in "$@"; do t=$((t + $(proc_ticks "$p"))); done
	echo "$t"
}
# The CPU ticks of the shell's reaped children (`times`, second line: user
# sys), in the shell itself (a subshell would count its own children).
children_ticks() {
	times >"$TIMES_FILE"
	CHILD_TICKS=$(tail -n 1 "$TIMES_FILE" | awk -v hz="$HZ" '{
		n = 0
		for (i = 1; i <= 2; i++) { split($i, p, "m"); sub("s", "", p[2]); n += p[1] * 60 + p[2] }
		printf "%d\n", n * hz + 0.5 }')
}

# run_load NAME TARGET SECONDS VERIFY SEED: one forein-load run (with the
# flags in LOAD_EXTRA, if any); sets LOAD_JSON and LOAD_CPU (its CPU ticks).
run_load() {
	local name=$1 target=$2 secs=$3 verify=$4 seed=$5 rc=0 before
	local args=(--target "$target" --keys "$KEYS" --workload "$WORKLOAD" --dist "$DIST" --zipf "$ZIPF"
		--seconds "$secs" --outstanding "$OUTSTANDING" --seed "$seed" ${LOAD_EXTRA[@]+"${LOAD_EXTRA[@]}"})
	[ "$verify" = 1 ] && args+=(--verify)
	children_ticks
	before=$CHILD_TICKS
	start "$name" "$LOAD" "${args[@]}"
	local pid=$STARTED
	wait "$pid" || rc=$?
	untrack "$pid"
	children_ticks
	LOAD_CPU=$((CHILD_TICKS - before))
	[ "$rc" -eq 0 ] || [ "$rc" -eq 1 ] ||
		fail "forein-load ($name) failed (status $rc): $(tail -n 5 "$LOGS/$name.err" | tr '\n' ' ')"
	LOAD_JSON=$(tail -n 1 "$LOGS/$name.out")
	[[ $LOAD_JSON == '{'* ]] || fail "forein-load ($name) printed no JSON line (logs: $LOGS/$name.*)"
	local w
	w=$(json_get "$LOAD_JSON" wrong)
	TOTAL_WRONG=$((TOTAL_WRONG + w))
	BACKEND_WRONG=$((BACKEND_WRONG + w))
}
# check_running: every server and switch of this backend still runs.
check_running() {
	local p
	for p in "${server_pids[@]}" "$sw_hinted" "$sw_plain"; do
		alive "$p" && continue
		fail "${LABEL[$p]} exited during the run: $(tail -n 5 "$LOGS/${LABEL[$p]}.err" | tr '\n' ' ')"
	done
}

# csv_col BACKEND MODE FIELD: the column FIELD of that backend's measured runs in MODE.
csv_col() {
	awk -F, -v b="$1" -v m="$2" -v f="$3" 'NR == 1 {for (i = 1; i <= NF; i++) if ($i == f) c = i; next}
		$1 == b && $3 == m {print $c}' "$CSV"
}
median() { sort -g | awk '{a[NR] = $1} END {if (NR == 0) print "nan"; else if (NR % 2) print a[(NR + 1) / 2]; else printf "%.6g\n", (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
sum() { awk '{s += $1} END {printf "%d\n", s}'; }
med() { csv_col "$1" "$2" "$3" | median; }
# per_request BACKEND MODE FIELD: FIELD summed over the mode's runs, per server request.
per_request() {
	awk -F, -v b="$1" -v m="$2" -v f="$3" 'NR == 1 {for (i = 1; i <= NF; i++) {if ($i == f) c = i; if ($i == "server_requests") o = i}; next}
		$1 == b && $3 == m {t += $c; n += $o} END {printf "%.2f", n ? t / n : 0}' "$CSV"
}
# cpu_per_op BACKEND MODE FIELD: CPU microseconds per operation over the mode's runs.
cpu_per_op() {
	awk -F, -v b="$1" -v m="$2" -v f="$3" 'NR == 1 {for (i = 1; i <= NF; i++) {if ($i == f) c = i; if ($i == "ops") o = i}; next}
		$1 == b && $3 == m {t += $c; n += $o} END {printf "%.1f", n ? t * 1e6 / n : 0}' "$CSV"
}

# ---------------------------------------------------------------------------
if [ "$MODE" = remote-read ]; then
	# shellcheck source=testbed-remote-read.sh
	. "$ROOT/scripts/testbed-remote-read.sh"
	exit 0
fi
# shellcheck source=testbed-dpdk.sh
if [ "$MODE" = dpdk ]; then . "$ROOT/scripts/testbed-dpdk.sh"; exit 0; fi

CSV=$RESULTS/testbed.csv
SUMMARY=$RESULTS/summary.csv
JSONL=$RESULTS/results.jsonl
echo "backend,round,mode,seed,ops,ops_per_s,seconds,p50_us,p99_us,errors,timeouts,wrong,verified,server_requests,server_hinted,server_hint_hits,server_fallbacks,server_nodes_visited,cpu_servers_s,cpu_switch_s,cpu_load_s,machine_busy_cores" >"$CSV"
echo "backend,servers,keys,workload,zipf,seconds,rounds,ops_per_s_hinted,ops_per_s_plain,ratio,ratio_per_round,p50_us_hinted,p99_us_hinted,p50_us_plain,p99_us_plain,hint_hits,hinted_requests,requests,plain_hinted_requests,wrong,errors,timeouts" >"$SUMMARY"
: >"$JSONL"
HZ=$(getconf CLK_TCK)
TIMES_FILE=$LOGS/.times
SERVICE_PORT=9000
# Read-only workloads are verified in every run. A writing workload can be
# verified only by the first writer of fresh servers (forein-load --verify
# knows its own writes, not an earlier run's): its 1 s warm-up through the
# hinting switch is verified, the measured runs are not.
VERIFY_RUNS=0
[ "$WORKLOAD" = c ] && VERIFY_RUNS=1

echo "== testbed: $(uname -srm), $(nproc) cores, $(lscpu 2>/dev/null | sed -n 's/^Model name:[[:space:]]*//p' | head -n 1)"
echo "== date: $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== backends $BACKENDS; $KEYS keys on $SERVERS servers ($THREADS threads each); workload $WORKLOAD, $DIST${DIST_ZIPF:-};" \
	"$ROUNDS round(s) of ${SECONDS_PER_RUN} s with and without hints, $OUTSTANDING outstanding"
echo "== results: $RESULTS"
netns_sweep
netns_add testbed || fail "could not create a network namespace (ip netns add forein-testbed-$$)"
echo "== network namespace: $NETNS (TAP ports, their addresses and every program's traffic stay inside it)"

TOTAL_WRONG=0
json_lines=()
for k in "${!backend_list[@]}"; do
	B=${backend_list[k]}
	BACKEND_WRONG=0
	server_pids=()
	sw_hinted="" sw_plain=""
	start_switches "$k" servers

	# The servers: on every address (each switch reaches them from its own
	# server-side /24), mirroring to the hinting switch's agent.
	for ((i = 0; i < SERVERS; i++)); do
		start "$B-server-$i" "$SERVER" --listen "0.0.0.0:${PORTS[i]}" --keys "$KEYS" --shard "$i/$SERVERS" \
			--backend "$B" --agent "127.0.0.1:$agent_port" --threads "$THREADS"
		server_pids+=("$STARTED")
		wait_ready "$B-server-$i" "$STARTED" 300
	done
	target_hinted=${NETS[0]}.2:$SERVICE_PORT
	target_plain=${NETS[2]}.2:$SERVICE_PORT

	# Warm-up: the hinting switch must hold every server's image before the
	# first measured run: 1 s runs until each server has seen hinted
	# requests (deadline 60 s). One 1 s run through the other switch too.
	snapshot
	declare -a first_hinted=("${SNAP_HINTED[@]}")
	warm_end=$((SECONDS + 60))
	n=0
	while :; do
		n=$((n + 1))
		# (only the first writer of fresh servers can be verified)
		warm_verify=$VERIFY_RUNS
		[ "$n" -eq 1 ] && warm_verify=1
		run_load "$B-warmup-hinted-$n" "$target_hinted" 1 "$warm_verify" "$((900 + n))"
		snapshot
		missing=""
		for ((i = 0; i < SERVERS; i++)); do
			[ "${SNAP_HINTED[i]}" -gt "${first_hinted[i]}" ] || missing="$missing $i"
		done
		[ -n "$missing" ] || break
		[ "$SECONDS" -lt "$warm_end" ] ||
			fail "$B: after ${n} warm-up runs (60 s) servers$missing still get no hints: the switch holds no image for them (logs: $LOGS)"
	done
	run_load "$B-warmup-plain" "$target_plain" 1 "$VERIFY_RUNS" 999
	echo "   warm-up: images in the switch after $n run(s) of 1 s"

	for ((r = 1; r <= ROUNDS; r++)); do
		order="hinted plain"
		[ $((r % 2)) -eq 0 ] && order="plain hinted"
		seed=$((r * 7919))
		for mode in $order; do
			target=$target_hinted
			sw_pid=$sw_hinted
			if [ "$mode" = plain ]; then
				target=$target_plain
				sw_pid=$sw_plain
			fi
			snapshot
			h0=$S_HINTED x0=$S_HITS q0=$S_REQ f0=$S_FALLBACKS v0=$S_NODES
			cs0=$(role_ticks "${server_pids[@]}")
			cw0=$(proc_ticks "$sw_pid")
			read -r mb0 mt0 < <(machine_ticks)
			run_load "$B-$mode-$r" "$target" "$SECONDS_PER_RUN" "$VERIFY_RUNS" "$seed"
			check_running
			read -r mb1 mt1 < <(machine_ticks)
			cs1=$(role_ticks "${server_pids[@]}")
			cw1=$(proc_ticks "$sw_pid")
			snapshot
			j=$LOAD_JSON
			printf '%s,%d,%s,%d,%s,%s,%s,%s,%s,%s,%s,%s,%s,%d,%d,%d,%d,%d,%s,%s,%s,%s\n' "$B" "$r" "$mode" "$seed" \
				"$(json_get "$j" ops)" "$(json_get "$j" ops_per_s)" "$(json_get "$j" seconds)" \
				"$(json_get "$j" p50_us)" "$(json_get "$j" p99_us)" "$(json_get "$j" errors)" \
				"$(json_get "$j" timeouts)" "$(json_get "$j" wrong)" "$(json_get "$j" verified)" \
				"$((S_REQ - q0))" "$((S_HINTED - h0))" "$((S_HITS - x0))" "$((S_FALLBACKS - f0))" "$((S_NODES - v0))" \
				"$(awk -v t="$((cs1 - cs0))" -v hz="$HZ" 'BEGIN {printf "%.2f", t / hz}')" \
				"$(awk -v t="$((cw1 - cw0))" -v hz="$HZ" 'BEGIN {printf "%.2f", t / hz}')" \
				"$(awk -v t="$LOAD_CPU" -v hz="$HZ" 'BEGIN {printf "%.2f", t / hz}')" \
				"$(awk -v b="$((mb1 - mb0))" -v t="$((mt1 - mt0))" -v n="$(nproc)" 'BEGIN {printf "%.2f", t ? n * b / t : 0}')" \
				>>"$CSV"
			printf '   round %d %-6s %10.0f ops/s  p50 %s us  p99 %s us  server hint hits %d/%d  wrong %s\n' "$r" "$mode" \
				"$(json_get "$j" ops_per_s)" "$(json_get "$j" p50_us)" "$(json_get "$j" p99_us)" \
				"$((S_HITS - x0))" "$((S_REQ - q0))" "$(json_get "$j" wrong)"
		done
	done

	# Stop this backend's processes: the servers' exit lines and the
	# switches' counters go to the logs.
	for p in "${server_pids[@]}" "$sw_plain" "$sw_hinted"; do stop_proc "$p"; done

	# The backend's summary.
	oh=$(med "$B" hinted ops_per_s) op=$(med "$B" plain ops_per_s)
	ratio=$(awk -v a="$oh" -v b="$op" 'BEGIN {printf "%.3f", (b > 0) ? a / b : 0}')
	# The same ratio per round (both runs of a round are back to back, same seed), median.
	ratio_rounds=$(paste -d' ' <(csv_col "$B" hinted ops_per_s) <(csv_col "$B" plain ops_per_s) |
		awk '{printf "%.6f\n", ($2 > 0) ? $1 / $2 : 0}' | median)
	ratio_rounds=$(awk -v r="$ratio_rounds" 'BEGIN {printf "%.3f", r}')
	p50h=$(med "$B" hinted p50_us) p99h=$(med "$B" hinted p99_us) p50p=$(med "$B" plain p50_us) p99p=$(med "$B" plain p99_us)
	hits=$(csv_col "$B" hinted server_hint_hits | sum)
	hreq=$(csv_col "$B" hinted server_hinted | sum)
	preq=$(csv_col "$B" plain server_hinted | sum)
	reqs=$(csv_col "$B" hinted server_requests | sum)
	errors=$( (csv_col "$B" hinted errors && csv_col "$B" plain errors) | sum)
	timeouts=$( (csv_col "$B" hinted timeouts && csv_col "$B" plain timeouts) | sum)
	echo
	echo "== $B: $KEYS keys, $SERVERS servers, workload $WORKLOAD, $DIST${DIST_ZIPF:-}; $ROUNDS round(s) of ${SECONDS_PER_RUN} s each way (medians)"
	printf '   %-9s %10s %8s %8s %10s %12s %22s\n' "" "ops/s" "p50 us" "p99 us" "hint hits" "nodes/req" "CPU us/op srv/sw/load"
	for mode in hinted plain; do
		label="hints on"
		[ "$mode" = plain ] && label="hints off"
		printf '   %-9s %10.0f %8s %8s %10d %12s %22s\n' "$label" "$(med "$B" "$mode" ops_per_s)" \
			"$(med "$B" "$mode" p50_us)" "$(med "$B" "$mode" p99_us)" "$(csv_col "$B" "$mode" server_hint_hits | sum)" \
			"$(per_request "$B" "$mode" server_nodes_visited)" \
			"$(cpu_per_op "$B" "$mode" cpu_servers_s)/$(cpu_per_op "$B" "$mode" cpu_switch_s)/$(cpu_per_op "$B" "$mode" cpu_load_s)"
	done
	printf '   ratio %s (per round: %s)   hint hits %d of %d requests   wrong %d   errors %d   timeouts %d\n' \
		"$ratio" "$ratio_rounds" "$hits" "$reqs" "$BACKEND_WRONG" "$errors" "$timeouts"
	[ "$preq" -eq 0 ] || echo "testbed: warning: $B: the servers saw $preq hinted requests through the switch with --hints off" >&2
	echo "$B,$SERVERS,$KEYS,$WORKLOAD,$ZIPF,$SECONDS_PER_RUN,$ROUNDS,$oh,$op,$ratio,$ratio_rounds,$p50h,$p99h,$p50p,$p99p,$hits,$hreq,$reqs,$preq,$BACKEND_WRONG,$errors,$timeouts" >>"$SUMMARY"
	line=$(printf '{"backend":"%s","mode":"kv","ops_per_s_hinted":%s,"ops_per_s_plain":%s,"ratio":%s,"ratio_per_round":%s,"hint_hits":%d,"hinted_requests":%d,"requests":%d,"wrong":%d,"errors":%d,"timeouts":%d,"p50_us_hinted":%s,"p99_us_hinted":%s,"p50_us_plain":%s,"p99_us_plain":%s,"servers":%d,"keys":%d,"workload":"%s","dist":"%s","zipf":%s,"seconds":%s,"rounds":%d,"outstanding":%d,"threads":%d}' \
		"$B" "$oh" "$op" "$ratio" "$ratio_rounds" "$hits" "$hreq" "$reqs" "$BACKEND_WRONG" "$errors" "$timeouts" "$p50h" "$p99h" "$p50p" "$p99p" \
		"$SERVERS" "$KEYS" "$WORKLOAD" "$DIST" "$ZIPF" "$SECONDS_PER_RUN" "$ROUNDS" "$OUTSTANDING" "$THREADS")
	json_lines+=("$line")
	echo "$line" >>"$JSONL"
done

# ---------------------------------------------------------------------------
# The plot: median ops/s with and without hints per backend, min-max bars.
PNG=""
if command -v gnuplot >/dev/null 2>&1; then
	PNG=$RESULTS/testbed.png
	dat=$RESULTS/plot.dat
	for b in "${backend_list[@]}"; do
		row="$b"
		for mode in hinted plain; do
			row="$row $(csv_col "$b" "$mode" ops_per_s | median) $(csv_col "$b" "$mode" ops_per_s | sort -g | head -n 1) $(csv_col "$b" "$mode" ops_per_s | sort -g | tail -n 1)"
		done
		echo "$row"
	done >"$dat"
	term="set terminal pngcairo size 800,500 font 'DejaVu Sans,11'"
	gnuplot -e "set terminal pngcairo" >/dev/null 2>&1 || term="set terminal png size 800,500"
	gnuplot <<EOF || { echo "testbed: gnuplot failed; no plot" >&2; PNG=""; }
$term
set output '$PNG'
set termoption noenhanced
set title "forein testbed: $KEYS keys, $SERVERS servers, workload $WORKLOAD, $DIST${DIST_ZIPF:-} ($ROUNDS x ${SECONDS_PER_RUN} s, median, min-max)"
set ylabel 'ops/s'
set yrange [0:*]
set grid ytics
set style data histograms
set style histogram errorbars gap 2 lw 1
set style fill solid 0.7 border -1
set key top left
plot '$dat' using 2:3:4:xtic(1) title 'hints on', '' using 5:6:7 title 'hints off (--hints off)'
EOF
else
	echo "testbed: gnuplot not found, no plot (apt-get install gnuplot-nox)" >&2
fi

echo
echo "== results: $CSV, $SUMMARY${PNG:+, $PNG}; logs in $LOGS"
printf '%s\n' "${json_lines[@]}"
[ "$TOTAL_WRONG" -eq 0 ] || fail "forein-load --verify counted $TOTAL_WRONG wrong answers (logs: $LOGS)"

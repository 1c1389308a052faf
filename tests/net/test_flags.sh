#!/usr/bin/env bash
# test_flags.sh: the network programs' command lines (issue 41).
#
#   bash tests/net/test_flags.sh BUILD_DIR
#
# For every program and every flag its --help lists that takes a value:
# an empty value is refused with exit 2 and a message naming that flag
# (the parsers never start anything before the flags are checked). Then
# the cases the issue named: ports past 65535 or negative for the agents,
# --visibility without --backend switch_visibility, a loopback address
# other than 127.0.0.1 accepted by forein-agent, a non-loopback one
# without a token refused (exit 1) naming each program's own token flag, two servers on one UDP port
# (the second exits 2, the first keeps serving), and no
# /var/run/dpdk/PREFIX left after forein-switch and forein-switch-gen exit
# (a dead run's is swept when the next one starts). Programs not built (no DPDK, no gRPC)
# are skipped with a line saying so.
set -uo pipefail
BUILD=${1:?usage: test_flags.sh BUILD_DIR}
B=$BUILD/net
failures=0
checks=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { checks=$((checks + 1)); }
work=$(mktemp -d)
pids=()
cleanup() {
	local p
	for p in ${pids[@]+"${pids[@]}"}; do kill -KILL "$p" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT

# expect_refused WHAT PATTERN PROGRAM ARGS...: exit 2 (or $WANT), stderr matches PATTERN.
expect_refused() {
	local what=$1 pattern=$2 rc=0 want=${WANT:-2}
	shift 2
	timeout 30 "$@" >"$work/out" 2>"$work/err" </dev/null || rc=$?
	if [ "$rc" -ne "$want" ]; then
		fail "$what: exit $rc, want $want ($(head -c 300 "$work/err"))"
	elif ! grep -qE -- "$pattern" "$work/err"; then
		fail "$what: stderr does not match '$pattern': $(head -c 300 "$work/err")"
	else
		ok
	fi
}

# wait_line FILE LINE PID: until FILE has LINE (60 s; false if PID died).
wait_line() {
	local end=$((SECONDS + 60))
	until grep -qx -- "$2" "$1" 2>/dev/null; do
		kill -0 "$3" 2>/dev/null || return 1
		[ "$SECONDS" -lt "$end" ] || return 1
		sleep 0.05
	done
}

programs=(agent/forein-agent kv_server/forein-kv-server mem_server/forein-mem-server data_node/forein-data-node load/forein-load
	switch/forein-switch switch/gen/forein-switch-gen)
for p in "${programs[@]}"; do
	prog=$B/$p
	if [ ! -x "$prog" ]; then
		echo "skip: $prog is not built"
		continue
	fi
	help=$("$prog" --help) || fail "$p --help exited $?"
	# Under Options: "  --flag TYPE" (one space) takes a value; "  --flag   help" none.
	flags=$(awk '/^Options:/ {on = 1; next} on && /^$/ {exit} on && /^ +--[a-z0-9-]+ [^ ]/ {print $1}' <<<"$help")
	[ -n "$flags" ] || fail "$p: no flags with values found in --help"
	n=0
	for f in $flags; do
		expect_refused "$p $f ''" "$f" "$prog" "$f" ""
		n=$((n + 1))
	done
	echo "$p: $n flags refuse an empty value, naming the flag"
	expect_refused "$p --bogus" "--bogus" "$prog" --bogus
done

if [ -x "$B/agent/forein-agent" ]; then
	expect_refused "forein-agent port past 65535" "--listen" "$B/agent/forein-agent" --listen 127.0.0.1:115598
	expect_refused "forein-agent negative port" "--listen" "$B/agent/forein-agent" --listen 127.0.0.1:-1
	# (exit 1, as an address that cannot be bound)
	WANT=1 expect_refused "forein-agent not loopback, no token" "--token" \
		env -u FOREIN_AGENT_TOKEN "$B/agent/forein-agent" --listen 0.0.0.0:0
	# 127.0.0.2 is loopback: it serves.
	"$B/agent/forein-agent" --listen 127.0.0.2:0 >"$work/agent.out" 2>"$work/agent.err" &
	pids+=($!)
	if wait_line "$work/agent.out" ready $!; then ok; else fail "forein-agent --listen 127.0.0.2:0 did not serve: $(cat "$work/agent.err")"; fi
	kill -TERM $! 2>/dev/null
	wait $! 2>/dev/null
fi
if [ -x "$B/data_node/forein-data-node" ]; then
	D=$B/data_node/forein-data-node
	expect_refused "forein-data-node --acks 2 with one backup" "--acks.*at most the number of --backups" \
		"$D" --backups 127.0.0.1:9 --acks 2
	expect_refused "forein-data-node --acks 0" "--acks" "$D" --backups 127.0.0.1:9 --acks 0
	expect_refused "forein-data-node --acks without --backups" "--acks: needs --backups" "$D" --acks 1
	expect_refused "forein-data-node --backups h" "--backups.*HOST:PORT" "$D" --backups h
	expect_refused "forein-data-node --backups h:1," "--backups" "$D" --backups h:1,
	expect_refused "forein-data-node nine --backups" "--backups.*at most 8" \
		"$D" --backups h:1,h:2,h:3,h:4,h:5,h:6,h:7,h:8,h:9
	expect_refused "forein-data-node --backup --backups" "--backup and --backups" "$D" --backup --backups h:1
	expect_refused "forein-data-node --replicate-timeout-us without --backups" "--replicate-timeout-us" \
		"$D" --replicate-timeout-us 1000
	expect_refused "forein-data-node --replicate-timeout-us 99" "--replicate-timeout-us" \
		"$D" --backups h:1 --replicate-timeout-us 99
fi
if [ -x "$B/load/forein-load" ]; then
	L=$B/load/forein-load
	expect_refused "forein-load --zipf 2.5" "--zipf.*0 < THETA <= 2" "$L" --target 127.0.0.1:1 --keys 10 --workload c --zipf 2.5
	expect_refused "forein-load --zipf 0" "--zipf.*0 < THETA <= 2" "$L" --target 127.0.0.1:1 --keys 10 --workload c --zipf 0
fi
if [ -x "$B/switch/forein-switch" ]; then
	S=$B/switch/forein-switch
	expect_refused "forein-switch port past 65535" "--agent-listen" "$S" --agent-listen 127.0.0.1:115598
	expect_refused "forein-switch negative port" "--agent-listen" "$S" --agent-listen :-1
	WANT=1 expect_refused "forein-switch not loopback, no token" "--agent-token" \
		env -u FOREIN_AGENT_TOKEN "$S" --agent-listen 0.0.0.0:0
	expect_refused "forein-switch --visibility without the backend" "need --backend switch_visibility" "$S" --visibility off
	expect_refused "forein-switch --slots 1000" "--slots" "$S" --slots 1000
	expect_refused "forein-switch --hints maybe" "--hints" "$S" --hints maybe
	expect_refused "forein-switch --data-nodes 9101,abc" "--data-nodes" "$S" --data-nodes 9101,abc
	expect_refused "forein-switch --backend fattree" "--backend" "$S" --backend fattree
	expect_refused "forein-switch two --metadata-nodes without --keys" "--metadata-nodes with more than one port needs --keys" \
		"$S" --backend switch_visibility --data-nodes 9101 --metadata-nodes 9200,9201

	# The EAL's runtime directory goes with the program: a switch on two
	# memif sockets (no root, no TAP), stopped by SIGTERM.
	mkdir -p "$work/memif"
	# And one a run killed with SIGKILL left (a pid that does not run): swept at start.
	dead=4194000
	while [ -e "/proc/$dead" ]; do dead=$((dead + 1)); done
	mkdir -p "/var/run/dpdk/forein-switch-$dead"
	"$S" --agent-listen 127.0.0.1:0 --client-port "memif:$work/memif/c.sock" --server-port "memif:$work/memif/s.sock" \
		>"$work/sw.out" 2>"$work/sw.err" &
	sw=$!
	pids+=("$sw")
	if wait_line "$work/sw.out" ready "$sw"; then
		if [ -d "/var/run/dpdk/forein-switch-$sw" ]; then ok; else fail "no /var/run/dpdk/forein-switch-$sw while it runs"; fi
		if [ ! -e "/var/run/dpdk/forein-switch-$dead" ]; then ok; else
			fail "/var/run/dpdk/forein-switch-$dead (a dead run's) not swept"
			rm -rf "/var/run/dpdk/forein-switch-$dead"
		fi
		# forein-switch-gen: joins, fails nothing; its own runtime directory goes too.
		if [ -x "$B/switch/gen/forein-switch-gen" ]; then
			rc=0
			"$B/switch/gen/forein-switch-gen" --client-socket "$work/memif/c.sock" --server-socket "$work/memif/s.sock" \
				--count 10 >"$work/gen.out" 2>"$work/gen.err" &
			gen=$!
			wait "$gen" || rc=$?
			[ "$rc" -eq 0 ] || fail "forein-switch-gen --count 10 exited $rc: $(tail -n 3 "$work/gen.err")"
			if [ ! -e "/var/run/dpdk/forein-switch-gen-$gen" ]; then ok; else fail "/var/run/dpdk/forein-switch-gen-$gen left behind"; fi
		fi
		kill -TERM "$sw"
		wait "$sw" || fail "forein-switch exited $? after SIGTERM"
		if [ ! -e "/var/run/dpdk/forein-switch-$sw" ]; then ok; else fail "/var/run/dpdk/forein-switch-$sw left behind"; fi
	else
		fail "forein-switch on memif did not start: $(tail -n 5 "$work/sw.err")"
	fi
fi

# Several metadata nodes (forein-kv-server --mode metadata --shard I/K --keys N).
if [ -x "$B/kv_server/forein-kv-server" ]; then
	K=$B/kv_server/forein-kv-server
	M=(--mode metadata --listen 127.0.0.1:0 --data-nodes 127.0.0.1:9)
	expect_refused "metadata mode --keys without --shard" "--keys in metadata mode is the key space --shard I/K splits" \
		"$K" "${M[@]}" --keys 1000
	expect_refused "metadata mode --shard without --keys" "--shard I/K in metadata mode needs --keys N > 0" \
		"$K" "${M[@]}" --shard 1/5
	expect_refused "metadata mode --shard --keys 0" "--shard I/K in metadata mode needs --keys N > 0" \
		"$K" "${M[@]}" --shard 1/5 --keys 0
	expect_refused "metadata mode --shard 5/5" "--shard" "$K" "${M[@]}" --shard 5/5 --keys 1000
	expect_refused "metadata mode --data" "--data is not used in metadata mode" "$K" "${M[@]}" --data /dev/null
fi

# Two servers on one UDP port: the second is refused, the first serves on.
if [ -x "$B/kv_server/forein-kv-server" ]; then
	K=$B/kv_server/forein-kv-server
	"$K" --listen 127.0.0.1:0 --keys 1000 --backend none >"$work/kv1.out" 2>"$work/kv1.err" &
	kv=$!
	pids+=("$kv")
	if wait_line "$work/kv1.out" ready "$kv"; then
		port=$(sed -n 's/^listening .*:\([0-9]*\)$/\1/p' "$work/kv1.out")
		expect_refused "forein-kv-server --backend switch_visibility (not a lookup backend)" \
			"--backend: 'switch_visibility' is not a backend this server can look keys up with: none" \
			"$K" --listen 127.0.0.1:0 --keys 10 --backend switch_visibility
		expect_refused "a second forein-kv-server on port $port" "in use|another process" \
			"$K" --listen "127.0.0.1:$port" --keys 10 --backend none
		expect_refused "a second forein-kv-server on 0.0.0.0:$port" "in use|another process" \
			"$K" --listen "0.0.0.0:$port" --keys 10 --backend none
		if [ -x "$B/data_node/forein-data-node" ]; then
			expect_refused "forein-data-node on forein-kv-server's port $port" "in use|another process" \
				"$B/data_node/forein-data-node" --listen "127.0.0.1:$port"
		fi
		if [ -x "$B/load/forein-load" ]; then
			rc=0
			"$B/load/forein-load" --target "127.0.0.1:$port" --keys 1000 --workload c --seconds 0.5 --verify \
				>"$work/load.out" 2>"$work/load.err" || rc=$?
			if [ "$rc" -eq 0 ] && grep -q '"wrong":0,' "$work/load.out"; then ok; else
				fail "the first server after the refusals: forein-load exit $rc, $(tail -c 300 "$work/load.out")"
			fi
		fi
	else
		fail "forein-kv-server did not start: $(cat "$work/kv1.err")"
	fi
	kill -TERM "$kv" 2>/dev/null
	wait "$kv" 2>/dev/null
fi

# forein-load --history: only with the ordered workloads, and a path that
# cannot be written is refused before the run.
if [ -x "$B/load/forein-load" ]; then
	expect_refused "forein-load --history with workload c" "--history needs --workload write-only or write-heavy" \
		"$B/load/forein-load" --target 127.0.0.1:1 --keys 10 --workload c --history "$work/h"
	expect_refused "forein-load --history unwritable" "--history $work/no/such/h: cannot write" \
		"$B/load/forein-load" --target 127.0.0.1:1 --keys 10 --workload write-heavy --history "$work/no/such/h"
fi

echo "$checks passed, $failures failed"
[ "$failures" -eq 0 ]

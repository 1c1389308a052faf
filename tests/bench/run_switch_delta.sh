#!/usr/bin/env bash
# run_switch_delta.sh: Switch-delta's experiments on this machine
# (docs/switch-delta-experiments.md; paper 002, sections V-B, V-C, V-E2).
#
# D forein-data-node processes and M forein-kv-server --mode metadata
# (--metadata-nodes M, default 1; M > 1: node i runs --shard i/M --keys N
# and the switches get M ports and --keys N) on the wildcard address, and
# two forein-switch --backend switch_visibility processes on TAP ports in
# front of the same nodes: one with the
# visibility table on, one with it off (the paper's baseline: the same
# switch as a plain forwarder, every write takes phase 2). forein-load runs
# through one switch at a time, alternating which goes first per round,
# same seed for both runs of a round. Experiments:
#   latency   write-only, Zipf 0.99, at each --outstanding level: write p50 /
#             p99 and throughput, table on vs off (Fig. 6);
#   dmp       write-only at the highest level, table on, the metadata node
#             held to --metadata-cpu of a core (where its CPU is what limits,
#             as DMP's gain is CPU saved there) and restarted with --deferred
#             on vs off (Fig. 6's w/o DMP, V-E2);
#   mixed     write-heavy (50% reads): write and read latency, on vs off (Fig. 7);
#   bound     write-only at the highest level with the metadata node held to
#             --metadata-cpu of one core (a CPU cgroup quota): metadata
#             processing is the bottleneck, as in the paper's (6,3)-(7,3)
#             configurations (section V-C); on vs off. Every run also
#             records the metadata node's CPU time (utime + stime from
#             /proc/PID/stat before and after) and datagrams received and
#             sent (its STATS) per write acknowledged in the run;
#   skew      write-heavy (50% writes), table on, Zipf 0.8, 0.9, 0.99, 1.1,
#             1.2 at 48 and 768 requests in flight: the share of reads the
#             switch answers and of writes it did not store (Fig. 10b/c).
#   replication  write-only, table on vs off at each --outstanding level,
#             without and then with replication (paper V-D, Fig. 9): every
#             data node restarted as a primary with 2 backups (forein-data-node
#             --backups, --acks 1; the backups are 2 more processes per data
#             node), the metadata node(s) and both switches restarted too
#             (fresh logs: the switches' MaxTs must start over); write p50/p99
#             and the median-latency gain, without and with replication
#             (replication.csv).
#   sidx      the secondary-index case study (paper VI-B, with III-C's
#             partial writes): one forein-data-node --secondary-index
#             (--keys N, N/25 secondary keys) and one forein-kv-server
#             --mode metadata --secondary-index, both switches restarted in
#             front of them; forein-load --workload secondary-index (50%
#             writes moving a primary key to a new secondary key, 50% reads
#             of a secondary key's first 10 primary keys, each then read
#             and validated at the data node), Zipf 0.99, at each
#             --outstanding level, table on vs off. Runs after the others
#             (it replaces the data and metadata nodes); rows "sidx" in
#             runs.csv and summary.csv, and sidx.csv per run (primary keys
#             listed, kept, dropped by validation; truncated listings).
#   sidx-bound  the same with the metadata node held to --metadata-cpu of a
#             core, the paper's VI-B condition (its metadata node is the
#             bottleneck: "the throughput is limited ... by queuing issues
#             in the metadata node"); rows "sidx-bound". Runs after sidx's
#             rounds on the same nodes (a quota once set stays).
#
#   bash tests/bench/run_switch_delta.sh [--keys N] [--data-nodes D]
#        [--metadata-nodes M] [--seconds S] [--rounds R] [--levels 1,4,16,64]
#        [--metadata-cpu F]
#        [--experiments latency,mixed,dmp,bound,skew,replication,sidx,sidx-bound]
#        [--build DIR] [--results DIR]
#
# Needs root, /dev/net/tun and iproute2: every program runs inside one
# network namespace the run makes, forein-switch-delta-PID
# (scripts/netns.sh), where the switches' TAP ports and their 10.77.x
# addresses live; it is deleted when the run ends, also on a failure or a
# signal, and the machine's own namespace is never touched. Writes runs.csv (every run), summary.csv
# (medians per experiment, level and side), latency.png and throughput.png
# (gnuplot) and the
# programs' logs to the results folder; prints the summary. Exit 1 when a
# program fails or any answer is wrong, 2 on a bad flag.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)

KEYS=1000000
DATA_NODES=2
METADATA_NODES=1
SECONDS_PER_RUN=5
ROUNDS=3
LEVELS=1,4,16,64
METADATA_CPU=0.25
EXPERIMENTS=latency,mixed,dmp,bound
BUILD=$ROOT/build
RESULTS=""
usage() { sed -n '2,/^set -euo/p' "$0" | sed -n 's/^# \{0,1\}//p'; } # the comment above
bad() {
	echo "run_switch_delta: $*" >&2
	exit 2
}
while [ $# -gt 0 ]; do
	case "$1" in
	--help | -h)
		usage
		exit 0
		;;
	--keys | --data-nodes | --metadata-nodes | --seconds | --rounds | --levels | --metadata-cpu | --experiments | --build | --results)
		[ $# -ge 2 ] && [ -n "$2" ] || bad "$1 needs a value"
		case "$1" in
		--keys) KEYS=$2 ;;
		--data-nodes) DATA_NODES=$2 ;;
		--metadata-nodes) METADATA_NODES=$2 ;;
		--seconds) SECONDS_PER_RUN=$2 ;;
		--rounds) ROUNDS=$2 ;;
		--levels) LEVELS=$2 ;;
		--metadata-cpu) METADATA_CPU=$2 ;;
		--experiments) EXPERIMENTS=$2 ;;
		--build) BUILD=$2 ;;
		--results) RESULTS=$2 ;;
		esac
		shift 2
		;;
	*) bad "unknown flag '$1' (see --help)" ;;
	esac
done
[[ $KEYS =~ ^[0-9]+$ ]] && [ "$KEYS" -ge 100 ] || bad "--keys: a whole number >= 100"
[[ $DATA_NODES =~ ^[0-9]+$ ]] && [ "$DATA_NODES" -ge 1 ] && [ "$DATA_NODES" -le 16 ] || bad "--data-nodes: 1..16"
[[ $METADATA_NODES =~ ^[0-9]+$ ]] && [ "$METADATA_NODES" -ge 1 ] && [ "$METADATA_NODES" -le 16 ] ||
	bad "--metadata-nodes: 1..16"
[[ $SECONDS_PER_RUN =~ ^[0-9]+(\.[0-9]+)?$ ]] || bad "--seconds: a number"
[[ $ROUNDS =~ ^[0-9]+$ ]] && [ "$ROUNDS" -ge 1 ] || bad "--rounds: a whole number >= 1"
[[ $LEVELS =~ ^[0-9]+(,[0-9]+)*$ ]] || bad "--levels: comma-separated whole numbers"
names='(latency|mixed|dmp|bound|skew|replication|sidx|sidx-bound)'
[[ $EXPERIMENTS =~ ^$names(,$names)*$ ]] ||
	bad "--experiments: a comma-separated list of latency, mixed, dmp, bound, skew, replication, sidx, sidx-bound"
wants() { [[ ,$EXPERIMENTS, == *,$1,* ]]; }
# dmp and bound hold the one metadata node to a share of a core.
if [ "$METADATA_NODES" -gt 1 ] && { wants dmp || wants bound || wants sidx || wants sidx-bound; }; then
	bad "--experiments dmp, bound, sidx and sidx-bound run one metadata node (--metadata-nodes 1)"
fi
[[ $METADATA_CPU =~ ^0?\.[0-9]+$|^1(\.0*)?$ ]] || bad "--metadata-cpu: a fraction of one core, 0 < F <= 1"
[ "$(id -u)" -eq 0 ] || {
	echo "run_switch_delta: needs root (forein-switch's TAP ports, a network namespace)" >&2
	exit 1
}
# shellcheck source=../../scripts/netns.sh
. "$ROOT/scripts/netns.sh"
why=$(netns_check 2>&1) || {
	echo "run_switch_delta: $why" >&2
	exit 1
}
BUILD=$(cd "$BUILD" && pwd)
SWITCH=$BUILD/net/switch/forein-switch
DATA=$BUILD/net/data_node/forein-data-node
META=$BUILD/net/kv_server/forein-kv-server
LOAD=$BUILD/net/load/forein-load
for p in "$SWITCH" "$DATA" "$META" "$LOAD"; do [ -x "$p" ] || bad "no $p (build first)"; done
RESULTS=${RESULTS:-$ROOT/results/switch-delta-$(date -u +%Y%m%d-%H%M%S)}
mkdir -p "$RESULTS"
RESULTS=$(cd "$RESULTS" && pwd)
LOGS=$RESULTS/logs
mkdir -p "$LOGS"
# shellcheck source=processes.sh
. "$ROOT/tests/bench/processes.sh"
# The CPU cgroup that holds the metadata node in the bound experiment
# (v1 cpu controller or v2 cpu.max), removed on exit.
CG=""
trap 'cleanup; netns_cleanup; [ -z "$CG" ] || rmdir "$CG" 2>/dev/null || true' EXIT
netns_sweep
netns_add switch-delta || {
	echo "run_switch_delta: could not create a network namespace" >&2
	exit 1
}
limit_cpu() { # PID: into a cgroup with METADATA_CPU of one core; false if none can be made
	local quota
	quota=$(awk -v f="$METADATA_CPU" 'BEGIN {printf "%d", f * 100000}')
	if [ -d /sys/fs/cgroup/cpu ] && [ -w /sys/fs/cgroup/cpu ]; then
		CG=/sys/fs/cgroup/cpu/forein-switch-delta-$$
		mkdir -p "$CG" && echo 100000 >"$CG/cpu.cfs_period_us" && echo "$quota" >"$CG/cpu.cfs_quota_us" &&
			echo "$1" >"$CG/cgroup.procs"
	elif [ -f /sys/fs/cgroup/cgroup.controllers ] && grep -qw cpu /sys/fs/cgroup/cgroup.controllers; then
		CG=/sys/fs/cgroup/forein-switch-delta-$$
		mkdir -p "$CG" && echo "$quota 100000" >"$CG/cpu.max" && echo "$1" >"$CG/cgroup.procs"
	else
		return 1
	fi
}

fail() {
	echo "run_switch_delta: $*" >&2
	exit 1
}
json_get() { grep -o "\"$2\":[-0-9.eE+]*" <<<"$1" | head -n 1 | cut -d: -f2; }
# json_obj_get JSON OBJECT KEY: KEY inside the object OBJECT.
json_obj_get() { grep -o "\"$2\":{[^}]*}" <<<"$1" | head -n 1 | grep -o "\"$3\":[-0-9.eE+]*" | cut -d: -f2; }
# A UDP port nobody in the run's namespace holds.
free_port() {
	local p
	while :; do
		p=$((20000 + RANDOM % 12000))
		netns_exec grep -qi ":$(printf '%04X' "$p") " /proc/net/udp || {
			echo "$p"
			return
		}
	done
}

# The two switches' client sides, inside the run's namespace (nothing else
# holds them there); each switch's server side is the next /24.
NET_A=10.77.0
NET_B=10.77.2
SERVICE=$(free_port)
META_PORTS=()
for ((i = 0; i < METADATA_NODES; i++)); do META_PORTS+=("$(free_port)"); done
meta_list=$(
	IFS=,
	echo "${META_PORTS[*]}"
)
# Several metadata nodes split the key space dataset_key(0..KEYS-1).
SPLIT=()
[ "$METADATA_NODES" -gt 1 ] && SPLIT=(--keys "$KEYS")
DATA_PORTS=()
DATA_PIDS=() # the data nodes' (and, in the replication experiment, the backups')
for ((i = 0; i < DATA_NODES; i++)); do DATA_PORTS+=("$(free_port)"); done
data_list=$(
	IFS=,
	echo "${DATA_PORTS[*]}"
)

start() { # NAME PROGRAM ARGS...: runs it in the background, logs in $LOGS
	local name=$1
	shift
	# (ip execs the program: $! is its pid, for stop_proc and the CPU counts)
	ip netns exec "$NETNS" "$@" >"$LOGS/$name.out" 2>"$LOGS/$name.err" &
	STARTED=$!
	PIDS+=("$STARTED")
}

declare -A SWITCH_PIDS=() # by name, for the replication experiment's restart
# Two switches: "on" (client side NET_A.0/24, server side NET_A+1) and "off".
start_switch() { # NAME NET VISIBILITY
	local base=${2%.*} third=${2##*.}
	start "$1" "$SWITCH" --agent-listen 127.0.0.1:0 --client-iface "fsd${1}c" --server-iface "fsd${1}s" \
		--client-net "$2" --server-net "$base.$((third + 1))" --backend switch_visibility \
		--data-nodes "$data_list" --metadata-nodes "$meta_list" "${SPLIT[@]}" --service-port "$SERVICE" \
		--visibility "$3"
	SWITCH_PIDS[$1]=$STARTED
	wait_ready "$LOGS/$1.out" "$STARTED"
}
start_switch on "$NET_A" on
start_switch off "$NET_B" off

for ((i = 0; i < DATA_NODES; i++)); do
	start "data$i" "$DATA" --listen "0.0.0.0:${DATA_PORTS[i]}" --node "$i/$DATA_NODES" --keys "$KEYS"
	DATA_PIDS+=("$STARTED")
	wait_ready "$LOGS/data$i.out" "$STARTED"
done
META_PID=""
META_PIDS=()
META_EXTRA=() # the sidx experiment: --secondary-index
start_metadata() { # DEFERRED: on|off; META_PID is node 0's
	local pid
	for pid in "${META_PIDS[@]}"; do
		kill -TERM "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	META_PIDS=()
	local nodes="" p i shard name
	for p in "${DATA_PORTS[@]}"; do nodes="$nodes${nodes:+,}127.0.0.1:$p"; done
	for ((i = 0; i < METADATA_NODES; i++)); do
		shard=()
		name="metadata-$1"
		if [ "$METADATA_NODES" -gt 1 ]; then
			shard=(--shard "$i/$METADATA_NODES" --keys "$KEYS")
			name="metadata$i-$1"
		fi
		start "$name" "$META" --mode metadata --listen "0.0.0.0:${META_PORTS[i]}" --data-nodes "$nodes" \
			--switch "${NET_A%.*}.$((${NET_A##*.} + 1)).2:$SERVICE" --threads 1 --backend none --deferred "$1" \
			"${shard[@]}" "${META_EXTRA[@]}"
		META_PIDS+=("$STARTED")
		wait_ready "$LOGS/$name.out" "$STARTED"
	done
	META_PID=${META_PIDS[0]}
}
start_metadata on

CSV=$RESULTS/runs.csv
echo "experiment,level,side,round,ops_per_s,write_p50_us,write_p99_us,read_p50_us,read_p99_us,writes,writes_one_rtt,writes_two_phase,reads,reads_from_switch,wrong,errors,timeouts,theta,meta_cpu_us_per_write,meta_rx_per_write,meta_tx_per_write,meta_recv_calls_per_write,meta_send_calls_per_write" >"$CSV"
WRONG=0
# meta_cpu_ticks: utime + stime of every metadata node (/proc/PID/stat
# fields 14 and 15, clock ticks).
meta_cpu_ticks() {
	local pid t=0 f
	for pid in "${META_PIDS[@]}"; do
		f=$(sed 's/^.*) //' "/proc/$pid/stat") # past "pid (comm) "
		t=$((t + $(cut -d' ' -f12 <<<"$f") + $(cut -d' ' -f13 <<<"$f")))
	done
	echo "$t"
}
# meta_stats PORT: a metadata node's STATS JSON (empty if it does not answer).
meta_stats() {
	netns_exec python3 - "$1" <<'PY' 2>/dev/null || true
import socket, struct, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(0.5)
seq = 0x53544154
for _ in range(5):
    s.sendto(struct.pack(">HBBBBHQII", 0xF0E1, 1, 7, 0, 0, 0, seq, 0, 0), ("127.0.0.1", int(sys.argv[1])))
    try:
        while True:
            d = s.recv(65535)
            _, _, _, _, st, kl, sq, vl, _ = struct.unpack(">HBBBBHQII", d[:24])
            if sq == seq and st == 0:
                print(d[24 + kl:24 + kl + vl].decode())
                sys.exit(0)
    except socket.timeout:
        pass
PY
}
# meta_counts: datagrams received, sent, recv calls, send calls, summed over
# the metadata nodes (the *_calls are 0 where the node does not count them).
meta_counts() {
	local i js rx=0 tx=0 rc=0 sc=0
	for ((i = 0; i < METADATA_NODES; i++)); do
		js=$(meta_stats "${META_PORTS[i]}")
		rx=$((rx + $(json_get "$js" datagrams || echo 0)))
		tx=$((tx + $(json_get "$js" datagrams_sent || echo 0)))
		rc=$((rc + $(json_get "$js" recv_calls || echo 0)))
		sc=$((sc + $(json_get "$js" send_calls || echo 0)))
	done
	echo "$rx $tx $rc $sc"
}
# run EXPERIMENT LEVEL SIDE ROUND WORKLOAD [THETA]
run() {
	local exp=$1 level=$2 side=$3 round=$4 workload=$5 theta=${6:-0.99} net=$NET_A target js
	[ "$side" = off ] && net=$NET_B
	target="$net.2:$SERVICE"
	local name="load-$exp-$level-$side-$round"
	[ "$theta" = 0.99 ] || name="$name-z$theta"
	local ticks0 counts0 ticks1 counts1
	ticks0=$(meta_cpu_ticks)
	counts0=$(meta_counts)
	netns_exec "$LOAD" --target "$target" --keys "$KEYS" --workload "$workload" --dist zipf --zipf "$theta" \
		--seconds "$SECONDS_PER_RUN" --outstanding "$level" --timeout-ms 500 --retries 20 --seed "$round" \
		>"$LOGS/$name.out" 2>"$LOGS/$name.err" || true
	ticks1=$(meta_cpu_ticks)
	counts1=$(meta_counts)
	js=$(tail -n 1 "$LOGS/$name.out")
	[[ $js == '{'* ]] || fail "forein-load printed no JSON ($LOGS/$name.err)"
	local w
	w=$(json_get "$js" wrong)
	WRONG=$((WRONG + ${w:-0}))
	# The metadata node per write acknowledged in the run.
	local extra
	extra=$(awk -v t0="$ticks0" -v t1="$ticks1" -v hz="$(getconf CLK_TCK)" -v w="$(json_get "$js" writes)" \
		-v c0="$counts0" -v c1="$counts1" -v theta="$theta" 'BEGIN {split(c0, a, " "); split(c1, b, " ");
		if (w + 0 == 0) w = 1; printf ",%s,%.2f,%.3f,%.3f,%.3f,%.3f", theta, (t1 - t0) * 1e6 / hz / w,
		(b[1] - a[1]) / w, (b[2] - a[2]) / w, (b[3] - a[3]) / w, (b[4] - a[4]) / w}')
	printf '%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s%s\n' "$exp" "$level" "$side" "$round" \
		"$(json_get "$js" ops_per_s)" \
		"$(awk -v n="$(json_obj_get "$js" write_latency_ns p50)" 'BEGIN{printf "%.1f", n/1000}')" \
		"$(awk -v n="$(json_obj_get "$js" write_latency_ns p99)" 'BEGIN{printf "%.1f", n/1000}')" \
		"$(awk -v n="$(json_obj_get "$js" read_latency_ns p50)" 'BEGIN{printf "%.1f", n/1000}')" \
		"$(awk -v n="$(json_obj_get "$js" read_latency_ns p99)" 'BEGIN{printf "%.1f", n/1000}')" \
		"$(json_get "$js" writes)" "$(json_get "$js" writes_one_rtt)" "$(json_get "$js" writes_two_phase)" \
		"$(json_get "$js" reads)" "$(json_get "$js" reads_from_switch)" "${w:-0}" \
		"$(json_get "$js" errors)" "$(json_get "$js" timeouts)" "$extra" >>"$CSV"
	if [ "$workload" = secondary-index ] && [ "$exp" != warmup ]; then
		printf '%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n' "$exp" "$level" "$side" "$round" "$(json_get "$js" reads)" \
			"$(json_get "$js" sidx_keys_listed)" "$(json_get "$js" sidx_keys_kept)" \
			"$(json_get "$js" sidx_keys_dropped)" "$(json_get "$js" sidx_reads_truncated)" \
			"$(json_get "$js" not_found)" >>"$RESULTS/sidx.csv"
	fi
}

echo "== switch-delta: $(uname -srm), $(nproc) cores, $(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -n 1)"
echo "== date: $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo "== load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== keys $KEYS, data nodes $DATA_NODES, metadata nodes $METADATA_NODES, $SECONDS_PER_RUN s per run, $ROUNDS rounds, levels $LEVELS, bound: metadata node at $METADATA_CPU of a core"
IFS=, read -r -a levels <<<"$LEVELS"
# Warm-up: every record once through the metadata node's tree (not for
# sidx and sidx-bound alone, which start nodes of their own and warm them up).
[[ $EXPERIMENTS =~ ^(sidx|sidx-bound)(,(sidx|sidx-bound))*$ ]] || run warmup "${levels[-1]}" on 0 write-only
for ((r = 1; r <= ROUNDS; r++)); do
	if wants latency; then
		for level in "${levels[@]}"; do
			if ((r % 2)); then sides=(on off); else sides=(off on); fi
			for side in "${sides[@]}"; do run latency "$level" "$side" "$r" write-only; done
		done
	fi
	if wants mixed; then
		if ((r % 2)); then sides=(on off); else sides=(off on); fi
		for side in "${sides[@]}"; do run mixed 16 "$side" "$r" write-heavy; done
	fi
done
top=${levels[-1]}
# Deferred metadata processing: the metadata node, held to a share of a
# core, restarted per setting.
if wants dmp; then
	for ((r = 1; r <= ROUNDS; r++)); do
		if ((r % 2)); then settings=(on off); else settings=(off on); fi
		for d in "${settings[@]}"; do
			start_metadata "$d"
			limit_cpu "$META_PID" || fail "no writable CPU cgroup for the dmp experiment"
			run dmp "$top" "dmp-$d" "$r" write-only
		done
	done
fi
# Metadata-node-bound: the node (deferred processing on) held to a share of a core.
if wants bound; then
	start_metadata on
	limit_cpu "$META_PID" || fail "no writable CPU cgroup for the bound experiment"
	for ((r = 1; r <= ROUNDS; r++)); do
		if ((r % 2)); then sides=(on off); else sides=(off on); fi
		for side in "${sides[@]}"; do run bound "$top" "$side" "$r" write-only; done
	done
fi

# The skew sweep: write-heavy through the table, Zipf 0.8..1.2 at 48 and
# 768 in flight (paper Fig. 10b/c).
if wants skew; then
	for ((r = 1; r <= ROUNDS; r++)); do
		for theta in 0.8 0.9 0.99 1.1 1.2; do
			for level in 48 768; do run "skew-z$theta" "$level" on "$r" write-heavy "$theta"; done
		done
	done
fi

# Replication (paper V-D, Fig. 9): the same write-only runs without and
# then with 3-way primary-backup replication. Everything restarts per mode:
# fresh data-node logs restart the timestamps, so the switches (MaxTs) and
# the metadata node(s) (rebuilt from the logs) restart with them.
if wants replication; then
	BACKUP_PORTS=()
	for ((i = 0; i < 2 * DATA_NODES; i++)); do BACKUP_PORTS+=("$(free_port)"); done
	for mode in off on; do
		for pid in "${SWITCH_PIDS[@]}" "${DATA_PIDS[@]}"; do stop "$pid"; done
		DATA_PIDS=()
		for ((i = 0; i < DATA_NODES; i++)); do
			repl=()
			if [ "$mode" = on ]; then
				for b in 0 1; do
					start "backup$i-$b" "$DATA" --listen "127.0.0.1:${BACKUP_PORTS[2 * i + b]}" --backup \
						--node "$i/$DATA_NODES" --keys "$KEYS"
					DATA_PIDS+=("$STARTED")
					wait_ready "$LOGS/backup$i-$b.out" "$STARTED"
				done
				repl=(--backups "127.0.0.1:${BACKUP_PORTS[2 * i]},127.0.0.1:${BACKUP_PORTS[2 * i + 1]}" --acks 1)
			fi
			start "data$i-repl-$mode" "$DATA" --listen "0.0.0.0:${DATA_PORTS[i]}" --node "$i/$DATA_NODES" \
				--keys "$KEYS" "${repl[@]}"
			DATA_PIDS+=("$STARTED")
			wait_ready "$LOGS/data$i-repl-$mode.out" "$STARTED"
		done
		start_metadata on
		for name in on off; do
			mv "$LOGS/$name.out" "$LOGS/$name-before-repl-$mode.out"
			mv "$LOGS/$name.err" "$LOGS/$name-before-repl-$mode.err"
		done
		start_switch on "$NET_A" on
		start_switch off "$NET_B" off
		run warmup "${levels[-1]}" on 0 write-only
		for ((r = 1; r <= ROUNDS; r++)); do
			for level in "${levels[@]}"; do
				if ((r % 2)); then sides=(on off); else sides=(off on); fi
				for side in "${sides[@]}"; do run "replication-$mode" "$level" "$side" "$r" write-only; done
			done
		done
	done
	for pid in "${DATA_PIDS[@]}"; do stop "$pid"; done # their exit lines: the replication counters
fi

# The secondary-index case study (paper VI-B, III-C): one data node and
# one metadata node with --secondary-index (the metadata node takes one
# data node), the switches restarted in front of them (a fresh log: MaxTs
# starts over). Everything before is stopped.
if wants sidx || wants sidx-bound; then
	for pid in "${SWITCH_PIDS[@]}" "${DATA_PIDS[@]}"; do stop "$pid"; done
	DATA_PIDS=()
	DATA_PORTS=("${DATA_PORTS[0]}")
	data_list=${DATA_PORTS[0]}
	start data0-sidx "$DATA" --listen "0.0.0.0:${DATA_PORTS[0]}" --node 0/1 --keys "$KEYS" --secondary-index
	DATA_PIDS+=("$STARTED")
	wait_ready "$LOGS/data0-sidx.out" "$STARTED"
	META_EXTRA=(--secondary-index)
	start_metadata on
	for name in on off; do
		# (wait_ready must not find the stopped switch's "ready")
		mv "$LOGS/$name.out" "$LOGS/$name-before-sidx.out"
		mv "$LOGS/$name.err" "$LOGS/$name-before-sidx.err"
	done
	start_switch on "$NET_A" on
	start_switch off "$NET_B" off
	echo "experiment,level,side,round,reads,keys_listed,keys_kept,keys_dropped,reads_truncated,not_found" >"$RESULTS/sidx.csv"
	run warmup "${levels[-1]}" on 0 secondary-index
	for experiment in sidx sidx-bound; do
		wants "$experiment" || continue
		if [ "$experiment" = sidx-bound ]; then
			limit_cpu "$META_PID" || fail "no writable CPU cgroup for the sidx-bound experiment"
		fi
		for ((r = 1; r <= ROUNDS; r++)); do
			for level in "${levels[@]}"; do
				if ((r % 2)); then sides=(on off); else sides=(off on); fi
				for side in "${sides[@]}"; do run "$experiment" "$level" "$side" "$r" secondary-index; done
			done
		done
	done
	# The switches' exit lines: partial entries stored, reads that carried one.
	for name in on off; do stop "${SWITCH_PIDS[$name]}"; done
	for name in on off; do
		js=$(grep '^{' "$LOGS/$name.out" | tail -n 1 || true)
		echo "== sidx, switch $name: partial entries stored $(json_get "$js" partial_stored), reads forwarded with one $(json_get "$js" partial_reads)"
	done
fi

# Medians per experiment, level and side.
SUMMARY=$RESULTS/summary.csv
echo "experiment,level,side,runs,ops_per_s,write_p50_us,write_p99_us,read_p50_us,read_p99_us,one_rtt_fraction,reads_from_switch_fraction" >"$SUMMARY"
awk -F, 'NR > 1 && $1 != "warmup" {k = $1 "," $2 "," $3; n[k]++; for (c = 5; c <= 9; c++) v[k, c, n[k]] = $c;
	w1[k] += $11; w[k] += $10; rs[k] += $14; r[k] += $13}
	function med(k, c,   m, i, j, t, a) {m = n[k]; for (i = 1; i <= m; i++) a[i] = v[k, c, i];
		for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] + 0 < a[i] + 0) {t = a[i]; a[i] = a[j]; a[j] = t}
		return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2}
	END {for (k in n) printf "%s,%d,%.0f,%.1f,%.1f,%.1f,%.1f,%.3f,%.3f\n", k, n[k], med(k, 5), med(k, 6), med(k, 7), med(k, 8), med(k, 9),
		w[k] ? w1[k] / w[k] : 0, r[k] ? rs[k] / r[k] : 0}' "$CSV" | sort -t, -k1,1 -k2,2n -k3,3 >>"$SUMMARY"
column -s, -t "$SUMMARY"
if wants replication; then
	# Write p50/p99 with the table on and off, and the median-latency gain
	# 1 - p50(on) / p50(off), without and with replication (paper: 44.7%
	# without, 30.0% with; throughput: no gain with replication).
	REPL=$RESULTS/replication.csv
	echo "level,replication,ops_on,ops_off,p50_on_us,p50_off_us,p99_on_us,p99_off_us,p50_gain" >"$REPL"
	awk -F, 'NR > 1 && $1 ~ /^replication-/ {m = substr($1, 13); k = $2 "," m; lv[k] = 1
		ops[k, $3] = $5; p50[k, $3] = $6; p99[k, $3] = $7}
		END {for (k in lv) printf "%s,%s,%s,%s,%s,%s,%s,%.3f\n", k, ops[k, "on"], ops[k, "off"], p50[k, "on"],
			p50[k, "off"], p99[k, "on"], p99[k, "off"], p50[k, "off"] ? 1 - p50[k, "on"] / p50[k, "off"] : 0}' \
		"$SUMMARY" | sort -t, -k1,1n -k2,2r >>"$REPL"
	echo "== replication (paper V-D: write p50 gain 44.7% -> 30.0% with replication, no throughput gain)"
	column -s, -t "$REPL"
fi
if command -v gnuplot >/dev/null; then
	awk -F, 'NR > 1 && $1 == "latency" && $3 == "on"' "$SUMMARY" >"$TMP/on.dat"
	awk -F, 'NR > 1 && $1 == "latency" && $3 == "off"' "$SUMMARY" >"$TMP/off.dat"
	if [ -s "$TMP/on.dat" ] && [ -s "$TMP/off.dat" ]; then
		gnuplot <<EOF
set terminal pngcairo size 900,500 noenhanced
set output "$RESULTS/latency.png"
set datafile separator ","
set title "Switch-delta on this machine: write-only, Zipf 0.99 (medians of $ROUNDS rounds)"
set xlabel "throughput (writes/s)"
set ylabel "write latency (us)"
set key top left
plot "$TMP/on.dat" using 5:6 with linespoints title "p50, visibility table on", \\
     "$TMP/off.dat" using 5:6 with linespoints title "p50, table off (baseline)", \\
     "$TMP/on.dat" using 5:7 with linespoints dt 2 title "p99, table on", \\
     "$TMP/off.dat" using 5:7 with linespoints dt 2 title "p99, table off"
EOF
	fi
	# Throughput of the other experiments, one bar per side.
	awk -F, 'NR > 1 && $1 != "latency" {print $1 " " $3 "," $5}' "$SUMMARY" >"$TMP/bars.dat"
	if [ -s "$TMP/bars.dat" ]; then
		gnuplot <<EOF
set terminal pngcairo size 900,450 noenhanced
set output "$RESULTS/throughput.png"
set datafile separator ","
set title "Switch-delta on this machine: throughput (medians of $ROUNDS rounds)"
set ylabel "operations/s"
set style fill solid 0.6
set boxwidth 0.6
set yrange [0:*]
set xtics rotate by -20
plot "$TMP/bars.dat" using 0:2:xtic(1) with boxes notitle
EOF
	fi
fi
echo "== results in $RESULTS"
[ "$WRONG" -eq 0 ] || fail "$WRONG wrong answers"

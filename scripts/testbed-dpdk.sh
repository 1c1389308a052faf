# shellcheck shell=bash
# testbed-dpdk.sh: scripts/testbed.sh --mode dpdk, sourced by testbed.sh
# after its flags are checked and its helpers defined (it uses wait_ready,
# stop_proc, track, alive, listen_port, json_get, csv_col, med, median, sum,
# stats_once and the variables they set).
#
# The Ethernet setting (docs/network.md, "testbed"; results in
# docs/network-benchmark.md, "The DPDK path at the papers' scale"), with no
# kernel on the data path:
#
#   forein-switch-gen --mode client -memif- forein-switch -memif- forein-kv-server --memif
#
# Per backend: a forein-agent that holds the server's image, one
# forein-kv-server (--agent to it, --memif on the switch's server socket),
# and per round one run through a switch with hints (--image-from the
# agent) and one through a switch with --hints off, on the same memif
# sockets (the switch is restarted between runs; the server's memif port
# rejoins it), alternating which goes first, the same seed. The server's
# serving thread (its memif poll thread, --memif-core) runs alone on core 1;
# the switch, the generator, the agent and the server's other threads on
# core 0 (`taskset`; with 3 or more cores the generator gets core 2). memif needs no root,
# no TAP and no network namespace. Reported per backend: median ops/s both
# ways and their ratio, median p50/p99, the server's tree nodes per GET,
# its CPU per request (the serving thread's CPU time / answered GETs, idle
# polls included; also the whole process's), its busy time per request
# (the serving thread's wall time in non-empty bursts, by the TSC), hint
# hits, wrong.

GEN=$BUILD/net/switch/gen/forein-switch-gen
AGENT=$BUILD/net/agent/forein-agent
CSV=$RESULTS/testbed.csv
SUMMARY=$RESULTS/summary.csv
JSONL=$RESULTS/results.jsonl
echo "backend,round,mode,seed,ops,ops_per_s,seconds,p50_us,p99_us,wrong,unmatched,lost,server_requests,server_get,server_hinted,server_hint_hits,server_fallbacks,server_nodes_visited,server_busy_us,server_thread_us,cpu_server_s,cpu_switch_s,cpu_gen_s" >"$CSV"
echo "backend,mode,servers,keys,height,workload,dist,zipf,seconds,rounds,outstanding,ops_per_s_hinted,ops_per_s_plain,ratio,ratio_per_round,p50_us_hinted,p50_us_plain,p99_us_hinted,p99_us_plain,nodes_per_op_hinted,nodes_per_op_plain,server_cpu_us_per_op_hinted,server_cpu_us_per_op_plain,server_busy_us_per_op_hinted,server_busy_us_per_op_plain,server_process_cpu_us_per_op_hinted,server_process_cpu_us_per_op_plain,switch_cpu_us_per_op_hinted,switch_cpu_us_per_op_plain,hint_hits,hinted_requests,requests,wrong,errors,timeouts" >"$SUMMARY"
: >"$JSONL"

# Cores: the server's serving thread alone on core 1; the switch, the
# generator, the agent and the server's other threads on core 0 (the
# generator on core 2 when there is one).
NCPU=$(nproc)
SERVER_CPU=1 SWITCH_CPU=0 GEN_CPU=0
[ "$NCPU" -ge 3 ] && GEN_CPU=2
[ "$NCPU" -ge 2 ] || fail "--mode dpdk needs 2 cores: the server's on its own (this machine has $NCPU)"
# memif socket paths must be short (108 bytes): a folder of the run's own
# under /tmp, removed at the end (testbed.sh's cleanup calls netns_cleanup,
# which has no namespace to delete in this mode).
SOCKETS=$(mktemp -d /tmp/forein-testbed-dpdk.XXXXXX) || fail "mktemp failed"
netns_cleanup() { rm -rf "$SOCKETS"; }

# start NAME CPUS CMD...: CMD pinned to CPUS (taskset execs it: $! is its
# pid), stdout to logs/NAME.out, stderr to logs/NAME.err; sets STARTED.
# FOREIN_DPDK_IDLE=yield: an idle DPDK poller yields its core instead of
# sleeping (net/dpdk/back_off.h): the switch and the generator share core
# 0 and each runs as soon as the other has nothing to do; the server's
# serving thread, alone on its core, never sleeps.
start() {
	local name=$1 cpu=$2
	shift 2
	FOREIN_DPDK_IDLE=yield taskset -c "$cpu" "$@" >"$LOGS/$name.out" 2>"$LOGS/$name.err" &
	STARTED=$!
	LABEL[$STARTED]=$name
	track "$STARTED"
}
# server_stats PORT: the server's STATS over its kernel port (loopback).
server_stats() {
	local reply
	for _ in 1 2 3 4 5; do
		reply=$(stats_once "$1" "$STATS_REQUEST") || true
		if [[ $reply == '{'* ]]; then
			printf '%s\n' "$reply"
			return 0
		fi
	done
	return 1
}
# per_get BACKEND MODE FIELD [SCALE]: FIELD summed over the mode's runs, per
# answered GET (ops), times SCALE.
per_get() {
	awk -F, -v b="$1" -v m="$2" -v f="$3" -v s="${4:-1}" 'NR == 1 {for (i = 1; i <= NF; i++) {if ($i == f) c = i; if ($i == "ops") o = i}; next}
		$1 == b && $3 == m {t += $c; n += $o} END {printf "%.3f", n ? t * s / n : 0}' "$CSV"
}
# per_request BACKEND MODE FIELD: FIELD summed over the mode's runs, per GET the server served.
per_request() {
	awk -F, -v b="$1" -v m="$2" -v f="$3" 'NR == 1 {for (i = 1; i <= NF; i++) {if ($i == f) c = i; if ($i == "server_get") o = i}; next}
		$1 == b && $3 == m {t += $c; n += $o} END {printf "%.3f", n ? t / n : 0}' "$CSV"
}

echo "== testbed --mode dpdk: $(uname -srm), $NCPU cores, $(lscpu 2>/dev/null | sed -n 's/^Model name:[[:space:]]*//p' | head -n 1)"
echo "== date: $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== backends $BACKENDS; $KEYS keys on 1 server (memif, core $SERVER_CPU); switch core $SWITCH_CPU, generator core $GEN_CPU;" \
	"GETs, $DIST${DIST_ZIPF:-}; $ROUNDS round(s) of ${SECONDS_PER_RUN} s with and without hints, $OUTSTANDING in flight"
echo "== results: $RESULTS"

TOTAL_WRONG=0
json_lines=()
for k in "${!backend_list[@]}"; do
	B=${backend_list[k]}
	BACKEND_WRONG=0
	dir=$SOCKETS/$k
	mkdir -p "$dir"
	echo
	echo "== $B: memif sockets $dir/c.sock (generator) and $dir/s.sock (server)"
	start "$B-agent" "$SWITCH_CPU" "$AGENT" --listen 127.0.0.1:0
	agent_pid=$STARTED
	wait_ready "$B-agent" "$agent_pid" 60
	agent=127.0.0.1:$(listen_port "$B-agent")

	# start_switch MODE: a switch on the backend's sockets, hinting from the
	# agent's image (hinted) or not (plain); sets sw and sw_mode.
	n_switch=0
	start_switch() {
		local flags=(--hints off)
		[ "$1" = hinted ] && flags=(--image-from "$agent")
		n_switch=$((n_switch + 1))
		start "$B-switch-$n_switch-$1" "$SWITCH_CPU" "$SWITCH" --agent-listen 127.0.0.1:0 \
			--client-port "memif:$dir/c.sock" --server-port "memif:$dir/s.sock" "${flags[@]}"
		sw=$STARTED sw_mode=$1
		wait_ready "$B-switch-$n_switch-$1" "$sw" 60
	}
	# The server joins a switch's socket, so a switch comes first.
	start_switch plain
	# (its memif poll thread alone on SERVER_CPU; its other threads -- the
	# offload manager's refreshes, gRPC, the kernel-UDP workers -- beside
	# the switch)
	start "$B-server" "$SWITCH_CPU,$SERVER_CPU" "$SERVER" --listen 127.0.0.1:0 --memif "$dir/s.sock" \
		--memif-core "$SERVER_CPU" --keys "$KEYS" --backend "$B" --agent "$agent" --threads "$THREADS"
	kv=$STARTED
	t0=$SECONDS
	wait_ready "$B-server" "$kv" 3600
	kv_port=$(listen_port "$B-server")
	[ -n "$kv_port" ] || fail "forein-kv-server printed no 'listening HOST:PORT' line"
	stats=$(server_stats "$kv_port") || fail "forein-kv-server (port $kv_port) did not answer STATS"
	height=$(json_get "$stats" height)
	echo "   server ready after $((SECONDS - t0)) s: $(json_get "$stats" keys) keys, tree height $height"

	# run_gen NAME MODE SECONDS SEED: one generator run through the switch
	# (restarted in MODE first if it runs in the other); sets GEN_JSON.
	run_gen() {
		local name=$1 mode=$2 rc=0 wait_hints=()
		check_alive
		if [ "$sw_mode" != "$mode" ]; then
			stop_proc "$sw"
			start_switch "$mode"
		fi
		[ "$mode" = hinted ] && wait_hints=(--wait-hints)
		start "$name" "$GEN_CPU" "$GEN" --mode client --client-socket "$dir/c.sock" --keys "$KEYS" \
			--dist "$DIST" --zipf "$ZIPF" --seed "$4" --seconds "$3" --window "$OUTSTANDING" "${wait_hints[@]}" \
			--server-stats "127.0.0.1:$kv_port" --server-pid "$kv" --switch-pid "$sw" \
			--probe-timeout-ms 60000 --timeout-ms 5000
		local pid=$STARTED
		wait "$pid" || rc=$?
		untrack "$pid"
		[ "$rc" -eq 0 ] || fail "forein-switch-gen ($name) failed (status $rc): $(tail -n 5 "$LOGS/$name.err" | tr '\n' ' ')"
		GEN_JSON=$(tail -n 1 "$LOGS/$name.out")
		[[ $GEN_JSON == '{'* ]] || fail "forein-switch-gen ($name) printed no JSON line (logs: $LOGS/$name.*)"
		local w u
		w=$(json_get "$GEN_JSON" wrong) u=$(json_get "$GEN_JSON" unmatched)
		TOTAL_WRONG=$((TOTAL_WRONG + w - u))
		BACKEND_WRONG=$((BACKEND_WRONG + w - u))
	}
	check_alive() {
		local p
		for p in "$kv" "$sw" "$agent_pid"; do
			alive "$p" && continue
			fail "${LABEL[$p]} exited during the run: $(tail -n 5 "$LOGS/${LABEL[$p]}.err" | tr '\n' ' ')"
		done
	}

	# Warm-up: through the hinting switch until the server counts the
	# probes hinted (the agent and the switch hold the image), 2 s more for
	# the planner's samples, then 1 s through the plain switch.
	run_gen "$B-warmup-hinted" hinted 2 998
	run_gen "$B-warmup-plain" plain 1 999
	echo "   warm-up: hints reach the server ($(json_get "$GEN_JSON" probe_rounds) probe round(s))"

	for ((r = 1; r <= ROUNDS; r++)); do
		order="hinted plain"
		[ $((r % 2)) -eq 0 ] && order="plain hinted"
		seed=$((r * 7919))
		for mode in $order; do
			before=$(server_stats "$kv_port") || fail "forein-kv-server did not answer STATS"
			run_gen "$B-$mode-$r" "$mode" "$SECONDS_PER_RUN" "$seed"
			after=$(server_stats "$kv_port") || fail "forein-kv-server did not answer STATS"
			j=$GEN_JSON
			busy=$(awk -v a="$(json_get "$after" busy_us)" -v b="$(json_get "$before" busy_us)" 'BEGIN {printf "%d", a - b}')
			thread=$(awk -v a="$(json_get "$after" thread_cpu_us)" -v b="$(json_get "$before" thread_cpu_us)" 'BEGIN {printf "%d", a - b}')
			row="$B,$r,$mode,$seed,$(json_get "$j" window_ok)"
			for f in ops_per_s seconds p50_us p99_us wrong unmatched lost requests get hinted hint_hits fallbacks nodes_visited; do
				row="$row,$(json_get "$j" "$f")"
			done
			row="$row,$busy,$thread,$(json_get "$j" server_cpu_s),$(json_get "$j" switch_cpu_s),$(json_get "$j" gen_cpu_s)"
			echo "$row" >>"$CSV"
			printf '   round %d %-6s %10.0f ops/s  p50 %s us  p99 %s us  hint hits %s/%s  nodes/GET %s  server CPU %s s  wrong %s\n' \
				"$r" "$mode" "$(json_get "$j" ops_per_s)" "$(json_get "$j" p50_us)" "$(json_get "$j" p99_us)" \
				"$(json_get "$j" hint_hits)" "$(json_get "$j" get)" \
				"$(awk -v v="$(json_get "$j" nodes_visited)" -v g="$(json_get "$j" get)" 'BEGIN {printf "%.2f", g ? v / g : 0}')" \
				"$(json_get "$j" server_cpu_s)" "$(json_get "$j" wrong)"
		done
	done
	# The exit lines (the server's and the switch's counters) go to the logs.
	for p in "$kv" "$sw" "$agent_pid"; do stop_proc "$p"; done

	oh=$(med "$B" hinted ops_per_s) op=$(med "$B" plain ops_per_s)
	ratio=$(awk -v a="$oh" -v b="$op" 'BEGIN {printf "%.3f", (b > 0) ? a / b : 0}')
	ratio_rounds=$(paste -d' ' <(csv_col "$B" hinted ops_per_s) <(csv_col "$B" plain ops_per_s) |
		awk '{printf "%.6f\n", ($2 > 0) ? $1 / $2 : 0}' | median)
	ratio_rounds=$(awk -v r="$ratio_rounds" 'BEGIN {printf "%.3f", r}')
	p50h=$(med "$B" hinted p50_us) p99h=$(med "$B" hinted p99_us) p50p=$(med "$B" plain p50_us) p99p=$(med "$B" plain p99_us)
	nh=$(per_request "$B" hinted server_nodes_visited) np=$(per_request "$B" plain server_nodes_visited)
	ch=$(per_get "$B" hinted server_thread_us) cp=$(per_get "$B" plain server_thread_us)
	xh=$(per_get "$B" hinted cpu_server_s 1e6) xp=$(per_get "$B" plain cpu_server_s 1e6)
	bh=$(per_get "$B" hinted server_busy_us) bp=$(per_get "$B" plain server_busy_us)
	wh=$(per_get "$B" hinted cpu_switch_s 1e6) wp=$(per_get "$B" plain cpu_switch_s 1e6)
	hits=$(csv_col "$B" hinted server_hint_hits | sum)
	hreq=$(csv_col "$B" hinted server_hinted | sum)
	preq=$(csv_col "$B" plain server_hinted | sum)
	reqs=$(csv_col "$B" hinted server_get | sum)
	errors=$( (csv_col "$B" hinted unmatched && csv_col "$B" plain unmatched) | sum)
	timeouts=$( (csv_col "$B" hinted lost && csv_col "$B" plain lost) | sum)
	echo
	echo "== $B, DPDK path: $KEYS keys, tree height $height, GETs $DIST${DIST_ZIPF:-}; $ROUNDS round(s) of ${SECONDS_PER_RUN} s each way (medians)"
	printf '   %-9s %10s %8s %8s %10s %44s\n' "" "ops/s" "p50 us" "p99 us" "nodes/GET" "us/GET: serving thread CPU / busy / process / switch"
	for mode in hinted plain; do
		label="hints on"
		[ "$mode" = plain ] && label="hints off"
		printf '   %-9s %10.0f %8s %8s %10s %44s\n' "$label" "$(med "$B" "$mode" ops_per_s)" \
			"$(med "$B" "$mode" p50_us)" "$(med "$B" "$mode" p99_us)" "$(per_request "$B" "$mode" server_nodes_visited)" \
			"$(per_get "$B" "$mode" server_thread_us) / $(per_get "$B" "$mode" server_busy_us) / $(per_get "$B" "$mode" cpu_server_s 1e6) / $(per_get "$B" "$mode" cpu_switch_s 1e6)"
	done
	printf '   ratio %s (per round: %s)   hint hits %d of %d GETs   wrong %d   late replies %d   lost %d\n' \
		"$ratio" "$ratio_rounds" "$hits" "$reqs" "$BACKEND_WRONG" "$errors" "$timeouts"
	[ "$preq" -eq 0 ] || echo "testbed: warning: $B: the server saw $preq hinted requests through the switch with --hints off" >&2
	echo "$B,dpdk,1,$KEYS,$height,$WORKLOAD,$DIST,$ZIPF,$SECONDS_PER_RUN,$ROUNDS,$OUTSTANDING,$oh,$op,$ratio,$ratio_rounds,$p50h,$p50p,$p99h,$p99p,$nh,$np,$ch,$cp,$bh,$bp,$xh,$xp,$wh,$wp,$hits,$hreq,$reqs,$BACKEND_WRONG,$errors,$timeouts" >>"$SUMMARY"
	line=$(printf '{"backend":"%s","mode":"dpdk","ops_per_s_hinted":%s,"ops_per_s_plain":%s,"ratio":%s,"ratio_per_round":%s,"p50_us_hinted":%s,"p50_us_plain":%s,"p99_us_hinted":%s,"p99_us_plain":%s,"nodes_per_op_hinted":%s,"nodes_per_op_plain":%s,"reads_per_op_hinted":%s,"reads_per_op_plain":%s,"server_cpu_us_per_op_hinted":%s,"server_cpu_us_per_op_plain":%s,"server_busy_us_per_op_hinted":%s,"server_busy_us_per_op_plain":%s,"server_process_cpu_us_per_op_hinted":%s,"server_process_cpu_us_per_op_plain":%s,"switch_cpu_us_per_op_hinted":%s,"switch_cpu_us_per_op_plain":%s,"hint_hits":%d,"hinted_requests":%d,"requests":%d,"wrong":%d,"errors":%d,"timeouts":%d,"servers":1,"keys":%d,"height":%s,"workload":"%s","dist":"%s","zipf":%s,"seconds":%s,"rounds":%d,"outstanding":%d,"threads":%d,"server_core":%d,"switch_core":%d,"generator_core":%d}' \
		"$B" "$oh" "$op" "$ratio" "$ratio_rounds" "$p50h" "$p50p" "$p99h" "$p99p" "$nh" "$np" "$nh" "$np" "$ch" "$cp" "$bh" "$bp" "$xh" "$xp" "$wh" "$wp" \
		"$hits" "$hreq" "$reqs" "$BACKEND_WRONG" "$errors" "$timeouts" "$KEYS" "$height" "$WORKLOAD" "$DIST" "$ZIPF" \
		"$SECONDS_PER_RUN" "$ROUNDS" "$OUTSTANDING" "$THREADS" "$SERVER_CPU" "$SWITCH_CPU" "$GEN_CPU")
	json_lines+=("$line")
	echo "$line" >>"$JSONL"
done

echo
echo "== results: $CSV, $SUMMARY; logs in $LOGS"
printf '%s\n' "${json_lines[@]}"
[ "$TOTAL_WRONG" -eq 0 ] || fail "forein-switch-gen counted $TOTAL_WRONG wrong answers (logs: $LOGS)"

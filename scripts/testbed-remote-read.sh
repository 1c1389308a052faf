# shellcheck shell=bash
# testbed-remote-read.sh: scripts/testbed.sh --mode remote-read, sourced by
# testbed.sh after its flags are checked and its helpers defined (it uses
# start, wait_ready, stop_proc, run_load, pick_ports, pick_nets, csv_col,
# med, server_stats, json_get and the variables they set).
#
# Fat-B+Tree's RDMA setting (docs/remote-read.md, docs/network-benchmark.md):
# per backend, K forein-mem-server memory nodes (node I holds dataset shard
# I of K in its region and mirrors its offload image to the hinting
# switch's agent under index I), two forein-switch processes in front of
# them (--hints on, --hints off), and forein-load --remote-read walking the
# tree one READ per node through one switch at a time, in alternating
# rounds with the same seed. The hinting switch rewrites each lookup's
# first READ to the node its image resolves; the plain one passes it to the
# root. Reported per backend: median ops/s both ways and their ratio,
# median p50/p99, READs per operation, hint hits, wrong.

CSV=$RESULTS/testbed.csv
SUMMARY=$RESULTS/summary.csv
JSONL=$RESULTS/results.jsonl
echo "backend,round,mode,seed,ops,ops_per_s,seconds,p50_us,p99_us,reads_per_op,start_reads,rewritten,hint_hits,fallbacks,errors,timeouts,wrong,verified,cpu_servers_s,cpu_switch_s,cpu_load_s" >"$CSV"
echo "backend,mode,servers,keys,workload,zipf,seconds,rounds,height,node_bytes,value_bytes,ops_per_s_hinted,ops_per_s_plain,ratio,ratio_per_round,p50_us_hinted,p50_us_plain,p99_us_hinted,p99_us_plain,reads_per_op_hinted,reads_per_op_plain,hint_hits,start_reads,wrong,errors,timeouts" >"$SUMMARY"
: >"$JSONL"
HZ=$(getconf CLK_TCK)
TIMES_FILE=$LOGS/.times
SERVICE_PORT=9000
NODE_ARGS=()
[ -z "$FANOUT" ] || NODE_ARGS=(--fanout "$FANOUT")
[ -z "$NODE_BYTES" ] || NODE_ARGS=(--node-bytes "$NODE_BYTES")
LOAD_EXTRA=(--remote-read --shards "$SERVERS")
# Reads only: every run is verified. With updates, only the first run on
# fresh memory nodes can be (forein-load --verify knows its own writes).
VERIFY_RUNS=0
[ "$WORKLOAD" = c ] && VERIFY_RUNS=1

echo "== testbed --mode remote-read: $(uname -srm), $(nproc) cores, $(lscpu 2>/dev/null | sed -n 's/^Model name:[[:space:]]*//p' | head -n 1)"
echo "== date: $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== backends $BACKENDS; $KEYS keys of $VALUE_BYTES bytes on $SERVERS memory node(s) ($THREADS threads each);" \
	"nodes ${NODE_ARGS[*]:-of 16 branches}; workload $WORKLOAD, $DIST${DIST_ZIPF:-};" \
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
	start_switches "$k" "memory nodes"
	for ((i = 0; i < SERVERS; i++)); do
		start "$B-mem-$i" "$MEM" --listen "0.0.0.0:${PORTS[i]}" --keys "$KEYS" --shard "$i/$SERVERS" \
			--backend "$B" --agent "127.0.0.1:$agent_port" --threads "$THREADS" --value-bytes "$VALUE_BYTES" \
			${NODE_ARGS[@]+"${NODE_ARGS[@]}"}
		server_pids+=("$STARTED")
		wait_ready "$B-mem-$i" "$STARTED" 600
	done
	mem0=$(server_stats "${PORTS[0]}") || fail "memory node 0 (port ${PORTS[0]}) did not answer STATS"
	height=$(json_get "$mem0" height) node_bytes=$(json_get "$mem0" node_bytes)
	target_hinted=${NETS[0]}.2:$SERVICE_PORT
	target_plain=${NETS[2]}.2:$SERVICE_PORT

	# Warm-up: 1 s runs through the hinting switch until its first READs
	# come back rewritten (the images are in the switch; deadline 60 s),
	# then 2 s more so the planners see the workload's samples, and 1 s
	# through the plain switch.
	warm_end=$((SECONDS + 60))
	n=0
	while :; do
		n=$((n + 1))
		warm_verify=$VERIFY_RUNS
		[ "$n" -eq 1 ] && warm_verify=1
		run_load "$B-warmup-hinted-$n" "$target_hinted" 1 "$warm_verify" "$((900 + n))"
		[ "$(json_get "$LOAD_JSON" rewritten)" -gt 0 ] && break
		[ "$SECONDS" -lt "$warm_end" ] ||
			fail "$B: after $n warm-up runs (60 s) no READ was rewritten: the switch holds no image (logs: $LOGS)"
	done
	run_load "$B-warmup-hinted-settle" "$target_hinted" 2 "$VERIFY_RUNS" 998
	run_load "$B-warmup-plain" "$target_plain" 1 "$VERIFY_RUNS" 999
	echo "   warm-up: images in the switch after $n run(s) of 1 s; tree height $height, nodes of $node_bytes bytes"

	for ((r = 1; r <= ROUNDS; r++)); do
		order="hinted plain"
		[ $((r % 2)) -eq 0 ] && order="plain hinted"
		seed=$((r * 7919))
		for mode in $order; do
			target=$target_hinted sw_pid=$sw_hinted
			[ "$mode" = plain ] && target=$target_plain sw_pid=$sw_plain
			cs0=$(role_ticks "${server_pids[@]}")
			cw0=$(proc_ticks "$sw_pid")
			run_load "$B-$mode-$r" "$target" "$SECONDS_PER_RUN" "$VERIFY_RUNS" "$seed"
			check_running
			cs1=$(role_ticks "${server_pids[@]}")
			cw1=$(proc_ticks "$sw_pid")
			j=$LOAD_JSON
			row="$B,$r,$mode,$seed"
			for f in ops ops_per_s seconds p50_us p99_us reads_per_op start_reads rewritten hint_hits fallbacks \
				errors timeouts wrong verified; do
				row="$row,$(json_get "$j" "$f")"
			done
			row="$row,$(awk -v t="$((cs1 - cs0))" -v hz="$HZ" 'BEGIN {printf "%.2f", t / hz}')"
			row="$row,$(awk -v t="$((cw1 - cw0))" -v hz="$HZ" 'BEGIN {printf "%.2f", t / hz}')"
			row="$row,$(awk -v t="$LOAD_CPU" -v hz="$HZ" 'BEGIN {printf "%.2f", t / hz}')"
			echo "$row" >>"$CSV"
			printf '   round %d %-6s %10.0f ops/s  p50 %s us  p99 %s us  READs/op %s  hint hits %s/%s  wrong %s\n' \
				"$r" "$mode" "$(json_get "$j" ops_per_s)" "$(json_get "$j" p50_us)" "$(json_get "$j" p99_us)" \
				"$(json_get "$j" reads_per_op)" "$(json_get "$j" hint_hits)" "$(json_get "$j" start_reads)" \
				"$(json_get "$j" wrong)"
		done
	done
	for p in "${server_pids[@]}" "$sw_plain" "$sw_hinted"; do stop_proc "$p"; done

	oh=$(med "$B" hinted ops_per_s) op=$(med "$B" plain ops_per_s)
	ratio=$(awk -v a="$oh" -v b="$op" 'BEGIN {printf "%.3f", (b > 0) ? a / b : 0}')
	ratio_rounds=$(paste -d' ' <(csv_col "$B" hinted ops_per_s) <(csv_col "$B" plain ops_per_s) |
		awk '{printf "%.6f\n", ($2 > 0) ? $1 / $2 : 0}' | median)
	ratio_rounds=$(awk -v r="$ratio_rounds" 'BEGIN {printf "%.3f", r}')
	p50h=$(med "$B" hinted p50_us) p99h=$(med "$B" hinted p99_us) p50p=$(med "$B" plain p50_us) p99p=$(med "$B" plain p99_us)
	rh=$(med "$B" hinted reads_per_op) rp=$(med "$B" plain reads_per_op)
	hits=$(csv_col "$B" hinted hint_hits | sum)
	starts=$(csv_col "$B" hinted start_reads | sum)
	prew=$(csv_col "$B" plain rewritten | sum)
	errors=$( (csv_col "$B" hinted errors && csv_col "$B" plain errors) | sum)
	timeouts=$( (csv_col "$B" hinted timeouts && csv_col "$B" plain timeouts) | sum)
	p50cut=$(awk -v a="$p50h" -v b="$p50p" 'BEGIN {printf "%.1f", (b > 0) ? 100 * (1 - a / b) : 0}')
	echo
	echo "== $B, remote reads: $KEYS keys, $SERVERS memory node(s), height $height, $node_bytes-byte nodes, workload $WORKLOAD, $DIST${DIST_ZIPF:-}; $ROUNDS round(s) of ${SECONDS_PER_RUN} s each way (medians)"
	printf '   %-9s %10s %8s %8s %9s %22s\n' "" "ops/s" "p50 us" "p99 us" "READs/op" "CPU us/op mem/sw/load"
	for mode in hinted plain; do
		label="hints on"
		[ "$mode" = plain ] && label="hints off"
		printf '   %-9s %10.0f %8s %8s %9s %22s\n' "$label" "$(med "$B" "$mode" ops_per_s)" \
			"$(med "$B" "$mode" p50_us)" "$(med "$B" "$mode" p99_us)" "$(med "$B" "$mode" reads_per_op)" \
			"$(cpu_per_op "$B" "$mode" cpu_servers_s)/$(cpu_per_op "$B" "$mode" cpu_switch_s)/$(cpu_per_op "$B" "$mode" cpu_load_s)"
	done
	printf '   ratio %s (per round: %s)   p50 %s%% lower   hint hits %d of %d lookups   wrong %d   errors %d   timeouts %d\n' \
		"$ratio" "$ratio_rounds" "$p50cut" "$hits" "$starts" "$BACKEND_WRONG" "$errors" "$timeouts"
	[ "$prew" -eq 0 ] || echo "testbed: warning: $B: $prew READs came back rewritten through the switch with --hints off" >&2
	echo "$B,remote-read,$SERVERS,$KEYS,$WORKLOAD,$ZIPF,$SECONDS_PER_RUN,$ROUNDS,$height,$node_bytes,$VALUE_BYTES,$oh,$op,$ratio,$ratio_rounds,$p50h,$p50p,$p99h,$p99p,$rh,$rp,$hits,$starts,$BACKEND_WRONG,$errors,$timeouts" >>"$SUMMARY"
	line=$(printf '{"backend":"%s","mode":"remote-read","ops_per_s_hinted":%s,"ops_per_s_plain":%s,"ratio":%s,"ratio_per_round":%s,"p50_us_hinted":%s,"p50_us_plain":%s,"p99_us_hinted":%s,"p99_us_plain":%s,"p50_reduction_percent":%s,"reads_per_op_hinted":%s,"reads_per_op_plain":%s,"hint_hits":%d,"start_reads":%d,"wrong":%d,"errors":%d,"timeouts":%d,"servers":%d,"keys":%d,"height":%s,"node_bytes":%s,"value_bytes":%d,"workload":"%s","dist":"%s","zipf":%s,"seconds":%s,"rounds":%d,"outstanding":%d,"threads":%d}' \
		"$B" "$oh" "$op" "$ratio" "$ratio_rounds" "$p50h" "$p50p" "$p99h" "$p99p" "$p50cut" "$rh" "$rp" "$hits" "$starts" \
		"$BACKEND_WRONG" "$errors" "$timeouts" "$SERVERS" "$KEYS" "$height" "$node_bytes" "$VALUE_BYTES" "$WORKLOAD" "$DIST" "$ZIPF" \
		"$SECONDS_PER_RUN" "$ROUNDS" "$OUTSTANDING" "$THREADS")
	json_lines+=("$line")
	echo "$line" >>"$JSONL"
done

echo
echo "== results: $CSV, $SUMMARY; logs in $LOGS"
printf '%s\n' "${json_lines[@]}"
[ "$TOTAL_WRONG" -eq 0 ] || fail "forein-load --verify counted $TOTAL_WRONG wrong answers (logs: $LOGS)"

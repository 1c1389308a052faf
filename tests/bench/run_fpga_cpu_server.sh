#!/usr/bin/env bash
# run_fpga_cpu_server.sh: Honeycomb's baseline measured here (issue 43,
# item 2; paper 003, section 6: a CPU server answering the same GET and
# SCAN requests over the network, eRPC-Masstree on 10 cores): a CPU server
# behind the DPDK memif path, per server core,
#
#   forein-switch-gen --mode client --memif--> forein-switch --hints off --memif--> forein-kv-server --memif --threads 1
#
# for two servers (ENGINES):
#   forein          the engine tree (--engine forein --backend none: no
#                   offload manager work, a plain CPU server)
#   honeycomb-cpu   Honeycomb's store read by the CPU (--engine honeycomb
#                   --honeycomb-reads cpu: Store::get/scan, no accelerator)
#   (honeycomb-accelerator: --engine honeycomb, the accelerator model on
#   the CPU; not a baseline, only for comparison when asked for)
# and per server, ROUNDS rounds of every op in OPS (GETs, SCANs wanting N
# entries from the drawn key: --scan N), SECS seconds each, uniform keys
# over KEYS (the paper: "all experiments used the uniform distribution"),
# WINDOW requests in flight; then the latency-throughput sweep of the
# paper's Figure 12 (SCANs of SWEEP_SCAN = 3 entries, median latency at the
# client) over WINDOWS, SWEEP_ROUNDS rounds. One switch and one server per
# engine, private memif sockets in a temporary directory, everything
# stopped on exit or failure; no root.
#
# The switch, the server and the generator share this machine's cores
# (2 on the machine the committed CSVs come from), so wall-clock rates
# are the three programs' together. The per-core rate is the server's
# own: requests answered right (ok) per second of the server process's
# CPU time (utime + stime over the run and its drain, forein-switch-gen
# --server-pid), i.e. what one core running only the server would answer.
# The server backs off (sleeps) when its memif port is idle, so its CPU
# time is its work plus a little idle polling and its wake-ups, never the
# others' time (at a small window the wake-ups are a visible share: the
# per-core rate there is not the saturated one). memif_busy_us (the poll
# thread's non-empty bursts, receive to last transmit, by the TSC) is a
# second measure: wall time, so on shared cores it also holds the time
# the thread was preempted inside a burst, and ok per busy second is a
# lower bound of the per-core rate. Scaled to the paper's 10
# cores: per-core rate x 10 (a server thread per core, each with its own
# port, nothing shared but memory: an upper bound, as memory bandwidth and
# the last-level cache are shared).
#
#   bash tests/bench/run_fpga_cpu_server.sh [BUILD_DIR]   (default build)
#
# Knobs (environment): KEYS (2000000), SECS (5), ROUNDS (3), WINDOW (64),
# ENGINES ("forein honeycomb-cpu"), OPS ("get scan:1 scan:3 scan:8
# scan:24"), WINDOWS ("1 2 4 8 16 32 64"), SWEEP_SCAN (3), SWEEP_ROUNDS
# (1), SWEEP_SECS (SECS), DIST (uniform), OUT_DIR (docs/bench/fpga).
# FOREIN_DPDK_IDLE passes through to the three programs (unset here).
#
# Writes to OUT_DIR:
#   cpu_server.csv, one row per run:
#     engine        forein | honeycomb-cpu | honeycomb-accelerator
#     op            get | scan
#     items         entries a SCAN wants (1 for a GET)
#     round         1..ROUNDS (the generator's --seed)
#     window        requests in flight
#     req_per_s     right replies per wall second in the measured window
#     items_per_s   req_per_s x the entries per right reply
#     p50_us, p99_us  send to reply at the client, per request
#     sent, ok, wrong, lost   the generator's counts (wrong: any reply not
#                   exactly the data set's answer; lost: none in 200 ms)
#     server_cpu_s  the server process's CPU seconds over the run and drain
#     per_core_req_per_s  ok / server_cpu_s
#     server_busy_s memif poll thread's busy seconds (memif_busy_us / 1e6)
#     per_busy_s_req_per_s  ok / server_busy_s
#     switch_cpu_s, gen_cpu_s  the switch's and the generator's CPU seconds
#     seconds       the measured window
#   cpu_server_latency.csv, the sweep: engine, op, items, round, window,
#     req_per_s, p50_us, p99_us, ok, wrong, lost, server_cpu_s,
#     per_core_req_per_s (as above)
#   cpu_server_runs.jsonl: every generator JSON line, engine and round added
#   cpu_server.md: the summary printed at the end (machine, date, commit)
# CI never runs it.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" && pwd)
KEYS=${KEYS:-2000000}
SECS=${SECS:-5}
ROUNDS=${ROUNDS:-3}
WINDOW=${WINDOW:-64}
ENGINES=${ENGINES:-forein honeycomb-cpu}
OPS=${OPS:-get scan:1 scan:3 scan:8 scan:24}
WINDOWS=${WINDOWS:-1 2 4 8 16 32 64}
SWEEP_SCAN=${SWEEP_SCAN:-3}
SWEEP_ROUNDS=${SWEEP_ROUNDS:-1}
SWEEP_SECS=${SWEEP_SECS:-$SECS}
DIST=${DIST:-uniform}
OUT_DIR=${OUT_DIR:-$ROOT/docs/bench/fpga}
SWITCH=$BUILD/net/switch/forein-switch
GEN=$BUILD/net/switch/gen/forein-switch-gen
KV=$BUILD/net/kv_server/forein-kv-server
for bin in "$SWITCH" "$GEN" "$KV"; do
	[ -x "$bin" ] || { echo "missing $bin (build with libdpdk-dev installed)" >&2; exit 1; }
done
for op in $OPS; do
	case $op in
	get | scan:[1-9] | scan:[1-9][0-9]) ;;
	*) echo "OPS: '$op' is not get or scan:N" >&2; exit 2 ;;
	esac
done
mkdir -p "$OUT_DIR"
OUT_DIR=$(cd "$OUT_DIR" && pwd)
# shellcheck source=tests/bench/processes.sh
source "$ROOT/tests/bench/processes.sh"

MACHINE="$(nproc) cores, $(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo | head -1), $(uname -sr)"
DATE=$(date -u '+%Y-%m-%d %H:%M UTC')
COMMIT=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
git -C "$ROOT" diff --quiet HEAD -- net 2>/dev/null || COMMIT="$COMMIT plus uncommitted changes under net/"
SETTINGS="KEYS=$KEYS SECS=$SECS ROUNDS=$ROUNDS WINDOW=$WINDOW ENGINES=\"$ENGINES\" OPS=\"$OPS\" WINDOWS=\"$WINDOWS\" SWEEP_SCAN=$SWEEP_SCAN SWEEP_ROUNDS=$SWEEP_ROUNDS SWEEP_SECS=$SWEEP_SECS DIST=$DIST FOREIN_DPDK_IDLE=${FOREIN_DPDK_IDLE:-}"
echo "== machine: $MACHINE"
echo "== date: $DATE, commit $COMMIT, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== $SETTINGS"

CSV=$OUT_DIR/cpu_server.csv
LAT=$OUT_DIR/cpu_server_latency.csv
JSONL=$OUT_DIR/cpu_server_runs.jsonl
echo "engine,op,items,round,window,req_per_s,items_per_s,p50_us,p99_us,sent,ok,wrong,lost,server_cpu_s,per_core_req_per_s,server_busy_s,per_busy_s_req_per_s,switch_cpu_s,gen_cpu_s,seconds" >"$CSV"
echo "engine,op,items,round,window,req_per_s,p50_us,p99_us,ok,wrong,lost,server_cpu_s,per_core_req_per_s" >"$LAT"
: >"$JSONL"

# run ENGINE ROUND OP ITEMS WINDOW SECONDS: one generator run; prints its JSON line.
run() {
	local scan=()
	[ "$3" = scan ] && scan=(--scan "$4")
	local json
	json=$("$GEN" --mode client --client-socket "$dir/c.sock" --keys "$KEYS" --dist "$DIST" --seed "$2" \
		--seconds "$6" --window "$5" "${scan[@]}" --server-stats "127.0.0.1:$kv_port" --server-pid "$kv" \
		--switch-pid "$sw" --probe-timeout-ms 60000 2>"$dir/gen.err") || {
		echo "$1 round $2 $3 $4 window $5: forein-switch-gen failed" >&2
		tail -5 "$dir/gen.err" >&2
		exit 1
	}
	python3 -c 'import json, sys; j = json.loads(sys.argv[1]); j["engine"] = sys.argv[2]; j["round"] = int(sys.argv[3]); print(json.dumps(j))' \
		"$json" "$1" "$2" >>"$JSONL"
	echo "$json"
}

# row ENGINE ROUND OP ITEMS JSON: the CSV row of cpu_server.csv.
row() {
	python3 - "$@" <<'EOF'
import json, sys
engine, rnd, op, items, j = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), json.loads(sys.argv[5])
ok, cpu = j["ok"], j["server_cpu_s"]
per_item = j["entries"] / ok if op == "scan" and ok else 1
busy = j.get("server", {}).get("memif_busy_us", 0) / 1e6
print(",".join(str(v) for v in [
    engine, op, items, rnd, j["window"], j["ops_per_s"], round(j["ops_per_s"] * per_item, 3), j["p50_us"],
    j["p99_us"], j["sent"], ok, j["wrong"], j["lost"], cpu, round(ok / cpu, 1) if cpu > 0 else 0,
    round(busy, 6), round(ok / busy, 1) if busy > 0 else 0, j["switch_cpu_s"], j["gen_cpu_s"], j["seconds"]]))
EOF
}

for engine in $ENGINES; do
	case $engine in
	forein) server_flags=(--engine forein --backend none) ;;
	honeycomb-cpu) server_flags=(--engine honeycomb --honeycomb-reads cpu) ;;
	honeycomb-accelerator) server_flags=(--engine honeycomb --honeycomb-reads accelerator) ;;
	*) echo "ENGINES: '$engine' is not forein, honeycomb-cpu or honeycomb-accelerator" >&2; exit 2 ;;
	esac
	dir=$TMP/$engine
	mkdir -p "$dir"
	# The server joins the switch's socket, so the switch comes first.
	"$SWITCH" --agent-listen 127.0.0.1:0 --client-port "memif:$dir/c.sock" --server-port "memif:$dir/s.sock" \
		--hints off >"$dir/switch.out" 2>"$dir/switch.err" &
	sw=$!
	PIDS+=("$sw")
	wait_ready "$dir/switch.out" "$sw"
	"$KV" --listen 127.0.0.1:0 --memif "$dir/s.sock" --keys "$KEYS" --threads 1 "${server_flags[@]}" \
		>"$dir/kv.out" 2>"$dir/kv.err" &
	kv=$!
	PIDS+=("$kv")
	wait_ready "$dir/kv.out" "$kv"
	kv_port=$(sed -n 's/^listening .*://p' "$dir/kv.out")
	echo "== $engine: server pid $kv port $kv_port (${server_flags[*]}), switch pid $sw"

	for round in $(seq "$ROUNDS"); do
		for spec in $OPS; do
			op=${spec%%:*}
			items=1
			[ "$op" = scan ] && items=${spec#scan:}
			json=$(run "$engine" "$round" "$op" "$items" "$WINDOW" "$SECS")
			r=$(row "$engine" "$round" "$op" "$items" "$json")
			echo "$r" >>"$CSV"
			echo "$r"
		done
	done
	for round in $(seq "$SWEEP_ROUNDS"); do
		for w in $WINDOWS; do
			json=$(run "$engine" "$round" scan "$SWEEP_SCAN" "$w" "$SWEEP_SECS")
			r=$(row "$engine" "$round" scan "$SWEEP_SCAN" "$json")
			# engine,op,items,round,window,req_per_s,p50_us,p99_us,ok,wrong,lost,server_cpu_s,per_core_req_per_s
			echo "$r" | awk -F, -v OFS=, '{print $1,$2,$3,$4,$5,$6,$8,$9,$11,$12,$13,$14,$15}' >>"$LAT"
			echo "sweep: $r"
		done
	done
	stop "$sw"
	stop "$kv"
done

python3 - "$CSV" "$LAT" "$MACHINE" "$DATE" "$COMMIT" "$SETTINGS" >"$OUT_DIR/cpu_server.md" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
lat = list(csv.DictReader(open(sys.argv[2])))
machine, date, commit, settings = sys.argv[3:7]
med = statistics.median
f = lambda r, k: float(r[k])
print("### CPU server baseline over the DPDK memif path (run_fpga_cpu_server.sh)")
print()
print(f"Machine: {machine}. Date: {date}. Commit: {commit}.  ")
print(f"Settings: {settings}.  ")
print("forein-switch-gen --mode client -> forein-switch --hints off -> forein-kv-server --memif --threads 1, all three "
      "on the machine's cores; per-core = right replies per second of the server process's CPU time (medians over "
      "the rounds); x10 = per-core x 10 (the paper's 10 eRPC-Masstree cores, linear: an upper bound).")
print()
print("| engine | op | items | req/s (wall, median) | server CPU s | per-core req/s | per-core items/s | x10 cores req/s | per busy-s req/s | p50 µs | p99 µs | wrong / lost |")
print("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
keys = list(dict.fromkeys((r["engine"], r["op"], r["items"]) for r in rows))
for e, op, items in keys:
    rs = [r for r in rows if (r["engine"], r["op"], r["items"]) == (e, op, items)]
    per_core = med(f(r, "per_core_req_per_s") for r in rs)
    per_item = med(f(r, "items_per_s") / f(r, "req_per_s") if f(r, "req_per_s") > 0 else 0 for r in rs)
    print("| %s | %s | %s | %s | %.2f | %s | %s | %s | %s | %.1f | %.1f | %d / %d |" % (
        e, op.upper(), items, format(round(med(f(r, "req_per_s") for r in rs)), ","),
        med(f(r, "server_cpu_s") for r in rs), format(round(per_core), ","), format(round(per_core * per_item), ","),
        format(round(per_core * 10), ","), format(round(med(f(r, "per_busy_s_req_per_s") for r in rs)), ","),
        med(f(r, "p50_us") for r in rs), med(f(r, "p99_us") for r in rs),
        sum(f(r, "wrong") for r in rs), sum(f(r, "lost") for r in rs)))
if lat:
    print()
    print("Latency-throughput (the paper's Figure 12: SCANs of %s entries, median latency at the client; "
          "window = requests in flight):" % lat[0]["items"])
    print()
    print("| engine | window | req/s | p50 µs | p99 µs | per-core req/s | wrong / lost |")
    print("|---|--:|--:|--:|--:|--:|--:|")
    for e in dict.fromkeys(r["engine"] for r in lat):
        for w in dict.fromkeys(r["window"] for r in lat if r["engine"] == e):
            rs = [r for r in lat if r["engine"] == e and r["window"] == w]
            print("| %s | %s | %s | %.1f | %.1f | %s | %d / %d |" % (
                e, w, format(round(med(f(r, "req_per_s") for r in rs)), ","), med(f(r, "p50_us") for r in rs),
                med(f(r, "p99_us") for r in rs), format(round(med(f(r, "per_core_req_per_s") for r in rs)), ","),
                sum(f(r, "wrong") for r in rs), sum(f(r, "lost") for r in rs)))
EOF
echo
cat "$OUT_DIR/cpu_server.md"
echo "== load after: $(cut -d' ' -f1-3 /proc/loadavg); runs: $CSV, $LAT, $JSONL, summary $OUT_DIR/cpu_server.md"

#!/usr/bin/env bash
# run_dpdk_speedup.sh: the FOREIN paper's metric (speedup = throughput with
# switch hints / without, same workload, same run) on the DPDK path, where
# no kernel UDP or TAP is on the data path (docs/network-benchmark.md, "End-to-end
# speedup on the DPDK path"):
#
#   forein-switch-gen --mode client --memif--> forein-switch --memif--> forein-kv-server --memif
#
# Per backend: one forein-agent holding the server's image, one
# forein-kv-server (--threads 1, --agent to that agent, --memif on the
# switch's server socket); per round one run through a switch with hints
# (--image-from the agent) and one through a switch with --hints off, on
# the same sockets (the switch is restarted between runs; the server's memif
# port rejoins it), alternating which goes first, the same seed. The
# generator probes until its GETs come back right (the server rejoined) and,
# for the hinted switch, until the server's STATS count them hinted (the
# switch holds the image); then SECS seconds of GETs, Zipf 0.99 over KEYS.
#
#   bash tests/bench/run_dpdk_speedup.sh [BUILD_DIR]   (default build)
#
# Knobs (environment): KEYS (1000000), SECS (5), ROUNDS (5), BACKENDS
# ("switch_lpm fattree"), WINDOW (64: GETs in flight), DIST (zipf), THETA
# (0.99). Writes BUILD_DIR/dpdk-speedup/runs.csv (every run) and prints
# the summary table (markdown). Needs no root (memif). CI never runs it.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" && pwd)
KEYS=${KEYS:-1000000}
SECS=${SECS:-5}
ROUNDS=${ROUNDS:-5}
BACKENDS=${BACKENDS:-switch_lpm fattree}
WINDOW=${WINDOW:-64}
DIST=${DIST:-zipf}
THETA=${THETA:-0.99}
SWITCH=$BUILD/net/switch/forein-switch
GEN=$BUILD/net/switch/gen/forein-switch-gen
KV=$BUILD/net/kv_server/forein-kv-server
AGENT=$BUILD/net/agent/forein-agent
for bin in "$SWITCH" "$GEN" "$KV" "$AGENT"; do
	[ -x "$bin" ] || { echo "missing $bin (build with libdpdk-dev installed)" >&2; exit 1; }
done
OUT=$BUILD/dpdk-speedup
mkdir -p "$OUT"
# shellcheck source=tests/bench/processes.sh
source "$ROOT/tests/bench/processes.sh"

MACHINE="$(nproc) cores, $(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo | head -1), $(uname -sr)"
DATE=$(date -u '+%Y-%m-%d %H:%M UTC')
COMMIT=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
git -C "$ROOT" diff --quiet HEAD 2>/dev/null || COMMIT="$COMMIT plus uncommitted changes"
echo "== machine: $MACHINE"
echo "== date: $DATE, commit $COMMIT, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== KEYS=$KEYS SECS=$SECS ROUNDS=$ROUNDS BACKENDS=\"$BACKENDS\" WINDOW=$WINDOW DIST=$DIST THETA=$THETA"

CSV=$OUT/runs.csv
echo "backend,round,hints,ops_per_s,p50_us,p99_us,sent,ok,wrong,lost,gen_cpu_s,switch_cpu_s,server_cpu_s,get,hinted,hint_hits,fallbacks,nodes_visited" >"$CSV"
: >"$OUT/runs.jsonl"

for backend in $BACKENDS; do
	dir=$TMP/$backend
	mkdir -p "$dir"
	"$AGENT" --listen 127.0.0.1:0 >"$dir/agent.out" 2>"$dir/agent.err" &
	agent_pid=$!
	PIDS+=("$agent_pid")
	wait_ready "$dir/agent.out" "$agent_pid"
	agent=$(sed -n 's/^listening //p' "$dir/agent.out")

	# start_switch MODE: a switch on the backend's sockets; sets sw.
	start_switch() {
		local flags=(--hints off)
		[ "$1" = on ] && flags=(--image-from "$agent")
		"$SWITCH" --agent-listen 127.0.0.1:0 --client-port "memif:$dir/c.sock" --server-port "memif:$dir/s.sock" \
			"${flags[@]}" >"$dir/switch.out" 2>"$dir/switch.err" &
		sw=$!
		PIDS+=("$sw")
		wait_ready "$dir/switch.out" "$sw"
		sw_mode=$1
	}

	# The server joins a switch's socket, so one switch comes first.
	start_switch off
	"$KV" --listen 127.0.0.1:0 --memif "$dir/s.sock" --keys "$KEYS" --backend "$backend" --agent "$agent" \
		--threads 1 >"$dir/kv.out" 2>"$dir/kv.err" &
	kv=$!
	PIDS+=("$kv")
	wait_ready "$dir/kv.out" "$kv"
	kv_port=$(sed -n 's/^listening .*://p' "$dir/kv.out")
	echo "== $backend: agent $agent, server pid $kv port $kv_port"

	for round in $(seq "$ROUNDS"); do
		order="on off"
		[ $((round % 2)) -eq 0 ] && order="off on"
		for mode in $order; do
			if [ "$sw_mode" != "$mode" ]; then # else the last run's switch goes on
				stop "$sw"
				start_switch "$mode"
			fi
			wait_hints=()
			[ "$mode" = on ] && wait_hints=(--wait-hints)
			json=$("$GEN" --mode client --client-socket "$dir/c.sock" --keys "$KEYS" --dist "$DIST" --zipf "$THETA" \
				--seed "$round" --seconds "$SECS" --window "$WINDOW" "${wait_hints[@]}" \
				--server-stats "127.0.0.1:$kv_port" --server-pid "$kv" --switch-pid "$sw" \
				--probe-timeout-ms 60000 2>"$dir/gen.err") || {
				echo "$backend round $round hints $mode: forein-switch-gen failed" >&2
				tail -5 "$dir/gen.err" >&2
				exit 1
			}
			echo "$json" >>"$OUT/runs.jsonl"
			row=$(python3 -c '
import json, sys
j = json.loads(sys.argv[1]); s = j["server"]
print(",".join(str(v) for v in [j["ops_per_s"], j["p50_us"], j["p99_us"], j["sent"], j["ok"], j["wrong"], j["lost"],
      j["gen_cpu_s"], j["switch_cpu_s"], j["server_cpu_s"], s["get"], s["hinted"], s["hint_hits"], s["fallbacks"],
      s["nodes_visited"]]))' "$json")
			echo "$backend,$round,$mode,$row" >>"$CSV"
			echo "$backend round $round hints $mode: $row"
		done
	done
	stop "$sw"
	stop "$kv"
	stop "$agent_pid"
done

python3 - "$CSV" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
f = lambda r, k: float(r[k])
med = statistics.median
print()
print("| backend | hints | ops/s (median) | runs (k ops/s) | p50 µs | p99 µs | hint hits / GETs | nodes/GET | CPU µs/op gen / switch / server | speedup: ratio of medians; median of per-round ratios (range) | wrong / lost |")
print("|---|---|--:|---|--:|--:|--:|--:|--:|--:|--:|")
for b in dict.fromkeys(r["backend"] for r in rows):
    by = {m: [r for r in rows if r["backend"] == b and r["hints"] == m] for m in ("on", "off")}
    meds = {m: med(f(r, "ops_per_s") for r in by[m]) for m in by}
    per_round = []
    for r_on in by["on"]:
        r_off = next(r for r in by["off"] if r["round"] == r_on["round"])
        per_round.append(f(r_on, "ops_per_s") / f(r_off, "ops_per_s"))
    for m in ("on", "off"):
        rs = by[m]
        ok = sum(f(r, "ok") for r in rs)
        cpu = lambda k: sum(f(r, k) for r in rs) / ok * 1e6
        gets = sum(f(r, "get") for r in rs)
        speed = ""
        if m == "on":
            speed = "**%.3f**; %.3f (%.2f-%.2f)" % (meds["on"] / meds["off"], med(per_round), min(per_round), max(per_round))
        print("| %s | %s | %s | %s | %.0f | %.0f | %s | %.2f | %.2f / %.2f / %.2f | %s | %d / %d |" % (
            b, m, format(round(meds[m]), ","), ", ".join("%.0f" % (f(r, "ops_per_s") / 1e3) for r in rs),
            med(f(r, "p50_us") for r in rs), med(f(r, "p99_us") for r in rs),
            "%d of %d" % (sum(f(r, "hint_hits") for r in rs), gets), sum(f(r, "nodes_visited") for r in rs) / gets,
            cpu("gen_cpu_s"), cpu("switch_cpu_s"), cpu("server_cpu_s"), speed,
            sum(f(r, "wrong") for r in rs), sum(f(r, "lost") for r in rs)))
EOF
echo "== load after: $(cut -d' ' -f1-3 /proc/loadavg); every run: $CSV, $OUT/runs.jsonl"

#!/usr/bin/env bash
# run_switch_forwarding.sh: forein-switch's forwarding rate on memif ports,
# driven by forein-switch-gen on both memif sockets (docs/network.md,
# "forein-switch-gen"). Rows: the switch hinting every GET from a
# switch_lpm image, from a fattree image, and (when the switch has
# `--hints off`) forwarding without lookups. Each row: one switch; for the
# hinted rows forein-kv-server --agent publishes its image to the switch's
# agent, a short probe run confirms the switch hints, and the server is
# stopped (the agent keeps the image) so it does not share the cores; then
# REPS generator runs of SECS seconds; medians reported.
#
#   bash tests/bench/run_switch_forwarding.sh [BUILD_DIR]   (default build)
#
# Knobs (environment): KEYS (1000000), DIST (zipf), SECS (3), REPS (3),
# DOC (docs/network-benchmark.md; "-" to leave it alone). Writes
# BUILD_DIR/switch-forwarding/runs.csv (every run) and the section
# "## Switch forwarding rate" of DOC. Needs no root (memif). Short; CI
# never runs it.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" && pwd)
KEYS=${KEYS:-1000000}
DIST=${DIST:-zipf}
SECS=${SECS:-3}
REPS=${REPS:-3}
DOC=${DOC:-$ROOT/docs/network-benchmark.md}
SWITCH=$BUILD/net/switch/forein-switch
GEN=$BUILD/net/switch/gen/forein-switch-gen
KV=$BUILD/net/kv_server/forein-kv-server
for bin in "$SWITCH" "$GEN" "$KV"; do
	[ -x "$bin" ] || { echo "missing $bin (build with libdpdk-dev installed)" >&2; exit 1; }
done
OUT=$BUILD/switch-forwarding
mkdir -p "$OUT"
# shellcheck source=tests/bench/processes.sh
source "$ROOT/tests/bench/processes.sh"

rows="switch_lpm fattree"
if "$SWITCH" --help | grep -q -- '--hints on|off'; then rows="$rows off"; fi
echo "row,rep,pps,switch_pps_per_core,switch_cpu_s,gen_cpu_s,received,hinted,lost" > "$OUT/runs.csv"
MACHINE="$(nproc) cores, $(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo | head -1), $(uname -sr)"
DATE=$(date -u '+%Y-%m-%d %H:%M UTC')
COMMIT=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
git -C "$ROOT" diff --quiet HEAD 2>/dev/null || COMMIT="$COMMIT plus uncommitted changes"
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
COMMAND="KEYS=$KEYS DIST=$DIST SECS=$SECS REPS=$REPS bash tests/bench/run_switch_forwarding.sh"
echo "== machine: $MACHINE"
echo "== date: $DATE, commit $COMMIT, load $LOAD_BEFORE"
echo "== command: $COMMAND"

for row in $rows; do
	dir=$TMP/$row
	mkdir -p "$dir"
	hints=()
	[ "$row" = off ] && hints=(--hints off)
	"$SWITCH" --agent-listen 127.0.0.1:0 --client-port "memif:$dir/client.sock" \
		--server-port "memif:$dir/server.sock" "${hints[@]}" >"$dir/switch.out" 2>"$dir/switch.err" &
	sw=$!
	PIDS+=("$sw")
	wait_ready "$dir/switch.out"
	agent=$(sed -n 's/^listening //p' "$dir/switch.out")
	gen=("$GEN" --client-socket "$dir/client.sock" --server-socket "$dir/server.sock" --keys "$KEYS"
		--dist "$DIST" --probe-timeout-ms 60000)
	if [ "$row" != off ]; then
		"$KV" --listen 127.0.0.1:0 --keys "$KEYS" --backend "$row" --agent "$agent" --threads 1 \
			>"$dir/kv.out" 2>"$dir/kv.err" &
		kv=$!
		PIDS+=("$kv")
		wait_ready "$dir/kv.out"
		"${gen[@]}" --count 1000 --wait-hints >/dev/null 2>"$dir/probe.err" ||
			{ echo "$row: the switch never hinted" >&2; cat "$dir/probe.err" >&2; exit 1; }
		kill "$kv"
		wait "$kv" 2>/dev/null || true
		gen+=(--wait-hints)
	fi
	for rep in $(seq "$REPS"); do
		"${gen[@]}" --seconds "$SECS" --switch-pid "$sw" >"$dir/gen.$rep.out" 2>"$dir/gen.$rep.err" ||
			{ echo "$row: forein-switch-gen failed" >&2; cat "$dir/gen.$rep.err" >&2; exit 1; }
		python3 - "$row" "$rep" "$dir/gen.$rep.out" >>"$OUT/runs.csv" <<-'EOF'
			import json, sys
			j = json.loads(open(sys.argv[3]).read().strip().splitlines()[-1])
			print(",".join(str(v) for v in [sys.argv[1], sys.argv[2], j["pps"], j.get("switch_pps_per_core", ""),
			      j.get("switch_cpu_s", ""), j["gen_cpu_s"], j["received"], j["hinted"], j["lost"]]))
		EOF
		tail -1 "$OUT/runs.csv"
	done
	kill -TERM "$sw"
	wait "$sw" || { echo "$row: forein-switch exited with an error" >&2; exit 1; }
done
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

# DPDK's own LPM (rte_lpm, the table l3fwd's LPM mode uses) on this machine
# in the same run: dpdk-test's lpm_perf_autotest (Debian: dpdk-dev).
DPDK_LPM="not measured: dpdk-test not found (apt-get install dpdk-dev)"
if command -v dpdk-test >/dev/null; then
	lpm_out=$(echo lpm_perf_autotest | dpdk-test --no-huge --no-pci -m 512 --file-prefix "fsw-lpm-$$" -l 0 2>&1 || true)
	single=$(sed -n 's/^Average LPM Lookup: \([0-9.]*\) cycles.*/\1/p' <<<"$lpm_out")
	bulk=$(sed -n 's/^BULK LPM Lookup: \([0-9.]*\) cycles.*/\1/p' <<<"$lpm_out")
	mhz=$(sed -n 's/^cpu MHz[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo | head -1)
	if [ -n "$single" ] && [ -n "$bulk" ] && [ -n "$mhz" ]; then
		DPDK_LPM=$(awk -v s="$single" -v b="$bulk" -v m="$mhz" 'BEGIN {
			printf "%s cycles per lookup (%.1f ns at %.0f MHz), %s cycles in bulk (%.1f ns)", s, s * 1000 / m, m, b, b * 1000 / m }')
	fi
	echo "== DPDK rte_lpm: $DPDK_LPM"
fi

python3 - "$OUT/runs.csv" "$DOC" "$MACHINE" "$DATE" "$COMMIT" "$COMMAND" "$LOAD_BEFORE" "$LOAD_AFTER" \
	"$KEYS" "$DIST" "$SECS" "$REPS" "$DPDK_LPM" <<-'EOF'
	import csv, os, statistics, sys
	runs, doc, machine, date, commit, command, load0, load1, keys, dist, secs, reps, dpdk_lpm = sys.argv[1:]
	rows = {}
	for r in csv.DictReader(open(runs)):
	    rows.setdefault(r["row"], []).append(r)
	label = {"switch_lpm": "hints from a switch_lpm image", "fattree": "hints from a fattree image",
	         "off": "`--hints off` (no lookup, no trailer)"}
	def med(rs, k):
	    return statistics.median(float(r[k]) for r in rs)
	table = ["| switch | pps (median) | runs (M) | CPU s per run: switch / generator | rate per switch core (median) | hinted | lost |",
	         "| --- | ---: | --- | ---: | ---: | ---: | ---: |"]
	for name, rs in rows.items():
	    received = sum(int(r["received"]) for r in rs)
	    hinted = sum(int(r["hinted"]) for r in rs)
	    table.append("| %s | %.2f M | %s | %.2f / %.2f of %s | %.2f M | %.0f%% | %d |" % (
	        label.get(name, name), med(rs, "pps") / 1e6, ", ".join("%.2f" % (float(r["pps"]) / 1e6) for r in rs),
	        med(rs, "switch_cpu_s"), med(rs, "gen_cpu_s"), secs, med(rs, "switch_pps_per_core") / 1e6,
	        100.0 * hinted / max(received, 1), sum(int(r["lost"]) for r in rs)))
	print("\n".join(table))
	if doc == "-":
	    sys.exit(0)
	# Only the block between the markers is rewritten; the rest of the
	# section (the discussion) is kept.
	begin, finish = "<!-- run_switch_forwarding.sh: begin -->", "<!-- run_switch_forwarding.sh: end -->"
	block = f"""{begin}
Measured by `tests/bench/run_switch_forwarding.sh` on {date} (commit {commit}):
{machine}; load average {load0} before, {load1} after.

```
{command}
```

{keys} keys, {dist} key draw, {reps} runs of {secs} s per row; every run in
`BUILD/switch-forwarding/runs.csv`.

{chr(10).join(table)}

DPDK's LPM for scale, same machine and run (`dpdk-test lpm_perf_autotest`:
rte_lpm with about 1M random routes, the table l3fwd's LPM mode looks up):
{dpdk_lpm}.
{finish}"""
	text = open(doc).read() if os.path.exists(doc) else "# forein network benchmarks\n"
	head = text.find("## Switch forwarding rate")
	if head < 0:
	    text = text.rstrip("\n") + "\n\n## Switch forwarding rate\n\n" + block + "\n"
	elif text.find(begin, head) >= 0:
	    b = text.find(begin, head)
	    e = text.find(finish, b) + len(finish)
	    text = text[:b] + block + text[e:]
	else:
	    nl = text.find("\n", head)
	    text = text[:nl + 1] + "\n" + block + "\n" + text[nl + 1:]
	open(doc, "w").write(text)
	print("wrote", doc)
EOF

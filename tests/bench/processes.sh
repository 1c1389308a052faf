# Sourced by the network benchmark scripts: a temporary directory and the
# processes a script starts, all stopped on exit, Ctrl-C or failure, and
# waiting for a program's `ready` line.
#   PIDS+=("$pid")          register a started process
#   wait_ready FILE [PID]   until FILE holds `ready` (120 s at most; early
#                           failure when PID died)
#   stop PID                SIGTERM and reap (no-op when it is gone)

TMP=$(mktemp -d)
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

wait_ready() {
	for _ in $(seq 1200); do
		grep -qx ready "$1" 2>/dev/null && return 0
		if [ -n "${2:-}" ]; then kill -0 "$2" 2>/dev/null || break; fi
		sleep 0.1 # poll interval
	done
	echo "no 'ready' in $1" >&2
	cat "$1" "${1%.out}.err" >&2 || true
	exit 1
}

stop() {
	kill -TERM "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}

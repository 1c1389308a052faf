# netns.sh: the network namespaces of the scripts whose programs talk over
# TAP ports (scripts/testbed.sh, tests/bench/run_switch_delta.sh). Sourced.
#
# Why: a TAP port's kernel side gets an address in a private range
# (10.x.y.1) and the programs send to it. In the machine's own namespace
# that would add addresses and routes next to the host's real networks
# (and leave them behind when a run dies). So each run makes its own
# namespace, starts forein-switch in it (DPDK's TAP PMD creates the
# devices in the namespace of the process that opens them), and runs the
# servers and clients there too; the switch's gRPC agent listens on that
# namespace's own loopback. The devices vanish with the switch, the
# namespace with netns_cleanup. Nothing but loopback is touched in the
# root namespace.
#
#   netns_check              0 if `ip netns` works here (root, iproute2);
#                            otherwise prints why and returns 1
#   netns_add ROLE           creates forein-ROLE-PID (PID: this shell's),
#                            brings its loopback up, sets NETNS to its name
#                            and remembers it for netns_cleanup
#   netns_exec CMD...        runs CMD in $NETNS (in the foreground). For a
#                            process in the background whose pid you need,
#                            write `ip netns exec "$NETNS" CMD &`: ip execs
#                            CMD, so $! is CMD's pid (a function run with &
#                            would be a subshell with CMD as its child)
#   netns_cleanup            for every namespace netns_add made: stops what
#                            still runs in it (SIGTERM, SIGKILL after 10 s)
#                            and deletes it. Call it from the EXIT trap.
#   netns_sweep              for every forein-*-PID namespace whose PID
#                            no longer runs (a run killed with SIGKILL, whose
#                            traps never ran): stops what still runs in it
#                            and deletes it
#
# The names are forein-<role>-<pid>, so `ip netns list | grep forein-`
# shows every run's namespace and which shell made it.

NETNS=""
NETNS_MADE=()

netns_check() {
	if [ "$(id -u)" -ne 0 ]; then
		echo "network namespaces need root (ip netns add)" >&2
		return 1
	fi
	if ! command -v ip >/dev/null 2>&1 || ! ip netns list >/dev/null 2>&1; then
		echo "'ip netns' is not available (apt-get install iproute2)" >&2
		return 1
	fi
}

netns_add() {
	local name=forein-$1-$$
	# A namespace of this name can only be a leftover of a dead shell
	# whose pid this one reuses.
	if ip netns list | awk '{print $1}' | grep -qx -- "$name"; then
		ip netns del "$name" 2>/dev/null || true
	fi
	ip netns add "$name" || return 1
	NETNS_MADE+=("$name")
	NETNS=$name
	ip -n "$name" link set lo up || return 1
}

netns_exec() { ip netns exec "$NETNS" "$@"; }

# netns_stop_all NAME: SIGTERM to every process in NAME, SIGKILL to those
# still there after 10 s (polled), until the namespace holds none.
netns_stop_all() {
	local ns=$1 pids end=$((SECONDS + 10))
	pids=$(ip netns pids "$ns" 2>/dev/null) || return 0
	[ -n "$pids" ] || return 0
	# shellcheck disable=SC2086
	kill -TERM $pids 2>/dev/null || true
	while [ -n "$(ip netns pids "$ns" 2>/dev/null)" ] && [ "$SECONDS" -lt "$end" ]; do sleep 0.05; done
	pids=$(ip netns pids "$ns" 2>/dev/null) || return 0
	# shellcheck disable=SC2086
	[ -z "$pids" ] || kill -KILL $pids 2>/dev/null || true
	end=$((SECONDS + 10))
	while [ -n "$(ip netns pids "$ns" 2>/dev/null)" ] && [ "$SECONDS" -lt "$end" ]; do sleep 0.05; done
}

netns_cleanup() {
	local ns
	for ns in ${NETNS_MADE[@]+"${NETNS_MADE[@]}"}; do
		netns_stop_all "$ns"
		ip netns del "$ns" 2>/dev/null || true
	done
	NETNS_MADE=()
	NETNS=""
}

netns_sweep() {
	local ns pid
	for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^forein-.+-[0-9]+$' || true); do
		pid=${ns##*-}
		# Its maker still runs (or its pid is taken again): leave it.
		[ ! -e "/proc/$pid" ] || continue
		echo "netns: deleting $ns and what runs in it, left by a run that died (pid $pid)" >&2
		netns_stop_all "$ns"
		ip netns del "$ns" 2>/dev/null || true
	done
}

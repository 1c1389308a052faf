#!/usr/bin/env bash
# root_netns_guard.sh: the machine's own network namespace is the same
# after the network tests as before them (issue 39). CTest runs `snapshot`
# as the setup and `compare` as the cleanup of the fixture root_netns,
# which every test with TAP ports or network namespaces requires.
#
#   root_netns_guard.sh snapshot FILE   writes what the check compares
#   root_netns_guard.sh compare FILE    exit 1, with the difference, when
#                                       the namespace changed since
#
# Compared: the interfaces (names), their addresses (interface, family,
# address/prefix; IPv6 temporary addresses, which the kernel rotates, are
# left out) and the network namespaces named forein-* (a test's or a
# script's that was not deleted). Read-only: it removes nothing.
set -euo pipefail

state() {
	echo "# interfaces"
	ip -o link show | awk -F': ' '{sub(/@.*/, "", $2); print $2}' | sort
	echo "# addresses"
	ip -o addr show | grep -v ' temporary' | awk '{print $2, $3, $4}' | sort
	echo "# forein network namespaces"
	ip netns list 2>/dev/null | awk '{print $1}' | grep '^forein-' | sort || true
}

if ! command -v ip >/dev/null 2>&1; then
	echo "root_netns_guard: no 'ip' (iproute2): nothing to compare"
	exit 0
fi
case "${1:-}" in
snapshot)
	[ $# -eq 2 ] || { echo "usage: $0 snapshot FILE" >&2; exit 2; }
	state >"$2"
	echo "root_netns_guard: $(grep -c . "$2") lines of the root namespace's state in $2"
	;;
compare)
	[ $# -eq 2 ] || { echo "usage: $0 compare FILE" >&2; exit 2; }
	[ -f "$2" ] || { echo "root_netns_guard: no snapshot $2 (the setup test did not run)" >&2; exit 1; }
	now=$(mktemp)
	trap 'rm -f "$now"' EXIT
	state >"$now"
	if ! diff -u --label before --label after "$2" "$now"; then
		echo "root_netns_guard: the network tests changed the machine's own network namespace (above)" >&2
		exit 1
	fi
	echo "root_netns_guard: the root namespace's interfaces, addresses and forein namespaces are as before"
	;;
*)
	echo "usage: $0 snapshot|compare FILE" >&2
	exit 2
	;;
esac

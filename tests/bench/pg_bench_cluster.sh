# pg_bench_cluster.sh: sourced by the PostgreSQL benchmark scripts.
#
#   pg_bench_cluster_start CLUSTER [--set NAME=VALUE]...
#
# Starts a fresh private cluster in CLUSTER (scripts/pg-cluster.sh: data,
# socket and server log in a scratch directory under ${TMPDIR:-/tmp}, the
# log copied to CLUSTER/log at the end) after stopping what an interrupted
# earlier run left there, stops it when the script exits (also on a
# signal), and exports its client settings (PGHOST, PGPORT, ...). Needs
# ROOT (the checkout).

pg_bench_cluster_start() {
	local cluster=$1
	shift
	bash "$ROOT/scripts/pg-cluster.sh" stop "$cluster" fast >/dev/null 2>&1 || true
	PG_BENCH_CLUSTER=$cluster
	trap 'bash "$ROOT/scripts/pg-cluster.sh" stop "$PG_BENCH_CLUSTER" fast >/dev/null 2>&1 || true' EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM HUP
	bash "$ROOT/scripts/pg-cluster.sh" start "$cluster" "$@" >/dev/null
	# shellcheck disable=SC1091
	source "$cluster/env"
}

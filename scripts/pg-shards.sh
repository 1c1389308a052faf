#!/usr/bin/env bash
# pg-shards.sh: a sharded PostgreSQL on this machine, with PostgreSQL's own
# tools: shards and a coordinator whose partitioned table's partitions are
# postgres_fdw foreign tables on the shards (docs/postgresql.md, "Sharding").
#
#   scripts/pg-shards.sh start DIR [--shards N] [--scale S] [--index forein|btree|both]
#                                  [--set NAME=VALUE]...
#   scripts/pg-shards.sh stop DIR [fast|immediate]
#   scripts/pg-shards.sh status DIR
#   scripts/pg-shards.sh env DIR [NODE]        # export lines for PG* vars
#   scripts/pg-shards.sh psql DIR [NODE] [psql arguments...]
#
# start starts N shards (default 3) and a coordinator, each a private
# cluster of scripts/pg-cluster.sh on a free port (forein preloaded; as
# root the servers run as $PG_CLUSTER_USER, default postgres) in
# DIR/shard1 .. DIR/shardN and DIR/coord, and makes every shard a
# postgres_fdw server of the coordinator (scripts/pg-shards/coordinator_server.sql:
# servers shard1 .. shardN, reached over their Unix sockets).
# With --scale S (default 0: no tables) it loads pgbench's schema at scale
# S: pgbench_accounts (S x 100,000 rows) split by ranges of aid, shard i
# holding the i-th of N equal ranges (the first and last open-ended), with
# a unique index on aid (scripts/pg-shards/shard.sql) of the access method
# --index names (forein, the default, or btree; both: pgbench_accounts with
# forein and a copy pgbench_accounts_btree with btree, for the benchmark);
# on the coordinator each is a table partitioned by range of aid whose
# partitions are foreign tables <table>_shardI
# (scripts/pg-shards/coordinator_partition.sql), beside local
# pgbench_branches, pgbench_tellers and pgbench_history
# (scripts/pg-shards/coordinator_pgbench.sql). pgbench runs against the
# coordinator unchanged (pgbench -S -M prepared, or its TPC-B-like script).
# --set NAME=VALUE is passed to every server's pg-cluster.sh start.
#
# NODE is coord (the default) or shard1 .. shardN; env prints the node's
# client settings (source them, or `eval "$(scripts/pg-shards.sh env DIR)"`).
# stop stops every server of DIR, also after a start that failed half-way
# (a failed start stops what it started itself). status lists the servers
# and exits 3 unless all of them run.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd -P)
CLUSTER=$HERE/pg-cluster.sh
SQLDIR=$HERE/pg-shards

die() { echo "pg-shards: $*" >&2; exit 1; }
usage() {
	sed -n '6,11p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

abs_dir() { mkdir -p "$1" && (cd "$1" && pwd -P); }

# nodes DIR: the nodes DIR holds servers of (coordinator first), whatever
# the start got to.
nodes() {
	local d
	[ ! -d "$1/coord" ] || echo coord
	for d in "$1"/shard*; do
		[ -d "$d" ] || continue
		echo "${d##*/}"
	done | sort -V
}

# psql_node DIR NODE [psql arguments...]: psql on NODE, quiet, stopping at
# the first error.
psql_node() {
	local dir=$1 node=$2
	shift 2
	PGOPTIONS="-c client_min_messages=warning" bash "$CLUSTER" psql "$dir/$node" -q -At "$@" >/dev/null
}

cmd_start() {
	local dir=$1
	shift
	local shards=3 scale=0 index=forein
	local -a sets=()
	while [ $# -gt 0 ]; do
		case $1 in
			--shards) [ $# -ge 2 ] || usage; shards=$2; shift ;;
			--scale) [ $# -ge 2 ] || usage; scale=$2; shift ;;
			--index) [ $# -ge 2 ] || usage; index=$2; shift ;;
			--set) [ $# -ge 2 ] || usage; sets+=(--set "$2"); shift ;;
			*) die "unknown option $1" ;;
		esac
		shift
	done
	[[ $shards =~ ^[1-9][0-9]?$ ]] || die "--shards takes 1..99, not '$shards'"
	if ! [[ $scale =~ ^[0-9]+$ ]] || [ "$scale" -gt 20000 ]; then
		die "--scale takes 0..20000, not '$scale'"
	fi
	local -a copies
	case $index in
		forein) copies=("pgbench_accounts forein") ;;
		btree) copies=("pgbench_accounts btree") ;;
		both) copies=("pgbench_accounts forein" "pgbench_accounts_btree btree") ;;
		*) die "--index takes forein, btree or both, not '$index'" ;;
	esac
	[ -f "$("${PG_CONFIG:-pg_config}" --sharedir)/extension/postgres_fdw.control" ] ||
		die "postgres_fdw is not installed (postgresql-contrib; scripts/install-deps.sh)"

	dir=$(abs_dir "$dir")
	local node
	for node in $(nodes "$dir"); do
		if bash "$CLUSTER" status "$dir/$node" >/dev/null 2>&1; then
			die "$node of $dir is running; stop it first with: $0 stop $dir"
		fi
	done
	cmd_stop "$dir" immediate  # what an interrupted earlier start left
	rm -rf "${dir:?}"/coord "${dir:?}"/shard*
	rm -f "$dir/env"

	# Until everything is up, a failure or a signal stops what started.
	local ok=0
	local -a bg=()
	# shellcheck disable=SC2317  # run by the traps
	on_exit() {
		[ "$ok" -eq 0 ] || return 0
		local p
		for p in "${bg[@]+"${bg[@]}"}"; do wait "$p" 2>/dev/null || true; done
		echo "pg-shards: start failed; stopping what started (logs: $dir/*/log*)" >&2
		cmd_stop "$dir" immediate
	}
	trap on_exit EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM HUP

	# The servers start side by side (initdb is most of the time).
	local i p failed=0
	for i in $(seq 1 "$shards") coord; do
		node=$([ "$i" = coord ] && echo coord || echo "shard$i")
		bash "$CLUSTER" start "$dir/$node" "${sets[@]+"${sets[@]}"}" >/dev/null &
		bg+=("$!")
	done
	for p in "${bg[@]}"; do wait "$p" || failed=1; done
	bg=()
	[ $failed -eq 0 ] || die "a server did not start"

	for i in $(seq 1 "$shards"); do
		psql_node "$dir" coord -v srv="shard$i" -v host="$(cat "$dir/shard$i/sockdir")" \
			-v port="$(cat "$dir/shard$i/port")" -f "$SQLDIR/coordinator_server.sql"
	done

	if [ "$scale" -gt 0 ]; then
		# shard i holds aid b(i-1) .. b(i) - 1, b(i) = 1 + i * rows / shards
		local rows=$((scale * 100000)) copy tbl am lo hi min max plo phi
		for copy in "${copies[@]}"; do
			read -r tbl am <<<"$copy"
			for i in $(seq 1 "$shards"); do
				lo=$((1 + (i - 1) * rows / shards)) hi=$((i * rows / shards))
				min=$lo max=$hi plo=$lo phi=$((hi + 1))
				[ "$i" -ne 1 ] || { min=-2147483648 plo=MINVALUE; }
				[ "$i" -ne "$shards" ] || { max=2147483647 phi=MAXVALUE; }
				psql_node "$dir" "shard$i" -v tbl="$tbl" -v am="$am" -v data_lo="$lo" \
					-v data_hi="$hi" -v min_aid="$min" -v max_aid="$max" -f "$SQLDIR/shard.sql" &
				bg+=("$!")
				psql_node "$dir" coord -v tbl="$tbl" -v srv="shard$i" -v lo="$plo" -v hi="$phi" \
					-f "$SQLDIR/coordinator_partition.sql"
			done
			for p in "${bg[@]}"; do wait "$p" || failed=1; done
			bg=()
			[ $failed -eq 0 ] || die "loading $tbl into the shards failed"
		done
		psql_node "$dir" coord -v scale="$scale" -f "$SQLDIR/coordinator_pgbench.sql"
	fi

	cp "$dir/coord/env" "$dir/env"
	ok=1
	trap - EXIT INT TERM HUP
	echo "coordinator: port $(cat "$dir/coord/port") ($dir/env)"
	for i in $(seq 1 "$shards"); do
		echo "shard$i: port $(cat "$dir/shard$i/port")"
	done
	[ "$scale" -eq 0 ] || echo "pgbench_accounts: scale $scale, $((scale * 100000)) rows, --index $index"
}

cmd_stop() {
	local dir=$1 mode=${2:-fast} node
	[ -d "$dir" ] || return 0
	for node in $(nodes "$dir"); do
		bash "$CLUSTER" stop "$dir/$node" "$mode" || echo "pg-shards: stopping $node failed" >&2
	done
	rm -f "$dir/env"
	return 0
}

cmd_status() {
	local dir=$1 node rc=0 port
	[ -n "$(nodes "$dir")" ] || { echo "pg-shards: no servers in $dir"; return 3; }
	for node in $(nodes "$dir"); do
		port=$(cat "$dir/$node/port" 2>/dev/null || echo -)
		if bash "$CLUSTER" status "$dir/$node" >/dev/null 2>&1; then
			echo "$node: running, port $port"
		else
			echo "$node: not running"
			rc=3
		fi
	done
	return $rc
}

# node_arg NAME: true when NAME names a node (coord, shardN).
node_arg() { [[ ${1:-} =~ ^(coord|shard[1-9][0-9]?)$ ]]; }

[ $# -ge 2 ] || usage
cmd=$1 dir=$2
shift 2
case $cmd in
	start) cmd_start "$dir" "$@" ;;
	stop) [ $# -le 1 ] || usage; cmd_stop "$dir" "$@" ;;
	status) cmd_status "$dir" ;;
	env)
		node=coord
		if [ $# -gt 0 ]; then node_arg "$1" || die "no node '$1' (coord, shard1 ...)"; node=$1; fi
		[ -f "$dir/$node/env" ] || die "no server $node in $dir"
		cat "$dir/$node/env" ;;
	psql)
		node=coord
		if node_arg "${1:-}"; then node=$1; shift; fi
		[ -f "$dir/$node/env" ] || die "no server $node in $dir"
		exec bash "$CLUSTER" psql "$dir/$node" "$@" ;;
	*) usage ;;
esac

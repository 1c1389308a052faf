#!/usr/bin/env bash
# pg-cluster.sh: a private PostgreSQL cluster for forein's tests and demo,
# listening on a free port.
#
#   scripts/pg-cluster.sh start DIR [--no-preload] [--fsync] [--set NAME=VALUE]...
#   scripts/pg-cluster.sh stop DIR [fast|immediate]
#   scripts/pg-cluster.sh status DIR
#   scripts/pg-cluster.sh env DIR          # prints export lines for PG* vars
#   scripts/pg-cluster.sh psql DIR [psql arguments...]
#
# start runs initdb (superuser "postgres", trust auth, UTF8, C locale), then
# starts the server on a port nothing else is using, with
# shared_preload_libraries = 'forein' (unless --no-preload) and fsync off
# (unless --fsync).  The cluster itself (data directory, Unix socket,
# server log) lives in a scratch directory that the server's user can
# always write, whatever the checkout's permissions: mode 0700, made by
# mktemp -d under ${TMPDIR:-/tmp} (see scripts/pg-scratch.sh).  DIR (in the
# build tree) holds what clients need:
#   scratch    the scratch directory's path    port    the port
#   env        export lines for clients (PGHOST, PGPORT, PGDATA, ...)
#   sockdir    the Unix socket directory       initdb.log
#   log        the server log: a link into the scratch directory while the
#              server runs, a copy once stopped (log.failed: the log of
#              a start that failed)
# stop stops the server, copies its log to DIR/log and removes the scratch
# directory (data included): every start makes a fresh cluster.
#
# As root, initdb and the server run as an unprivileged user
# ($PG_CLUSTER_USER, default "postgres", created if missing) who owns the
# scratch directory.  Binaries come from `pg_config --bindir` ($PG_CONFIG,
# default pg_config).
set -euo pipefail

PG_CONFIG=${PG_CONFIG:-pg_config}
PG_CLUSTER_USER=${PG_CLUSTER_USER:-postgres}

die() { echo "pg-cluster: $*" >&2; exit 1; }

command -v "$PG_CONFIG" >/dev/null 2>&1 ||
	die "$PG_CONFIG not found (install postgresql-server-dev-15, or set PG_CONFIG)"
BINDIR=$("$PG_CONFIG" --bindir)
[ -x "$BINDIR/initdb" ] && [ -x "$BINDIR/pg_ctl" ] ||
	die "no initdb/pg_ctl in $BINDIR (install postgresql-15)"
PG_BINDIR=$BINDIR
# shellcheck source=pg-scratch.sh
. "$(dirname "$0")/pg-scratch.sh"

usage() {
	sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

as_owner() { pg_as_owner "$@"; }

# port_busy PORT: true when something accepts connections on 127.0.0.1:PORT.
port_busy() {
	(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# free_port: a port in 20000..59999 that nobody listens on.  The server
# start can still lose a race for it; start retries with another one.
free_port() {
	local p tries=0
	p=$((20000 + (RANDOM * 32768 + RANDOM + $$) % 40000))
	while port_busy "$p"; do
		p=$((p + 1)); [ "$p" -lt 60000 ] || p=20000
		tries=$((tries + 1))
		[ "$tries" -lt 2000 ] || die "no free TCP port found"
	done
	echo "$p"
}

abs_dir() { mkdir -p "$1" && (cd "$1" && pwd -P); }

# scratch_of DIR: the scratch directory DIR's cluster lives in (empty if none).
scratch_of() { cat "$1/scratch" 2>/dev/null || true; }

# running DATA: true when a server runs in data directory DATA.
running() {
	[ -f "$1/postmaster.pid" ] && as_owner "$BINDIR/pg_ctl" -D "$1" status >/dev/null 2>&1
}

cmd_start() {
	local dir=$1; shift
	local preload=1 fsync=off
	local -a extra=()
	while [ $# -gt 0 ]; do
		case $1 in
			--no-preload) preload=0 ;;
			--fsync) fsync=on ;;
			--set) [ $# -ge 2 ] || usage; extra+=("$2"); shift ;;
			*) die "unknown option $1" ;;
		esac
		shift
	done

	dir=$(abs_dir "$dir")
	local old
	old=$(scratch_of "$dir")
	if [ -n "$old" ] && running "$old/data"; then
		die "a server is already running in $old/data (port $(cat "$dir/port" 2>/dev/null)); stop it with: $0 stop $dir"
	fi
	# what an interrupted earlier run of this DIR left behind
	cmd_stop "$dir" immediate
	rm -f "$dir/port" "$dir/env" "$dir/sockdir" "$dir/log" "$dir/log.failed" "$dir/initdb.log"

	local scratch
	scratch=$(pg_scratch_new forein-pg) || die "no scratch directory for the cluster"
	echo "$scratch" >"$dir/scratch"
	# Until the server is up, a failure or a signal removes the scratch
	# directory again (stopping a server that got started).
	local ok=0
	trap '[ $ok -eq 1 ] || { [ ! -f "$scratch/log" ] || cp "$scratch/log" "$dir/log.failed" 2>/dev/null; pg_scratch_remove "$scratch"; rm -f "$dir/scratch" "$dir/log"; }' EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM HUP

	local data=$scratch/data sockdir=$scratch
	as_owner "$BINDIR/initdb" -D "$data" -U postgres -A trust -E UTF8 --no-locale \
		>"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; die "initdb failed (log: $dir/initdb.log)"; }

	# Our settings go to an included file, rewritten at every start.
	grep -q "^include_if_exists = 'forein_test.conf'" "$data/postgresql.conf" ||
		echo "include_if_exists = 'forein_test.conf'" >>"$data/postgresql.conf"

	local attempt port conf
	for attempt in 1 2 3 4 5; do
		port=$(free_port)
		conf=$data/forein_test.conf
		{
			echo "# written by scripts/pg-cluster.sh"
			echo "port = $port"
			echo "listen_addresses = '127.0.0.1'"
			echo "unix_socket_directories = '$sockdir'"
			echo "fsync = $fsync"
			echo "max_connections = 60"
			echo "shared_buffers = 64MB"
			echo "max_wal_size = 1GB"
			echo "log_min_messages = warning"
			echo "log_line_prefix = '%m [%p] %q%a '"
			if [ $preload -eq 1 ]; then echo "shared_preload_libraries = 'forein'"; fi
			local kv
			for kv in "${extra[@]+"${extra[@]}"}"; do
				echo "${kv%%=*} = '${kv#*=}'"
			done
		} >"$conf"
		[ "$(id -u)" -ne 0 ] || chown "$PG_CLUSTER_USER:" "$conf"
		rm -f "$scratch/log"
		ln -sfn "$scratch/log" "$dir/log"
		if as_owner "$BINDIR/pg_ctl" -D "$data" -l "$scratch/log" -w -t 60 start >/dev/null; then
			echo "$port" >"$dir/port"
			echo "$sockdir" >"$dir/sockdir"
			cat >"$dir/env" <<-EOF
				export PGHOST='$sockdir'
				export PGPORT=$port
				export PGUSER=postgres
				export PGDATABASE=postgres
				export PGDATA='$data'
				export PATH='$BINDIR':"\$PATH"
			EOF
			ok=1
			trap - EXIT INT TERM HUP
			echo "$port"
			return 0
		fi
		if grep -q -E 'could not bind|Address already in use|could not create .*socket' "$scratch/log" 2>/dev/null; then
			echo "pg-cluster: port $port was taken, retrying" >&2
			continue
		fi
		cat "$scratch/log" >&2 || true
		die "server failed to start (log: $dir/log.failed)"
	done
	die "server failed to start after 5 ports (log: $dir/log.failed)"
}

cmd_stop() {
	local dir=$1 mode=${2:-fast}
	[ -d "$dir" ] || return 0
	# a cluster of the old layout, with its data in DIR itself
	if [ -d "$dir/data" ] && [ ! -L "$dir/data" ] && running "$dir/data"; then
		as_owner "$BINDIR/pg_ctl" -D "$dir/data" -m "$mode" -w -t 60 stop >/dev/null || true
	fi
	local scratch
	scratch=$(scratch_of "$dir")
	[ -n "$scratch" ] || return 0
	if [ -d "$scratch/data" ] && running "$scratch/data"; then
		as_owner "$BINDIR/pg_ctl" -D "$scratch/data" -m "$mode" -w -t 60 stop >/dev/null || true
	fi
	if [ -f "$scratch/log" ]; then
		rm -f "$dir/log"
		cp "$scratch/log" "$dir/log" 2>/dev/null || true
	elif [ -L "$dir/log" ]; then
		rm -f "$dir/log"
	fi
	pg_scratch_remove "$scratch"   # also stops a server that did not stop
	rm -f "$dir/scratch" "$dir/sockdir"
	return 0
}

cmd_status() {
	local scratch
	scratch=$(scratch_of "$1")
	[ -n "$scratch" ] || { echo "pg-cluster: no cluster in $1"; return 3; }
	as_owner "$BINDIR/pg_ctl" -D "$scratch/data" status
}

[ $# -ge 2 ] || usage
cmd=$1 dir=$2
shift 2
case $cmd in
	start) cmd_start "$dir" "$@" ;;
	stop) cmd_stop "$dir" "$@" ;;
	status) cmd_status "$dir" ;;
	env) cat "$dir/env" ;;
	psql)
		# shellcheck disable=SC1091
		. "$dir/env"
		exec "$BINDIR/psql" -X -v ON_ERROR_STOP=1 "$@" ;;
	*) usage ;;
esac

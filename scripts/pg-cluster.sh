#!/usr/bin/env bash
# pg-cluster.sh: a private PostgreSQL cluster for forein's tests, kept in a
# directory of the build tree and listening on a free port.
#
#   scripts/pg-cluster.sh start DIR [--no-preload] [--fsync] [--set NAME=VALUE]...
#   scripts/pg-cluster.sh stop DIR [fast|immediate]
#   scripts/pg-cluster.sh status DIR
#   scripts/pg-cluster.sh env DIR          # prints export lines for PG* vars
#   scripts/pg-cluster.sh psql DIR [psql arguments...]
#
# start runs initdb the first time (superuser "postgres", trust auth, UTF8,
# C locale), then starts the server on a port nothing else is using, with
# shared_preload_libraries = 'forein' (unless --no-preload) and fsync off
# (unless --fsync).  Files in DIR:
#   data/      the cluster          log        the server log
#   port       the port             env        export lines for clients
#   sockdir    the Unix socket directory
#
# As root, initdb and the server run as an unprivileged user
# ($PG_CLUSTER_USER, default "postgres", created if missing) who owns DIR.
# Binaries come from `pg_config --bindir` ($PG_CONFIG, default pg_config).
set -euo pipefail

PG_CONFIG=${PG_CONFIG:-pg_config}
PG_CLUSTER_USER=${PG_CLUSTER_USER:-postgres}

die() { echo "pg-cluster: $*" >&2; exit 1; }

command -v "$PG_CONFIG" >/dev/null 2>&1 ||
	die "$PG_CONFIG not found (install postgresql-server-dev-15, or set PG_CONFIG)"
BINDIR=$("$PG_CONFIG" --bindir)
[ -x "$BINDIR/initdb" ] && [ -x "$BINDIR/pg_ctl" ] ||
	die "no initdb/pg_ctl in $BINDIR (install postgresql-15)"

usage() {
	sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

# as_owner CMD...: run CMD as the cluster's owner.
as_owner() {
	if [ "$(id -u)" -eq 0 ]; then
		runuser -u "$PG_CLUSTER_USER" -- "$@"
	else
		"$@"
	fi
}

ensure_user() {
	[ "$(id -u)" -eq 0 ] || return 0
	if ! id "$PG_CLUSTER_USER" >/dev/null 2>&1; then
		echo "pg-cluster: creating system user $PG_CLUSTER_USER" >&2
		useradd --system --no-create-home --shell /usr/sbin/nologin "$PG_CLUSTER_USER"
	fi
}

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

	ensure_user
	dir=$(abs_dir "$dir")
	local data=$dir/data
	if [ -f "$data/postmaster.pid" ] && as_owner "$BINDIR/pg_ctl" -D "$data" status >/dev/null 2>&1; then
		die "a server is already running in $data (port $(cat "$dir/port" 2>/dev/null))"
	fi

	# Unix sockets have a ~107 byte path limit; a deep build tree uses /tmp.
	local sockdir=$dir
	if [ ${#dir} -gt 80 ]; then
		sockdir=$(mktemp -d /tmp/forein-pg.XXXXXX)
	fi

	if [ "$(id -u)" -eq 0 ]; then
		chown -R "$PG_CLUSTER_USER:" "$dir"
		[ "$sockdir" = "$dir" ] || chown "$PG_CLUSTER_USER:" "$sockdir"
		as_owner test -w "$dir" -a -x "$dir" ||
			die "user $PG_CLUSTER_USER cannot write $dir (a parent directory is not searchable?)"
	fi

	if [ ! -f "$data/PG_VERSION" ]; then
		rm -rf "$data"
		as_owner "$BINDIR/initdb" -D "$data" -U postgres -A trust -E UTF8 --no-locale \
			>"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; die "initdb failed"; }
	fi

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
		: >"$dir/log"
		[ "$(id -u)" -ne 0 ] || chown "$PG_CLUSTER_USER:" "$dir/log"
		if as_owner "$BINDIR/pg_ctl" -D "$data" -l "$dir/log" -w -t 60 start >/dev/null; then
			echo "$port" >"$dir/port"
			echo "$sockdir" >"$dir/sockdir"
			cat >"$dir/env" <<-EOF
				export PGHOST='$sockdir'
				export PGPORT=$port
				export PGUSER=postgres
				export PGDATABASE=postgres
				export PATH='$BINDIR':"\$PATH"
			EOF
			echo "$port"
			return 0
		fi
		if grep -q -E 'could not bind|Address already in use|could not create .*socket' "$dir/log"; then
			echo "pg-cluster: port $port was taken, retrying" >&2
			continue
		fi
		cat "$dir/log" >&2
		die "server failed to start (log: $dir/log)"
	done
	die "server failed to start after 5 ports (log: $dir/log)"
}

cmd_stop() {
	local dir=$1 mode=${2:-fast}
	[ -d "$dir/data" ] || return 0
	if as_owner "$BINDIR/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
		as_owner "$BINDIR/pg_ctl" -D "$dir/data" -m "$mode" -w -t 60 stop >/dev/null
	fi
	local sockdir
	sockdir=$(cat "$dir/sockdir" 2>/dev/null || true)
	case $sockdir in /tmp/forein-pg.*) rm -rf "$sockdir" ;; esac
	return 0
}

[ $# -ge 2 ] || usage
cmd=$1 dir=$2
shift 2
case $cmd in
	start) cmd_start "$dir" "$@" ;;
	stop) cmd_stop "$dir" "$@" ;;
	status) as_owner "$BINDIR/pg_ctl" -D "$dir/data" status ;;
	env) cat "$dir/env" ;;
	psql)
		# shellcheck disable=SC1091
		. "$dir/env"
		exec "$BINDIR/psql" -X -v ON_ERROR_STOP=1 "$@" ;;
	*) usage ;;
esac

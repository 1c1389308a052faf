# pg-scratch.sh: sourced by the PostgreSQL scripts (pg-cluster.sh,
# run-pg-tests.sh); not run by itself.
#
# The servers of forein's private clusters run as an unprivileged user when
# the scripts run as root ($PG_CLUSTER_USER, default postgres: initdb
# refuses root).  That user may not be able to reach the checkout (a clone
# under root's mode-0700 home, a mktemp -d directory), so everything such a
# server or test process writes or reads lives in a "scratch" directory:
# mode 0700, owned by the cluster user, made with mktemp -d under
# ${TMPDIR:-/tmp} (/tmp when the cluster user cannot use $TMPDIR or its path
# is too long for Unix sockets).  The callers copy logs back into the build
# tree and remove the scratch directory with pg_scratch_remove, which first
# stops any server still running in it.
#
# Needs PG_CONFIG (default pg_config) on PATH.  Defines PG_CLUSTER_USER,
# PG_BINDIR and the functions below.

PG_CONFIG=${PG_CONFIG:-pg_config}
PG_CLUSTER_USER=${PG_CLUSTER_USER:-postgres}
PG_BINDIR=${PG_BINDIR:-$("$PG_CONFIG" --bindir 2>/dev/null || true)}

# pg_as_owner CMD...: run CMD as the cluster user (as root), else directly.
# As root the command runs from / : the caller's directory may not be
# searchable by that user, so pass absolute paths.
pg_as_owner() {
	if [ "$(id -u)" -eq 0 ]; then
		(cd / && exec runuser -u "$PG_CLUSTER_USER" -- "$@")
	else
		"$@"
	fi
}

# pg_ensure_user: as root, create the cluster user if it does not exist.
pg_ensure_user() {
	[ "$(id -u)" -eq 0 ] || return 0
	id "$PG_CLUSTER_USER" >/dev/null 2>&1 && return 0
	echo "pg-scratch: creating system user $PG_CLUSTER_USER" >&2
	useradd --system --no-create-home --shell /usr/sbin/nologin "$PG_CLUSTER_USER"
}

# pg_scratch_new LABEL: print the path of a new empty scratch directory
# ($TMPDIR or /tmp)/LABEL.XXXXXX, mode 0700, owned by the cluster user.
pg_scratch_new() {
	local label=$1 base d
	pg_ensure_user || return 1
	for base in "${TMPDIR:-/tmp}" /tmp; do
		base=${base%/}
		[ -n "$base" ] && [ -d "$base" ] || continue
		# socket paths (DIR/.s.PGSQL.NNNNN, PostgreSQL::Test's
		# DIR/tmp/XXXXXXXXXX/.s.PGSQL.NNNNN) must stay under ~107 bytes
		[ ${#base} -le 48 ] || continue
		d=$(mktemp -d "$base/$label.XXXXXX") || continue
		chmod 0700 "$d"
		[ "$(id -u)" -ne 0 ] || chown "$PG_CLUSTER_USER:" "$d"
		if pg_as_owner test -w "$d" -a -x "$d"; then
			echo "$d"
			return 0
		fi
		rm -rf "$d"
	done
	echo "pg-scratch: cannot make a directory that user $PG_CLUSTER_USER can write under ${TMPDIR:-/tmp} or /tmp" >&2
	return 1
}

# pg_kill_tree PID: SIGTERM PID and all its descendants, SIGKILL those
# still there after 5 seconds.  Server processes that pg_ctl started are
# not descendants: pg_scratch_stop_servers stops those.
pg_kill_tree() {
	local -a todo=("$1") all=()
	local p k
	while [ ${#todo[@]} -gt 0 ]; do
		p=${todo[0]}; todo=("${todo[@]:1}")
		all+=("$p")
		for k in $(ps -o pid= --ppid "$p" 2>/dev/null); do todo+=("$k"); done
	done
	kill -TERM "${all[@]}" 2>/dev/null || true
	local i alive
	for i in $(seq 50); do
		alive=0
		for p in "${all[@]}"; do
			# gone, or a zombie waiting for its parent
			case $(awk '{print $3}' "/proc/$p/stat" 2>/dev/null) in
				'' | Z | X) ;;
				*) alive=1 ;;
			esac
		done
		[ $alive -eq 1 ] || return 0
		sleep 0.1
	done
	kill -KILL "${all[@]}" 2>/dev/null || true
	return 0
}

# pg_scratch_stop_servers DIR: stop every server whose data directory lies
# in DIR (immediate shutdown), SIGKILL a postmaster that survives that.
pg_scratch_stop_servers() {
	local dir=$1 pidfile data pid
	[ -d "$dir" ] || return 0
	while IFS= read -r -d '' pidfile; do
		data=${pidfile%/postmaster.pid}
		pid=$(head -n 1 "$pidfile" 2>/dev/null || true)
		if [ -n "$PG_BINDIR" ] && [ -x "$PG_BINDIR/pg_ctl" ]; then
			pg_as_owner "$PG_BINDIR/pg_ctl" -D "$data" -m immediate -w -t 30 stop >/dev/null 2>&1 || true
		fi
		case $pid in '' | *[!0-9]*) continue ;; esac
		# still there, and still a postmaster of this data directory (its
		# working directory; the command line may name it relatively)
		if kill -0 "$pid" 2>/dev/null &&
			[ "$(readlink "/proc/$pid/cwd" 2>/dev/null)" = "$(cd "$data" 2>/dev/null && pwd -P)" ]; then
			echo "pg-scratch: killing postmaster $pid of $data" >&2
			kill -KILL "$pid" 2>/dev/null || true
		fi
	done < <(find "$dir" -name postmaster.pid -print0 2>/dev/null)
	return 0
}

# pg_scratch_remove DIR: stop its servers and remove it.  Only removes
# directories named like pg_scratch_new's (.../LABEL.XXXXXX).
pg_scratch_remove() {
	local dir=$1
	[ -n "$dir" ] && [ -d "$dir" ] || return 0
	case ${dir##*/} in
		forein-*.??????) ;;
		*) echo "pg-scratch: not removing $dir (not a scratch directory)" >&2; return 0 ;;
	esac
	pg_scratch_stop_servers "$dir"
	rm -rf "$dir" 2>/dev/null || pg_as_owner rm -rf "$dir" || true
	return 0
}

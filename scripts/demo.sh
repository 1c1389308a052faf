#!/usr/bin/env bash
# demo.sh: the main job. Starts a private PostgreSQL with forein
# preloaded, creates forein indexes on pgbench's accounts and on a text
# column, shows the planner using them, installs the switch LPM entries,
# and shows lookups starting from hardware hints (forein_stats), then the
# engine's own demo. Run through `make demo`, which builds and installs
# first.
#
# The cluster (scripts/pg-cluster.sh) keeps its data, socket and server log
# in a scratch directory under ${TMPDIR:-/tmp} that the server's user can
# always write; its port, client settings (env) and server log are under
# build/demo-pg.  It is stopped and its scratch directory removed when the
# demo ends, also on a failure or Ctrl-C.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
CLUSTER=$BUILD/demo-pg

bash "$ROOT/scripts/pg-cluster.sh" stop "$CLUSTER" fast >/dev/null 2>&1 || true
rm -rf "$CLUSTER"   # a fresh cluster every time
trap 'bash "$ROOT/scripts/pg-cluster.sh" stop "$CLUSTER" fast >/dev/null 2>&1 || true' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP
bash "$ROOT/scripts/pg-cluster.sh" start "$CLUSTER" --set shared_buffers=256MB >/dev/null
# shellcheck disable=SC1091
source "$CLUSTER/env"

run() { psql -X -v ON_ERROR_STOP=1 -e postgres "$@"; }

echo "== PostgreSQL $(pg_config --version) on port $PGPORT, data in $PGDATA"
echo "   (a scratch directory, removed when the demo ends; server log: $CLUSTER/log)"
pgbench -q -i -s 5 -I dtgv postgres >/dev/null 2>&1
run -c "CREATE EXTENSION forein"
run -c "CREATE INDEX accounts_aid_forein ON pgbench_accounts USING forein (aid)"
run -c "CREATE TABLE users (id int, email text)" \
	-c "INSERT INTO users SELECT i, 'user' || i || '@example.com' FROM generate_series(1, 100000) i" \
	-c "CREATE UNIQUE INDEX users_email_forein ON users USING forein (email)" \
	-c "VACUUM ANALYZE pgbench_accounts" -c "VACUUM ANALYZE users"
run -c "EXPLAIN (COSTS OFF) SELECT abalance FROM pgbench_accounts WHERE aid = 4242" \
	-c "SELECT aid, abalance FROM pgbench_accounts WHERE aid = 4242" \
	-c "SELECT aid FROM pgbench_accounts WHERE aid BETWEEN 10 AND 14 ORDER BY aid DESC" \
	-c "SELECT id FROM users WHERE email = 'user77@example.com'"
run -c "INSERT INTO users VALUES (0, 'user77@example.com')" || echo "(the unique index refused the duplicate, as it should)"

echo "== install the switch's LPM entries for the accounts index (73,000-entry table)"
run -c "SELECT forein_refresh('accounts_aid_forein') AS installed_entries" \
	-c "SELECT * FROM forein_offload_entries('accounts_aid_forein') LIMIT 5"

echo "== 20,000 random point lookups, each starting at the hinted leaf"
run -c "DO \$\$ DECLARE k int; BEGIN FOR i IN 1..20000 LOOP k := 1 + (random() * 499999)::int; PERFORM abalance FROM pgbench_accounts WHERE aid = k; END LOOP; END \$\$"
run -c "SELECT * FROM forein_stats('accounts_aid_forein')"
run -c "SELECT forein_check('accounts_aid_forein', true)" -c "SELECT forein_check('users_email_forein', true)"
echo "== forein_check passed: order, bounds, sibling links, levels, every heap tuple indexed"

echo
echo "== the engine and the modelled switch, in process"
"$BUILD/tools/forein_demo"

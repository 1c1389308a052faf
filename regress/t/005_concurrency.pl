# Concurrency: pgbench clients insert, delete, update, select and VACUUM
# one forein index at once for a bounded time.  Readers check invariants
# while pages split under them (every committed pair whole, every stable
# row found exactly once, in forward, backward and bitmap scans); then
# forein_check(heapallindexed) passes and index counts equal heap counts.
# A unique forein index takes concurrent inserts of the same keys (some
# rolled back): exactly one wins per key, the others get unique_violation.
# (INSERT ... ON CONFLICT needs a btree arbiter in PostgreSQL 15.)
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use ForeinTAP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;

my $duration = $ENV{FOREIN_CONCURRENCY_SECONDS} // 20;
# pgbench's random keys come from this seed (timing is not reproducible)
my $seed = test_seed();
my $node = forein_node('concurrency', conf => "max_connections = 40\ndeadlock_timeout = 100ms\n");

# cc: rows come and go in pairs with the same k; rows with pad 'S' (two at
# every k divisible by 10) are never deleted or moved.
$node->safe_psql(
	'postgres', q{
	CREATE TABLE cc (id bigserial, k int8, pad text);
	INSERT INTO cc (k, pad) SELECT g, 'S' FROM generate_series(10, 200000, 10) g, generate_series(1, 2);
	INSERT INTO cc (k, pad) SELECT g / 2, 'p' FROM generate_series(2, 40001) g;
	CREATE INDEX cc_k ON cc USING forein (k);
	CREATE UNIQUE INDEX cc_id ON cc USING forein (id);

	CREATE FUNCTION fail(msg text) RETURNS void LANGUAGE plpgsql
	  AS $$ BEGIN RAISE EXCEPTION '%', msg; END $$;

	CREATE TABLE uq (k int8, who int4);
	CREATE UNIQUE INDEX uq_k ON uq USING forein (k);
	CREATE TABLE uq_log (k int8, outcome text);
	CREATE SEQUENCE uq_seq;
	-- one attempt: insert key; a fifth of the attempts roll their insert
	-- back (leaving a dead entry others must wait for, then ignore)
	CREATE FUNCTION try_ins(key int8, roll_back bool) RETURNS void LANGUAGE plpgsql AS $$
	BEGIN
	  BEGIN
	    INSERT INTO uq VALUES (key, pg_backend_pid());
	    IF roll_back THEN RAISE EXCEPTION 'roll back' USING ERRCODE = 'P0001'; END IF;
	    INSERT INTO uq_log VALUES (key, 'ok');
	  EXCEPTION
	    WHEN unique_violation THEN INSERT INTO uq_log VALUES (key, 'dup');
	    WHEN raise_exception THEN INSERT INTO uq_log VALUES (key, 'rolled back');
	  END;
	END $$;

	VACUUM ANALYZE cc;
});

my $force = "SET enable_seqscan = off;\nSET enable_bitmapscan = off;\n";

# pgbench runs the scripts in random order on the same connections, so
# every script starts from the defaults (RESET ALL) and sets what it needs.

# pgbench \if compares; fail() raises the error that aborts the client.
my $check_stable = q{
\set expected 2 * ((:k + 500) / 10 - (:k + 9) / 10 + 1)
SELECT count(*) AS got FROM cc WHERE k BETWEEN :k AND :k + 500 AND pad = 'S' \gset
\if :got != :expected
SELECT fail('SCAN: stable rows in [' || :k || ', ' || :k + 500 || ']: ' || :got || ' instead of ' || :expected);
\endif
SELECT count(*) % 2 AS odd FROM cc WHERE k BETWEEN :k AND :k + 500 AND pad <> 'S' \gset
\if :odd
SELECT fail('SCAN: half a pair in [' || :k || ', ' || :k + 500 || ']');
\endif
};

sub reader
{
	my ($name, $settings, $order) = @_;
	(my $c = $check_stable) =~ s/SCAN/$name/g;
	$c =~ s/FROM cc WHERE (k BETWEEN :k AND :k \+ 500 AND pad (?:=|<>) 'S')/FROM (SELECT k FROM cc WHERE $1 ORDER BY k $order) s/g
	  if $order;
	return "RESET ALL;\n$settings\\set k random(1, 199500)\n$c";
}

my %scripts = (
	'001_insert_pair.sql@10' => q{
RESET ALL;
\set k random(1, 200000)
INSERT INTO cc (k, pad) VALUES (:k, 'a'), (:k, 'b');
},
	'002_insert_bulk.sql@2' => q{
RESET ALL;
\set k random(1, 200000)
INSERT INTO cc (k, pad) SELECT :k + g / 2, 'm' FROM generate_series(0, 199) g;
},
	'003_delete.sql@4' => q{
RESET ALL;
\set k random(1, 200000)
DELETE FROM cc WHERE k BETWEEN :k AND :k + 30 AND pad <> 'S';
},
	'004_update.sql@3' => q{
RESET ALL;
\set k random(1, 200000)
\set k2 random(1, 200000)
UPDATE cc SET k = :k2 WHERE k = :k AND pad <> 'S';
},
	'005_vacuum.sql@1' => q{
RESET ALL;
VACUUM cc;
},
	'006_read_forward.sql@4' => reader('forward index scan',
		"$force SET enable_indexonlyscan = off;\n", ''),
	'007_read_backward.sql@4' => reader('backward index scan',
		"$force SET enable_indexonlyscan = off;\n", 'DESC'),
	'008_read_indexonly.sql@3' => reader('index-only scan', $force, ''),
	'009_read_bitmap.sql@3' => reader('bitmap scan',
		"SET enable_seqscan = off;\nSET enable_indexscan = off;\nSET enable_indexonlyscan = off;\nSET enable_bitmapscan = on;\n", ''),
	'010_unique_race.sql@8' => q{
RESET ALL;
SELECT try_ins(nextval('uq_seq') / 4, random() < 0.2);
},
);

# the readers' plans really are what their names say
my $range = "k BETWEEN 5000 AND 5500 AND pad = 'S'";
like($node->safe_psql('postgres', "$force SET enable_indexonlyscan = off; EXPLAIN (COSTS OFF) SELECT count(*) FROM cc WHERE $range"),
	qr/Index Scan using cc_k/, 'forward reader uses an index scan of cc_k');
like($node->safe_psql('postgres', "$force SET enable_indexonlyscan = off; EXPLAIN (COSTS OFF) SELECT count(*) FROM (SELECT k FROM cc WHERE $range ORDER BY k DESC) s"),
	qr/Index Scan Backward using cc_k/, 'backward reader scans cc_k backward');
like($node->safe_psql('postgres', "SET enable_seqscan = off; SET enable_indexscan = off; SET enable_indexonlyscan = off; EXPLAIN (COSTS OFF) SELECT count(*) FROM cc WHERE $range"),
	qr/Bitmap Index Scan on cc_k/, 'bitmap reader uses a bitmap scan of cc_k');

# pgbench, with its per-script summary in the log
{
	my @f;
	for my $name (sort keys %scripts)
	{
		(my $file = $name) =~ s/\@\d+$//;
		PostgreSQL::Test::Utils::append_to_file($node->basedir . "/$file", $scripts{$name});
		push @f, '-f', $node->basedir . "/$name";
	}
	my ($out, $err) = ('', '');
	my $ok = IPC::Run::run(
		[
			'pgbench', '--no-vacuum', '--client=8', '--jobs=2', "--time=$duration",
			'--max-tries=100', "--random-seed=$seed", '-h', $node->host, '-p', $node->port, @f, 'postgres'
		],
		'>', \$out, '2>', \$err);
	note $out;
	$err =~ s/^pgbench: setting random seed to \d+\n//m;
	ok($ok, "pgbench: 8 clients for ${duration}s, invariants held in every scan")
	  or diag "pgbench stderr:\n$err";
	is($err, '', 'pgbench: no errors');
	like($out, qr/number of transactions actually processed: [1-9]/, 'pgbench: transactions ran');
	like($out, qr/number of failed transactions: 0 /, 'pgbench: no transaction failed after retries')
	  or diag $out;
}

# CREATE INDEX CONCURRENTLY and REINDEX CONCURRENTLY while writers run:
# their validation pass enumerates the new index through ambulkdelete and
# must find every entry, or rows go missing from it.
{
	my @f;
	for my $name (grep { /^00[1-4]_/ } sort keys %scripts)
	{
		push @f, '-f', $node->basedir . "/$name";
	}
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start(
		[
			'pgbench', '--no-vacuum', '--client=4', '--jobs=2', '--time=600',
			'--max-tries=100', "--random-seed=$seed", '-h', $node->host, '-p', $node->port,
			@f, 'postgres'
		],
		'>', \$out, '2>', \$err);
	my $before = $node->safe_psql('postgres', 'SELECT count(*) FROM cc');
	poll_while_running($node, "SELECT count(*) > $before + 5000 FROM cc", $h, \$err);
	my ($r1, $o1, $e1) = $node->psql('postgres', 'CREATE INDEX CONCURRENTLY cc_k2 ON cc USING forein (k)');
	is($r1, 0, 'CREATE INDEX CONCURRENTLY during writes') or diag $e1;
	my ($r2, $o2, $e2) = $node->psql('postgres', 'REINDEX INDEX CONCURRENTLY cc_k');
	is($r2, 0, 'REINDEX INDEX CONCURRENTLY during writes') or diag $e2;
	my ($r3, $o3, $e3) = $node->psql('postgres', 'CREATE UNIQUE INDEX CONCURRENTLY cc_id2 ON cc USING forein (id)');
	is($r3, 0, 'CREATE UNIQUE INDEX CONCURRENTLY during writes') or diag $e3;
	$h->kill_kill;
	$h->finish;
	# a killed client's backend may still finish its statement: wait for it
	$node->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()")
	  or die "load sessions did not end";
	is($node->safe_psql('postgres', "SELECT count(*) FROM pg_index WHERE indrelid = 'cc'::regclass AND NOT indisvalid"),
		'0', 'no invalid index left behind');
}

# After the storm.
my $heap = 'SET enable_indexscan = off; SET enable_indexonlyscan = off; SET enable_bitmapscan = off;';
for my $idx (qw(cc_k cc_k2 cc_id cc_id2 uq_k))
{
	my ($ret, $out, $err) = $node->psql('postgres', "SELECT forein_check('$idx', true)");
	is($ret, 0, "forein_check('$idx', heapallindexed) passes") or diag $err;
}
for my $q ('SELECT count(*), sum(k) FROM cc WHERE k IS NOT NULL',
	"SELECT count(*) FROM cc WHERE k BETWEEN 1 AND 200000 AND pad = 'S'",
	'SELECT count(*), sum(id) FROM cc WHERE id IS NOT NULL')
{
	my $by_index = $node->safe_psql('postgres', "$force $q");
	my $by_heap = $node->safe_psql('postgres', "$heap $q");
	is($by_index, $by_heap, "index equals heap: $q ($by_heap)");
}
is($node->safe_psql('postgres', "$heap SELECT count(*) FROM cc WHERE pad = 'S'"),
	'40000', 'no stable row lost');
is( $node->safe_psql('postgres',
		"$heap SELECT count(*) FROM (SELECT k FROM cc WHERE pad <> 'S' GROUP BY k HAVING count(*) % 2 = 1) s"),
	'0', 'every pair whole');

# Unique races: exactly one winner per key.
is($node->safe_psql('postgres', "$heap SELECT count(*) FROM (SELECT k FROM uq GROUP BY k HAVING count(*) > 1) s"),
	'0', 'uq: no key twice in the heap');
is( $node->safe_psql('postgres', "SELECT count(*) FROM uq"),
	$node->safe_psql('postgres', "SELECT count(*) FROM uq_log WHERE outcome = 'ok'"),
	'uq: one row per successful attempt');
is( $node->safe_psql('postgres', q{
		SELECT count(*) FROM (SELECT k FROM uq_log GROUP BY k
		  HAVING count(*) FILTER (WHERE outcome = 'ok') > 1
		      OR (count(*) FILTER (WHERE outcome = 'dup') > 0
		          AND count(*) FILTER (WHERE outcome = 'ok') <> 1)) s}),
	'0', 'uq: each key won exactly once, and a loser only lost to a winner');
my $dups = $node->safe_psql('postgres', "SELECT count(*) FROM uq_log WHERE outcome = 'dup'");
my $keys = $node->safe_psql('postgres', "SELECT count(DISTINCT k) FROM uq_log");
cmp_ok($dups, '>', 0, "uq: $dups attempts lost a race ($keys keys)");
is( $node->safe_psql('postgres', "$force SELECT count(*) FROM uq WHERE k IS NOT NULL"),
	$node->safe_psql('postgres', "$heap SELECT count(*) FROM uq WHERE k IS NOT NULL"),
	'uq: index count equals heap count');

$node->stop;
done_testing();

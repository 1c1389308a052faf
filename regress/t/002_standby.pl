# Physical replication: a streaming standby replays forein's WAL and
# answers a set of queries exactly as the primary does, after inserts that
# split pages, after deletes and VACUUM on the primary, and after refilling
# the freed pages; a promoted standby keeps working.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use ForeinTAP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $primary = forein_node('primary', allows_streaming => 1,
	conf => "max_connections = 20\nshared_buffers = 16MB\n");

$primary->safe_psql(
	'postgres', q{
	CREATE TABLE r (id int4, k int8, t text, u uuid, ts timestamptz);
	INSERT INTO r SELECT g, g % 5000, 'v' || lpad((g % 7000)::text, 6, '0'),
	  md5(g::text)::uuid, timestamptz '2024-01-01 00:00+00' + g * interval '1 minute'
	  FROM generate_series(1, 30000) g;
	CREATE INDEX r_k ON r USING forein (k);
	CREATE INDEX r_t ON r USING forein (t);
	CREATE INDEX r_u ON r USING forein (u);
	CREATE INDEX r_ts ON r USING forein (ts);
	CREATE UNIQUE INDEX r_id ON r USING forein (id);
});

# (through a slot: forein_standby says why)
my $standby = forein_standby($primary, 'standby');

my $force = 'SET enable_seqscan = off; SET enable_bitmapscan = off;';
my @queries = (
	'SELECT count(*), sum(k) FROM r WHERE k BETWEEN 100 AND 200',
	'SELECT id FROM r WHERE k = 4321 ORDER BY id',
	'SELECT k FROM r WHERE k > 4990 ORDER BY k DESC LIMIT 20',
	'SELECT k FROM r WHERE k < 10 ORDER BY k LIMIT 30',
	'SELECT count(*) FROM r WHERE k IN (1, 2, 3, 4999, 123456)',
	'SELECT count(*) FROM r WHERE k IS NULL',
	"SELECT t FROM r WHERE t >= 'v006990' ORDER BY t LIMIT 25",
	"SELECT count(*) FROM r WHERE t BETWEEN 'v001000' AND 'v002000'",
	"SELECT id FROM r WHERE u = md5('777')::uuid",
	"SELECT count(*) FROM r WHERE u < '10000000-0000-0000-0000-000000000000'",
	"SELECT ts FROM r WHERE ts >= '2024-01-10 00:00+00' ORDER BY ts LIMIT 5",
	'SELECT count(*) FROM r WHERE id > 29000',
	'SELECT max(id), min(id), max(k), min(k) FROM r',
	'SELECT count(*) FROM generate_series(0, 6000, 3) s(x) JOIN r ON r.k = s.x',
);

my @plans = (
	[ 'SELECT id FROM r WHERE k = 4321', 'r_k' ],
	[ "SELECT t FROM r WHERE t >= 'v006990'", 'r_t' ],
	[ "SELECT id FROM r WHERE u = md5('777')::uuid", 'r_u' ],
	[ "SELECT ts FROM r WHERE ts >= '2024-01-10 00:00+00' ORDER BY ts", 'r_ts' ],
	[ 'SELECT count(*) FROM r WHERE id > 29000', 'r_id' ],
);

sub compare
{
	my ($stage) = @_;
	$primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert'));
	my @p = run_marked_script($primary, 'postgres', $force, \@queries);
	my @s = run_marked_script($standby, 'postgres', $force, \@queries);
	compare_outputs("$stage: standby answers equal the primary's",
		\@queries, \@s, \@p, 'standby', 'primary');
	# the standby really uses its forein indexes
	index_plan_ok($standby, 'postgres', $_->[0], $_->[1], $force) for @plans;
	# and its replayed pages are well formed
	for my $idx (qw(r_k r_t r_u r_ts r_id))
	{
		my ($ret, $out, $err) =
		  $standby->psql('postgres', "SELECT forein_check('$idx', true)");
		is($ret, 0, "$stage: forein_check('$idx', heapallindexed) on the standby") or diag $err;
	}
	return;
}

compare('after base backup');

# Inserts after the backup: leaf and inner page splits reach the standby
# only through WAL.
$primary->safe_psql(
	'postgres', q{
	INSERT INTO r SELECT g, g % 5000, 'w' || g, md5(g::text)::uuid,
	  timestamptz '2025-01-01 00:00+00' + g * interval '1 second'
	  FROM generate_series(30001, 80000) g ORDER BY md5(g::text);
	INSERT INTO r (id, k) VALUES (-1, NULL), (-2, NULL);
});
compare('after inserts with splits');

# Deletes, then VACUUM on the primary: dead entries and emptied pages go.
$primary->safe_psql(
	'postgres', q{
	DELETE FROM r WHERE k BETWEEN 1000 AND 3999;
	DELETE FROM r WHERE id % 3 = 0;
	DELETE FROM r WHERE t >= 'w5';
});
compare('after deletes');
$primary->safe_psql('postgres', 'VACUUM r');
compare('after VACUUM on the primary');

# Refill the freed key ranges (page reuse after deletion), then VACUUM again.
$primary->safe_psql(
	'postgres', q{
	INSERT INTO r SELECT g, 1000 + g % 3000, 'z' || g, md5(g::text)::uuid, now()
	  FROM generate_series(100001, 130000) g;
	DELETE FROM r WHERE id BETWEEN 100001 AND 110000;
	VACUUM r;
	INSERT INTO r SELECT g, 1000 + g % 3000, 'y' || g, NULL, NULL
	  FROM generate_series(140001, 150000) g;
});
compare('after refill and second VACUUM');

# REINDEX on the primary replaces the standby's index files too.
$primary->safe_psql('postgres', 'REINDEX INDEX r_k; REINDEX INDEX CONCURRENTLY r_t;');
compare('after REINDEX');

# A promoted standby writes to the replayed indexes.
$standby->promote;
$standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
  or die "standby was not promoted";
$standby->safe_psql(
	'postgres', q{
	INSERT INTO r SELECT g, g % 5000, 'p' || g, NULL, NULL FROM generate_series(200001, 220000) g;
	DELETE FROM r WHERE k < 100;
	VACUUM r;
});
for my $idx (qw(r_k r_t r_u r_ts r_id))
{
	my ($ret, $out, $err) =
	  $standby->psql('postgres', "SELECT forein_check('$idx', true)");
	is($ret, 0, "promoted: forein_check('$idx', heapallindexed)") or diag $err;
}
my ($ret, $out, $err) = $standby->psql('postgres', 'INSERT INTO r (id) VALUES (200100)');
like($err, qr/violates unique constraint "r_id"/, 'promoted: unique index enforced');
is( $standby->safe_psql('postgres', "$force SELECT count(*) FROM r WHERE k >= 0"),
	$standby->safe_psql('postgres',
		'SET enable_indexscan = off; SET enable_indexonlyscan = off; SET enable_bitmapscan = off; SELECT count(*) FROM r WHERE k >= 0'),
	'promoted: index count equals heap count');

$standby->stop;
$primary->stop;
done_testing();

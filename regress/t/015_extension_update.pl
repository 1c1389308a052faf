# ALTER EXTENSION forein UPDATE from every earlier version: for v in 0.1,
# 0.2, 0.3 a database gets CREATE EXTENSION forein VERSION 'v', forein
# indexes of every type v has an operator class for (single and
# multi-column, unique, DESC) and rows, used through v's functions; then
# ALTER EXTENSION forein UPDATE brings it to the default version and the
# same indexes (not rebuilt) answer as btree indexes over the same rows
# do, pass forein_check with heapallindexed, report through forein_stats
# (with the status column of 0.2), forein_offload_usage (0.3) exists, and
# the operator classes added since (0.4) build usable indexes.  (The
# catalogs of an updated and a fresh installation are compared by
# 008_privileges.pl.)
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use ForeinTAP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = forein_node('update');
my $default = $node->safe_psql('postgres',
	"SELECT default_version FROM pg_available_extensions WHERE name = 'forein'");
note "default version: $default";

my $force = 'SET enable_seqscan = off; SET enable_bitmapscan = off;';

# The types every version since 0.1 has operator classes for.
my $setup_01 = q{
CREATE TABLE x (id int4, a int2, b int8, t text, d date, ts timestamp,
  tz timestamptz, u uuid);
INSERT INTO x SELECT g, (g % 300)::int2, (g * 7919) % 100003,
  't' || lpad((g % 2000)::text, 5, '0'), date '2020-01-01' + g % 1000,
  timestamp '2020-01-01' + g * interval '17 minutes',
  timestamptz '2020-01-01 00:00+00' + g * interval '1 hour', md5(g::text)::uuid
  FROM generate_series(1, 20000) g;
CREATE UNIQUE INDEX x_id ON x USING forein (id);
CREATE INDEX x_a ON x USING forein (a);
CREATE INDEX x_b ON x USING forein (b DESC);
CREATE INDEX x_t ON x USING forein (t);
CREATE INDEX x_d ON x USING forein (d);
CREATE INDEX x_ts ON x USING forein (ts);
CREATE INDEX x_tz ON x USING forein (tz);
CREATE INDEX x_u ON x USING forein (u);
CREATE INDEX x_at ON x USING forein (a, t);
};
my @forein = qw(x_id x_a x_b x_t x_d x_ts x_tz x_u x_at);
my @queries = (
	'SELECT count(*), sum(b) FROM x WHERE b BETWEEN 1000 AND 50000',
	'SELECT id FROM x WHERE b = 4242 ORDER BY id',
	'SELECT b FROM x WHERE b > 100 ORDER BY b DESC LIMIT 15',
	'SELECT a, count(*) FROM x WHERE a BETWEEN 10 AND 20 GROUP BY a ORDER BY a',
	"SELECT t, count(*) FROM x WHERE t >= 't01990' GROUP BY t ORDER BY t",
	"SELECT count(*) FROM x WHERE d BETWEEN '2020-02-01' AND '2020-03-01'",
	"SELECT count(*) FROM x WHERE ts < '2020-01-20'",
	"SELECT count(*) FROM x WHERE tz >= '2021-06-01 00:00+00'",
	"SELECT id FROM x WHERE u = md5('4321')::uuid",
	"SELECT a, t FROM x WHERE a = 7 AND t < 't00100' ORDER BY a, t",
	'SELECT count(*) FROM x WHERE id > 19000',
);
my $btree_twins = q{
CREATE INDEX bt_id ON x (id); CREATE INDEX bt_a ON x (a);
CREATE INDEX bt_b ON x (b DESC); CREATE INDEX bt_t ON x (t);
CREATE INDEX bt_d ON x (d); CREATE INDEX bt_ts ON x (ts);
CREATE INDEX bt_tz ON x (tz); CREATE INDEX bt_u ON x (u);
CREATE INDEX bt_at ON x (a, t);
};

# btree's answers: in a transaction rolled back, with btree twins and the
# forein indexes hidden from the planner
sub btree_answers
{
	my ($db) = @_;
	my $hide = join('',
		map { "UPDATE pg_index SET indisvalid = false WHERE indexrelid = '$_'::regclass;\n" } @forein);
	my @q = ('BEGIN', $btree_twins . $hide, @queries, 'ROLLBACK');
	my @out = run_marked_script($node, $db, $force, \@q);
	return @out[ 2 .. $#out - 1 ];
}

for my $v ('0.1', '0.2', '0.3')
{
	(my $db = "upd_$v") =~ s/\./_/;
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, "CREATE EXTENSION forein VERSION '$v'");
	is($node->safe_psql($db, "SELECT extversion FROM pg_extension WHERE extname = 'forein'"),
		$v, "$v: installed");
	$node->safe_psql($db, $setup_01);

	# v's own functions work with today's library
	my ($ret, $out, $err) = $node->psql($db, "SELECT backend FROM forein_stats('x_b')");
	is($ret, 0, "$v: forein_stats before the update") or diag $err;
	($ret, $out, $err) = $node->psql($db, "SELECT forein_check('x_at', true)");
	is($ret, 0, "$v: forein_check before the update") or diag $err;

	# writes between the build and the update: splits, posting lists
	$node->safe_psql($db,
		q{INSERT INTO x SELECT g, (g % 300)::int2, g % 100003, 'n' || (g % 77),
		    date '2021-01-01' + g % 50, now()::timestamp, now(), NULL
		    FROM generate_series(20001, 30000) g ORDER BY md5(g::text);
		  DELETE FROM x WHERE id % 11 = 0;
		  VACUUM x;});

	$node->safe_psql($db, 'ALTER EXTENSION forein UPDATE');
	is($node->safe_psql($db, "SELECT extversion FROM pg_extension WHERE extname = 'forein'"),
		$default, "$v: updated to $default");
	is($node->safe_psql($db,
			"SELECT count(*) FROM pg_class c JOIN pg_am a ON a.oid = c.relam WHERE a.amname = 'forein'"),
		scalar(@forein), "$v: the indexes are still forein indexes");

	my @want = btree_answers($db);
	my @got = run_marked_script($node, $db, $force, \@queries);
	compare_outputs("$v -> $default: forein answers equal btree's",
		\@queries, \@got, \@want, 'forein', 'btree');
	index_plan_ok($node, $db, 'SELECT id FROM x WHERE b = 4242', 'x_b', $force);
	index_plan_ok($node, $db, "SELECT a, t FROM x WHERE a = 7 AND t < 't00100'", 'x_at', $force);
	for my $idx (@forein)
	{
		($ret, $out, $err) = $node->psql($db, "SELECT forein_check('$idx', true)");
		is($ret, 0, "$v -> $default: forein_check('$idx', true)") or diag $err;
	}

	# the functions as they are now
	($ret, $out, $err) = $node->psql($db,
		"SELECT backend IS NOT NULL, status IS NOT NULL, lookups >= 0 FROM forein_stats('x_b')");
	is($out, 't|t|t', "$v -> $default: forein_stats returns its 0.2 columns")
	  or diag $err;
	($ret, $out, $err) = $node->psql($db, "SELECT count(*) >= 0 FROM forein_offload_usage('x_b')");
	is($out, 't', "$v -> $default: forein_offload_usage callable") or diag $err;
	($ret, $out, $err) = $node->psql($db, "SELECT forein_refresh('x_b') >= 0");
	is($out, 't', "$v -> $default: forein_refresh callable") or diag $err;

	# writes after the update, then the answers again
	$node->safe_psql($db,
		q{INSERT INTO x SELECT g, (g % 300)::int2, (g * 31) % 100003, 't' || lpad((g % 2000)::text, 5, '0'),
		    date '2020-01-01' + g % 1000, timestamp '2020-01-01' + g * interval '1 minute',
		    now(), md5(g::text)::uuid
		    FROM generate_series(40001, 50000) g;});
	@want = btree_answers($db);
	@got = run_marked_script($node, $db, $force, \@queries);
	compare_outputs("$v -> $default, after inserts: forein answers equal btree's",
		\@queries, \@got, \@want, 'forein', 'btree');
	($ret, $out, $err) = $node->psql($db, 'INSERT INTO x (id) VALUES (40001)');
	like($err, qr/violates unique constraint "x_id"/, "$v -> $default: unique index enforced");

	# the operator classes of 0.4 in the updated database
	my $newtypes = $node->safe_psql(
		$db, qq{
		$force
		CREATE TABLE y (f8 float8, nu numeric, bo bool, tp text, ip inet, iv interval, bya bytea);
		INSERT INTO y SELECT g / 7.0, g / 3.0, g % 2 = 0, 'p' || g, ('10.0.' || (g % 250) || '.1')::inet,
		  g * interval '1 second', int4send(g) FROM generate_series(1, 5000) g;
		CREATE INDEX y_f8 ON y USING forein (f8);
		CREATE INDEX y_nu ON y USING forein (nu);
		CREATE INDEX y_bo ON y USING forein (bo);
		CREATE INDEX y_tp ON y USING forein (tp text_pattern_ops);
		CREATE INDEX y_ip ON y USING forein (ip);
		CREATE INDEX y_iv ON y USING forein (iv);
		CREATE INDEX y_by ON y USING forein (bya);
		SELECT (SELECT count(*) FROM y WHERE f8 BETWEEN 10 AND 20)
		  || ',' || (SELECT count(*) FROM y WHERE nu > 1000)
		  || ',' || (SELECT count(*) FROM y WHERE bo)
		  || ',' || (SELECT count(*) FROM y WHERE tp ~>=~ 'p12' AND tp ~<~ 'p13')
		  || ',' || (SELECT count(*) FROM y WHERE ip = '10.0.7.1')
		  || ',' || (SELECT count(*) FROM y WHERE iv < '1 minute')
		  || ',' || (SELECT count(*) FROM y WHERE bya = int4send(77));
	});
	is($newtypes, '71,2000,2500,111,20,59,1',
		"$v -> $default: the 0.4 operator classes build indexes that answer");
	index_plan_ok($node, $db, "SELECT * FROM y WHERE tp ~>=~ 'p12' AND tp ~<~ 'p13'", 'y_tp', $force);
	index_plan_ok($node, $db, "SELECT * FROM y WHERE ip = '10.0.7.1'", 'y_ip', $force);
}

$node->stop;
done_testing();

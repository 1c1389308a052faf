# pg_upgrade of a cluster with forein indexes: the index files are carried
# over as they are (same binaries, PostgreSQL 15 to 15), the extension is
# recreated in binary-upgrade mode with the old OIDs, and the new cluster's
# indexes answer as btree indexes over the same rows do, pass forein_check
# with heapallindexed, take inserts (page splits, posting lists) and still
# enforce uniqueness.
use strict;
use warnings;

use Cwd qw(getcwd abs_path);
use FindBin;
use lib $FindBin::RealBin;
use ForeinTAP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $old = forein_node('old');

# Several key types, multi-column with DESC, posting lists (few distinct
# values), unique (one and two columns), INCLUDE, partial, expression, an empty index, and a
# second database.
$old->safe_psql(
	'postgres', q{
	CREATE TABLE u (id int4, k int8, d int4, t text, ts timestamptz, uu uuid, n numeric);
	INSERT INTO u SELECT g, (g * 7919) % 100003, g % 11,
	  'u' || lpad((g % 3000)::text, 5, '0'),
	  timestamptz '2024-01-01 00:00+00' + g * interval '1 minute',
	  md5(g::text)::uuid, (g % 97) / 7.0
	  FROM generate_series(1, 40000) g;
	CREATE INDEX u_k ON u USING forein (k);
	CREATE INDEX u_d ON u USING forein (d);
	CREATE INDEX u_t ON u USING forein (t);
	CREATE INDEX u_ts ON u USING forein (ts);
	CREATE INDEX u_uu ON u USING forein (uu);
	CREATE INDEX u_n ON u USING forein (n);
	CREATE INDEX u_dt ON u USING forein (d, t DESC);
	CREATE UNIQUE INDEX u_id ON u USING forein (id) INCLUDE (d);
	CREATE INDEX u_part ON u USING forein (k) WHERE d = 3;
	CREATE INDEX u_expr ON u USING forein ((k % 1000));
	CREATE UNIQUE INDEX u_t_uniq ON u USING forein (t, id);
	CREATE TABLE e (a int4);
	CREATE INDEX e_a ON e USING forein (a);
	CREATE DATABASE other;
});
$old->safe_psql(
	'other', q{
	CREATE EXTENSION forein;
	CREATE TABLE o (a int4, b text);
	INSERT INTO o SELECT g % 50, 'o' || g FROM generate_series(1, 5000) g;
	CREATE INDEX o_ab ON o USING forein (a, b);
});
# inserts after the build: leaves split, posting lists grow
$old->safe_psql('postgres',
	q{INSERT INTO u SELECT g, (g * 31) % 100003, g % 11, 'v' || g, now(), NULL, g % 13
	  FROM generate_series(40001, 50000) g ORDER BY md5(g::text);
	DELETE FROM u WHERE id % 9 = 0;
	VACUUM u;});

my @forein = qw(u_k u_d u_t u_ts u_uu u_n u_dt u_id u_part u_expr u_t_uniq e_a);
my $force = 'SET enable_seqscan = off; SET enable_bitmapscan = off;';
my @queries = (
	'SELECT count(*), sum(k) FROM u WHERE k BETWEEN 1000 AND 50000',
	'SELECT id FROM u WHERE k = 4242 ORDER BY id',
	'SELECT k FROM u WHERE k > 100 ORDER BY k DESC LIMIT 20',
	'SELECT d, count(*) FROM u WHERE d >= 0 GROUP BY d ORDER BY d',
	"SELECT t FROM u WHERE t >= 'u02990' ORDER BY t LIMIT 25",
	"SELECT count(*) FROM u WHERE ts < '2024-01-05 00:00+00'",
	"SELECT id FROM u WHERE uu = md5('777')::uuid",
	'SELECT n, count(*) FROM u WHERE n BETWEEN 2 AND 3 GROUP BY n ORDER BY n',
	"SELECT d, t FROM u WHERE d = 4 AND t < 'u00100' ORDER BY d, t DESC LIMIT 10",
	'SELECT count(*) FROM u WHERE id > 45000',
	'SELECT k FROM u WHERE d = 3 AND k < 500 ORDER BY k',
	'SELECT count(*) FROM u WHERE k % 1000 = 7',
	"SELECT t, id FROM u WHERE t = 'u00042' ORDER BY t, id",
	'SELECT count(*) FROM e WHERE a > 0',
);

# The btree twins' answers: computed from the same rows without forein.
sub btree_answers
{
	my ($node) = @_;
	my $twins = join(";\n",
		'CREATE INDEX bt_k ON u (k)', 'CREATE INDEX bt_d ON u (d)',
		'CREATE INDEX bt_t ON u (t)', 'CREATE INDEX bt_ts ON u (ts)',
		'CREATE INDEX bt_uu ON u (uu)', 'CREATE INDEX bt_n ON u (n)',
		'CREATE INDEX bt_dt ON u (d, t DESC)', 'CREATE INDEX bt_id ON u (id)',
		'CREATE INDEX bt_expr ON u ((k % 1000))', 'CREATE INDEX bt_ta ON u (t, id)',
		'CREATE INDEX bt_e ON e (a)')
	  . ";\n"
	  . join('', map { "UPDATE pg_index SET indisvalid = false WHERE indexrelid = '$_'::regclass;\n" } @forein);
	# in a transaction rolled back: the forein indexes invisible to the planner
	my @q = ('BEGIN', $twins, @queries, 'ROLLBACK');
	my @out = run_marked_script($node, 'postgres', $force, \@q);
	return @out[ 2 .. $#out - 1 ];
}

my @want = btree_answers($old);
my @got_old = run_marked_script($old, 'postgres', $force, \@queries);
compare_outputs('old cluster: forein answers equal btree\'s',
	\@queries, \@got_old, \@want, 'forein', 'btree');
my $other_want = $old->safe_psql('other',
	"$force SELECT a, count(*), min(b), max(b) FROM o WHERE a BETWEEN 10 AND 20 GROUP BY a ORDER BY a");

# pg_upgrade: same binaries, a fresh cluster with the library preloaded.
my $new = forein_node('new', start => 0);
$old->stop;
my $bindir = $old->config_data('--bindir');
my $cwd = getcwd();
my ($olddata, $newdata) = map { abs_path($_) } ($old->data_dir, $new->data_dir);
# pg_upgrade writes its scripts into the working directory
chdir $PostgreSQL::Test::Utils::tmp_check;
my @upgrade = (
	'pg_upgrade', '--no-sync', '-d', $olddata, '-D', $newdata,
	'-b', $bindir, '-B', $bindir, '-s', $new->host,
	'-p', $old->port, '-P', $new->port);
command_ok([ @upgrade, '--check' ], 'pg_upgrade --check');
command_ok(\@upgrade, 'pg_upgrade');
chdir $cwd;
$new->start;

is($new->safe_psql('postgres',
		"SELECT extversion FROM pg_extension WHERE extname = 'forein'"),
	$new->safe_psql('postgres',
		"SELECT default_version FROM pg_available_extensions WHERE name = 'forein'"),
	'the extension came over at its version');
is($new->safe_psql('postgres',
		"SELECT string_agg(c.relname, ' ' ORDER BY c.relname) FROM pg_class c JOIN pg_am a ON a.oid = c.relam WHERE a.amname = 'forein'"),
	join(' ', sort @forein), 'every forein index came over');

my @got = run_marked_script($new, 'postgres', $force, \@queries);
compare_outputs('upgraded cluster: forein answers equal btree\'s',
	\@queries, \@got, \@want, 'forein', 'btree');
index_plan_ok($new, 'postgres', 'SELECT id FROM u WHERE k = 4242', 'u_k', $force);
index_plan_ok($new, 'postgres', "SELECT d, t FROM u WHERE d = 4 AND t < 'u00100'", 'u_dt', $force);
index_plan_ok($new, 'postgres', 'SELECT count(*) FROM u WHERE id > 45000', 'u_id', $force);
for my $idx (@forein)
{
	my ($ret, $out, $err) = $new->psql('postgres', "SELECT forein_check('$idx', true)");
	is($ret, 0, "upgraded: forein_check('$idx', true)") or diag $err;
}
is($new->safe_psql('other',
		"$force SELECT a, count(*), min(b), max(b) FROM o WHERE a BETWEEN 10 AND 20 GROUP BY a ORDER BY a"),
	$other_want, 'upgraded: the second database answers as before');
my ($oret, $oout, $oerr) = $new->psql('other', "SELECT forein_check('o_ab', true)");
is($oret, 0, 'upgraded: forein_check(o_ab) in the second database') or diag $oerr;

# Writes after the upgrade.
$new->safe_psql('postgres',
	q{INSERT INTO u SELECT g, g % 100003, g % 11, 'w' || g, now(), md5(g::text)::uuid, g % 5
	  FROM generate_series(60001, 90000) g ORDER BY md5(g::text);
	  INSERT INTO e SELECT g FROM generate_series(1, 1000) g;
	  DELETE FROM u WHERE id % 7 = 0;
	  VACUUM u;});
my @want2 = btree_answers($new);
my @got2 = run_marked_script($new, 'postgres', $force, \@queries);
compare_outputs('upgraded, after inserts, deletes and VACUUM: answers equal btree\'s',
	\@queries, \@got2, \@want2, 'forein', 'btree');
for my $idx (@forein)
{
	my ($ret, $out, $err) = $new->psql('postgres', "SELECT forein_check('$idx', true)");
	is($ret, 0, "upgraded, after writes: forein_check('$idx', true)") or diag $err;
}
my ($ret, $out, $err) = $new->psql('postgres', 'INSERT INTO u (id) VALUES (60001)');
like($err, qr/violates unique constraint "u_id"/, 'upgraded: unique index enforced');

$new->stop;
done_testing();

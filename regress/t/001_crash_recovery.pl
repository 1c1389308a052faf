# Crash recovery: concurrent pgbench inserters (and deleters, and VACUUM)
# while the postmaster is killed with SIGKILL; after restart every forein
# index passes forein_check(heapallindexed), index scans count what the
# heap holds, every committed transaction is whole, and the indexes keep
# working.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use ForeinTAP;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

# pgbench's random keys come from this seed (timing is not reproducible)
my $seed = test_seed();
my $node = forein_node('crash', conf => "max_connections = 40\n");

# pairs: every transaction inserts or deletes whole pairs of rows with the
# same k, so after any crash each k must appear an even number of times.
# witness: keys >= 1e12, only ever inserted, so what a reader saw
# committed before the crash must still be there after it.
$node->safe_psql(
	'postgres', q{
	CREATE TABLE pairs (id bigserial, k int8, t text, pad text);
	INSERT INTO pairs (k, t, pad)
	  SELECT g / 2, 'key' || (g / 2), repeat('p', 20) FROM generate_series(0, 19999) g;
	CREATE INDEX pairs_k ON pairs USING forein (k);
	CREATE INDEX pairs_t ON pairs USING forein (t);
	CREATE UNIQUE INDEX pairs_id ON pairs USING forein (id);
	CREATE TABLE witness (k int8);
	CREATE INDEX witness_k ON witness USING forein (k);
});

my %scripts = (
	'insert_pair.sql' => q{
\set k random(1, 1000000)
INSERT INTO pairs (k, t, pad) VALUES (:k, 'key' || :k, 'x'), (:k, 'key' || :k, 'y');
},
	'insert_bulk.sql' => q{
\set k random(1, 1000000)
INSERT INTO pairs (k, t, pad)
  SELECT :k + g / 2, 'key' || (:k + g / 2), repeat('b', 40) FROM generate_series(0, 199) g;
},
	'delete.sql' => q{
\set k random(1, 1000000)
DELETE FROM pairs WHERE k BETWEEN :k AND :k + 50;
},
	'witness.sql' => q{
INSERT INTO witness SELECT 1000000000000 + (random() * 1e9)::int8 FROM generate_series(1, 20);
},
	'vacuum.sql' => q{
VACUUM pairs;
},);

my $basedir = $node->basedir;

# start_load(tag, files): pgbench with the given weighted scripts in the
# background, running until the server goes away.
sub start_load
{
	my ($tag, @files) = @_;
	my @f;
	for my $spec (@files)
	{
		my ($name, $weight) = split /@/, $spec;
		my $path = "$basedir/$tag-$name";
		PostgreSQL::Test::Utils::append_to_file($path, $scripts{$name})
		  unless -e $path;
		push @f, '-f', "$path\@$weight";
	}
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start(
		[
			'pgbench', '--no-vacuum', '-c', '6', '-j', '2', '-T', '300', "--random-seed=$seed",
			'-h', $node->host, '-p', $node->port, @f, 'postgres'
		],
		'>', \$out, '2>', \$err);
	return ($h, \$out, \$err);
}

sub scalar_query { return $node->safe_psql('postgres', $_[0]); }

# wait_rows(table, n): poll until the table has at least n rows, or the
# load generator died.
sub wait_rows
{
	my ($h, $query, $n) = @_;
	my $deadline = time + 180;
	while (time < $deadline)
	{
		$h->pump_nb if $h->pumpable;
		die "pgbench ended early" unless $h->pumpable;
		my $c = scalar_query($query);
		return $c if $c >= $n;
		usleep(100_000);
	}
	die "timed out waiting for $query >= $n";
}

sub stop_load
{
	my ($h, $err) = @_;
	# The clients lose their server: pgbench ends with an error.  If it
	# has not after 60 s, it is killed.
	my $deadline = time + 60;
	while ($h->pumpable && time < $deadline)
	{
		$h->pump_nb;
		usleep(50_000);
	}
	$h->kill_kill if $h->pumpable;
	$h->finish;
	note "pgbench stderr (tail): " . substr($$err, -600);
	return;
}

my $heap = 'SET enable_indexscan = off; SET enable_indexonlyscan = off; SET enable_bitmapscan = off;';
my $index = 'SET enable_seqscan = off; SET enable_bitmapscan = off; SET enable_sort = off; SET enable_hashagg = off;';

sub check_after_recovery
{
	my ($round, $witness_before) = @_;

	for my $idx (qw(pairs_k pairs_t pairs_id witness_k))
	{
		my ($ret, $out, $err) =
		  $node->psql('postgres', "SELECT forein_check('$idx', true)");
		is($ret, 0, "$round: forein_check('$idx', heapallindexed) passes")
		  or diag $err;
	}

	my $q_k = 'SELECT count(*), sum(k) FROM pairs WHERE k IS NOT NULL';
	index_plan_ok($node, 'postgres', $q_k, 'pairs_k', $index);
	my $by_heap = $node->safe_psql('postgres', "$heap $q_k");
	my $by_index = $node->safe_psql('postgres', "$index $q_k");
	is($by_index, $by_heap, "$round: pairs_k count/sum equal the heap's ($by_heap)");

	my $q_t = 'SELECT count(*), count(DISTINCT t) FROM pairs WHERE t IS NOT NULL';
	index_plan_ok($node, 'postgres', $q_t, 'pairs_t', $index);
	is($node->safe_psql('postgres', "$index $q_t"),
		$node->safe_psql('postgres', "$heap $q_t"),
		"$round: pairs_t count equals the heap's");

	my $q_id = 'SELECT count(*), sum(id) FROM pairs WHERE id IS NOT NULL';
	index_plan_ok($node, 'postgres', $q_id, 'pairs_id', $index);
	is($node->safe_psql('postgres', "$index $q_id"),
		$node->safe_psql('postgres', "$heap $q_id"),
		"$round: pairs_id count equals the heap's");

	# whole transactions: every k an even number of times, seen through the
	# heap and through an ordered scan of the index
	my $q_odd = 'SELECT count(*) FROM (SELECT k FROM pairs WHERE k IS NOT NULL GROUP BY k HAVING count(*) % 2 = 1) s';
	is($node->safe_psql('postgres', "$heap $q_odd"), '0',
		"$round: no half transaction in the heap");
	index_plan_ok($node, 'postgres', $q_odd, 'pairs_k', $index);
	is($node->safe_psql('postgres', "$index $q_odd"), '0',
		"$round: no half transaction through the index");

	# committed before the crash is still there
	my $q_w = 'SELECT count(*) FROM witness WHERE k >= 1000000000000';
	index_plan_ok($node, 'postgres', $q_w, 'witness_k', $index);
	my $w_index = $node->safe_psql('postgres', "$index $q_w");
	my $w_heap = $node->safe_psql('postgres', "$heap $q_w");
	is($w_index, $w_heap, "$round: witness index count equals the heap's");
	cmp_ok($w_index, '>=', $witness_before,
		"$round: all $witness_before witness rows committed before the crash survived");

	# unique index still enforces uniqueness
	my ($ret, $out, $err) = $node->psql('postgres',
		'INSERT INTO pairs (id, k) SELECT id, -1 FROM pairs WHERE id IS NOT NULL LIMIT 1');
	isnt($ret, 0, "$round: the unique index still rejects a duplicate id");
	like($err, qr/duplicate key value violates unique constraint "pairs_id"/,
		"$round: with a unique violation");
	return;
}

# Round 1: inserters only, kill -9 of the postmaster alone.
{
	my ($h, $out, $err) =
	  start_load('r1', 'insert_pair.sql@5', 'insert_bulk.sql@1', 'witness.sql@1');
	wait_rows($h, 'SELECT count(*) FROM pairs', 60_000);
	my $w = scalar_query('SELECT count(*) FROM witness');
	crash_postmaster($node);
	stop_load($h, $err);
	$node->start;
	check_after_recovery('round 1', $w);
}

# Round 2: inserters, deleters and VACUUM; the postmaster and all its
# children are killed at once.
{
	my ($h, $out, $err) = start_load(
		'r2', 'insert_pair.sql@5', 'insert_bulk.sql@1',
		'delete.sql@3', 'witness.sql@1', 'vacuum.sql@1');
	my $start = scalar_query('SELECT count(*) FROM witness');
	# (500 witness transactions, about 5,500 of the mix: VACUUMs run and
	# block the other clients on the table lock all along, so more makes
	# the test slow, not stronger; 20,000 rows took 150 s on a loaded VM)
	wait_rows($h, 'SELECT count(*) FROM witness', $start + 10_000);
	my $w = scalar_query('SELECT count(*) FROM witness');

	my $pid = $node->{_pid};
	my @kids = ForeinTAP::_children($pid);
	note "killing postmaster $pid and " . scalar(@kids) . " children with SIGKILL";
	kill 'KILL', $pid, @kids;
	$node->{_pid} = undef;
	ok(wait_pids_gone(120, $pid, @kids), 'round 2: all server processes gone');
	stop_load($h, $err);
	$node->start;
	check_after_recovery('round 2', $w);
}

# After recovery the indexes take a new load (incomplete splits left by the
# crash get finished) and stay consistent.
$node->pgbench(
	"--no-vacuum -c 4 -j 2 -t 300 --random-seed=$seed", 0, [qr{processed: 1200/1200}], [qr{^(?:pgbench: setting random seed to \d+\n)?$}],
	'load after recovery',
	{
		'after_insert.sql@3' => $scripts{'insert_pair.sql'},
		'after_bulk.sql@1' => $scripts{'insert_bulk.sql'},
		'after_delete.sql@2' => $scripts{'delete.sql'},
	});
$node->safe_psql('postgres', 'VACUUM pairs');
my $w = scalar_query('SELECT count(*) FROM witness');
check_after_recovery('after reload', $w);

$node->stop;
done_testing();

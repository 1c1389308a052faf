# Differential test: random data with duplicates and NULLs in two tables
# with the same rows, one indexed with forein and one with btree; the same
# random queries (point, range, IN, ORDER BY ... LIMIT both directions,
# joins, bitmap scans, scrollable cursors) must give identical answers,
# with index scans forced.  Rounds of identical inserts, deletes, updates
# and VACUUM come in between.  The whole run is repeated for every
# registered offload backend that gives hints (FOREIN_DIFF_BACKENDS, a
# space-separated list, chooses): the forein indexes name it, and each
# round installs its images synchronously (forein_refresh) before the
# queries.  Seeded: FOREIN_SEED=<n> replays a run.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use ForeinTAP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $seed = test_seed();
my $rounds = $ENV{FOREIN_DIFF_ROUNDS} // 10;
my $per_round = $ENV{FOREIN_DIFF_QUERIES} // 250;

my $node = forein_node('differential');

sub r { return int(rand($_[0])); }

# The data's shape comes from the seed too: how many rows, and how many
# distinct keys (from runs of hundreds of duplicates spanning leaf pages
# to nearly unique keys).
my $NROWS = 5000 + r(50000);
my $KMAX = (40, 3000, 200000)[ r(3) ];    # k in [0, KMAX)
my $TMAX = (30, 4000)[ r(2) ];    # t = 'w' || lpad(n, 5)
my $next_id = $NROWS + 1;
note "rows $NROWS, k in [0, $KMAX), t among $TMAX values";
sub rk { return r($KMAX + 40) - 20; }    # a little outside the key range too
sub rt { return sprintf("'w%05d'", r($TMAX + 20) - 10); }

my @ops = ('=', '<', '<=', '>', '>=');

# One random query: [sql with %T for the table, explain-able].
sub random_query
{
	my $kind = r(19);
	my ($x1, $x2) = sort { $a <=> $b } (rk(), rk());
	my $n = 1 + r(40);
	my $op = $ops[ r(scalar @ops) ];
	my $c = rk();
	return [ "SELECT id FROM %T WHERE k = $c ORDER BY id", 1 ] if $kind == 0;
	return [ "SELECT id FROM %T WHERE k = ${c}::int8 ORDER BY id", 1 ] if $kind == 1;
	return [ "SELECT count(*), sum(id), min(t), max(t) FROM %T WHERE k $op $c", 1 ]
	  if $kind == 2;
	return [ "SELECT count(*), sum(id) FROM %T WHERE k BETWEEN $x1 AND $x2", 1 ] if $kind == 3;
	return [ "SELECT count(*), sum(id) FROM %T WHERE k > $x1 AND k <= ${x2}::" . (abs($x2) < 32768 ? 'int2' : 'int8'), 1 ]
	  if $kind == 4;
	if ($kind == 5)
	{
		my @in = map { rk() } 1 .. (1 + r(12));
		push @in, 'NULL' if r(4) == 0;
		# the list as an index condition (amsearcharray) or probed by a
		# bitmap scan, half and half
		return [ "SELECT count(*), sum(id) FROM %T WHERE k IN (" . join(', ', @in) . ")", 1 ]
		  if r(2) == 0;
		return [ 'SET enable_bitmapscan = on; SET enable_indexscan = off; SELECT count(*), sum(id) FROM %T WHERE k IN ('
			  . join(', ', @in) . '); SET enable_bitmapscan = off; RESET enable_indexscan', 0 ];
	}
	if ($kind == 6)
	{
		my @in = map { rk() } 1 .. (1 + r(12));
		return [ "SELECT k FROM %T WHERE k = ANY ('{" . join(',', @in) . "}'::int8[]) ORDER BY k DESC", 1 ];
	}
	return [ "SELECT k FROM %T WHERE k > $x1 ORDER BY k LIMIT $n", 1 ] if $kind == 7;
	return [ "SELECT k FROM %T WHERE k <= $x2 ORDER BY k DESC LIMIT $n", 1 ] if $kind == 8;
	return [ "SELECT k FROM %T ORDER BY k DESC LIMIT $n", 1 ] if $kind == 9;    # NULLs first
	return [ "SELECT k FROM %T WHERE k IS NOT NULL ORDER BY k LIMIT $n OFFSET " . r($NROWS), 1 ]
	  if $kind == 10;
	if ($kind == 11)
	{
		my ($ta, $tb) = sort (rt(), rt());
		my $dir = r(2) ? 'DESC' : 'ASC';
		return [ "SELECT t FROM %T WHERE t >= $ta AND t < $tb ORDER BY t $dir LIMIT $n", 1 ];
	}
	return [ "SELECT count(*), sum(id) FROM %T WHERE t $op " . rt(), 1 ] if $kind == 12;
	return [ "SELECT count(*), count(k), sum(id) FROM %T WHERE " . (r(2) ? 'k' : 't') . ' IS NULL', 1 ]
	  if $kind == 13;
	if ($kind == 14)
	{
		# self join on k: merge join or nested loop, by chance
		my $set = r(2) ? 'SET enable_mergejoin = off; ' : 'SET enable_nestloop = off; ';
		# at most ~20 outer rows per key, so dense keys stay cheap
		my $per_key = $NROWS / $KMAX;
		my $m = $per_key > 20 ? int($per_key / 20) : 1;
		my $hi = $x1 + ($per_key > 20 ? r(3) : r(200));
		return [ "${set}SELECT count(*), sum(x.id - y.id) FROM %T x JOIN %T y ON x.k = y.k WHERE x.k BETWEEN $x1 AND $hi AND x.id % $m = 0; RESET enable_mergejoin; RESET enable_nestloop", 0 ];
	}
	if ($kind == 15)
	{
		my $hi = $x1 + r(400);
		return [ "SELECT count(*), sum(x.id) FROM generate_series($x1, $hi) s(v) JOIN %T x ON x.k = s.v", 1 ];
	}
	if ($kind == 16)
	{
		# bitmap scans (BitmapOr too)
		return [ "SET enable_indexscan = off; SET enable_bitmapscan = on; SELECT count(*), sum(id) FROM %T WHERE k = $c OR k BETWEEN $x1 AND $x2; RESET enable_indexscan; SET enable_bitmapscan = off", 0 ];
	}
	if ($kind == 17)
	{
		# a scrollable cursor changing direction
		my $dir = r(2) ? 'DESC' : '';
		my $f1 = 1 + r(30);
		my $f2 = 1 + r(40);
		my $abs = 1 + r(200);
		return [
			"BEGIN; DECLARE c SCROLL CURSOR FOR SELECT k FROM %T WHERE k >= $x1 ORDER BY k $dir; "
			  . "FETCH $f1 FROM c; FETCH BACKWARD $f2 FROM c; FETCH ABSOLUTE $abs FROM c; "
			  . "FETCH RELATIVE -3 FROM c; FETCH LAST FROM c; FETCH BACKWARD 4 FROM c; COMMIT",
			0
		];
	}
	# text join, nested loop probing the t index
	my $pairs = ($NROWS / $KMAX) * ($NROWS / $TMAX);
	my $m = $pairs > 50000 ? int($pairs / 50000) : 1;
	return [ "SET enable_mergejoin = off; SELECT count(*) FROM %T x JOIN %T y ON y.t = x.t WHERE x.k = $c AND x.id % $m = 0; RESET enable_mergejoin", 0 ];
}

# Mutations, each one statement template applied to both tables.
sub random_mutations
{
	my @m;
	for (1 .. 2 + r(4))
	{
		my $kind = r(7);
		my ($x1, $x2) = sort { $a <=> $b } (rk(), rk());
		$x2 = $x1 + r(150) if $x2 - $x1 > 150;
		my $ss = sprintf('%.6f', rand() * 2 - 1);
		if ($kind <= 1)
		{
			my $cnt = 200 + r(2000);
			my $lo = r($KMAX);
			my $span = 1 + r($KMAX - $lo);
			push @m, "SELECT setseed($ss); INSERT INTO %T SELECT $next_id + g,"
			  . " CASE WHEN random() < 0.05 THEN NULL ELSE $lo + (random() * $span)::int4 END,"
			  . " CASE WHEN random() < 0.05 THEN NULL ELSE 'w' || lpad((random() * $TMAX)::int4::text, 5, '0') END,"
			  . " repeat('i', (random() * 30)::int4) FROM generate_series(0, $cnt - 1) g";
			$next_id += $cnt;
		}
		elsif ($kind == 2) { push @m, "DELETE FROM %T WHERE k BETWEEN $x1 AND $x2"; }
		elsif ($kind == 3)
		{
			my $m = 2 + r(9);
			push @m, "DELETE FROM %T WHERE id % $m = " . r($m) . " AND k < $x2";
		}
		elsif ($kind == 4) { push @m, "UPDATE %T SET k = k + " . (r(41) - 20) . " WHERE k BETWEEN $x1 AND $x2"; }
		elsif ($kind == 5)
		{
			push @m, "UPDATE %T SET t = CASE WHEN id % 2 = 0 THEN NULL ELSE t || 'u' END WHERE k BETWEEN $x1 AND $x2";
		}
		else { push @m, "UPDATE %T SET k = NULL WHERE t < " . rt() . " AND k BETWEEN $x1 AND $x2"; }
	}
	return @m;
}

my $force = 'SET enable_seqscan = off; SET enable_bitmapscan = off; SET enable_hashjoin = off;';
my $failures = 0;

my @backends = offload_backends($node, 'FOREIN_DIFF_BACKENDS');
note 'offload backends: ' . join(', ', @backends);
for my $backend (@backends)
{
	$next_id = $NROWS + 1;
	# Both tables get identical rows: random() under the same setseed.
	my $setseed = sprintf('%.6f', rand() * 2 - 1);
	$node->safe_psql(
		'postgres', qq{
		DROP TABLE IF EXISTS df, db;
		CREATE TABLE df (id int4, k int4, t text, pad text);
		CREATE TABLE db (id int4, k int4, t text, pad text);
		SELECT setseed($setseed);
		INSERT INTO df SELECT g,
		  CASE WHEN random() < 0.05 THEN NULL ELSE (random() * $KMAX)::int4 END,
		  CASE WHEN random() < 0.05 THEN NULL ELSE 'w' || lpad((random() * $TMAX)::int4::text, 5, '0') END,
		  repeat('p', (random() * 30)::int4)
		  FROM generate_series(1, $NROWS) g;
		INSERT INTO db SELECT * FROM df;
		CREATE INDEX df_k ON df USING forein (k) WITH (offload = '$backend');
		CREATE INDEX df_t ON df USING forein (t) WITH (offload = '$backend');
		CREATE UNIQUE INDEX df_id ON df USING forein (id) WITH (offload = '$backend');
		-- deduplication off: PostgreSQL 15's btree returns wrong rows when a
		-- scrollable cursor turns back inside a posting list
		CREATE INDEX db_k ON db USING btree (k) WITH (deduplicate_items = off);
		CREATE INDEX db_t ON db USING btree (t) WITH (deduplicate_items = off);
		CREATE UNIQUE INDEX db_id ON db USING btree (id);
		VACUUM ANALYZE df;
		VACUUM ANALYZE db;
	});

	for my $round (1 .. $rounds)
	{
		if ($round > 1)
		{
			my @m = random_mutations();
			for my $stmt (@m)
			{
				(my $f = $stmt) =~ s/%T/df/g;
				(my $bt = $stmt) =~ s/%T/db/g;
				$node->safe_psql('postgres', $f);
				$node->safe_psql('postgres', $bt);
			}
			if ($round % 2 == 0)
			{
				$node->safe_psql('postgres', 'VACUUM df; VACUUM db;');
				note "$backend round $round: VACUUM";
			}
			note "$backend round $round: " . scalar(@m) . ' mutations';
			is( $node->safe_psql('postgres', 'SELECT count(*), sum(id), sum(k), count(t) FROM df'),
				$node->safe_psql('postgres', 'SELECT count(*), sum(id), sum(k), count(t) FROM db'),
				"$backend round $round: both tables hold the same rows");
		}

		# this backend's images, installed now (the worker refreshes too)
		$node->safe_psql('postgres',
			"SELECT forein_refresh('df_k'), forein_refresh('df_t'), forein_refresh('df_id')");

		my @spec = map { random_query() } 1 .. $per_round;
		my @tpl = map { $_->[0] } @spec;
		my @qf = map { (my $q = $_) =~ s/%T/df/g; $q } @tpl;
		my @qb = map { (my $q = $_) =~ s/%T/db/g; $q } @tpl;

		# every plain query's plan scans a forein index
		my @explainable = grep { $spec[$_][1] } 0 .. $#spec;
		my @plans = run_marked_script($node, 'postgres', $force,
			[ map { "EXPLAIN (COSTS OFF) $qf[$_]" } @explainable ]);
		my @noindex = grep { $plans[$_] !~ /\b(?:df_k|df_t|df_id)\b/ } 0 .. $#plans;
		is(scalar(@noindex), 0, "$backend round $round: every query scans a forein index")
		  or diag "no forein index in the plan of: $qf[$explainable[$noindex[0]]]\n$plans[$noindex[0]]";

		my @got = run_marked_script($node, 'postgres', $force, \@qf);
		my @want = run_marked_script($node, 'postgres', $force, \@qb);
		compare_outputs("$backend round $round: $per_round random queries, forein equals btree",
			\@qf, \@got, \@want, "forein ($backend)", 'btree')
		  or $failures++;

		for my $idx (qw(df_k df_t df_id))
		{
			my ($ret, $out, $err) = $node->psql('postgres', "SELECT forein_check('$idx', true)");
			is($ret, 0, "$backend round $round: forein_check('$idx', heapallindexed)") or diag $err;
		}
	}

	# the backend's hints were in use: its name in forein_stats, and hinted
	# descents in the indexes (unless forein is not preloaded)
	my $got_backend = $node->safe_psql('postgres', "SELECT backend FROM forein_stats('df_k')");
	SKIP:
	{
		skip 'offload is inactive (forein not preloaded)', 2 if $got_backend eq 'inactive';
		is($got_backend, $backend, "forein_stats names the backend $backend");
		my $hits = $node->safe_psql('postgres',
			"SELECT sum(hint_hits) FROM (SELECT (forein_stats(i)).hint_hits FROM unnest('{df_k,df_t,df_id}'::regclass[]) i) s");
		cmp_ok($hits, '>', 0, "$backend: installed hints were used ($hits hint hits)");
	}
}

diag "differential test failed; rerun with FOREIN_SEED=$seed" if $failures;
$node->stop;
done_testing();

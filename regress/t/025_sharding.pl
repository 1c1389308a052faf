# Sharding with PostgreSQL's own tools (docs/postgresql.md, "Sharding"):
# three shard servers, each holding a range of pgbench_accounts with a
# unique forein index on aid, and a coordinator whose pgbench_accounts is
# partitioned by range of aid into postgres_fdw foreign tables on them,
# set up with the recipe's SQL (scripts/pg-shards/*.sql, the files
# scripts/pg-shards.sh runs).  Checks:
#   - EXPLAIN VERBOSE on the coordinator: a point lookup prunes to its
#     shard and ships its predicate as the remote SQL (also in a generic
#     plan: "Subplans Removed: 2", WHERE ((aid = $1::integer))); a range
#     crossing a shard boundary goes to the two shards with both bounds;
#     an UPDATE is a direct Foreign Update;
#   - each shard plans that remote SQL as a scan of its forein index and
#     starts it from a hint (EXPLAIN ANALYZE's Hints line);
#   - pgbench's TPC-B-like script (prepared) through the coordinator, two
#     clients: every account's balance equals the sum of its history rows;
#   - a random mix of point lookups, ranges and IN lists across the shard
#     boundaries, aggregates, updates, inserts below and above the key
#     range, deletes and re-inserts through the coordinator gives the same
#     answers, statement by statement, as a local (unsharded) copy, and
#     the same table at the end; a duplicate key is refused by the shard's
#     unique forein index;
#   - each shard's forein_stats counted hinted lookups, and forein_check
#     (heapallindexed) passes on every shard.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use ForeinTAP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

# The recipe's SQL: scripts/run-pg-tests.sh copies scripts/pg-shards/ next
# to the tests (the test may run as a user who cannot read the checkout).
my $sqldir = $ENV{FOREIN_SHARDS_SQL} // "$FindBin::RealBin/../../scripts/pg-shards";
BAIL_OUT("the sharding recipe's SQL is missing: $sqldir/shard.sql")
  unless -f "$sqldir/shard.sql";

my $sharedir = `pg_config --sharedir`;
chomp $sharedir;
plan skip_all => 'postgres_fdw is not installed (postgresql-contrib)'
  unless -f "$sharedir/extension/postgres_fdw.control";

my $seed = test_seed();
my $nshards = 3;
my $rows = 100_000;    # pgbench scale 1
my $ops = $ENV{FOREIN_SHARDING_OPS} // 600;

# recipe(node, file, vars): run one of the recipe's SQL files on node with
# psql variables (as scripts/pg-shards.sh does).
sub recipe
{
	my ($node, $file, %vars) = @_;
	my $sql = slurp_file("$sqldir/$file");
	return $node->safe_psql(
		'postgres',
		"SET client_min_messages = warning;\n$sql",
		extra_params => [ map { ('-v', "$_=$vars{$_}") } sort keys %vars ]);
}

my @shards = map { forein_node("shard$_") } 1 .. $nshards;
my $coord = PostgreSQL::Test::Cluster->new('coord');
$coord->init;
$coord->append_conf('postgresql.conf', "log_statement = none\n");
$coord->start;

# shard i holds aid b[i-1] .. b[i] - 1 (the first and last open-ended), as
# scripts/pg-shards.sh splits them
my @b = map { 1 + int($_ * $rows / $nshards) } 0 .. $nshards;
for my $i (1 .. $nshards)
{
	my $s = $shards[ $i - 1 ];
	recipe(
		$s, 'shard.sql',
		tbl => 'pgbench_accounts',
		am => 'forein',
		data_lo => $b[ $i - 1 ],
		data_hi => $b[$i] - 1,
		min_aid => $i == 1 ? -2147483648 : $b[ $i - 1 ],
		max_aid => $i == $nshards ? 2147483647 : $b[$i] - 1);
	recipe($coord, 'coordinator_server.sql', srv => "shard$i", host => $s->host, port => $s->port);
	recipe(
		$coord, 'coordinator_partition.sql',
		tbl => 'pgbench_accounts',
		srv => "shard$i",
		lo => $i == 1 ? 'MINVALUE' : $b[ $i - 1 ],
		hi => $i == $nshards ? 'MAXVALUE' : $b[$i]);
}
recipe($coord, 'coordinator_pgbench.sql', scale => $rows / 100_000);

# the local copy the answers are compared with
$coord->safe_psql(
	'postgres', qq{
	CREATE TABLE acc_local (aid int PRIMARY KEY, bid int, abalance int, filler char(84));
	INSERT INTO acc_local SELECT aid, (aid - 1) / 100000 + 1, 0, '' FROM generate_series(1, $rows) aid;
	VACUUM ANALYZE acc_local;
});

is($coord->safe_psql('postgres', 'SELECT count(*) FROM pgbench_accounts'),
	$rows, "$rows accounts through the coordinator");
for my $i (1 .. $nshards)
{
	is( $shards[ $i - 1 ]->safe_psql('postgres',
			'SELECT count(*), min(aid), max(aid) FROM pgbench_accounts'),
		join('|', $b[$i] - $b[ $i - 1 ], $b[ $i - 1 ], $b[$i] - 1),
		"shard$i holds aid $b[$i-1] .. " . ($b[$i] - 1));
	like(
		$shards[ $i - 1 ]->safe_psql('postgres',
			"SELECT status FROM forein_stats('pgbench_accounts_aid')"),
		qr/^active/, "shard$i: its forein index has hints");
}

# --- what pushes down ---------------------------------------------------

sub coord_explain
{
	my ($node, $sql, $settings) = @_;
	return $node->safe_psql('postgres',
		($settings // '') . "EXPLAIN (VERBOSE, COSTS OFF) $sql");
}

# shard_plan_ok(i, remote_sql, name): shard i plans remote_sql as a scan
# of its forein index, started from a hint.
sub shard_plan_ok
{
	my ($i, $remote, $name) = @_;
	my $s = $shards[ $i - 1 ];
	my $plan = $s->safe_psql('postgres',
		"EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) $remote");
	like($plan, qr/Index (?:Only )?Scan using pgbench_accounts_aid on/,
		"shard$i scans its forein index: $name")
	  or diag $plan;
	like($plan, qr/Hints: lookups=(\d+) hits=\1 /, "shard$i starts it from a hint: $name")
	  or diag $plan;
	return;
}

my $k = $b[1] + 17;    # on shard2
my $plan = coord_explain($coord, "SELECT abalance FROM pgbench_accounts WHERE aid = $k");
note $plan;
like($plan, qr/^ *Foreign Scan on public\.pgbench_accounts_shard2\b/m,
	'point lookup: pruned to its shard');
unlike($plan, qr/shard[13]/, 'point lookup: no other shard');
like(
	$plan,
	qr/Remote SQL: SELECT abalance FROM public\.pgbench_accounts WHERE \(\(aid = $k\)\)$/m,
	'point lookup: the predicate is in the remote SQL');
my ($remote) = $plan =~ /Remote SQL: (.*)$/m;
shard_plan_ok(2, $remote, 'point lookup');

$plan = coord_explain(
	$coord, 'EXECUTE q(' . ($b[2] + 5) . ')',
	"PREPARE q(int) AS SELECT abalance FROM pgbench_accounts WHERE aid = \$1;\n"
	  . "SET plan_cache_mode = force_generic_plan;\n");
note $plan;
like($plan, qr/Subplans Removed: 2/, 'generic plan: pruned at executor start');
like($plan, qr/^ *->  Foreign Scan on public\.pgbench_accounts_shard3\b/m,
	'generic plan: the parameter\'s shard is kept');
like(
	$plan,
	qr/Remote SQL: SELECT abalance FROM public\.pgbench_accounts WHERE \(\(aid = \$1::integer\)\)$/m,
	'generic plan: the parameter is shipped');

my ($lo, $hi) = ($b[1] - 10, $b[1] + 10);
$plan = coord_explain($coord,
	"SELECT aid, abalance FROM pgbench_accounts WHERE aid BETWEEN $lo AND $hi ORDER BY aid");
note $plan;
my @scans = $plan =~ /Foreign Scan on public\.(pgbench_accounts_shard\d)\b/g;
is_deeply([ sort @scans ], [ 'pgbench_accounts_shard1', 'pgbench_accounts_shard2' ],
	'range across a boundary: the two shards');
my @remotes = $plan =~ /Remote SQL: (.*)$/mg;
is(scalar(grep { /WHERE \(\(aid >= $lo\)\) AND \(\(aid <= $hi\)\)$/ } @remotes),
	2, 'range: both bounds in each remote SQL')
  or diag $plan;
shard_plan_ok(1, $remotes[0], 'range');
shard_plan_ok(2, $remotes[1], 'range');

$plan = coord_explain($coord, "UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = 7");
note $plan;
like(
	$plan,
	qr/Foreign Update on public\.pgbench_accounts_shard1 .*Remote SQL: UPDATE public\.pgbench_accounts SET abalance = \(abalance \+ 1\) WHERE \(\(aid = 7\)\)$/ms,
	'UPDATE: a direct update on the shard');
unlike($plan, qr/shard[23]/, 'UPDATE: no other shard');

# --- pgbench's TPC-B-like script through the coordinator -----------------

my @before = map {
	[ split /\|/,
		$_->safe_psql('postgres',
			"SELECT lookups, hint_hits FROM forein_stats('pgbench_accounts_aid')") ]
} @shards;

my $per_client = 300;
$coord->pgbench(
	"--no-vacuum -M prepared -c 2 -j 2 -t $per_client --random-seed=$seed",
	0,
	[ qr{processed: @{[2 * $per_client]}/@{[2 * $per_client]}} ],
	[qr{^(?:pgbench: setting random seed to \d+\n)?$}],
	'pgbench TPC-B-like (prepared, 2 clients) through the coordinator');

is( $coord->safe_psql(
		'postgres', q{
	SELECT count(*) FROM
	  (SELECT aid, abalance FROM pgbench_accounts WHERE abalance <> 0) a
	  FULL JOIN (SELECT aid, sum(delta) AS s FROM pgbench_history GROUP BY aid
	             HAVING sum(delta) <> 0) h USING (aid)
	WHERE a.abalance IS DISTINCT FROM h.s}), 0,
	'pgbench: every sharded balance is the sum of its history');
is( $coord->safe_psql(
		'postgres', q{
	SELECT (SELECT sum(abalance) FROM pgbench_accounts) = (SELECT sum(delta) FROM pgbench_history)
	   AND (SELECT sum(tbalance) FROM pgbench_tellers) = (SELECT sum(delta) FROM pgbench_history)}),
	't', 'pgbench: accounts, tellers and history agree');
$coord->safe_psql(
	'postgres', q{
	UPDATE acc_local l SET abalance = l.abalance + h.s
	FROM (SELECT aid, sum(delta) AS s FROM pgbench_history GROUP BY aid) h WHERE l.aid = h.aid});

# --- a random mix, sharded against local ---------------------------------

# The model of which keys exist: 1 .. $rows less %gone, plus %added.
my (%gone, %added);
my ($next_high, $next_low) = ($rows + 1, 0);
sub exists_key { my $k = shift; return $added{$k} || ($k >= 1 && $k <= $rows && !$gone{$k}); }
sub near_boundary { return $b[ 1 + int(rand($nshards - 1)) ] + int(rand(41)) - 20; }

sub some_key
{
	my $r = rand();
	return 1 + int(rand($rows)) if $r < 0.45;
	return near_boundary() if $r < 0.75;
	my @a = keys %added;
	return $a[ int(rand(@a)) ] if $r < 0.85 && @a;
	return (-5 + int(rand(10)), $rows - 5 + int(rand(10)))[ int(rand(2)) ];
}

sub existing_key
{
	for (1 .. 100)
	{
		my $k = some_key();
		return $k if exists_key($k);
	}
	for my $k (1 .. $rows) { return $k if exists_key($k); }
	die 'no key left';
}

my @mix;
for (1 .. $ops)
{
	my $r = rand();
	my $d = int(rand(2001)) - 1000;
	if ($r < 0.30)
	{
		push @mix, 'SELECT aid, bid, abalance FROM T WHERE aid = ' . some_key();
	}
	elsif ($r < 0.45)
	{
		my $a = rand() < 0.7 ? near_boundary() - int(rand(150)) : some_key();
		my $len = int(rand(300));
		push @mix,
		  rand() < 0.5
		  ? "SELECT aid, abalance FROM T WHERE aid BETWEEN $a AND " . ($a + $len) . ' ORDER BY aid'
		  : "SELECT aid, abalance FROM T WHERE aid >= $a AND aid < "
		  . ($a + $len)
		  . ' ORDER BY aid DESC LIMIT 7';
	}
	elsif ($r < 0.50)
	{
		my $a = some_key() - int(rand(20000));
		push @mix, 'SELECT count(*), sum(abalance), min(aid), max(aid) FROM T WHERE aid >= '
		  . $a
		  . ' AND aid < '
		  . ($a + int(rand(40000)));
	}
	elsif ($r < 0.56)
	{
		push @mix, 'SELECT aid, abalance FROM T WHERE aid IN ('
		  . join(', ', map { some_key() } 1 .. 4)
		  . ') ORDER BY aid';
	}
	elsif ($r < 0.76)
	{
		push @mix, "UPDATE T SET abalance = abalance + $d WHERE aid = "
		  . existing_key()
		  . ' RETURNING aid, abalance';
	}
	elsif ($r < 0.80)
	{
		my $a = near_boundary() - int(rand(10));
		push @mix, "WITH u AS (UPDATE T SET abalance = abalance + $d WHERE aid BETWEEN $a AND "
		  . ($a + int(rand(20)))
		  . ' RETURNING aid, abalance) SELECT * FROM u ORDER BY aid';
	}
	elsif ($r < 0.92)
	{
		# re-insert a deleted key (any shard), or a new one above or below
		# the key range (the last or the first shard)
		my @g = keys %gone;
		my $k;
		if (@g && rand() < 0.4) { $k = $g[ int(rand(@g)) ]; delete $gone{$k}; }
		elsif (rand() < 0.5) { $k = $next_high++; $added{$k} = 1; }
		else { $k = $next_low--; $added{$k} = 1; }
		push @mix, "INSERT INTO T VALUES ($k, 7, $d, 'x') RETURNING aid, bid, abalance";
	}
	else
	{
		my $k = existing_key();
		if ($added{$k}) { delete $added{$k}; }
		else { $gone{$k} = 1; }
		push @mix, "DELETE FROM T WHERE aid = $k RETURNING aid, abalance";
	}
}
my @sharded = map { (my $q = $_) =~ s/\bT\b/pgbench_accounts/; $q } @mix;
my @local = map { (my $q = $_) =~ s/\bT\b/acc_local/; $q } @mix;
my @got = run_marked_script($coord, 'postgres', '', \@sharded);
my @want = run_marked_script($coord, 'postgres', '', \@local);
compare_outputs("$ops statements through the coordinator answer as the local copy",
	\@sharded, \@got, \@want, 'sharded', 'local');

my $digest = q{SELECT count(*), md5(string_agg(format('%s:%s:%s:%s', aid, bid, abalance, filler), ','
	ORDER BY aid)) FROM };
is( $coord->safe_psql('postgres', $digest . 'pgbench_accounts'),
	$coord->safe_psql('postgres', $digest . 'acc_local'),
	'the sharded table equals the local copy');

my $dup = $b[1];    # the first key of shard2 the mix left in place
$dup++ until exists_key($dup);
my ($ret, $out, $err) = $coord->psql('postgres',
	"INSERT INTO pgbench_accounts VALUES ($dup, 1, 0, '')");
like($err, qr/duplicate key value violates unique constraint "pgbench_accounts_aid"/,
	"a duplicate key is refused by the shard's unique forein index");

# --- hints on the shards --------------------------------------------------

for my $i (1 .. $nshards)
{
	my $s = $shards[ $i - 1 ];
	my ($lookups, $hits, $fallbacks) = split /\|/,
	  $s->safe_psql('postgres',
		"SELECT lookups, hint_hits, fallbacks FROM forein_stats('pgbench_accounts_aid')");
	my ($dl, $dh) = ($lookups - $before[ $i - 1 ][0], $hits - $before[ $i - 1 ][1]);
	note "shard$i: $dl lookups, $dh from hints, $fallbacks fallbacks in all";
	cmp_ok($dl, '>', 0, "shard$i: lookups through the coordinator");
	cmp_ok($dh, '>=', $dl / 2, "shard$i: most of them started from hints ($dh of $dl)");
	is($s->safe_psql('postgres', "SELECT forein_check('pgbench_accounts_aid', true)"),
		'', "shard$i: forein_check(heapallindexed) passes");
}

$coord->stop;
$_->stop for @shards;
done_testing();

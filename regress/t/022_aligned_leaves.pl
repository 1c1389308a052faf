# Aligned leaf bounds (forein_separator.c): builds and splits cut leaves
# where the separator's offload word has the most trailing zero bits, within
# 1/16 of the fill target, and for one integer-like key column pick the most
# aligned value between the two keys.  Checked:
#  - dense int4 keys, built: every leaf bound is a multiple of 32, the
#    switch_lpm table spends about two entries per leaf (about nine with
#    align_leaves = off), the leaf count stays within the window;
#  - sparse int8 keys: bounds are values between keys, not keys, aligned;
#  - DESC, int2, date and timestamp columns: aligned in word space;
#  - random-order inserts: leaf splits choose aligned bounds too;
#  - answers equal btree's everywhere, every key and its neighbours are
#    found by point lookups (skewed keys too), forein_check(heapallindexed) passes,
#    a unique index enforces uniqueness at a synthetic bound;
#  - next to -infinity, bounds stay within the type's range;
#  - the reloption: align_leaves = off, bad values, REINDEX after ALTER.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use ForeinTAP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $seed = test_seed();
my $node = forein_node('aligned_leaves');

# Random rows in the setup come from setseed, so the seed replays them.
my $setseed = sprintf('%.6f', ($seed % 1_000_000) / 1_000_000);
$node->safe_psql(
	'postgres', qq{
	SELECT setseed($setseed);
	CREATE TABLE da (k int4);
	INSERT INTO da SELECT g FROM generate_series(1, 200000) g ORDER BY random();
	CREATE TABLE dof (LIKE da);
	INSERT INTO dof SELECT * FROM da;
	CREATE TABLE db (LIKE da);
	INSERT INTO db SELECT * FROM da;
	CREATE INDEX da_k ON da USING forein (k);
	CREATE INDEX dof_k ON dof USING forein (k) WITH (align_leaves = off);
	CREATE INDEX db_k ON db USING btree (k);

	CREATE TABLE sa (k int8);
	INSERT INTO sa SELECT DISTINCT (random() * 2e12)::int8 - 1000000000000
	  FROM generate_series(1, 100000);
	CREATE TABLE sb (LIKE sa);
	INSERT INTO sb SELECT * FROM sa;
	CREATE UNIQUE INDEX sa_k ON sa USING forein (k);
	CREATE UNIQUE INDEX sb_k ON sb USING btree (k);

	CREATE TABLE xa (k int4, s int2, d date, t timestamp);
	INSERT INTO xa SELECT g, (g % 30000)::int2, date '2000-01-01' + g,
	  timestamp '2020-01-01' + g * interval '1 second'
	  FROM generate_series(1, 60000) g;
	CREATE TABLE xb AS SELECT * FROM xa;
	CREATE INDEX xa_kdesc ON xa USING forein (k DESC);
	CREATE INDEX xa_s ON xa USING forein (s);
	CREATE INDEX xa_d ON xa USING forein (d);
	CREATE INDEX xa_t ON xa USING forein (t);
	CREATE INDEX xb_kdesc ON xb (k DESC);
	CREATE INDEX xb_s ON xb (s);
	CREATE INDEX xb_d ON xb (d);
	CREATE INDEX xb_t ON xb (t);

	-- leaf splits: random-order inserts into indexed, empty tables
	CREATE TABLE ia (k int4);
	CREATE TABLE iof (k int4);
	CREATE INDEX ia_k ON ia USING forein (k);
	CREATE INDEX iof_k ON iof USING forein (k) WITH (align_leaves = off);
	INSERT INTO ia SELECT k FROM da;
	INSERT INTO iof SELECT k FROM da;
	VACUUM ANALYZE da; VACUUM ANALYZE dof; VACUUM ANALYZE db;
	VACUUM ANALYZE sa; VACUUM ANALYZE sb; VACUUM ANALYZE xa; VACUUM ANALYZE xb;
	VACUUM ANALYZE ia; VACUUM ANALYZE iof;
});

# Leaves, leaves with a high bound, and those whose bound word is a
# multiple of 2^bits.
sub bounds
{
	my ($index, $bits) = @_;
	return $node->safe_psql(
		'postgres', qq{
		SELECT count(*), count(*) FILTER (WHERE has_hi),
		       count(*) FILTER (WHERE has_hi AND hi % (2::numeric ^ $bits) = 0)
		FROM forein_debug_page_intervals('$index') WHERE level = 0});
}

# The mean number of trailing zero bits of the leaves' high bound words.
sub mean_trailing_zeros
{
	my ($index) = @_;
	return $node->safe_psql(
		'postgres', qq{
		SELECT round(avg((SELECT max(b) FROM generate_series(0, 63) b
		                  WHERE hi % (2::numeric ^ b) = 0)), 2)
		FROM forein_debug_page_intervals('$index') WHERE level = 0 AND has_hi});
}

# Built, dense: every bound a multiple of 32 (a 44-item window always holds
# one); the same tree without alignment is not.
my ($leaves, $with_hi, $aligned) = split /\|/, bounds('da_k', 5);
cmp_ok($with_hi, '>', 400, "dense build: $leaves leaves");
is($aligned, $with_hi, 'dense build: every leaf bound is a multiple of 32');
my ($leaves_off, $with_hi_off, $aligned_off) = split /\|/, bounds('dof_k', 5);
cmp_ok($aligned_off, '<', $with_hi_off / 2,
	"align_leaves = off: $aligned_off of $with_hi_off bounds are multiples of 32");
# Cuts move at most 1/16 of the target either way.
cmp_ok(abs($leaves - $leaves_off), '<=', $leaves_off / 15,
	"leaf count $leaves within the window of $leaves_off");

# Sparse int8 keys: bounds lie in the gaps, most aligned.
my $tz_sparse = mean_trailing_zeros('sa_k');
cmp_ok($tz_sparse, '>=', 12, "sparse int8: bound words have $tz_sparse trailing zero bits on average");
is( $node->safe_psql(
		'postgres', q{
		SELECT count(*) FROM forein_debug_page_intervals('sa_k') p
		WHERE level = 0 AND has_hi AND EXISTS (SELECT 1 FROM sa WHERE k = p.hi_key::int8)}),
	'0',
	'sparse int8: no bound is a key of the table');

# DESC and the other integer-like types: aligned in word space.
for my $index (qw(xa_kdesc xa_s xa_d))
{
	my ($l, $h, $a) = split /\|/, bounds($index, 5);
	is($a, $h, "$index: all $h leaf bounds' words are multiples of 32");
}
my ($lt, $ht, $at) = split /\|/, bounds('xa_t', 20);
is($at, $ht, "xa_t: all $ht leaf bounds are multiples of 2^20 microseconds");

# Splits: random-order inserts; a split's window (1/16 page either side of
# its target) always spans 32 consecutive values.
my ($li, $hi_i, $ai) = split /\|/, bounds('ia_k', 5);
is($ai, $hi_i, "random inserts: all $hi_i leaf bounds after splits are multiples of 32");
my ($lio, $hio, $aio) = split /\|/, bounds('iof_k', 5);
cmp_ok($aio, '<', $hio / 2, "random inserts, align_leaves = off: $aio of $hio bounds");

# The switch_lpm table: entries per leaf.
SKIP:
{
	skip 'offload is inactive (forein not preloaded)', 2
	  if $node->safe_psql('postgres', "SELECT backend FROM forein_stats('da_k')") eq 'inactive';
	my $per_leaf = sub {
		my ($index) = @_;
		$node->safe_psql('postgres', "SELECT forein_refresh('$index')");
		return $node->safe_psql(
			'postgres', qq{
			SELECT round(count(*)::numeric / (SELECT count(*) FROM forein_debug_page_intervals('$index')
			                                  WHERE level = 0), 2)
			FROM forein_offload_entries('$index') WHERE level = 0});
	};
	my ($on, $off) = ($per_leaf->('da_k'), $per_leaf->('dof_k'));
	cmp_ok($on, '<=', 2.5, "switch_lpm: $on entries per aligned leaf");
	cmp_ok($off, '>=', 6, "switch_lpm: $off entries per leaf with align_leaves = off");
}

# Answers equal btree's: points at, around and between bounds, ranges
# across them.
my $force = "SET enable_seqscan = off;\nSET enable_bitmapscan = off;\n";
sub compare_with_btree
{
	my ($name, $f, $b, $index, $col, $cast) = @_;
	my @b = split /\n/, $node->safe_psql(
		'postgres', qq{
		SELECT hi_key FROM forein_debug_page_intervals('$index')
		WHERE level = 0 AND has_hi ORDER BY random() LIMIT 30});
	my @q;
	for my $v (@b)
	{
		push @q, "SELECT count(*) FROM %T WHERE $col = '$v'::$cast",
		  "SELECT count(*) FROM %T WHERE $col < '$v'::$cast",
		  "SELECT $col FROM %T WHERE $col >= '$v'::$cast ORDER BY $col LIMIT 3",
		  "SELECT $col FROM %T WHERE $col < '$v'::$cast ORDER BY $col DESC LIMIT 3";
	}
	my @qf = map { (my $s = $_) =~ s/%T/$f/g; $s } @q;
	my @qb = map { (my $s = $_) =~ s/%T/$b/g; $s } @q;
	my @got = run_marked_script($node, 'postgres', $force, \@qf);
	my @want = run_marked_script($node, 'postgres', $force, \@qb);
	compare_outputs($name, \@q, \@got, \@want, 'forein', 'btree');
}
compare_with_btree('dense int4 = btree', 'da', 'db', 'da_k', 'k', 'int4');
compare_with_btree('after splits = btree', 'ia', 'db', 'ia_k', 'k', 'int4');
compare_with_btree('sparse int8 = btree', 'sa', 'sb', 'sa_k', 'k', 'int8');
compare_with_btree('int4 DESC = btree', 'xa', 'xb', 'xa_kdesc', 'k', 'int4');
compare_with_btree('int2 = btree', 'xa', 'xb', 'xa_s', 's', 'int2');
compare_with_btree('date = btree', 'xa', 'xb', 'xa_d', 'd', 'date');
compare_with_btree('timestamp = btree', 'xa', 'xb', 'xa_t', 't', 'timestamp');

# Every key, and the values next to it, by point lookups (a nested loop
# probes the index once per outer row): the leaf search interpolates
# between a page's bounds, so skewed keys, whose guesses land far from the
# answer, must still find exactly btree's rows.  ska's keys cluster near
# zero and thin out exponentially.
$node->safe_psql(
	'postgres', q{
	CREATE TABLE ska (k int8);
	INSERT INTO ska SELECT DISTINCT exp(random() * 40)::int8 FROM generate_series(1, 60000);
	INSERT INTO ska SELECT 1000000000000 + g FROM generate_series(1, 5000) g;
	CREATE TABLE skb AS SELECT * FROM ska;
	CREATE INDEX ska_k ON ska USING forein (k);
	CREATE INDEX skb_k ON skb (k);
	VACUUM ANALYZE ska; VACUUM ANALYZE skb;
});
sub probe_every_key
{
	my ($index, $f, $b) = @_;
	my $set = "SET enable_seqscan = off; SET enable_bitmapscan = off;\n"
	  . "SET enable_hashjoin = off; SET enable_mergejoin = off;\n";
	my $sql = sub {
		my ($t) = @_;
		return qq{SELECT d, count(x.k) FROM generate_series(-1, 1) d CROSS JOIN $b p,
			  LATERAL (SELECT k FROM $t WHERE $t.k = p.k + d) x GROUP BY d ORDER BY d};
	};
	$node->safe_psql('postgres', "SELECT forein_refresh('$index')")
	  if $node->safe_psql('postgres', "SELECT backend FROM forein_stats('$index')") ne 'inactive';
	my $plan = $node->safe_psql('postgres', $set . 'EXPLAIN (COSTS OFF) ' . $sql->($f));
	like($plan, qr/Index (Only )?Scan using $index/, "$index: the probes use the forein index");
	my $got = $node->safe_psql('postgres', $set . $sql->($f));
	my $want = $node->safe_psql('postgres', $set . $sql->($b));
	is($got, $want, "$index: every key and its neighbours found as btree finds them");
}
probe_every_key('da_k', 'da', 'db');
probe_every_key('sa_k', 'sa', 'sb');
probe_every_key('ska_k', 'ska', 'skb');

for my $index (qw(da_k dof_k sa_k ska_k xa_kdesc xa_s xa_d xa_t ia_k iof_k))
{
	$node->safe_psql('postgres', "SELECT forein_check('$index', true)");
}
pass('forein_check(heapallindexed) passes on every index');

# Next to -infinity the bound is the finite key: the most aligned value
# between them is out of the type's range for keys before 2000 (date_out
# printed a year in the millions, timestamp_out failed).
$node->safe_psql(
	'postgres', q{
	CREATE TABLE inf (d date, t timestamp);
	INSERT INTO inf SELECT '-infinity', '-infinity' FROM generate_series(1, 380);
	INSERT INTO inf SELECT date '1990-01-01' + g, timestamp '1990-01-01' + g * interval '1 second'
	  FROM generate_series(1, 3000) g;
	INSERT INTO inf VALUES ('infinity', 'infinity');
	CREATE INDEX inf_d ON inf USING forein (d) WITH (deduplicate_items = off);
	CREATE INDEX inf_t ON inf USING forein (t) WITH (deduplicate_items = off);
});
for my $index (qw(inf_d inf_t))
{
	my ($ok, $bounds) = (1, '');
	eval {
		$bounds = $node->safe_psql('postgres',
			"SELECT string_agg(hi_key, ',' ORDER BY lo) FROM forein_debug_page_intervals('$index') WHERE level = 0 AND has_hi");
		1;
	} or $ok = 0;
	my @bad = grep { !/^(19\d\d-|infinity$)/ } split /,/, $bounds;
	ok($ok && $bounds ne '' && !@bad, "$index: every leaf bound lies between two of its keys ($bounds)");
	$node->safe_psql('postgres', "SELECT forein_check('$index', true)");
}
is( $node->safe_psql(
		'postgres', q{SET enable_seqscan = off; SET enable_bitmapscan = off;
		SELECT count(*) FILTER (WHERE t < '1990-01-01 00:00:05'), count(*) FILTER (WHERE d < '1990-01-05') FROM inf
		WHERE t < '1990-01-01 00:00:05' OR d < '1990-01-05'}),
	'384|383', 'answers next to -infinity');

# Uniqueness at a synthetic bound: its value is in no row; the first insert
# takes it, the second conflicts.
my $gap = $node->safe_psql(
	'postgres', q{
	SELECT hi_key FROM forein_debug_page_intervals('sa_k') WHERE level = 0 AND has_hi
	ORDER BY blkno LIMIT 1});
$node->safe_psql('postgres', "INSERT INTO sa VALUES ($gap)");
my ($rc, $out, $err) = $node->psql('postgres', "INSERT INTO sa VALUES ($gap)");
like($err, qr/duplicate key value violates unique constraint "sa_k"/,
	'a unique index rejects a second row at a synthetic bound');
is($node->safe_psql('postgres', "SET enable_seqscan = off; SELECT count(*) FROM sa WHERE k = $gap"),
	'1', 'the row at the bound is found');
$node->safe_psql('postgres', "SELECT forein_check('sa_k', true)");

# The reloption.
($rc, $out, $err) =
  $node->psql('postgres', "CREATE INDEX ON da USING forein (k) WITH (align_leaves = maybe)");
like($err, qr/invalid value for boolean option "align_leaves": maybe/, 'align_leaves takes booleans');
$node->safe_psql('postgres', 'ALTER INDEX da_k SET (align_leaves = off); REINDEX INDEX da_k');
(undef, my $h_off, my $a_off) = split /\|/, bounds('da_k', 5);
cmp_ok($a_off, '<', $h_off / 2, 'ALTER INDEX SET (align_leaves = off) and REINDEX: bounds not aligned');
$node->safe_psql('postgres', 'ALTER INDEX da_k RESET (align_leaves); REINDEX INDEX da_k');
(undef, my $h_on, my $a_on) = split /\|/, bounds('da_k', 5);
is($a_on, $h_on, 'RESET and REINDEX: aligned again');

$node->stop;
done_testing();

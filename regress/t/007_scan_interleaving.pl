# Scans paused in the middle of an index while other sessions change it:
# an open cursor keeps returning exactly its snapshot's rows, forward and
# backward, while (a) committed inserts split the very leaf pages it is
# reading, and (b) VACUUM deletes the emptied pages next to its position.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use ForeinTAP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = forein_node('interleave');
$node->safe_psql(
	'postgres', q{
	CREATE TABLE s (k int8, pad text) WITH (autovacuum_enabled = off);
	INSERT INTO s SELECT g * 10, 'x' FROM generate_series(1, 100000) g;
	CREATE INDEX s_k ON s USING forein (k);
	VACUUM ANALYZE s;
});

my $cur = $node->background_psql('postgres');
$cur->query_safe('SET enable_seqscan = off');
$cur->query_safe('SET enable_bitmapscan = off');

sub fetch
{
	my ($what) = @_;
	my $out = $cur->query_safe("FETCH $what FROM c");
	return [ split /\n/, $out ];
}

sub range_list { my ($lo, $hi, $step) = @_; my @r; for (my $v = $lo; $v <= $hi; $v += $step) { push @r, $v; } return \@r; }

# (a) splits under a paused scan, index scan and index-only scan
for my $mode ('Index Scan', 'Index Only Scan')
{
	my $cols = $mode eq 'Index Scan' ? 'k, pad' : 'k';
	$cur->query_safe('SET enable_indexonlyscan = ' . ($mode eq 'Index Scan' ? 'off' : 'on'));
	like($cur->query_safe("EXPLAIN (COSTS OFF) SELECT $cols FROM s WHERE k BETWEEN 400000 AND 420000 ORDER BY k"),
		qr/\Q$mode\E using s_k/, "cursor plan is an $mode of s_k");
	$cur->query_safe('BEGIN ISOLATION LEVEL REPEATABLE READ');
	$cur->query_safe("DECLARE c SCROLL CURSOR FOR SELECT k FROM (SELECT $cols FROM s WHERE k BETWEEN 400000 AND 420000 ORDER BY k) q");
	my @got = @{ fetch(50) };

	# 3000 new keys between the cursor's next rows: its pages split many times
	$node->safe_psql('postgres',
		'INSERT INTO s SELECT 400500 + g, \'n\' FROM generate_series(1, 3000) g');
	push @got, @{ fetch(100) };
	# and keys before its position: pages it already left split too
	$node->safe_psql('postgres',
		'INSERT INTO s SELECT 400000 + g % 490, \'b\' FROM generate_series(1, 3000) g');
	push @got, @{ fetch('ALL') };
	is_deeply(\@got, range_list(400000, 420000, 10),
		"$mode: forward fetches return exactly the snapshot's rows across splits");

	# backward over the split pages
	my @back = @{ fetch('BACKWARD ALL') };
	is_deeply(\@back, [ reverse @{ range_list(400000, 420000, 10) } ],
		"$mode: backward fetches too");
	$node->safe_psql('postgres',
		'INSERT INTO s SELECT 410000 + g, \'m\' FROM generate_series(1, 3000) g');
	my @again = @{ fetch('FORWARD 300') };
	is_deeply(\@again, range_list(400000, 402990, 10), "$mode: forward again after more splits");
	$cur->query_safe('COMMIT');
	$node->safe_psql('postgres', "DELETE FROM s WHERE pad <> 'x'");
}
$node->safe_psql('postgres', 'VACUUM s');

# (b) a cursor parked just before a range emptied and vacuumed away: the
# rows were deleted and committed before its snapshot, so VACUUM may remove
# them and delete the pages while the scan sits next to them
$node->safe_psql('postgres', 'DELETE FROM s WHERE k > 200000 AND k <= 800000');
for my $dir ('ASC', 'DESC')
{
	$cur->query_safe('SET enable_indexonlyscan = off');
	$cur->query_safe('BEGIN');
	$cur->query_safe("DECLARE c SCROLL CURSOR FOR SELECT k FROM s WHERE k > 199000 AND k <= 801000 ORDER BY k $dir");
	my @got = @{ fetch(20) };
	my ($vret, $vout, $verbose) = $node->psql('postgres', 'VACUUM (VERBOSE) s');
	is($vret, 0, "$dir: VACUUM while the cursor is parked");
	like($verbose, qr/index "s_k": pages: \d+ in total, [1-9]\d* newly deleted/,
		"$dir: VACUUM deleted index pages next to the cursor") or diag $verbose;
	push @got, @{ fetch('ALL') };
	my @want = (@{ range_list(199010, 200000, 10) }, @{ range_list(800010, 801000, 10) });
	@want = reverse @want if $dir eq 'DESC';
	is_deeply(\@got, \@want, "$dir cursor across a range VACUUM emptied meanwhile");
	my @back = @{ fetch('BACKWARD 150') };
	my @wantb = reverse @want[ $#want - 149 .. $#want ];
	is_deeply(\@back, \@wantb, "$dir cursor backward over the deleted pages");
	$cur->query_safe('COMMIT');
	# refill part of the range (pages may be reused) for the next round
	$node->safe_psql('postgres', 'INSERT INTO s SELECT 500000 + g, \'r\' FROM generate_series(1, 20000) g');
	$node->safe_psql('postgres', "DELETE FROM s WHERE pad = 'r'");
}
$node->safe_psql('postgres', 'VACUUM s');
my ($ret, $out, $err) = $node->psql('postgres', "SELECT forein_check('s_k', true)");
is($ret, 0, 'forein_check(heapallindexed) after all that') or diag $err;
is($node->safe_psql('postgres', 'SET enable_seqscan = off; SET enable_bitmapscan = off; SELECT count(*) FROM s WHERE k > 0'),
	'40000', 'index count equals the rows left');

$cur->quit;
$node->stop;
done_testing();

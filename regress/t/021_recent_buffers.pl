# Hinted reads remember which shared buffer last held each hinted node and
# pin it again with ReadRecentBuffer, skipping the buffer table
# (forein_read_hinted in forein_utils.c).  The shortcut must not show:
#  - the statistics of a remembered read equal those of a plain one
#    (pg_stat_get_xact_blocks_fetched/hit, EXPLAIN BUFFERS);
#  - with a pool of 32 buffers, so that remembered buffers hold other blocks
#    most of the time, answers equal btree's;
#  - after REINDEX (new relfilenode, same block numbers) too;
#  - with more hinted indexes in one session than a backend remembers
#    buffers for, and with an index growing past its remembered array.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use ForeinTAP;
use JSON::PP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $seed = test_seed();
# The tree does not change, so the worker's refreshes install the same
# tables as forein_refresh.
my $node = forein_node('recent_buffers', conf => "shared_buffers = 16MB\n");
$node->safe_psql(
	'postgres', q{
	CREATE TABLE r (id int4, k int8);
	INSERT INTO r SELECT g, g * 3 FROM generate_series(1, 200000) g;
	CREATE TABLE rb AS SELECT * FROM r;
	CREATE INDEX r_k ON r USING forein (k) WITH (offload = 'switch_lpm');
	CREATE INDEX rb_k ON rb USING btree (k);
	VACUUM ANALYZE r;
	VACUUM ANALYZE rb;
});
my $force = "SET enable_seqscan = off;\nSET enable_bitmapscan = off;\n"
  . "SET enable_hashjoin = off;\nSET enable_mergejoin = off;\n";
my $refresh = "SELECT forein_refresh('r_k')";
my $hits = "SELECT hint_hits FROM forein_stats('r_k')";

SKIP:
{
	skip 'offload is inactive (forein not preloaded)', 12
	  if $node->safe_psql('postgres', "SELECT backend FROM forein_stats('r_k')") eq 'inactive';

	cmp_ok($node->safe_psql('postgres', $refresh), '>', 0, 'switch_lpm table installed');

	# Statistics: in one transaction each key is looked up twice, first
	# through the buffer table, then through the remembered buffer.
	my @keys = map { 3 * (1 + int(rand(200000))) } 1 .. 20;
	my $counts = 'SELECT pg_stat_get_xact_blocks_fetched(\'r_k\'::regclass)'
	  . " || ' ' || pg_stat_get_xact_blocks_hit('r_k'::regclass)";
	my @q = ('SELECT count(*) FROM r WHERE k >= 0', $hits, 'BEGIN', $counts);
	for my $k (@keys)
	{
		push @q, "SELECT id FROM r WHERE k = $k", $counts,
		  "SELECT id FROM r WHERE k = $k", $counts;
	}
	push @q, 'COMMIT', $hits;
	my @out = run_marked_script($node, 'postgres', $force, \@q);
	chomp @out;
	my ($hits0, $hits1) = ($out[1], $out[-1]);
	my @c = map { [ split ' ', $out[ 3 + 2 * $_ ] ] } 0 .. 2 * @keys;
	my ($same, $all_hit, $right) = (0, 0, 0);
	for my $i (0 .. $#keys)
	{
		my ($c0, $c1, $c2) = @c[ 2 * $i .. 2 * $i + 2 ];
		my ($first, $second) = ($c1->[0] - $c0->[0], $c2->[0] - $c1->[0]);
		$same++ if $first == $second && $first > 0;
		$all_hit++ if $c2->[1] - $c0->[1] == $first + $second;
		$right++ if $out[ 4 + 4 * $i ] eq $keys[$i] / 3 && $out[ 6 + 4 * $i ] eq $keys[$i] / 3;
	}
	is($hits1 - $hits0, 2 * @keys, 'every lookup started from its hint');
	is($right, scalar @keys, 'both lookups of each key found its row');
	is($same, scalar @keys,
		'a lookup through the remembered buffer counts the index blocks a plain one counts');
	is($all_hit, scalar @keys, 'and counts them as hits, as the buffers were cached');

	# EXPLAIN BUFFERS of the same query, twice in one session.
	my $explain = "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, FORMAT JSON) SELECT id FROM r WHERE k = $keys[0]";
	my @ex = run_marked_script($node, 'postgres', $force, [ $explain, $explain ]);
	my @blocks = map { decode_json($_)->[0]{Plan}{'Shared Hit Blocks'} } @ex;
	is($blocks[1], $blocks[0], "EXPLAIN BUFFERS: shared hit $blocks[0] both times");

	# Churn: 32 buffers for about 1,900 pages.  Keys repeat (a few hundred
	# distinct ones), so remembered buffers are tried and mostly found
	# holding another block by then.
	$node->append_conf('postgresql.conf', "shared_buffers = 256kB\n");
	$node->restart;
	cmp_ok($node->safe_psql('postgres', $refresh), '>', 0,
		'switch_lpm table installed after the restart');
	my @pool = map { int(rand(600010)) } 1 .. 300;
	my @queries;
	for (1 .. 600)
	{
		my $k = $pool[ int(rand(@pool)) ];
		push @queries, "SELECT id FROM %T WHERE k = $k";
	}
	my $list = join(', ', @pool);
	push @queries,
	  "SELECT count(*), sum(x.id) FROM unnest(ARRAY[$list]::int8[]) s(v) JOIN %T x ON x.k = s.v"
	  for 1 .. 3;
	my @f = map { (my $q = $_) =~ s/%T/r/g; $q } @queries;
	my @b = map { (my $q = $_) =~ s/%T/rb/g; $q } @queries;
	my @want = run_marked_script($node, 'postgres', $force, \@b);
	my @got = run_marked_script($node, 'postgres', $force, [ $hits, @f, $hits ]);
	my ($h0, $h1) = (shift @got, pop @got);
	compare_outputs('32 shared buffers: answers equal btree', \@queries, \@got, \@want,
		'forein', 'btree');
	cmp_ok($h1 - $h0, '>=', 600, 'the lookups started from hints (' . ($h1 - $h0) . ')');

	# REINDEX in the same session: the index's blocks have new buffer tags.
	my @r = run_marked_script($node, 'postgres', $force,
		[ @f[ 0 .. 99 ], 'REINDEX INDEX r_k', 'SELECT forein_refresh(\'r_k\') > 0', @f[ 0 .. 99 ] ]);
	my @before = @r[ 0 .. 99 ];
	my @after = @r[ 102 .. 201 ];
	compare_outputs('the same lookups before and after REINDEX in one session',
		[ @queries[ 0 .. 99 ] ], \@after, \@before, 'after', 'before');

	# More hinted indexes than a backend remembers buffers for (four,
	# FOREIN_RECENT_INDEXES), looked up in turn in one session, so their
	# arrays are forgotten and reused; and an index that grows past its
	# array (made for its size at the first lookup) while the session runs.
	# Back to 16MB of shared buffers: this needs no churn, and the six new
	# tables start autovacuum workers that, with the checkpointer, the
	# offload manager and this backend, can pin all of 32 buffers at once
	# on a loaded machine ("no unpinned buffers available": 3 runs in about
	# 40, all within five minutes).
	$node->append_conf('postgresql.conf', "shared_buffers = 16MB\n");
	$node->restart;
	$node->safe_psql('postgres',
		join('', map {
			"CREATE TABLE m$_ AS SELECT * FROM r WHERE id % 6 = $_;"
			  . "CREATE INDEX m${_}_k ON m$_ USING forein (k) WITH (offload = 'switch_lpm');"
			  . "SELECT forein_refresh('m${_}_k');"
		} 0 .. 5)
		  . q{CREATE TABLE grow (id int4, k int8);
		INSERT INTO grow SELECT g, g * 3 FROM generate_series(1, 10000) g;
		CREATE INDEX grow_k ON grow USING forein (k) WITH (offload = 'switch_lpm');
		SELECT forein_refresh('grow_k');});
	my (@mq, @mwant);
	for my $round (1 .. 3)
	{
		for my $t (0 .. 5)
		{
			for (1 .. 10)
			{
				my $id = 1 + int(rand(200000));
				push @mq, "SELECT id FROM m$t WHERE k = " . (3 * $id);
				push @mwant, $id % 6 == $t ? "$id\n" : '';
			}
		}
	}
	my @ids = map { 1 + int(rand(10000)) } 1 .. 20;
	push @mq, map { "SELECT id FROM grow WHERE k = " . (3 * $_) } @ids;
	push @mwant, map { "$_\n" } @ids;
	push @mq, 'INSERT INTO grow SELECT g, g * 3 FROM generate_series(10001, 400000) g',
	  "SELECT forein_refresh('grow_k') > 0",
	  "SELECT count(*) > 1024 FROM forein_debug_page_intervals('grow_k')";
	push @mwant, '', "t\n", "t\n";
	@ids = map { 300000 + int(rand(100001)) } 1 .. 40;
	push @mq, map { "SELECT id FROM grow WHERE k = " . (3 * $_) } @ids;
	push @mwant, map { "$_\n" } @ids;
	my $mhits = 'SELECT sum(hint_hits) FROM pg_class c, forein_stats(c.oid::regclass) s '
	  . "WHERE c.relname ~ '^(m[0-5]|grow)_k\$'";
	my @mgot = run_marked_script($node, 'postgres', $force, [ $mhits, @mq, $mhits ]);
	my ($mh0, $mh1) = (shift @mgot, pop @mgot);
	s/\n*$/\n/ for grep { $_ ne '' } @mgot;
	compare_outputs('six indexes in turn, and one growing past its array: the rows expected',
		\@mq, \@mgot, \@mwant, 'forein', 'expected');
	cmp_ok($mh1 - $mh0, '>=', 240, 'those lookups started from hints (' . ($mh1 - $mh0) . ')');
}

my ($ret, $out, $err) = $node->psql('postgres', "SELECT forein_check('r_k', true)");
is($ret, 0, "forein_check('r_k', heapallindexed)") or diag $err;

$node->stop;
done_testing();

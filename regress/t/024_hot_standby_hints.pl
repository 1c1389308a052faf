# Hot standby hints: a streaming standby's forein index keeps its own
# offload slot, refresh and sampling while WAL replay changes the tree
# (docs/postgresql.md, "Read replicas").
#
# The primary inserts rows that split many pages (random keys inside the
# range and keys appended past its end) while a standby session runs point
# lookups; after catch-up, with no forein_refresh on the standby, the
# standby's own offload worker installs an image of the new tree: point
# lookups are hinted (>= 90 %), start exactly at their leaf and answer as
# the primary does.  Two things tell a standby's worker that its image is
# out of date, and each is checked on its own:
#
#   - replay of forein's SPLIT, NEWROOT and UNLINK records counts a node
#     event for the slot (forein_slots_note_replayed_change): the standby
#     refreshes with no lookup at all;
#   - a lookup whose hint the tree has outgrown flags the slot, whatever
#     record replayed the change: checked with a primary that writes
#     generic WAL (forein loaded but not preloaded there).
#
# Sampling works on the standby (forein.sample_rate: sampled leaves get
# pinned in a small image), as do forein_stats, forein_refresh and
# EXPLAIN's hint counters, and the standby writes nothing to the index
# (its pages stay byte for byte the primary's).  Then the standby is
# promoted: it keeps serving hints and refreshes after its own splits.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use ForeinTAP;
use IPC::Run;
use JSON::PP qw(decode_json);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);

my $started = time;
my $seed = test_seed();

my $nrows = 200_000;         # k = 8 * g: 200,000 keys, a three-level tree
my $span = 8 * $nrows;
my $nlookups = 3000;         # point lookups per round

# nothing but the test changes the indexes (their pages are compared)
my $conf = "max_connections = 20\nshared_buffers = 32MB\nautovacuum = off\n";

my $primary = forein_node('primary', allows_streaming => 1, conf => $conf);
$primary->safe_psql(
	'postgres', qq{
	CREATE EXTENSION pageinspect;
	CREATE TABLE t (k int8, v int8);
	INSERT INTO t SELECT 8 * g, g FROM generate_series(1, $nrows) g;
	CREATE INDEX t_k ON t USING forein (k);
	-- a small image (12 LPM entries): the sampled leaves are pinned in it
	CREATE TABLE h (k int8);
	INSERT INTO h SELECT g FROM generate_series(1, 100000) g;
	CREATE INDEX h_k ON h USING forein (k) WITH (offload_capacity = 12);
	VACUUM ANALYZE t, h;
});
my $standby = forein_standby($primary, 'standby');
$primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert'));
note sprintf('standby up (%.1f s)', time - $started);

my $nested = 'SET enable_seqscan = off; SET enable_bitmapscan = off; '
  . 'SET enable_hashjoin = off; SET enable_mergejoin = off;';
my $heap = 'SET enable_indexscan = off; SET enable_indexonlyscan = off; '
  . 'SET enable_bitmapscan = off;';

# The answers to point lookups of @$keys, one nested-loop index probe each:
# how many were found, and a digest of every (key, value) in order.
sub lookup_query
{
	my ($keys) = @_;
	my $arr = join(',', @$keys);
	return "SELECT count(t.v), md5(string_agg(s.x || ':' || coalesce(t.v::text, '-'), ',' ORDER BY s.i))"
	  . " FROM unnest('{$arr}'::int8[]) WITH ORDINALITY s(x, i) LEFT JOIN t ON t.k = s.x";
}

my $stats_query =
  "SELECT lookups, hint_hits, move_rights, fallbacks FROM forein_stats('t_k')";

# Runs the lookups on node; returns the answer and the forein_stats deltas
# (lookups, hits, move_rights, fallbacks) around them, from the same session.
sub lookup_round
{
	my ($node, $keys) = @_;
	my ($before, $answer, $after) = run_marked_script($node, 'postgres', $nested,
		[ $stats_query, lookup_query($keys), $stats_query ]);
	my @b = split(/\|/, $before);
	my @a = split(/\|/, $after);
	chomp $answer;
	return ($answer, map { $a[$_] - $b[$_] } 0 .. 3);
}

sub random_keys
{
	my ($n, $max, $step) = @_;
	return [ map { $step * (1 + int(rand($max / $step))) } 1 .. $n ];
}

# Random keys up to $max and the low key of every leaf of node's t_k, so
# that every change since the node's last image is met by some lookup.
sub keys_and_leaves
{
	my ($node, $n, $max) = @_;
	my $keys = random_keys($n, $max, 1);
	push @$keys, split(/\n/, $node->safe_psql('postgres',
		"SELECT lo_key FROM forein_debug_page_intervals('t_k') WHERE level = 0 AND has_lo"));
	return $keys;
}

# A round of lookups on node whose hit rate is checked, and its answers
# against $want_node's (with index scans, or heap scans with heap => 1).
# exact => 1: the image is current, so no lookup moves right or falls back.
sub checked_round
{
	my ($node, $label, $keys, $want_node, %opt) = @_;
	my ($answer, $lookups, $hits, $moves, $fallbacks) = lookup_round($node, $keys);
	diag sprintf('%s: %d lookups, %d hinted (%.1f%%), %d move-rights, %d fallbacks (%.1f s)',
		$label, $lookups, $hits, 100 * $hits / ($lookups || 1), $moves, $fallbacks,
		time - $started);
	my $want = $want_node->safe_psql('postgres',
		($opt{heap} ? $heap : $nested) . "\n" . lookup_query($keys));
	is($answer, $want, "$label: answers equal the " . ($opt{heap} ? 'heap\'s' : 'primary\'s'));
	is($lookups, scalar(@$keys), "$label: one lookup per key");
	cmp_ok($hits, '>=', 0.9 * $lookups, "$label: at least 90% of the lookups hinted");
	is($moves + $fallbacks, 0,
		"$label: the image is current (no move-right, no fallback)")
	  if $opt{exact};
	return;
}

# The node's image names every live leaf of its tree as it is now (a
# refresh ran after the last split), at level 0; reads, refreshes nothing.
my $image_current = "SELECT NOT EXISTS (SELECT 1 FROM forein_debug_page_intervals('t_k') p"
  . " WHERE p.level = 0 AND p.blkno NOT IN"
  . " (SELECT node FROM forein_offload_entries('t_k') WHERE level = 0))";

# 1. The standby's first image: its first lookup takes a slot there and the
# standby's offload worker computes the image.
$standby->safe_psql('postgres',
	"$nested SET forein.sample_rate = 0; SELECT v FROM t WHERE k = 8; SELECT k FROM h WHERE k = 1;");
$standby->poll_query_until('postgres',
	"SELECT bool_and(status = 'active') FROM (SELECT status FROM forein_stats('t_k')"
	  . " UNION ALL SELECT status FROM forein_stats('h_k')) s")
  or die 'the standby computed no first image';
cmp_ok($standby->safe_psql('postgres',
		"SELECT max(level) FROM forein_debug_page_intervals('t_k')"),
	'>=', 2, 'the tree has inner levels');
checked_round($standby, 'standby, first image', random_keys($nlookups, $span + 1000, 1),
	$primary, exact => 1);

# EXPLAIN (ANALYZE) on the standby shows the scan's hint counters, the same
# events forein_stats counts.
{
	my $keys = random_keys(500, $span, 8);
	my ($before, $json, $after) = run_marked_script($standby, 'postgres', $nested,
		[ $stats_query, 'EXPLAIN (ANALYZE, FORMAT JSON) ' . lookup_query($keys), $stats_query ]);
	my @b = split(/\|/, $before);
	my @a = split(/\|/, $after);
	my @scans;
	my $walk;
	$walk = sub {
		my ($plan) = @_;
		push @scans, $plan if ($plan->{'Index Name'} // '') eq 't_k';
		$walk->($_) for @{ $plan->{Plans} // [] };
	};
	$walk->(decode_json($json)->[0]{Plan});
	is(scalar(@scans), 1, 'standby EXPLAIN: one scan of t_k');
	is($scans[0]{'Hint Lookups'}, 500, 'standby EXPLAIN: Hint Lookups');
	is($scans[0]{'Hint Hits'}, $a[1] - $b[1],
		'standby EXPLAIN: Hint Hits equal the forein_stats delta');
	cmp_ok($scans[0]{'Hint Hits'}, '>=', 450, 'standby EXPLAIN: hinted');
}

# 2. The primary splits pages (random keys between the old ones, and keys
# appended past the end) in eight transactions, while a standby session
# looks up old keys, whose rows do not change.
my $before_blocks = $primary->safe_psql('postgres',
	"SELECT pg_relation_size('t_k') / 8192");
my $sqlfile = "$PostgreSQL::Test::Utils::tmp_check/024_inserts.sql";
{
	my $sql = sprintf("SELECT setseed(%.6f);\n", ($seed % 1_000_000) / 1_000_000);
	for my $i (0 .. 7)
	{
		my $lo = $nrows + 1 + $i * 12_500;
		my $hi = $nrows + ($i + 1) * 12_500;
		$sql .= "INSERT INTO t SELECT x, -x FROM (SELECT 1 + (random() * ($span - 2))::int8 AS x"
		  . " FROM generate_series(1, 25000)) s WHERE x % 8 <> 0;\n"
		  . "INSERT INTO t SELECT 8 * g, g FROM generate_series($lo, $hi) g;\n";
	}
	open(my $fh, '>', $sqlfile) or die "$sqlfile: $!";
	print $fh $sql;
	close $fh;
}
my ($in_out, $in_err) = ('', '');
my $inserts = IPC::Run::start(
	[ 'psql', '-XAtq', '-v', 'ON_ERROR_STOP=1', '-d', $primary->connstr('postgres'),
		'-f', $sqlfile ],
	'>', \$in_out, '2>', \$in_err);
my ($rounds, $old_keys, $answers, %sum) = (0, [], []);
while ($rounds < 3 || ($inserts->pumpable && $rounds < 40))
{
	my $keys = random_keys(1000, $span, 8);
	my ($answer, @d) = lookup_round($standby, $keys);
	push @$old_keys, $keys;
	push @$answers, $answer;
	$sum{$_} += shift @d for qw(lookups hits moves fallbacks);
	$rounds++;
	$inserts->pump_nb if $inserts->pumpable;
}
$inserts->finish or die "inserts on the primary failed:\n$in_err";
diag sprintf('standby during the inserts: %d rounds, %d lookups, %d hinted (%.1f%%), %d move-rights, %d fallbacks (%.1f s)',
	$rounds, $sum{lookups}, $sum{hits}, 100 * $sum{hits} / ($sum{lookups} || 1),
	$sum{moves}, $sum{fallbacks}, time - $started);
cmp_ok($sum{hits}, '>=', 0.9 * $sum{lookups},
	'standby during the inserts: at least 90% of the lookups hinted');
my @queries = map { lookup_query($_) } @$old_keys;
my @want = run_marked_script($primary, 'postgres', $nested, \@queries);
chomp @want;
compare_outputs('standby during the inserts: answers equal the primary\'s',
	\@queries, $answers, \@want, 'standby', 'primary');

$primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert'));
my $after_blocks = $primary->safe_psql('postgres',
	"SELECT pg_relation_size('t_k') / 8192");
note "t_k: $before_blocks blocks before the inserts, $after_blocks after";
cmp_ok($after_blocks, '>=', 2 * $before_blocks, 'the inserts split many pages');

# 3. Caught up: with no lookup on the standby since and no forein_refresh
# there, the replayed splits have the standby's worker install an image of
# the new tree; lookups over the whole grown key range, one in every leaf
# among them, start at their leaf.
$standby->poll_query_until('postgres', $image_current)
  or die 'the standby did not refresh its image of t_k after replaying splits';
diag sprintf('standby refreshed by itself (%.1f s)', time - $started);
checked_round($standby, 'standby after its own refresh',
	keys_and_leaves($standby, $nlookups, $span + 100_000 * 8), $primary, exact => 1);

# 4. Sampling on the standby: the small image of h_k holds no leaf until
# lookups sample one; then the standby's worker (enough new samples)
# pins the sampled leaf.
my $hot_leaf = $standby->safe_psql('postgres',
	"SELECT blkno FROM forein_debug_page_intervals('h_k') WHERE level = 0"
	  . " AND lo <= forein_debug_word(30000::int8)"
	  . " AND (hi_inf OR hi > forein_debug_word(30000::int8))");
is($standby->safe_psql('postgres',
		"SELECT count(*) FROM forein_offload_entries('h_k') WHERE level = 0 AND node = $hot_leaf"),
	0, 'h_k: the leaf of key 30000 is not in the standby\'s image yet');
$standby->safe_psql('postgres',
	"$nested SET forein.sample_rate = 1;"
	  . ' SELECT count(*) FROM generate_series(1, 9000) s(x) JOIN h ON h.k = 30000 + x % 16');
$standby->poll_query_until('postgres',
	"SELECT count(*) > 0 FROM forein_offload_entries('h_k') WHERE level = 0 AND node = $hot_leaf")
  or die 'the standby did not pin its sampled leaf';
pass('h_k: the standby\'s worker pinned the leaf its lookups sampled');

# 5. forein_refresh and forein_stats on the standby; and the standby wrote
# nothing to the indexes: their pages equal the primary's.
is($standby->safe_psql('postgres',
		"SELECT forein_refresh('t_k') > 0, status FROM forein_stats('t_k')"),
	't|active', 'forein_refresh and forein_stats on the standby');
my $pages = q{SELECT string_agg(md5(get_raw_page('t_k', b::int4)), ',' ORDER BY b)
	FROM generate_series(0, pg_relation_size('t_k') / 8192 - 1) b};
$primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert'));
is($standby->safe_psql('postgres', $pages), $primary->safe_psql('postgres', $pages),
	'the standby\'s index pages equal the primary\'s');

# 6. Promotion: the new primary keeps its image and serves hints at once,
# and after its own splits refreshes as any primary does.
$primary->stop;
$standby->promote;
$standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
  or die 'the standby was not promoted';
checked_round($standby, 'promoted', random_keys($nlookups, $span + 100_000 * 8, 1),
	$standby, heap => 1);
$before_blocks = $standby->safe_psql('postgres', "SELECT pg_relation_size('t_k') / 8192");
$standby->safe_psql(
	'postgres', sprintf(
		"SELECT setseed(%.6f);\n"
		  . "INSERT INTO t SELECT x, -x FROM (SELECT 1 + (random() * ($span - 2))::int8 AS x"
		  . " FROM generate_series(1, 40000)) s WHERE x % 8 <> 0;\n"
		  . 'INSERT INTO t SELECT 8 * g, g FROM generate_series(300001, 320000) g;',
		-($seed % 1_000_000) / 1_000_000));
cmp_ok($standby->safe_psql('postgres', "SELECT pg_relation_size('t_k') / 8192"),
	'>', $before_blocks, 'promoted: inserts split pages');
$standby->poll_query_until('postgres', $image_current)
  or die 'the promoted standby did not refresh its image of t_k';
checked_round($standby, 'promoted, after its splits',
	random_keys($nlookups, 8 * 320_000 + 1000, 1), $standby, heap => 1, exact => 1);
$standby->stop;

# 7. A primary that writes generic WAL (forein loaded, not preloaded: no
# resource manager of its own, so replay notes no split): the standby
# learns of the splits from its lookups alone.  Without them its image
# stays as it was; one round of lookups meets the outgrown hints, and the
# standby's worker refreshes.
my $gprimary = forein_node('generic', allows_streaming => 1, preload => 0,
	conf => $conf);
$gprimary->safe_psql(
	'postgres', q{
	CREATE TABLE t (k int8, v int8);
	INSERT INTO t SELECT 8 * g, g FROM generate_series(1, 100000) g;
	CREATE INDEX t_k ON t USING forein (k);
	VACUUM ANALYZE t;
	SELECT pg_create_physical_replication_slot('gstandby_slot');
});
$gprimary->backup('gstandby_base');
my $gstandby = PostgreSQL::Test::Cluster->new('gstandby');
$gstandby->init_from_backup($gprimary, 'gstandby_base', has_streaming => 1);
$gstandby->append_conf('postgresql.conf',
	"shared_preload_libraries = 'forein'\nprimary_slot_name = 'gstandby_slot'\n");
$gstandby->start;
$gprimary->wait_for_catchup($gstandby, 'replay', $gprimary->lsn('insert'));
$gstandby->safe_psql('postgres', "$nested SELECT v FROM t WHERE k = 8");
$gstandby->poll_query_until('postgres', "SELECT status = 'active' FROM forein_stats('t_k')")
  or die 'the generic-WAL standby computed no first image';
$gprimary->safe_psql(
	'postgres', sprintf(
		"SELECT setseed(%.6f);\n"
		  . 'INSERT INTO t SELECT x, -x FROM (SELECT 1 + (random() * 799998)::int8 AS x'
		  . " FROM generate_series(1, 40000)) s WHERE x % 8 <> 0;\n"
		  . 'INSERT INTO t SELECT 8 * g, g FROM generate_series(100001, 125000) g;',
		($seed % 999_983) / 1_000_000));
$gprimary->wait_for_catchup($gstandby, 'replay', $gprimary->lsn('insert'));
is($gstandby->safe_psql('postgres', $image_current), 'f',
	'generic WAL: replay alone leaves the standby\'s image as it was');
checked_round($gstandby, 'generic WAL, right after catch-up',
	keys_and_leaves($gstandby, $nlookups, 8 * 125_000 + 1000), $gprimary);
$gstandby->poll_query_until('postgres', $image_current)
  or die 'the generic-WAL standby did not refresh its image after outgrown hints';
checked_round($gstandby, 'generic WAL, after its own refresh',
	keys_and_leaves($gstandby, $nlookups, 8 * 125_000 + 1000), $gprimary, exact => 1);

$gstandby->stop;
$gprimary->stop;
diag sprintf('024_hot_standby_hints: %.1f s', time - $started);
done_testing();

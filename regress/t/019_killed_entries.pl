# 019_killed_entries.pl: a scan that finds an entry's heap tuples dead to
# every transaction marks the entry LP_DEAD (nbtree's kill_prior_tuple),
# and later scans skip it without visiting the heap.
#
#  - After a DELETE, the second scan over the range reads far fewer
#    buffers than the first (the heap pages of deleted rows are skipped),
#    with the same answer as a sequential scan.
#  - A posting tuple (duplicates) is marked only when all its TIDs are
#    dead: a key with one live row among dead ones still returns that row.
#  - Before a full leaf splits, its marked entries are deleted (nbtree's
#    simple deletion): inserts into the deleted range do not grow the
#    index, whether the heap tuples were pruned or not (then the deletion
#    record carries a recovery-conflict horizon: forein_xlog.c).
#  - The marks are hints: forein_check accepts them, VACUUM removes the
#    entries, and rows inserted afterwards (reusing the freed TIDs) are found.
#
# autovacuum is off and the index has no offload slot, so no other backend
# holds a snapshot that would keep the deleted rows visible to someone.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use ForeinTAP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = forein_node('killed', conf => "autovacuum = off\n");
$node->safe_psql(
	'postgres', q{
CREATE TABLE kt (k int4, v text);
INSERT INTO kt SELECT g, repeat('x', 200) FROM generate_series(1, 20000) g;
CREATE INDEX kt_k ON kt USING forein (k) WITH (offload = 'none');
CREATE TABLE kd (k int4, v text);
INSERT INTO kd SELECT g % 100, repeat('y', 200) FROM generate_series(1, 20000) g;
CREATE INDEX kd_k ON kd USING forein (k) WITH (offload = 'none');
VACUUM ANALYZE kt;
VACUUM ANALYZE kd;
CREATE FUNCTION indexed_count(q text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
	SET LOCAL enable_seqscan = off;
	SET LOCAL enable_bitmapscan = off;
	EXECUTE q INTO n;
	RETURN n;
END $$;
DELETE FROM kt WHERE k BETWEEN 1000 AND 8999;
});

# an index scan (it reads v): the leaf's pin is dropped between pages, so
# the marks need the leaf unchanged (its LSN); the duplicates below use an
# index-only scan, which keeps the pin
my $range = 'SELECT sum(length(v)) FROM kt WHERE k BETWEEN 1 AND 10000';
my $first = index_scan_buffers($node, 'postgres', $range);
my $second = index_scan_buffers($node, 'postgres', $range);
cmp_ok($second, '<', $first / 2,
	"the second scan skips the deleted rows' entries ($first -> $second buffers)");
is($node->safe_psql('postgres', "SELECT indexed_count('$range')"),
	2000 * 200, 'the range still returns its live rows');

# posting tuples: key 7 keeps one live row, key 8 loses all of them
$node->safe_psql('postgres', q{
DELETE FROM kd WHERE k = 8;
DELETE FROM kd WHERE k = 7 AND ctid <> (SELECT max(ctid) FROM kd WHERE k = 7);
});
for my $pass (1, 2)
{
	is($node->safe_psql('postgres', "SELECT indexed_count('SELECT count(*) FROM kd WHERE k = 7')"),
		'1', "pass $pass: the live row among dead duplicates is found");
	is($node->safe_psql('postgres', "SELECT indexed_count('SELECT count(*) FROM kd WHERE k = 8')"),
		'0', "pass $pass: no row of a key whose rows all died");
}
my $dup_first = index_scan_buffers($node, 'postgres',
	'SELECT count(*) FROM kd WHERE k BETWEEN 8 AND 8');
cmp_ok($dup_first, '<', 20,
	"a posting tuple whose TIDs all died is skipped ($dup_first buffers)");

# the marks are hints: the checker accepts them, VACUUM removes the entries
is($node->safe_psql('postgres', "SELECT forein_check('kt_k', true)"), '',
	'forein_check (heapallindexed) accepts LP_DEAD entries');

# Before a full leaf splits, its marked entries whose heap tuples are
# pruned (the marking scan pruned the heap pages) are deleted: new rows in
# the deleted range fit in the space of the old ones, without a VACUUM.
my $size_marked = $node->safe_psql('postgres', "SELECT pg_relation_size('kt_k')");
$node->safe_psql('postgres',
	"INSERT INTO kt SELECT g, 'early' FROM generate_series(1000, 8999) g");
is($node->safe_psql('postgres', "SELECT pg_relation_size('kt_k')"), $size_marked,
	"rows inserted over marked entries take their space: the index did not grow from $size_marked bytes");
is($node->safe_psql('postgres', "SELECT indexed_count('$range')"),
	2000 * 200 + 8000 * 5, 'the range returns the live rows and the new ones');
is($node->safe_psql('postgres', "SELECT forein_check('kt_k', true)"), '',
	'forein_check (heapallindexed) after the marked entries were deleted');

$node->safe_psql('postgres', 'VACUUM kt');
$node->safe_psql('postgres',
	"INSERT INTO kt SELECT g, 'new' FROM generate_series(1000, 8999) g");
is($node->safe_psql('postgres', "SELECT indexed_count('$range')"),
	2000 * 200 + 8000 * 5 + 8000 * 3, 'rows inserted after VACUUM (reusing freed TIDs) are found');
is( $node->safe_psql('postgres',
		"SELECT indexed_count('SELECT count(*) FROM kt WHERE v = ''new'' AND k BETWEEN 1000 AND 8999')"),
	'8000', '... every one of them');
is($node->safe_psql('postgres', "SELECT forein_check('kt_k', true)"), '',
	'forein_check after VACUUM');

# Marked entries whose heap tuples are not pruned: rows of 3,000 bytes,
# two to a heap page, so a page with one row deleted keeps more free space
# than heap_page_prune_opt waits for (a tenth of the page) and is never
# pruned.  Their deletion needs a recovery-conflict horizon, which forein's
# own deletion record carries (forein is preloaded here).
$node->safe_psql(
	'postgres', q{
CREATE EXTENSION pageinspect;
CREATE TABLE kw (k int4, v text);
ALTER TABLE kw ALTER COLUMN v SET STORAGE PLAIN;
INSERT INTO kw SELECT g, repeat('z', 3000) FROM generate_series(1, 8000) g;
CREATE INDEX kw_k ON kw USING forein (k) WITH (offload = 'none');
VACUUM ANALYZE kw;
DELETE FROM kw WHERE k % 2 = 0;
});
my $wrange = 'SELECT sum(length(v)) FROM kw WHERE k BETWEEN 1 AND 8000';
my $wfirst = index_scan_buffers($node, 'postgres', $wrange);
my $wsecond = index_scan_buffers($node, 'postgres', $wrange);
cmp_ok($wsecond, '<', $wfirst,
	"unpruned heap: a scan marked the deleted rows' entries ($wfirst -> $wsecond buffers)");
is( $node->safe_psql(
		'postgres', q{
	SELECT lp_flags, lp_len > 3000, t_xmax <> '0'
	  FROM heap_page_items(get_raw_page('kw', 0)) WHERE lp = 2}),
	'1|t|t',
	'the deleted row is still in its heap page, not pruned');
my $wsize = $node->safe_psql('postgres', "SELECT pg_relation_size('kw_k')");
$node->safe_psql('postgres',
	"INSERT INTO kw SELECT g, 'n' FROM generate_series(2, 8000, 2) g");
is($node->safe_psql('postgres', "SELECT pg_relation_size('kw_k')"), $wsize,
	"rows inserted over marked entries of unpruned tuples take their space ($wsize bytes)");
is($node->safe_psql('postgres', "SELECT indexed_count('SELECT count(*) FROM kw WHERE k BETWEEN 1 AND 8000')"),
	'8000', 'the range returns the old odd rows and the new even ones');
is($node->safe_psql('postgres', "SELECT forein_check('kw_k', true)"), '',
	'forein_check (heapallindexed) after deleting entries of unpruned tuples');

$node->stop;
done_testing();

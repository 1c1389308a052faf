# 014_build_progress.pl: CREATE INDEX ... USING forein reports btree's
# progress in pg_stat_progress_create_index (forein_build.c).
#
# The build is held at each phase by advisory locks another session owns,
# so the phases are seen without racing the build:
#  - scanning table: the index expression gate() waits for lock 1 at the
#    first row; blocks_total is the table's size.
#  - sorting live tuples: the opclass's operators are in no btree family,
#    so the sort compares with its support proc 1, slow_cmp(), which waits
#    for lock 2 while its own backend reports that subphase; tuples_total
#    is the row count.
#  - loading tuples in tree: slow_cmp() waits for lock 3 when the leaf
#    loader compares the keys around the first leaf boundary; tuples_done
#    has moved past 0 and not reached tuples_total.
# The phase names themselves are checked against btree's.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use ForeinTAP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $rows = 2000;
my $node = forein_node('build_progress', preload => 0);

is( $node->safe_psql(
		'postgres', q{
SELECT string_agg(n || '=' || coalesce(pg_indexam_progress_phasename(f.oid, n), '-'), ' ' ORDER BY n)
FROM pg_am f, generate_series(0, 6) n WHERE f.amname = 'forein'}),
	'0=- 1=initializing 2=scanning table 3=sorting live tuples 4=sorting dead tuples 5=loading tuples in tree 6=-',
	'forein names btree\'s build subphases');
is( $node->safe_psql(
		'postgres', q{
SELECT bool_and(pg_indexam_progress_phasename(f.oid, n) IS NOT DISTINCT FROM
                pg_indexam_progress_phasename(b.oid, n))
FROM pg_am f, pg_am b, generate_series(0, 10) n
WHERE f.amname = 'forein' AND b.amname = 'btree'}),
	't', '... exactly as btree names them');

$node->safe_psql(
	'postgres', qq{
CREATE FUNCTION gate(t text) RETURNS text LANGUAGE plpgsql IMMUTABLE AS \$\$
BEGIN
	PERFORM pg_advisory_lock_shared(1);
	PERFORM pg_advisory_unlock_shared(1);
	RETURN t;
END \$\$;
-- waits for lock 2 while sorting, lock 3 while loading (this backend's own
-- subphase, param11 of the progress row: 3 and 5, nbtree.h)
CREATE FUNCTION slow_cmp(a text, b text) RETURNS int LANGUAGE plpgsql IMMUTABLE AS \$\$
DECLARE
	sub int8;
BEGIN
	PERFORM pg_stat_clear_snapshot();
	SELECT param11 INTO sub FROM pg_stat_get_progress_info('CREATE INDEX')
	WHERE pid = pg_backend_pid();
	IF sub = 3 THEN
		PERFORM pg_advisory_lock_shared(2);
		PERFORM pg_advisory_unlock_shared(2);
	ELSIF sub = 5 THEN
		PERFORM pg_advisory_lock_shared(3);
		PERFORM pg_advisory_unlock_shared(3);
	END IF;
	RETURN bttextcmp(a, b);
END \$\$;
CREATE OPERATOR <# (LEFTARG = text, RIGHTARG = text, FUNCTION = text_lt);
CREATE OPERATOR <=# (LEFTARG = text, RIGHTARG = text, FUNCTION = text_le);
CREATE OPERATOR =# (LEFTARG = text, RIGHTARG = text, FUNCTION = texteq);
CREATE OPERATOR >=# (LEFTARG = text, RIGHTARG = text, FUNCTION = text_ge);
CREATE OPERATOR ># (LEFTARG = text, RIGHTARG = text, FUNCTION = text_gt);
CREATE OPERATOR CLASS gated_ops FOR TYPE text USING forein AS
	OPERATOR 1 <#, OPERATOR 2 <=#, OPERATOR 3 =#, OPERATOR 4 >=#, OPERATOR 5 >#,
	FUNCTION 1 slow_cmp(text, text);
CREATE TABLE p (k text) WITH (autovacuum_enabled = off);
INSERT INTO p SELECT md5(i::text) FROM generate_series(1, $rows) i;
});

my $locker = $node->background_psql('postgres');
$locker->query_safe(
	'SELECT pg_advisory_lock(1), pg_advisory_lock(2), pg_advisory_lock(3)');

my $builder = $node->background_psql('postgres');
my $pid = $builder->query_safe('SELECT pg_backend_pid()');
$builder->query_until(qr/building/, q{
\echo building
CREATE INDEX p_k ON p USING forein (gate(k) gated_ops);
});

# the progress row of the build while it waits on an advisory lock
sub waiting_in
{
	my ($phase) = @_;
	return $node->poll_query_until(
		'postgres', qq{
SELECT count(*) = 1
FROM pg_stat_progress_create_index p JOIN pg_stat_activity a USING (pid)
WHERE pid = $pid AND p.phase = 'building index: $phase'
  AND a.wait_event_type = 'Lock' AND a.wait_event = 'advisory'});
}

sub progress
{
	my ($cols) = @_;
	return $node->safe_psql('postgres',
		"SELECT $cols FROM pg_stat_progress_create_index WHERE pid = $pid");
}

ok(waiting_in('scanning table'), 'phase: building index: scanning table');
# (blocks_done is not checked: on the scan's first block heapam reports
# every block done)
is( progress(q{blocks_total = pg_relation_size('p') / current_setting('block_size')::int
	AND blocks_total > 0}),
	't', '... blocks_total is the table\'s size');
$locker->query_safe('SELECT pg_advisory_unlock(1)');

ok(waiting_in('sorting live tuples'), 'phase: building index: sorting live tuples');
is(progress('tuples_total'), $rows, '... tuples_total is the row count');
is(progress('blocks_total'), '0', '... the scan\'s block counts are reset');
$locker->query_safe('SELECT pg_advisory_unlock(2)');

ok( waiting_in('loading tuples in tree'),
	'phase: building index: loading tuples in tree');
my ($done, $total) = split /\|/, progress('tuples_done, tuples_total');
cmp_ok($done, '>', 0, "... tuples_done moved ($done)");
cmp_ok($done, '<', $total, '... and has not reached tuples_total');
$locker->query_safe('SELECT pg_advisory_unlock(3)');

$builder->query_safe('SELECT 1');    # returns once the build has finished
is( $node->safe_psql(
		'postgres', q{SELECT count(*) FROM pg_stat_progress_create_index}),
	'0', 'no progress row once the build has finished');
$node->safe_psql('postgres', q{SELECT forein_check('p_k', true)});
is( $node->safe_psql(
		'postgres', q{
SET enable_seqscan = off; SET enable_bitmapscan = off;
SELECT count(*) FROM p WHERE gate(k) <# 'z'}),
	$rows, 'the index answers for every row');
index_plan_ok($node, 'postgres', q{SELECT count(*) FROM p WHERE gate(k) <# 'z'},
	'p_k', 'SET enable_seqscan = off; SET enable_bitmapscan = off;');

$builder->quit;
$locker->quit;
$node->stop;
done_testing();

# forein's WAL resource manager (pg_extension/forein_xlog.c).  Preloaded,
# forein logs a leaf insert as the offset and the tuple, as btree does,
# where a generic record held half the leaf's line pointers: the test
# compares the WAL of the same inserts into a forein and a btree index.
# Splits are forein's records too, so the index's whole WAL is about
# btree's.  Crash recovery replays those records; a server restarted without the
# library preloaded stops with PostgreSQL's clear error instead of losing
# them, and recovers once forein is preloaded again.  Deleting entries
# that scans marked dead cancels the hot standby queries that could still
# see their rows.  VACUUM's record is about btree's size too, and a
# streaming standby replays it.  Loaded but not preloaded, forein writes generic records,
# which crash recovery replays.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use ForeinTAP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $seed = test_seed();
my $seed_fraction = ($seed % 1000000) / 1000000;

# Tables f (forein) and b (btree) holding the same 20,000 keys, and 3,000
# random keys between them to insert.
sub setup
{
	my ($node) = @_;
	$node->safe_psql(
		'postgres', qq{
		CREATE EXTENSION pg_walinspect;
		SELECT setseed($seed_fraction);
		CREATE TABLE newkeys AS
		  SELECT (random() * 2e7)::int8 AS k FROM generate_series(1, 3000);
		CREATE TABLE f (k int8, v int4);
		CREATE INDEX f_k ON f USING forein (k);
		CREATE TABLE b (k int8, v int4);
		CREATE INDEX b_k ON b USING btree (k);
		INSERT INTO f SELECT g * 1000, g FROM generate_series(1, 20000) g;
		INSERT INTO b SELECT g * 1000, g FROM generate_series(1, 20000) g;
		CHECKPOINT;
	});
}

# The WAL that $sql writes: { "rmgr/type" => [records, bytes without images] }
# (up to the flushed end, all pg_walinspect reads: $sql's commit flushed it)
sub wal_of
{
	my ($node, $sql) = @_;
	my $start = $node->safe_psql('postgres', 'SELECT pg_current_wal_lsn()');
	$node->safe_psql('postgres', $sql);
	my $out = $node->safe_psql(
		'postgres', qq{
		SELECT resource_manager || '/' || record_type, count(*),
		       sum(record_length - fpi_length)
		  FROM pg_get_wal_records_info('$start', pg_current_wal_flush_lsn())
		 GROUP BY 1});
	my %wal;
	for (split /\n/, $out)
	{
		my ($kind, $n, $bytes) = split /\|/;
		$wal{$kind} = [ $n, $bytes ];
	}
	return \%wal;
}

sub count_of { my ($wal, $kind) = @_; return $wal->{$kind} ? $wal->{$kind}[0] : 0; }
sub bytes_of { my ($wal, $kind) = @_; return $wal->{$kind} ? $wal->{$kind}[1] : 0; }

# Every index answer and forein_check after recovery
sub check_recovered
{
	my ($node, $what, $want) = @_;
	is( $node->safe_psql(
			'postgres', q{
			SET enable_seqscan = off; SET enable_bitmapscan = off;
			SELECT count(*) FROM f WHERE k >= 0}),
		$want,
		"$what: the forein index finds every row");
	my ($ret) = $node->psql('postgres', "SELECT forein_check('f_k', true)");
	is($ret, 0, "$what: forein_check('f_k', heapallindexed) passes");
}

# Preloaded: forein's own records, about as large as btree's
# (autovacuum off: its catalog changes could raise snapshot conflicts of
# their own on the standby below)
my $node = forein_node('rmgr', allows_streaming => 1, conf => "autovacuum = off\n");
setup($node);
my $fwal = wal_of($node, 'INSERT INTO f SELECT k, 0 FROM newkeys');
my $bwal = wal_of($node, 'INSERT INTO b SELECT k, 0 FROM newkeys');
my $inserts = count_of($fwal, 'forein/INSERT');
note("forein: $inserts forein/INSERT records, "
	  . count_of($fwal, 'Generic/Generic')
	  . ' generic; index bytes '
	  . (bytes_of($fwal, 'forein/INSERT') + bytes_of($fwal, 'Generic/Generic'))
	  . ', btree index bytes '
	  . bytes_of($bwal, 'Btree/INSERT_LEAF')
	  . ' + splits '
	  . (bytes_of($bwal, 'Btree/SPLIT_L') + bytes_of($bwal, 'Btree/SPLIT_R')));
cmp_ok($inserts + count_of($fwal, 'forein/SPLIT') + count_of($fwal, 'Generic/Generic'),
	'>=', 3000, 'every insert is logged');
is(count_of($fwal, 'Generic/Generic'), 0, 'preloaded: no generic record, splits included');
cmp_ok(count_of($fwal, 'forein/SPLIT'), '>', 0, 'leaves split in forein/SPLIT records');
cmp_ok($inserts, '>=', 2700, 'inserts that do not split are forein records');
my $per_insert = bytes_of($fwal, 'forein/INSERT') / $inserts;
my $btree_per_insert =
  bytes_of($bwal, 'Btree/INSERT_LEAF') / count_of($bwal, 'Btree/INSERT_LEAF');
cmp_ok($per_insert, '<=', $btree_per_insert + 8,
	"a forein insert record ($per_insert bytes) is about btree's ($btree_per_insert)");
# all of the index's WAL, splits and downlinks included
sub rmgr_bytes
{
	my ($wal, $rmgr) = @_;
	my $sum = 0;
	$sum += $wal->{$_}[1] for grep { m{^\Q$rmgr\E/} } keys %$wal;
	return $sum;
}
my ($findex, $bindex) = (rmgr_bytes($fwal, 'forein'), rmgr_bytes($bwal, 'Btree'));
cmp_ok($findex, '<=', 1.1 * $bindex,
	"the inserts' forein WAL ($findex bytes, splits included) is within 1.1x btree's ($bindex)");

# Deleting entries scans marked dead, on a hot standby.  Rows of 3,000
# bytes, two to a heap page: a page with one row deleted is never pruned
# (heap_page_prune_opt waits until a tenth of the page is left), so no heap
# record raises the conflict: forein's deletion record must, with its
# horizon, or the standby's query would miss rows its snapshot sees.
my $standby = forein_standby($node, 'hot');
$standby->append_conf('postgresql.conf', "max_standby_streaming_delay = 0\n");
$standby->reload;
$node->safe_psql(
	'postgres', q{
	CREATE TABLE kc (k int4, v text) WITH (autovacuum_enabled = off);
	ALTER TABLE kc ALTER COLUMN v SET STORAGE PLAIN;
	INSERT INTO kc SELECT g, repeat('c', 3000) FROM generate_series(1, 4000) g;
	CREATE INDEX kc_k ON kc USING forein (k) WITH (offload = 'none');
	VACUUM ANALYZE kc;
});
$node->wait_for_catchup('hot');
my $conflicts = q{SELECT confl_snapshot FROM pg_stat_database_conflicts
	WHERE datname = 'postgres'};
my $before = $standby->safe_psql('postgres', $conflicts);
my $reader = $standby->background_psql('postgres', on_error_stop => 0);
$reader->query_safe('BEGIN ISOLATION LEVEL REPEATABLE READ');
is($reader->query_safe('SELECT count(*) FROM kc WHERE k > 0'),
	'4000', 'a standby transaction sees all 4,000 rows');
my $scan = q{SET enable_seqscan = off; SET enable_bitmapscan = off;
	SELECT sum(length(v)) FROM kc WHERE k BETWEEN 1 AND 4000};
$node->safe_psql('postgres', "DELETE FROM kc WHERE k % 2 = 0; $scan; $scan");
$node->wait_for_catchup('hot');
is($standby->safe_psql('postgres', $conflicts), $before,
	'the DELETE and the marking scans raise no conflict on the standby');
$node->safe_psql('postgres',
	"INSERT INTO kc SELECT g, 'n' FROM generate_series(2, 4000, 2) g");
$node->wait_for_catchup('hot');
ok( $standby->poll_query_until('postgres', $conflicts, $before + 1),
	'deleting the marked entries of unpruned rows cancels the standby transaction that could see them'
);
$reader->quit;
is($standby->safe_psql('postgres', 'SELECT count(*) FROM kc WHERE k > 0'),
	'4000', 'a new standby query sees the odd rows and the new even ones');
my ($check) = $standby->psql('postgres', "SELECT forein_check('kc_k', true)");
is($check, 0, "forein_check('kc_k', heapallindexed) on the standby");

# VACUUM: forein's own record (the deleted offsets), about btree's size,
# replayed on the standby under a cleanup lock
$node->safe_psql('postgres',
	'DELETE FROM f WHERE v % 10 = 3; DELETE FROM b WHERE v % 10 = 3');
my $fvac = wal_of($node, 'VACUUM f');
my $bvac = wal_of($node, 'VACUUM b');
my $fvac_bytes = bytes_of($fvac, 'forein/VACUUM') + bytes_of($fvac, 'Generic/Generic');
note("VACUUM: forein "
	  . count_of($fvac, 'forein/VACUUM')
	  . " forein/VACUUM records, "
	  . count_of($fvac, 'Generic/Generic')
	  . " generic, $fvac_bytes index bytes; btree "
	  . count_of($bvac, 'Btree/VACUUM')
	  . ' records, '
	  . bytes_of($bvac, 'Btree/VACUUM')
	  . ' bytes');
cmp_ok(count_of($fvac, 'forein/VACUUM'), '>', 0, 'VACUUM writes forein/VACUUM records');
cmp_ok($fvac_bytes, '<=', 1.5 * bytes_of($bvac, 'Btree/VACUUM') + 200,
	"forein's VACUUM WAL ($fvac_bytes bytes) is about btree's");
$node->wait_for_catchup('hot');
is( $standby->safe_psql(
		'postgres', q{SET enable_seqscan = off; SET enable_bitmapscan = off;
		SELECT count(*) FROM f WHERE k >= 0}),
	'21000',
	'the standby replayed VACUUM: its forein index finds the 21,000 rows left');
($check) = $standby->psql('postgres', "SELECT forein_check('f_k', true)");
is($check, 0, "forein_check('f_k', heapallindexed) on the standby after VACUUM");
$standby->stop;

# Crash: recovery needs the resource manager
$node->safe_psql('postgres', 'INSERT INTO f SELECT k + 1, 1 FROM newkeys');
$node->stop('immediate');
$node->append_conf('postgresql.conf', "shared_preload_libraries = ''\n");
my $log_offset = -s $node->logfile;
ok(!$node->start(fail_ok => 1),
	'crash recovery without forein preloaded does not start');
like(
	slurp_file($node->logfile, $log_offset),
	qr/resource manager with ID 161 not registered/,
	'and says which resource manager it lacks');
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'forein'\n");
$node->start;
check_recovered($node, 'preloaded again, recovered', 24000);
$node->stop;

# Not preloaded: generic records, replayed by any server.  Every kind of
# change (splits and a new root, posting list merges and cuts, VACUUM and
# page deletion) is a generic record here; crash recovery replays them
# with wal_consistency_checking = 'generic', which compares each replayed
# page with the image the record carries.
my $plain = forein_node('plain', preload => 0,
	conf => "wal_consistency_checking = 'generic'\nautovacuum = off\n");
setup($plain);
my $gwal = wal_of($plain, 'INSERT INTO f SELECT k, 0 FROM newkeys');
is(count_of($gwal, 'forein/INSERT'), 0, 'not preloaded: no forein records');
cmp_ok(count_of($gwal, 'Generic/Generic'),
	'>=', 3000, 'not preloaded: every insert is a generic record');
$plain->safe_psql(
	'postgres', q{
	CHECKPOINT;
	CREATE TABLE dup (k int4, v int4);
	CREATE INDEX dup_k ON dup USING forein (k);
	INSERT INTO dup SELECT g % 50, g FROM generate_series(1, 30000) g;
	DELETE FROM dup WHERE v % 3 = 0;
	INSERT INTO dup SELECT g % 50, g FROM generate_series(30001, 35000) g;
	DELETE FROM f WHERE k BETWEEN 2000000 AND 12000000;
	VACUUM dup;
});
my ($vret, $vout, $verr) = $plain->psql('postgres', 'VACUUM (VERBOSE) f');
my ($deleted) = $verr =~ /index "f_k": pages: \d+ in total, (\d+) newly deleted/;
cmp_ok($deleted // 0, '>', 0,
	"not preloaded: VACUUM deleted pages of f_k (@{[ $deleted // 'none' ]})");
$plain->stop('immediate');
$plain->start;
my $plog = slurp_file($plain->logfile);
like($plog, qr/redo done at/, 'not preloaded: crash recovery replayed WAL');
unlike($plog, qr/inconsistent page found/,
	"not preloaded: crash recovery replays generic splits, merges, cuts and page deletions consistently");
check_recovered($plain, 'not preloaded, recovered',
	$plain->safe_psql('postgres',
		'SET enable_indexscan = off; SET enable_bitmapscan = off; SELECT count(*) FROM f WHERE k >= 0'));
is($plain->safe_psql('postgres',
		'SET enable_seqscan = off; SET enable_bitmapscan = off; SELECT count(*), sum(v) FROM dup WHERE k >= 0'),
	$plain->safe_psql('postgres', 'SET enable_indexscan = off; SET enable_bitmapscan = off; SELECT count(*), sum(v) FROM dup'),
	'not preloaded, recovered: dup_k finds every row');
$plain->stop;

done_testing();

# WAL replay checked page by page: the primary runs with
# wal_consistency_checking = 'forein', so every WAL record forein writes
# carries a full-page image of each page it touches.  With forein preloaded
# every change is one of its own records (forein_xlog.c, forein_xlog_tree.c):
# leaf inserts, downlink insertions, splits of leaves and inner pages, new
# roots, posting list merges (DEDUP) and cuts (REPLACE), deletions of dead
# entries, bottom-up deletions that shrink posting tuples, VACUUM, page
# deletion (UNLINK) and the reuse of deleted pages; none is generic WAL.
# Replay on the streaming standby (and crash recovery on the primary)
# applies the record, masks the page (LSN, checksum, the hole between
# pd_lower and pd_upper, line pointer flags on leaves, where scans set
# LP_DEAD without WAL) and compares it with the image: a difference is a
# FATAL "inconsistent page found", which would stop the standby.  The
# standby must stay alive, catch up and answer as the primary does, and
# every record type must have been written and checked.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use ForeinTAP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

my $seed = test_seed();
my %written;       # records by type (tally)
my $tallied_to;    # counted up to this LSN

my $primary = forein_node(
	'primary',
	allows_streaming => 1,
	conf => "wal_consistency_checking = 'forein'\nwal_keep_size = '1GB'\n"
	  . "max_connections = 20\nshared_buffers = 32MB\nmax_wal_size = 1GB\n");
is($primary->safe_psql('postgres', 'SHOW wal_consistency_checking'),
	'forein', 'primary logs images of forein records for checking');
$primary->safe_psql('postgres', 'CREATE EXTENSION pg_walinspect');

# Indexes built before the backup: the standby starts from their files.
$primary->safe_psql(
	'postgres', q{
	CREATE TABLE w (id int4, k int8, d int4, t text);
	INSERT INTO w SELECT g, g * 2, g % 7, 'w' || lpad((g % 900)::text, 5, '0')
	  FROM generate_series(1, 5000) g;
	CREATE INDEX w_k ON w USING forein (k);
	CREATE INDEX w_d ON w USING forein (d);
	CREATE INDEX w_t ON w USING forein (t);
	CREATE INDEX w_dk ON w USING forein (d, k DESC);
	CREATE INDEX w_nodedup ON w USING forein (d) WITH (deduplicate_items = off);
	CREATE UNIQUE INDEX w_id ON w USING forein (id) INCLUDE (t);
	-- 300-byte keys: few per page, so inserts split inner pages and add
	-- levels
	CREATE INDEX w_wide ON w USING forein ((rpad(t, 300, '*')));
	-- keys of up to the 2,704-byte limit (incompressible text), on a
	-- twentieth of the rows: pages of one or two items, splits that
	-- cannot take the new entry (the page splits first, the insert retries)
	CREATE FUNCTION bigkey(t text) RETURNS text IMMUTABLE LANGUAGE sql
	  AS $$ SELECT substr(string_agg(md5(t || x), ''), 1, 1 + abs(hashtext(t)) % 2660)
	        FROM generate_series(1, 84) x $$;
	CREATE INDEX w_big ON w USING forein ((bigkey(t))) WHERE id % 20 = 0;
	CREATE TABLE w_empty (k int4);
	CREATE INDEX w_empty_k ON w_empty USING forein (k);
});

# (through a slot: replay with consistency checks is slower than the
# primary's writes)
my $standby = forein_standby($primary, 'standby');
# (the standby's slot keeps the WAL from here for pg_walinspect)
$tallied_to = $primary->lsn('insert');

my $force = 'SET enable_seqscan = off; SET enable_bitmapscan = off;';
my @queries = (
	'SELECT count(*), sum(k) FROM w WHERE k BETWEEN 1000 AND 90000',
	'SELECT id FROM w WHERE k = 4242 ORDER BY id',
	'SELECT k FROM w WHERE k > 10 ORDER BY k DESC LIMIT 20',
	'SELECT d, count(*) FROM w WHERE d >= 0 GROUP BY d ORDER BY d',
	'SELECT count(*), sum(id::int8) FROM w WHERE d = 3',
	"SELECT t, count(*) FROM w WHERE t BETWEEN 'w00100' AND 'w00120' GROUP BY t ORDER BY t",
	"SELECT count(*) FROM w WHERE rpad(t, 300, '*') > rpad('x8', 300, '*')",
	'SELECT d, k FROM w WHERE d = 5 ORDER BY d, k DESC LIMIT 15',
	'SELECT count(*) FROM w WHERE id > 100',
	'SELECT count(*) FROM w_empty WHERE k > 0',
	"SELECT count(*), sum(length(bigkey(t))) FROM w WHERE id % 20 = 0 AND bigkey(t) > '8'",
	'SELECT k FROM w_empty WHERE k >= 0 ORDER BY k LIMIT 10',
);
my @indexes = qw(w_k w_d w_t w_dk w_nodedup w_id w_wide w_big w_empty_k);

# Polls until the standby has replayed all the primary wrote, failing at
# once (with the standby's FATAL lines) if the standby went away: a failed
# consistency check stops it.
sub catch_up
{
	my ($stage) = @_;
	my $target = $primary->lsn('insert');
	my $deadline = time + $PostgreSQL::Test::Utils::timeout_default;
	for (;;)
	{
		my $pid = $standby->{_pid};
		unless (defined $pid && kill(0, $pid))
		{
			my @fatal = grep { /FATAL|PANIC/ } split /\n/, slurp_file($standby->logfile);
			fail("$stage: standby is alive");
			BAIL_OUT("the standby died in replay: " . join("\n", @fatal[0 .. ($#fatal < 4 ? $#fatal : 4)]));
		}
		my ($ret, $out) = $standby->psql('postgres',
			"SELECT pg_last_wal_replay_lsn() >= '$target'::pg_lsn");
		last if $ret == 0 && $out eq 't';
		die "$stage: timed out waiting for the standby to replay $target" if time > $deadline;
		usleep(100_000);
	}
	pass("$stage: standby is alive and replayed up to $target");
	return;
}

# The records written so far by type (forein's, and any generic ones),
# counted stage by stage: checkpoints let the slot's older WAL go.
sub tally
{
	my $to = $primary->safe_psql('postgres', 'SELECT pg_current_wal_flush_lsn()');
	for my $row (split /\n/, $primary->safe_psql(
			'postgres', qq{
		SELECT CASE resource_manager WHEN 'forein' THEN record_type ELSE 'Generic' END, count(*)
		  FROM pg_get_wal_records_info('$tallied_to', '$to')
		 WHERE resource_manager IN ('forein', 'Generic') GROUP BY 1}))
	{
		my ($type, $count) = split /\|/, $row;
		$written{$type} += $count;
	}
	$tallied_to = $to;
	return;
}

sub compare
{
	my ($stage) = @_;
	catch_up($stage);
	tally();
	my $log = slurp_file($standby->logfile);
	unlike($log, qr/inconsistent page found/,
		"$stage: no inconsistent page found in replay");
	my @p = run_marked_script($primary, 'postgres', $force, \@queries);
	my @s = run_marked_script($standby, 'postgres', $force, \@queries);
	compare_outputs("$stage: standby answers equal the primary's",
		\@queries, \@s, \@p, 'standby', 'primary');
	for my $idx (@indexes)
	{
		my ($ret, $out, $err) =
		  $standby->psql('postgres', "SELECT forein_check('$idx', true)");
		is($ret, 0, "$stage: forein_check('$idx', true) on the standby")
		  or diag $err;
	}
	return;
}

# The root's level, from the metapage (magic, version, root, root level).
$primary->safe_psql('postgres', 'CREATE EXTENSION pageinspect');
sub root_level
{
	my ($index) = @_;
	return $primary->safe_psql('postgres',
		"SELECT get_byte(p, 36) + 256 * get_byte(p, 37) FROM get_raw_page('$index', 0) p");
}
my $wide_level = root_level('w_wide');

compare('after base backup');

# Single inserts into pages with room (add_item_logged: forein's insert
# records) in random key order, then enough to split leaves and inner pages
# (generic records).
my @vals = map { int(rand(2_000_000)) } 1 .. 300;
my $start_lsn = $primary->lsn('insert');
$primary->safe_psql('postgres',
	join('', map { "INSERT INTO w VALUES (" . (100000 + $_) . ", $vals[$_], "
		  . ($vals[$_] % 7) . ", 'r$vals[$_]');\n" } 0 .. $#vals));
# The records carry images for checking, not for applying: that is what
# replay compares against.  (pg_waldump names forein's resource manager
# by its ID: it does not load extensions.)
my $end_lsn = $primary->lsn('insert');
my ($stdout, $stderr) = run_command(
	[
		'pg_waldump', '-p', $primary->data_dir . '/pg_wal',
		'-s', $start_lsn, '-e', $end_lsn
	]);
my $checked = () = $stdout =~ /^rmgr: custom161 .*FPW for WAL verification/mg;
cmp_ok($checked, '>=', 300,
	"the single inserts wrote forein records with images for verification ($checked)")
  or diag $stderr;
compare('after single inserts');

$primary->safe_psql(
	'postgres', q{
	INSERT INTO w SELECT g, (g * 7919) % 1000003, g % 7, 'x' || md5(g::text)
	  FROM generate_series(200001, 230000) g ORDER BY md5(g::text);
	INSERT INTO w_empty SELECT g FROM generate_series(1, 3000) g;
	INSERT INTO w (id, k) VALUES (-1, NULL), (-2, NULL);
});
cmp_ok(root_level('w_wide'), '>', $wide_level,
	"inner pages split and a new root was made (w_wide's root level $wide_level -> @{[ root_level('w_wide') ]})");
compare('after inserts with splits and posting list merges');

# Deletes, VACUUM: posting lists shrink (some rows of a run die), whole
# key ranges die (pages deleted), then the freed heap space is reused: the
# new TIDs fall inside existing posting lists (posting list cuts).
$primary->safe_psql(
	'postgres', q{
	DELETE FROM w WHERE id % 5 = 0;
	DELETE FROM w WHERE k BETWEEN 100000 AND 600000;
	DELETE FROM w_empty WHERE k > 10;
});
$start_lsn = $primary->lsn('insert');
my ($vret, $vout, $verr) = $primary->psql('postgres', 'VACUUM (VERBOSE) w; VACUUM (VERBOSE) w_empty;');
is($vret, 0, 'VACUUM after the deletes') or diag $verr;
my ($deleted) = $verr =~ /index "w_k": pages: \d+ in total, (\d+) newly deleted/;
cmp_ok($deleted // 0, '>', 0, "VACUUM deleted pages of w_k (@{[ $deleted // 'none' ]})")
  or diag $verr;
# VACUUM's leaf changes are forein's VACUUM records (offsets and shrunk
# posting tuples), checked by replay like the rest (pg_walinspect: the
# server's resource manager describes them, pg_waldump cannot)
my @shrinks = split /\n/, $primary->safe_psql(
	'postgres', qq{
	SELECT substring(description from 'nupdated (\\d+)')
	  FROM pg_get_wal_records_info('$start_lsn', pg_current_wal_flush_lsn())
	 WHERE resource_manager = 'forein' AND record_type = 'VACUUM'});
cmp_ok(scalar(@shrinks), '>', 0, 'VACUUM wrote forein records (' . scalar(@shrinks) . ')');
cmp_ok((grep { $_ > 0 } @shrinks), '>', 0, 'some of them shrink posting tuples');
compare('after VACUUM with posting list shrinking and page deletion');

$primary->safe_psql(
	'postgres', q{
	INSERT INTO w SELECT g, 100000 + g, g % 7, 'w' || lpad((g % 900)::text, 5, '0')
	  FROM generate_series(300001, 310000) g;
	INSERT INTO w_empty SELECT g FROM generate_series(11, 2000) g;
	DELETE FROM w WHERE d IN (1, 2);
	VACUUM w;
	INSERT INTO w SELECT g, g, 1, 'again' FROM generate_series(400001, 405000) g;
});
compare('after heap space reuse (posting list cuts) and a second VACUUM');

# Deleting every row: all leaves but the leftmost go, then refill.
$primary->safe_psql(
	'postgres', q{
	DELETE FROM w;
	VACUUM w;
	INSERT INTO w SELECT g, g, g % 3, 'z' || g FROM generate_series(1, 10000) g;
});
compare('after emptying and refilling');

# Scans mark the entries of deleted rows LP_DEAD, a hint written without
# WAL that the standby never sees.  Generic WAL's check compares whole
# pages (it has no mask for line pointer flags, as btree_mask has), so a
# leaf changed under WAL afterwards must carry its marks in the same
# record: single inserts (add_item_logged), posting list changes, splits
# and the deletion of marked entries before a split land on marked leaves
# here.
# (no autovacuum of w from here: an autoanalyze's snapshot during the
# scans would keep the deleted rows visible to it, and nothing marked)
$primary->safe_psql(
	'postgres', q{
	ALTER TABLE w SET (autovacuum_enabled = off);
	DELETE FROM w WHERE k BETWEEN 2001 AND 6000 AND k % 50 <> 0;
});
my $marked_range = 'SELECT sum(length(t)) FROM w WHERE k BETWEEN 1 AND 8000';
my $marks_first = index_scan_buffers($primary, 'postgres', $marked_range);
my $marks_second = index_scan_buffers($primary, 'postgres', $marked_range);
cmp_ok($marks_second, '<', $marks_first,
	"a scan marked the deleted rows' entries dead ($marks_first -> $marks_second buffers)");
my $wk_marked = $primary->safe_psql('postgres', "SELECT pg_relation_size('w_k')");
$primary->safe_psql('postgres',
	join('', map { "INSERT INTO w VALUES (" . (500000 + $_) . ", " . (1 + ($_ * 37) % 8000)
		  . ", 2, 'm$_');\n" } 0 .. 199)
	  . "INSERT INTO w SELECT g, 2000 + g % 3000, 2, 'n' FROM generate_series(510001, 513000) g;\n");
# 3,200 new entries where 3,920 were marked: deleting them makes room
is($primary->safe_psql('postgres', "SELECT pg_relation_size('w_k')"), $wk_marked,
	'marked entries were deleted before leaves split: w_k did not grow');
compare('after changes to leaves with entries marked dead');

# Version churn: row-at-a-time non-HOT updates (k has a btree of its own)
# with no scan of the forein indexes.  Full leaves delete old versions
# bottom-up (forein_insert.c): whole entries in DELETE records with a
# recovery-conflict horizon, and TIDs out of posting tuples (v_g holds four
# rows a key) in DELETE_UPDATE records.
my $churn_lsn = $primary->lsn('insert');
$primary->safe_psql(
	'postgres', q{
	CREATE TABLE v (id int4, g int4, k int4) WITH (autovacuum_enabled = off);
	INSERT INTO v SELECT i, i / 4, i * 100 FROM generate_series(1, 1500) i;
	CREATE UNIQUE INDEX v_id ON v USING forein (id);
	CREATE INDEX v_g ON v USING forein (g);
	CREATE INDEX v_k ON v (k);
	CREATE PROCEDURE v_churn(rounds int) LANGUAGE plpgsql AS $$
	BEGIN
		FOR r IN 0 .. rounds - 1 LOOP
			FOR i IN 1 .. 1500 LOOP
				UPDATE v SET k = k + 1 WHERE k = i * 100 + r;
				COMMIT;
			END LOOP;
		END LOOP;
	END $$;
});
$primary->safe_psql('postgres',
	'SET enable_seqscan = off; SET enable_bitmapscan = off; CALL v_churn(4)');
my $churn_records = $primary->safe_psql(
	'postgres', qq{
	SELECT count(*) FILTER (WHERE record_type = 'DELETE'),
	       count(*) FILTER (WHERE record_type = 'DELETE_UPDATE'
	                          AND substring(description from 'nupdated (\\d+)')::int > 0)
	  FROM pg_get_wal_records_info('$churn_lsn', pg_current_wal_flush_lsn())
	 WHERE resource_manager = 'forein'});
like($churn_records, qr/^[1-9]\d*\|[1-9]\d*$/,
	"version churn wrote DELETE and DELETE_UPDATE records (DELETE|DELETE_UPDATE: $churn_records)");
push @queries,
  'SELECT count(*), sum(k) FROM v WHERE id BETWEEN 1 AND 1500',
  'SELECT g, count(*), sum(k) FROM v WHERE g BETWEEN 10 AND 40 GROUP BY g ORDER BY g';
push @indexes, 'v_id', 'v_g';
is( $primary->safe_psql(
		'postgres', "$force SELECT count(*) || ' ' || sum(k) FROM v WHERE g BETWEEN 0 AND 375"),
	'1500 ' . (100 * 1500 * 1501 / 2 + 4 * 1500),
	'v_g returns every row once, at its latest version');
compare('after version churn (bottom-up deletion)');


# Crash recovery on the primary checks its own replay too.
$primary->safe_psql('postgres', 'CHECKPOINT');
my $redo_start = $primary->lsn('insert');
$primary->safe_psql(
	'postgres', q{
	INSERT INTO w SELECT g, g % 100, g % 5, 'c' || (g % 50) FROM generate_series(30001, 40000) g;
	DELETE FROM w WHERE id % 3 = 0;
	VACUUM w;
});
# (to the flushed end, all pg_walinspect reads; the inserts' commit flushed)
my $to_replay = $primary->safe_psql(
	'postgres', qq{
	SELECT count(*) FILTER (WHERE resource_manager = 'forein'),
	       count(*) FILTER (WHERE resource_manager = 'Generic')
	  FROM pg_get_wal_records_info('$redo_start', pg_current_wal_flush_lsn())});
like($to_replay, qr/^[1-9]\d*\|0$/,
	"forein records and no generic ones to replay ($to_replay)");

# Every record type was written (and so checked by the standby's replay)
tally();
for my $type (qw(INSERT INSERT_UPPER SPLIT NEWROOT REPLACE DEDUP DELETE
	DELETE_UPDATE VACUUM UNLINK REUSE_PAGE))
{
	cmp_ok($written{$type} // 0, '>', 0,
		"forein/$type records written and checked (@{[ $written{$type} // 0 ]})");
}
is($written{Generic} // 0, 0, 'no generic WAL while forein is preloaded');
$primary->stop('immediate');
$primary->start;
my $plog = slurp_file($primary->logfile);
unlike($plog, qr/inconsistent page found/,
	'crash recovery of the primary: no inconsistent page found');
like($plog, qr/redo done at/, 'the primary replayed WAL in crash recovery');
compare('after crash recovery of the primary');

$standby->stop;
$primary->stop;
done_testing();

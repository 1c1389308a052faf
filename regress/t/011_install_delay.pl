# 011_install_delay.pl: answers stay right while a refresh waits out the
# modelled control-plane delay after leaves were merged away.
#
# The published image still names leaves that VACUUM unlinked; the refresh
# publishes them as invalid before it waits (forein.install_delay_ms), so
# lookups during the wait skip them. Either way every answer must equal the
# table's: checked for keys in, around and outside the emptied range while
# the refresh sleeps (seen in pg_stat_activity), and after it installed.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use ForeinTAP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = forein_node('install_delay', conf => "forein.sample_rate = 0\n");

$node->safe_psql(
	'postgres', q{
CREATE TABLE t (a int4) WITH (autovacuum_enabled = off);
INSERT INTO t SELECT generate_series(1, 100000);
CREATE INDEX t_a ON t USING forein (a);
});
cmp_ok($node->safe_psql('postgres', q{SELECT forein_refresh('t_a')}),
	'>', 0, 'first image installed');

# Empty a range of leaves and let VACUUM unlink them.
$node->safe_psql('postgres',
	q{DELETE FROM t WHERE a BETWEEN 20000 AND 60000; VACUUM t;});

my $bg = $node->background_psql('postgres');
my $pid = $bg->query_safe('SELECT pg_backend_pid()');
$bg->query_until(qr/refreshing/, q{
\echo refreshing
SET forein.install_delay_ms = 5000;
SELECT forein_refresh('t_a');
});
ok( $node->poll_query_until(
		'postgres',
		qq{SELECT wait_event_type = 'Extension' FROM pg_stat_activity WHERE pid = $pid}),
	'the refresh is waiting out the install delay');

my $probe = q{
SET enable_seqscan = off; SET enable_bitmapscan = off;
SELECT count(*) FROM generate_series(1, 100000, 97) k
WHERE EXISTS (SELECT 1 FROM t WHERE a = k) <> (k < 20000 OR k > 60000);
};
is($node->safe_psql('postgres', $probe), '0', 'every probe is right during the delay');
is( $node->safe_psql(
		'postgres',
		q{SET enable_seqscan = off; SELECT count(*) FROM t WHERE a BETWEEN 19000 AND 61000}),
	'2000', 'a range across the emptied leaves is right during the delay');

$bg->query_safe('SELECT 1');    # waits for the refresh to finish
$bg->quit;
is($node->safe_psql('postgres', $probe), '0', 'every probe is right after the install');
is($node->safe_psql('postgres', q{SELECT status FROM forein_stats('t_a')}),
	'active', 'the new image is active');

# The background worker waits out the delay holding no lock on the index:
# TRUNCATE (new, smaller storage) does not wait for it, and the image it
# computed before, naming blocks the index no longer has, is not
# published when the wait ends (a reload lowering the delay ends it).
$node->safe_psql('postgres',
	q{ALTER SYSTEM SET forein.install_delay_ms = '10min'; SELECT pg_reload_conf();});
# new pages: the slot is dirty, the worker refreshes it within seconds
$node->safe_psql('postgres', q{INSERT INTO t SELECT generate_series(100001, 200000);});
my $waiting = q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'forein offload refresh'
	AND state = 'active' AND wait_event_type = 'Extension'};
ok($node->poll_query_until('postgres', "SELECT count(*) = 1 FROM ($waiting) w"),
	'the worker is waiting out a 10-minute install delay');
is( $node->safe_psql(
		'postgres', qq{SELECT count(*) FROM pg_locks WHERE pid IN ($waiting)
		AND locktype = 'relation' AND relation = 't_a'::regclass}),
	'0', 'holding no lock on the index');
my ($ret, $out, $err) = $node->psql('postgres',
	q{SET lock_timeout = '60s'; TRUNCATE t; INSERT INTO t SELECT generate_series(1, 20000);});
is($ret, 0, 'TRUNCATE does not wait for the worker') or diag $err;
my $stats = q{SELECT hint_hits || ' ' || fallbacks FROM forein_stats('t_a')};
my $probe_small = q{
SET enable_seqscan = off; SET enable_bitmapscan = off;
SET enable_hashjoin = off; SET enable_mergejoin = off;
SELECT count(*) FROM generate_series(1, 200000, 7) k(v) LEFT JOIN t ON t.a = k.v
WHERE (t.a IS NOT NULL) <> (k.v <= 20000);
};
$node->safe_psql('postgres',
	q{ALTER SYSTEM SET forein.install_delay_ms = 0; SELECT pg_reload_conf();});
ok( $node->poll_query_until(
		'postgres',
		q{SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type = 'forein offload refresh'}),
	'the reload ended the wait');
my ($hits0, $fb0) = split ' ', $node->safe_psql('postgres', $stats);
is($node->safe_psql('postgres', $probe_small), '0', 'every probe is right after TRUNCATE');
my ($hits1, $fb1) = split ' ', $node->safe_psql('postgres', $stats);
is($fb1 - $fb0, 0, 'no probe got a hint naming the old storage (no fallbacks)');
$node->safe_psql('postgres', q{SELECT forein_refresh('t_a')});
my ($hits2) = split ' ', $node->safe_psql('postgres', $stats);
is($node->safe_psql('postgres', $probe_small), '0', 'every probe is right with a new image');
my ($hits3) = split ' ', $node->safe_psql('postgres', $stats);
cmp_ok($hits3 - $hits2, '>', 0, 'and they start from its hints');

$node->stop;
done_testing();

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

$node->stop;
done_testing();

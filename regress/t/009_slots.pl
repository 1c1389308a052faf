# 009_slots.pl: offload slots are a server-level resource that never drops
# an index silently.
#
#  - With forein.max_indexes = 2, a third offloaded index gets no slot: its
#    forein_refresh returns 0 with a NOTICE saying why, forein_stats shows
#    the reason in status, and the two indexes holding slots keep their
#    images however idle they are (no takeover).
#  - Dropping an index frees its slot for the next one.
#  - forein.lpm_entries is a server setting: SET is refused, and an index
#    cannot ask for more than the server reserved.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use ForeinTAP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = forein_node('slots',
	conf => "forein.max_indexes = 2\nforein.lpm_entries = 4000\n");

for my $t (qw(s1 s2 s3))
{
	$node->safe_psql(
		'postgres', qq{
CREATE TABLE $t (a int4);
INSERT INTO $t SELECT generate_series(1, 30000);
CREATE INDEX ${t}_i ON $t USING forein (a);
});
}

cmp_ok($node->safe_psql('postgres', q{SELECT forein_refresh('s1_i')}),
	'>', 0, 'first index gets a slot and entries');
cmp_ok($node->safe_psql('postgres', q{SELECT forein_refresh('s2_i')}),
	'>', 0, 'second index gets a slot and entries');

my ($out, $err) = ('', '');
$node->psql('postgres', q{SELECT forein_refresh('s3_i')},
	stdout => \$out, stderr => \$err);
is($out, '0', 'third index: nothing installed');
like($err, qr/NOTICE:  index "s3_i" gets no offload hints: no free offload slot/,
	'third index: a NOTICE says why');
like($err, qr/forein\.max_indexes/, 'the NOTICE names the setting');

like(
	$node->safe_psql('postgres', q{SELECT status FROM forein_stats('s3_i')}),
	qr/^no slot: all 2 offload slots/,
	'forein_stats shows why the third index has no hints');

# Scans of the third index do not take a slot from the others either.
$node->safe_psql('postgres',
	q{SET enable_seqscan = off; SELECT count(*) FROM s3 WHERE a BETWEEN 10 AND 5000});
for my $t (qw(s1 s2))
{
	is( $node->safe_psql('postgres',
			qq{SELECT status || ' ' || (installed_entries > 0) FROM forein_stats('${t}_i')}),
		'active true',
		"$t keeps its slot and image");
}

# Dropping an index frees its slot.
$node->safe_psql('postgres', 'DROP INDEX s1_i');
cmp_ok($node->safe_psql('postgres', q{SELECT forein_refresh('s3_i')}),
	'>', 0, 'after DROP INDEX the third index gets the freed slot');
is($node->safe_psql('postgres', q{SELECT status FROM forein_stats('s3_i')}),
	'active', 'and its status is active');

# Capacity is a server setting.
($out, $err) = ('', '');
$node->psql('postgres', 'SET forein.lpm_entries = 10', stderr => \$err);
like($err, qr/cannot be changed without restarting the server/,
	'forein.lpm_entries cannot be SET in a session');
($out, $err) = ('', '');
$node->psql('postgres',
	'CREATE INDEX s2_big ON s2 USING forein (a) WITH (lpm_entries = 5000)',
	stderr => \$err);
like($err, qr/lpm_entries 5000 exceeds the server's forein\.lpm_entries \(4000\)/,
	'an index cannot ask for more than the server reserved');
cmp_ok($node->safe_psql('postgres', q{SELECT capacity_entries FROM forein_stats('s2_i')}),
	'==', 4000, 'capacity_entries is the server setting');

# The server log says how much shared memory the slots take.
like(slurp_file($node->logfile), qr/forein offload: \d+ kB of shared memory for 2 index slots/,
	'the server logs the shared memory the slots take');

$node->stop;
done_testing();

# The on-disk format version in the metapage: an index whose metapage
# says another version (here: the field patched on disk while the node is
# down) is refused by every path that reads it (scans, the planner,
# inserts, VACUUM, forein_check, forein_stats, forein_refresh,
# forein_offload_entries, forein_offload_usage) with one error that names
# the index and both versions and hints at REINDEX; REINDEX rebuilds it in
# the current format.  A metapage with a wrong magic number gets its own
# error with the same hint.  Other indexes of the table keep working.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use ForeinTAP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = forein_node('format');
is($node->safe_psql('postgres', 'SHOW data_checksums'), 'off',
	'no data checksums: a patched page is read as it is');

$node->safe_psql(
	'postgres', q{
	CREATE TABLE fv (id int4, k int8, t text);
	INSERT INTO fv SELECT g, g * 3, 't' || g FROM generate_series(1, 20000) g;
	CREATE INDEX fv_k ON fv USING forein (k);
	CREATE INDEX fv_t ON fv USING forein (t);
	CREATE INDEX fv_id ON fv USING forein (id);
	DELETE FROM fv WHERE id % 10 = 0;
});

# The metapage (block 0): the page header (24 bytes), then magic, version.
my $header = 24;
sub patch_meta
{
	my ($index, $field_offset, $value) = @_;
	my $path = $node->data_dir . '/'
	  . $node->safe_psql('postgres', "SELECT pg_relation_filepath('$index')");
	return sub {
		open(my $fh, '+<:raw', $path) or die "open $path: $!";
		sysseek($fh, $header + $field_offset, 0) or die "seek: $!";
		syswrite($fh, pack('L', $value), 4) == 4 or die "write: $!";
		close($fh) or die "close: $!";
	};
}
my $patch_version = patch_meta('fv_k', 4, 99);
my $patch_magic = patch_meta('fv_id', 0, 0x12345678);
$node->stop;
$patch_version->();
$patch_magic->();
$node->start;

my $force = 'SET enable_seqscan = off; SET enable_bitmapscan = off;';
my $version_error =
  qr/ERROR:  index "fv_k" has on-disk format version 99, but this forein library reads only version 2\n(?s:.*)HINT:  Rebuild it in the current format with REINDEX INDEX public\.fv_k\./;
my %paths = (
	'index scan' => "$force SELECT count(*) FROM fv WHERE k BETWEEN 30 AND 300",
	'ordered scan' => "$force SELECT k FROM fv ORDER BY k LIMIT 3",
	'insert' => 'INSERT INTO fv VALUES (-1, -3, \'new\')',
	'VACUUM' => 'VACUUM fv',
	'forein_check' => "SELECT forein_check('fv_k', true)",
	'forein_stats' => "SELECT * FROM forein_stats('fv_k')",
	'forein_refresh' => "SELECT forein_refresh('fv_k')",
	'forein_offload_entries' => "SELECT * FROM forein_offload_entries('fv_k')",
	'forein_offload_usage' => "SELECT * FROM forein_offload_usage('fv_k')",
);
for my $what (sort keys %paths)
{
	my ($ret, $out, $err) = $node->psql('postgres', $paths{$what});
	isnt($ret, 0, "version 99: $what fails");
	like($err, $version_error, "version 99: $what names the index, the versions and REINDEX");
}
my ($ret, $out, $err) = $node->psql('postgres', "$force SELECT count(*) FROM fv WHERE t = 't77'");
is($out, '1', 'another index of the table still answers');

# the wrong magic number: another error, the same hint
($ret, $out, $err) = $node->psql('postgres', "$force SELECT count(*) FROM fv WHERE id < 100");
like($err,
	qr/ERROR:  index "fv_id" is not a forein index or its metapage is corrupted\n(?s:.*)HINT:  Rebuild it with REINDEX INDEX public\.fv_id\./,
	'wrong magic: scan fails naming the index, with the REINDEX hint');
($ret, $out, $err) = $node->psql('postgres', "SELECT forein_check('fv_id')");
like($err, qr/magic number is 0x12345678/i, 'wrong magic: forein_check reports the magic number');

# REINDEX rebuilds both in the current format
$node->safe_psql('postgres', 'REINDEX INDEX fv_k; REINDEX INDEX fv_id;');
is($node->safe_psql('postgres', "$force SELECT count(*) FROM fv WHERE k BETWEEN 30 AND 300"),
	$node->safe_psql('postgres', 'SET enable_indexscan = off; SET enable_indexonlyscan = off; SET enable_bitmapscan = off; SELECT count(*) FROM fv WHERE k BETWEEN 30 AND 300'),
	'after REINDEX: the index answers as the table does');
index_plan_ok($node, 'postgres', 'SELECT count(*) FROM fv WHERE k BETWEEN 30 AND 300', 'fv_k', $force);
$node->safe_psql('postgres', "INSERT INTO fv VALUES (-1, -3, 'new'); VACUUM fv;");
for my $idx (qw(fv_k fv_t fv_id))
{
	($ret, $out, $err) = $node->psql('postgres', "SELECT forein_check('$idx', true)");
	is($ret, 0, "after REINDEX: forein_check('$idx', true)") or diag $err;
}
is($node->safe_psql('postgres', "$force SELECT id FROM fv WHERE k = -3"), '-1',
	'after REINDEX: a new row is found');

$node->stop;
done_testing();

# 023_bottom_up_deletion.pl: version churn does not grow a forein index.
#
# An UPDATE that changes an indexed column other than the forein index's
# key (not HOT) adds a new entry for the same key to the forein index: the
# executor tells the index the key is unchanged (indexUnchanged).  The
# updates here find their rows through a btree index on k, one row per
# transaction (as OLTP does), so no scan of the forein index visits the old
# entries and marks them LP_DEAD.  Before a full leaf splits, forein asks
# the table which of its entries point to heap tuples dead to everyone,
# the versions of duplicate keys first (nbtree's bottom-up deletion), and
# deletes those; a unique index also marks dead versions while it checks a
# new key (nbtree's _bt_check_unique).
#
#  - Twelve rounds of updating every row (without deletion the index would
#    be 13 times its built size) leave a unique index and a deduplicating
#    one (old versions' TIDs leave posting tuples: DELETE_UPDATE records)
#    under 2.5 times their built size, and one with deduplicate_items = off
#    (bottom-up deletion alone) under 4 times, each within 1.25 times the
#    size of btree's index on a twin table under the same churn.
#  - A snapshot taken before the churn keeps the versions it sees: its
#    index scans return the old rows, and then the churn continues.
#  - The answers match a sequential scan, forein_check (heapallindexed)
#    accepts the index, a duplicate key is still refused, and a streaming
#    standby (the deletions carry a recovery-conflict horizon) answers the
#    same.
#
# autovacuum is off, so only the inserts delete entries.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use ForeinTAP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $rows = 5000;
my $rounds = 12;
my $node = forein_node('bottomup', allows_streaming => 1, conf => "autovacuum = off\n");

# name => the id index's definition; every table also has a btree on k,
# so updating k is never HOT.  cu, cn and cd are btree twins of bu, bn
# and bd.
my %tables = (
	bu => 'CREATE UNIQUE INDEX bu_id ON bu USING forein (id) WITH (offload = none)',
	bn => 'CREATE INDEX bn_id ON bn USING forein (id) WITH (offload = none, deduplicate_items = off)',
	bd => 'CREATE INDEX bd_id ON bd USING forein (id) WITH (offload = none)',
	bs => 'CREATE INDEX bs_id ON bs USING forein (id) WITH (offload = none, deduplicate_items = off)',
	cu => 'CREATE UNIQUE INDEX cu_id ON cu (id)',
	cn => 'CREATE INDEX cn_id ON cn (id) WITH (deduplicate_items = off)',
	cd => 'CREATE INDEX cd_id ON cd (id)',
);
for my $t (sort keys %tables)
{
	$node->safe_psql(
		'postgres', qq{
CREATE TABLE $t (id int4, k int4, pad text);
INSERT INTO $t SELECT g, g * 100, repeat('p', 60) FROM generate_series(1, $rows) g;
$tables{$t};
CREATE INDEX ${t}_k ON $t (k);
VACUUM ANALYZE $t;
});
}
# churn: rounds [first, first + n) of updating every row's k by one, a
# transaction per row, each row found through ${t}_k (k = id * 100 + round)
$node->safe_psql(
	'postgres', q{
CREATE FUNCTION indexed(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE r text;
BEGIN
	SET LOCAL enable_seqscan = off;
	SET LOCAL enable_bitmapscan = off;
	EXECUTE q INTO r;
	RETURN r;
END $$;
CREATE PROCEDURE churn(t regclass, first int, n int, nrows int) LANGUAGE plpgsql AS $$
BEGIN
	FOR r IN first .. first + n - 1 LOOP
		FOR i IN 1 .. nrows LOOP
			EXECUTE format('UPDATE %s SET k = k + 1 WHERE k = $1', t) USING i * 100 + r;
			COMMIT;
		END LOOP;
	END LOOP;
END $$;
});
my $standby = forein_standby($node, 'bottomup_standby');

sub size { return $node->safe_psql('postgres', "SELECT pg_relation_size('$_[0]')"); }

sub churn
{
	my ($t, $first, $n) = @_;
	$node->safe_psql('postgres',
		"SET enable_seqscan = off;\nSET enable_bitmapscan = off;\nCALL churn('$t', $first, $n, $rows)");
	return;
}

my %built = map { $_ => size("${_}_id") } keys %tables;
my %grown;
for my $t ('cu', 'cn', 'cd', 'bu', 'bn', 'bd')
{
	churn($t, 0, $rounds);
	$grown{$t} = size("${t}_id") / $built{$t};
	note(sprintf('%s_id: %d -> %d bytes (%.2fx) after %d rounds', $t, $built{$t}, size("${t}_id"),
		$grown{$t}, $rounds));
	next if $t =~ /^c/;    # btree, for reference
	my $limit = $t eq 'bn' ? 4 : 2.5;
	cmp_ok($grown{$t}, '<', $limit,
		"$t: $rounds rounds of non-HOT updates leave ${t}_id under ${limit}x its built size ("
		  . sprintf('%.2fx', $grown{$t}) . ')');
	my $twin = { bu => 'cu', bn => 'cn', bd => 'cd' }->{$t};
	cmp_ok($grown{$t}, '<=', 1.25 * $grown{$twin},
		sprintf('%s: within 1.25x of btree under the same churn (%.2fx, btree %.2fx)',
			$t, $grown{$t}, $grown{$twin}));
	is( $node->safe_psql('postgres',
			"SELECT indexed('SELECT count(*) || '' '' || sum(k) FROM $t WHERE id BETWEEN 1 AND $rows')"),
		$node->safe_psql('postgres', "SELECT count(*) || ' ' || sum(k) FROM $t"),
		"$t: the index scan returns every row's latest version");
	is($node->safe_psql('postgres', "SELECT forein_check('${t}_id', true)"), '',
		"$t: forein_check (heapallindexed) accepts the index");
}
my ($ret, $out, $err) = $node->psql('postgres', 'INSERT INTO bu VALUES (77, 0, \'dup\')');
like($err, qr/duplicate key value violates unique constraint "bu_id"/,
	'bu: a duplicate key is still refused after its old versions were deleted');

# A snapshot from before the churn keeps its versions.
my $old = $node->background_psql('postgres');
$old->query_safe('BEGIN ISOLATION LEVEL REPEATABLE READ');
my $old_sum = $old->query_safe('SELECT sum(k) FROM bs');
churn('bs', 0, 4);
$old->query_safe('SET enable_seqscan = off');
$old->query_safe('SET enable_bitmapscan = off');
like($old->query_safe('EXPLAIN (COSTS OFF) SELECT sum(k) FROM bs WHERE id BETWEEN 1 AND 5000'),
	qr/Index Scan using bs_id/, 'the old snapshot reads bs through bs_id');
is($old->query_safe("SELECT sum(k) FROM bs WHERE id BETWEEN 1 AND $rows"), $old_sum,
	'the old snapshot still finds the versions it sees');
$old->query_safe('COMMIT');
$old->quit;
churn('bs', 4, 4);
is( $node->safe_psql('postgres', "SELECT indexed('SELECT sum(k) FROM bs WHERE id BETWEEN 1 AND $rows')"),
	$old_sum + 8 * $rows, 'after the snapshot ends, the index returns the latest versions');
is($node->safe_psql('postgres', "SELECT forein_check('bs_id', true)"), '',
	'bs: forein_check (heapallindexed) accepts the index');

# The standby replays the deletions and answers the same.
$node->wait_for_catchup($standby, 'replay');
for my $t ('bu', 'bn', 'bd', 'bs')
{
	my $q = "SELECT indexed('SELECT count(*) || '' '' || sum(k) FROM $t WHERE id BETWEEN 1 AND $rows')";
	is($standby->safe_psql('postgres', $q), $node->safe_psql('postgres', $q),
		"$t: the standby's index scan answers as the primary's");
}

$standby->stop;
$node->stop;
done_testing();

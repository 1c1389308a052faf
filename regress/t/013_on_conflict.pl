# 013_on_conflict.pl: when forein's ON CONFLICT check (an ExecutorStart
# hook in forein.so, pg_extension/forein_hooks.c) is there, as
# docs/postgresql.md states it.
#
#  - Without shared_preload_libraries, a session whose first statement is
#    INSERT ... ON CONFLICT DO NOTHING (no inference clause) on a table with
#    a forein unique index has not loaded forein.so when the executor starts:
#    PostgreSQL's own "unexpected non-btree speculative unique index".  The
#    same session's next ON CONFLICT gets forein's message.
#  - An inference clause, ON CONFLICT (col), opens the table's indexes while
#    planning (loading forein.so): forein's message from the first statement.
#  - So does a session that used a forein index before.
#  - With shared_preload_libraries = 'forein': forein's message always.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use ForeinTAP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = forein_node('on_conflict', preload => 0);
$node->safe_psql(
	'postgres', q{
CREATE TABLE oc (id int4);
CREATE UNIQUE INDEX oc_id ON oc USING forein (id);
INSERT INTO oc VALUES (1);
});

my $internal = qr/ERROR:  unexpected non-btree speculative unique index/;
my $forein = qr/ERROR:  INSERT \.\.\. ON CONFLICT is not supported on table "oc" because its unique index "oc_id" uses access method forein\n.*DETAIL:  PostgreSQL 15 accepts only btree unique indexes as ON CONFLICT arbiters.*\n.*HINT:  Make the unique index a btree index/;

# psql without ON_ERROR_STOP: every statement runs, each error is reported
sub session_errors
{
	my ($sql) = @_;
	my ($out, $err) = ('', '');
	$node->psql(
		'postgres', $sql,
		stdout => \$out,
		stderr => \$err,
		on_error_stop => 0);
	return ($out, $err);
}

# \warn marks where the first statement's messages end
my ($out, $err) = session_errors(q{INSERT INTO oc VALUES (1) ON CONFLICT DO NOTHING;
\warn between
INSERT INTO oc VALUES (1) ON CONFLICT DO NOTHING;});
my @parts = split /between/, $err, 2;
like($parts[0], $internal,
	'not preloaded, first statement without inference: PostgreSQL\'s error');
unlike($parts[0], $forein, '... not forein\'s (the hook came too late)');
like($parts[1], $forein, 'the same session\'s next ON CONFLICT: forein\'s error');

($out, $err) = session_errors(q{INSERT INTO oc VALUES (1) ON CONFLICT (id) DO NOTHING});
like($err, $forein,
	'not preloaded, first statement with an inference clause: forein\'s error');

($out, $err) = session_errors(q{
SET enable_seqscan = off;
SELECT count(*) FROM oc WHERE id = 1;
INSERT INTO oc VALUES (1) ON CONFLICT DO NOTHING;
});
like($err, $forein, 'not preloaded, after a forein index scan: forein\'s error');

$node->append_conf('postgresql.conf', "shared_preload_libraries = 'forein'\n");
$node->restart;
($out, $err) = session_errors(q{INSERT INTO oc VALUES (1) ON CONFLICT DO NOTHING});
like($err, $forein, 'preloaded, first statement without inference: forein\'s error');
($out, $err) = session_errors(
	q{INSERT INTO oc VALUES (1) ON CONFLICT (id) DO UPDATE SET id = 2});
like($err, $forein, 'preloaded, DO UPDATE: forein\'s error');
is($node->safe_psql('postgres', 'SELECT count(*), min(id) FROM oc'),
	'1|1', 'nothing was inserted or updated');

$node->stop;
done_testing();

# 008_privileges.pl: forein's SQL functions follow contrib/amcheck's
# privilege model.
#
#  - forein_check, forein_refresh, forein_offload_entries and
#    forein_offload_usage are not executable by PUBLIC; forein_stats is.
#  - A role granted EXECUTE still needs SELECT on the index's table to read
#    (forein_check, forein_offload_entries, forein_offload_usage) and
#    ownership to change
#    (forein_refresh), and is refused before any lock is taken: a call by
#    such a role returns "permission denied" at once even while another
#    session holds ACCESS EXCLUSIVE on the table, where a privileged call
#    waits (shown with lock_timeout).
#  - ALTER EXTENSION forein UPDATE applies the revokes to a 0.1 installation
#    and adds forein_offload_usage, revoked, to a 0.2 one; 0.4 -> 0.5 gives
#    forein_offload_entries its prefix_hex column and keeps it revoked.
#  - Every updated installation has a fresh one's catalog rows, functions'
#    arguments and results included.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use ForeinTAP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = forein_node('privileges');

$node->safe_psql(
	'postgres', q{
CREATE TABLE priv_t (a int4);
INSERT INTO priv_t SELECT generate_series(1, 20000);
CREATE INDEX priv_i ON priv_t USING forein (a);
CREATE ROLE forein_nobody LOGIN;
CREATE ROLE forein_granted LOGIN;
CREATE ROLE forein_reader LOGIN;
CREATE ROLE forein_owner LOGIN;
GRANT EXECUTE ON FUNCTION forein_check(regclass, boolean),
	forein_refresh(regclass), forein_offload_entries(regclass),
	forein_offload_usage(regclass)
	TO forein_granted, forein_reader, forein_owner;
GRANT SELECT ON priv_t TO forein_reader;
CREATE TABLE own_t (a int4);
INSERT INTO own_t SELECT generate_series(1, 20000);
CREATE INDEX own_i ON own_t USING forein (a);
ALTER TABLE own_t OWNER TO forein_owner;
});

# PUBLIC's EXECUTE, per function, in the fresh (0.5) installation
my $public_exec = q{
SELECT string_agg(p.proname || '=' || has_function_privilege('forein_nobody', p.oid, 'EXECUTE'),
                  ',' ORDER BY p.proname)
FROM pg_proc p
JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'forein'
WHERE p.proname <> 'forein_handler'};
my $want_revoked =
  'forein_check=false,forein_debug_page_intervals=false,forein_debug_word=false,'
  . 'forein_offload_entries=false,forein_offload_usage=false,forein_refresh=false,'
  . 'forein_stats=true';
is($node->safe_psql('postgres', $public_exec),
	$want_revoked, 'install script: only forein_stats is executable by PUBLIC');

# Runs sql as role (SET ROLE in a superuser session, so no pg_hba changes);
# returns (exit code, stdout, stderr).
sub as_role
{
	my ($role, $sql) = @_;
	my ($out, $err) = ('', '');
	my $rc = $node->psql(
		'postgres', "SET lock_timeout = '60s'; SET ROLE $role; $sql",
		stdout => \$out,
		stderr => \$err);
	return ($rc, $out, $err);
}

my @calls = (
	[ 'forein_check', q{SELECT forein_check('priv_i', true)} ],
	[ 'forein_refresh', q{SELECT forein_refresh('priv_i')} ],
	[ 'forein_offload_entries', q{SELECT count(*) FROM forein_offload_entries('priv_i')} ],
	[ 'forein_offload_usage', q{SELECT count(*) FROM forein_offload_usage('priv_i')} ],
);

# While another session holds ACCESS EXCLUSIVE on the table, a refused call
# must fail at once with a permission error; had it taken a lock first it
# would wait for lock_timeout (60 s) instead.
my $locker = $node->background_psql('postgres');
$locker->query_safe('BEGIN; LOCK TABLE priv_t IN ACCESS EXCLUSIVE MODE');

for my $c (@calls)
{
	my ($name, $sql) = @$c;
	my ($rc, $out, $err) = as_role('forein_nobody', $sql);
	isnt($rc, 0, "$name: refused without EXECUTE");
	like($err, qr/permission denied for function $name/, "$name: no EXECUTE error");
	is($out, '', "$name: returned nothing without EXECUTE");

	($rc, $out, $err) = as_role('forein_granted', $sql);
	isnt($rc, 0, "$name: refused with EXECUTE but no table privilege");
	like($err, qr/permission denied for table priv_t/,
		"$name: permission denied for table, before any lock");
	unlike($err, qr/lock timeout/, "$name: did not wait for the table's lock");
	is($out, '', "$name: returned nothing without table privilege");
}

# SELECT on the table is enough to read, not to refresh.
{
	my ($rc, $out, $err) = as_role('forein_reader', q{SELECT forein_refresh('priv_i')});
	isnt($rc, 0, 'forein_refresh: SELECT alone is not enough');
	like($err, qr/permission denied for table priv_t/, 'forein_refresh needs ownership');
}

# The lock really blocks a privileged call (so the test above could fail).
{
	my ($out, $err) = ('', '');
	my $rc = $node->psql(
		'postgres', q{SET lock_timeout = '200ms'; SELECT forein_check('priv_i')},
		stdout => \$out,
		stderr => \$err);
	isnt($rc, 0, 'a superuser call waits for the table lock');
	like($err, qr/lock timeout/, 'and times out on it');
}
$locker->query_safe('COMMIT');
$locker->quit;

# With the privileges: the reader checks and lists, the owner refreshes.
{
	my ($rc, $out, $err) = as_role('forein_reader', q{SELECT forein_check('priv_i', true)});
	is($rc, 0, 'forein_check works for a role with EXECUTE and SELECT') or diag $err;
	($rc, $out, $err) =
	  as_role('forein_reader', q{SELECT count(*) >= 0 FROM forein_offload_entries('priv_i')});
	is($rc, 0, 'forein_offload_entries works with EXECUTE and SELECT') or diag $err;
	is($out, 't', 'forein_offload_entries returned its rows');
	($rc, $out, $err) =
	  as_role('forein_reader', q{SELECT count(*) >= 0 FROM forein_offload_usage('priv_i')});
	is($rc, 0, 'forein_offload_usage works with EXECUTE and SELECT') or diag $err;
	is($out, 't', 'forein_offload_usage returned its rows');
	($rc, $out, $err) = as_role('forein_owner', q{SELECT forein_refresh('own_i') > 0});
	is($rc, 0, 'forein_refresh works for the owner') or diag $err;
	is($out, 't', 'the owner\'s refresh installed entries');
	($rc, $out, $err) = as_role('forein_nobody', q{SELECT backend FROM forein_stats('priv_i')});
	is($rc, 0, 'forein_stats stays public') or diag $err;
}

# ALTER EXTENSION forein UPDATE applies the revokes to a 0.1 installation.
$node->safe_psql('postgres', 'CREATE DATABASE upgrade_db');
$node->safe_psql('upgrade_db', q{CREATE EXTENSION forein VERSION '0.1'});
is( $node->safe_psql('upgrade_db', $public_exec),
	'forein_check=true,forein_offload_entries=true,forein_refresh=true,forein_stats=true',
	'0.1 left every function to PUBLIC');
$node->safe_psql('upgrade_db', 'ALTER EXTENSION forein UPDATE');
is($node->safe_psql('upgrade_db', q{SELECT extversion FROM pg_extension WHERE extname = 'forein'}),
	'0.5', 'updated to 0.5');
is($node->safe_psql('upgrade_db', $public_exec),
	$want_revoked, 'the update revoked PUBLIC\'s EXECUTE');

# ... and adds forein_offload_usage, revoked, to a 0.2 installation.
$node->safe_psql('postgres', 'CREATE DATABASE upgrade_02_db');
$node->safe_psql('upgrade_02_db', q{CREATE EXTENSION forein VERSION '0.2'});
$node->safe_psql('upgrade_02_db', 'ALTER EXTENSION forein UPDATE');
is( $node->safe_psql(
		'upgrade_02_db', q{SELECT extversion FROM pg_extension WHERE extname = 'forein'}),
	'0.5',
	'updated 0.2 to 0.5');
is($node->safe_psql('upgrade_02_db', $public_exec),
	$want_revoked, 'the 0.2 -> 0.3 update added forein_offload_usage, not for PUBLIC');
is( $node->safe_psql(
		'upgrade_02_db', q{SELECT pg_get_function_result('forein_offload_usage(regclass)'::regprocedure)}),
	'TABLE(device text, resource text, unit text, used bigint, capacity bigint)',
	'forein_offload_usage\'s columns after the update');

# An updated installation has the fresh one's operator classes, families,
# their members, the extension's member objects and its functions' arguments
# and results (forein--0.3--0.4.sql and forein--0.5.sql share their 0.4
# block, forein--0.4--0.5.sql and forein--0.5.sql their 0.5 one).
my $catalog = q{
	SELECT string_agg(r, E'\n' ORDER BY r) FROM (
	SELECT format('opclass %s %s %s %s', c.opcname, f.opfname, c.opcintype::regtype,
				  c.opcdefault) AS r
	FROM pg_opclass c JOIN pg_opfamily f ON f.oid = c.opcfamily
	WHERE c.opcmethod = (SELECT oid FROM pg_am WHERE amname = 'forein')
	UNION ALL
	SELECT format('amop %s %s %s %s %s %s', f.opfname, o.amoplefttype::regtype,
				  o.amoprighttype::regtype, o.amopstrategy, o.amopopr::regoperator, o.amoppurpose)
	FROM pg_amop o JOIN pg_opfamily f ON f.oid = o.amopfamily
	WHERE o.amopmethod = (SELECT oid FROM pg_am WHERE amname = 'forein')
	UNION ALL
	SELECT format('amproc %s %s %s %s %s', f.opfname, p.amproclefttype::regtype,
				  p.amprocrighttype::regtype, p.amprocnum, p.amproc::regprocedure)
	FROM pg_amproc p JOIN pg_opfamily f ON f.oid = p.amprocfamily
	WHERE f.opfmethod = (SELECT oid FROM pg_am WHERE amname = 'forein')
	UNION ALL
	SELECT 'member ' || pg_describe_object(classid, objid, objsubid)
	FROM pg_depend
	WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'
	  AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'forein')
	UNION ALL
	SELECT format('function %s (%s) returns %s', p.proname, pg_get_function_arguments(p.oid),
				  pg_get_function_result(p.oid))
	FROM pg_proc p
	JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
	WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'forein')) s};
my $fresh = $node->safe_psql('postgres', $catalog);
like($fresh, qr/^amproc date_ops date timestamp without time zone 1 date_cmp_timestamp\(/m,
	'the fresh installation has the cross-type members');
like($fresh,
	qr/^function forein_offload_entries \(index regclass, OUT prefix numeric, OUT prefix_len integer, OUT node bigint, OUT level integer, OUT prefix_hex text\) returns SETOF record$/m,
	'the fresh 0.5 installation lists forein_offload_entries with prefix_hex');
$node->safe_psql('postgres', 'CREATE DATABASE upgrade_03_db');
$node->safe_psql('upgrade_03_db', q{CREATE EXTENSION forein VERSION '0.3'});
$node->safe_psql('upgrade_03_db', q{ALTER EXTENSION forein UPDATE TO '0.4'});
$node->safe_psql('upgrade_03_db', q{ALTER EXTENSION forein UPDATE TO '0.5'});
is($node->safe_psql('upgrade_03_db', $catalog), $fresh,
	'0.3 updated to 0.4, then 0.5: the same operator classes, members, objects and functions as a fresh 0.5');
is($node->safe_psql('upgrade_02_db', $catalog), $fresh,
	'0.2 updated to 0.5: the same as a fresh 0.5');

# 0.4 -> 0.5: forein_offload_entries is dropped and created again with its
# new column; its REVOKE is applied again, and it still lists the entries.
$node->safe_psql('postgres', 'CREATE DATABASE upgrade_04_db');
$node->safe_psql('upgrade_04_db', q{CREATE EXTENSION forein VERSION '0.4'});
is( $node->safe_psql(
		'upgrade_04_db',
		q{SELECT pg_get_function_arguments('forein_offload_entries(regclass)'::regprocedure)}),
	'index regclass, OUT prefix numeric, OUT prefix_len integer, OUT node bigint, OUT level integer',
	'0.4: forein_offload_entries has four columns');
$node->safe_psql(
	'upgrade_04_db', q{
CREATE TABLE t04 (a int4);
INSERT INTO t04 SELECT generate_series(1, 20000);
CREATE INDEX t04_i ON t04 USING forein (a);
SELECT forein_refresh('t04_i');
});
is( $node->safe_psql(
		'upgrade_04_db',
		q{SELECT count(*) > 0 AND bool_and(level >= 0) FROM forein_offload_entries('t04_i')}),
	't', 'the new library serves a database still at 0.4 its four columns');
$node->safe_psql('upgrade_04_db', q{ALTER EXTENSION forein UPDATE TO '0.5'});
is($node->safe_psql('upgrade_04_db', $public_exec),
	$want_revoked, '0.4 -> 0.5: forein_offload_entries is still not for PUBLIC');
is($node->safe_psql('upgrade_04_db', $catalog), $fresh,
	'0.4 updated to 0.5: the same as a fresh 0.5');
is( $node->safe_psql(
		'upgrade_04_db',
		q{SELECT count(*) > 0 AND bool_and(prefix_hex LIKE '0x%/' || prefix_len)
		  FROM forein_offload_entries('t04_i')}),
	't', '0.4 updated to 0.5: forein_offload_entries lists prefix_hex');

$node->stop;
done_testing();

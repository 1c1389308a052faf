# ForeinTAP.pm: helpers shared by forein's TAP tests (regress/t/*.pl).
#
# Run them with scripts/run-pg-tests.sh (or scripts/run-pg-tap.sh), which
# sets PATH, PG_REGRESS and the Perl include path.
package ForeinTAP;

use strict;
use warnings;

use Exporter 'import';
use JSON::PP qw(decode_json);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

our @EXPORT = qw(forein_node forein_standby crash_postmaster wait_pids_gone index_plan_ok
  test_seed compare_outputs run_marked_script poll_while_running offload_backends
  index_scan_buffers);

# forein_node(name, preload => 1, allows_streaming => 0, conf => '...')
# A node with the forein library preloaded (unless preload => 0), quiet
# statement logging (pgbench would flood the log) and the extension created
# in database "postgres" once started (unless start => 0).
sub forein_node
{
	my ($name, %opts) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init(allows_streaming => $opts{allows_streaming} // 0);
	my $conf = "log_statement = none\n";
	$conf .= "shared_preload_libraries = 'forein'\n" if $opts{preload} // 1;
	$conf .= $opts{conf} if defined $opts{conf};
	$node->append_conf('postgresql.conf', $conf);
	if ($opts{start} // 1)
	{
		$node->start;
		$node->safe_psql('postgres', 'CREATE EXTENSION forein');
	}
	return $node;
}

# forein_standby(primary, name): a streaming standby of primary, started
# from a fresh base backup, receiving through a physical replication slot
# of its name.  The slot keeps the WAL the standby has not received yet:
# PostgreSQL's TAP clusters run with max_wal_size = 128MB and no
# wal_keep_size, so a standby lagging on a busy machine (or replaying
# slowly, with wal_consistency_checking) could otherwise find the segments
# it needs removed and never catch up.
sub forein_standby
{
	my ($primary, $name) = @_;
	$primary->safe_psql('postgres',
		"SELECT pg_create_physical_replication_slot('${name}_slot')");
	$primary->backup("${name}_base");
	my $standby = PostgreSQL::Test::Cluster->new($name);
	$standby->init_from_backup($primary, "${name}_base", has_streaming => 1);
	$standby->append_conf('postgresql.conf', "primary_slot_name = '${name}_slot'\n");
	$standby->start;
	return $standby;
}

# The pids of the postmaster's children (backends and auxiliary processes).
sub _children
{
	my ($ppid) = @_;
	my @kids;
	opendir(my $dh, '/proc') or return ();
	for my $d (readdir $dh)
	{
		next unless $d =~ /^\d+$/;
		open(my $fh, '<', "/proc/$d/stat") or next;
		my $stat = <$fh>;
		close $fh;
		next unless defined $stat;
		# pid (comm) state ppid ...: comm may hold spaces and parentheses
		push @kids, $d if $stat =~ /\)\s+\S+\s+(\d+)/ && $1 == $ppid;
	}
	closedir $dh;
	return @kids;
}

# wait_pids_gone(timeout_s, pids...): poll until none of the processes
# exists any more, not even as a zombie (a new postmaster refuses to start
# while kill(old pid, 0) succeeds); true on success.
sub wait_pids_gone
{
	my ($timeout, @pids) = @_;
	my $deadline = time + $timeout;
	while (time < $deadline)
	{
		my @alive = grep { kill(0, $_) } @pids;
		return 1 unless @alive;
		usleep(50_000);
	}
	diag "processes still present after ${timeout}s: "
	  . join(' ', grep { kill(0, $_) } @pids);
	return 0;
}

# crash_postmaster(node): SIGKILL the postmaster itself (a real kill -9,
# not pg_ctl), then wait until it and every child it had are gone, so the
# next start does not find the old shared memory still attached.
sub crash_postmaster
{
	my ($node) = @_;
	my $pid = $node->{_pid};
	die "node is not running" unless defined $pid;
	my @kids = _children($pid);
	note "killing postmaster $pid with SIGKILL ("
	  . scalar(@kids) . " children)";
	$node->kill9;    # kill(9, postmaster pid)
	ok(wait_pids_gone(120, $pid, @kids),
		'postmaster and all its children exited after SIGKILL');
	return;
}

# poll_while_running(node, query, harness, stderr_ref, timeout_s): poll
# until query returns 't'; dies if the background process of harness (an
# IPC::Run harness, e.g. pgbench) ends first, showing its stderr.
sub poll_while_running
{
	my ($node, $query, $h, $err, $timeout) = @_;
	my $deadline = time + ($timeout // 180);
	while (time < $deadline)
	{
		$h->pump_nb if $h->pumpable;
		die "background load ended early:\n$$err" unless $h->pumpable;
		return 1 if $node->safe_psql('postgres', $query) eq 't';
		usleep(100_000);
	}
	die "timed out polling: $query";
}

# index_plan_ok(node, db, query, index_name, settings): the plan of query
# (run after the SET commands in settings) scans index_name.
sub index_plan_ok
{
	my ($node, $db, $query, $index, $settings) = @_;
	$settings //= '';
	my $plan = $node->safe_psql($db, "$settings\nEXPLAIN (COSTS OFF) $query");
	like($plan, qr/ using \Q$index\E\b| on \Q$index\E\b/,
		"plan uses $index: $query")
	  or diag $plan;
	return;
}

# index_scan_buffers(node, db, query): the shared buffers (hit + read) the
# plan of query touched, run with sequential and bitmap scans off (so an
# index scan answers it) under EXPLAIN (ANALYZE, BUFFERS).
sub index_scan_buffers
{
	my ($node, $db, $query) = @_;
	my $out = $node->safe_psql($db,
		"SET enable_seqscan = off;\nSET enable_bitmapscan = off;\n"
		  . "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) $query");
	my $plan = decode_json($out)->[0]{Plan};
	return $plan->{'Shared Hit Blocks'} + $plan->{'Shared Read Blocks'};
}

# offload_backends(node[, env]): the offload backends that give hints, in
# registry order: the ones an index can use that the server names when a
# reloption offload is unknown, less "none".  $ENV{env} (a space-separated
# list), if set, chooses instead.
sub offload_backends
{
	my ($node, $env) = @_;
	return split(' ', $ENV{$env}) if defined $env && defined $ENV{$env};
	my ($ret, $out, $err) = $node->psql('postgres',
		"CREATE TEMP TABLE forein_backends_probe (a int4);\n"
		  . "CREATE INDEX ON forein_backends_probe USING forein (a) WITH (offload = '-');");
	die "no list of offload backends in: $err"
	  unless $err =~ /Offload backends an index can use: ([^.\n]+)\./;
	return grep { $_ ne 'none' } split(/,\s*/, $1);
}

# test_seed(): the seed of a randomized test: $ENV{FOREIN_SEED} if set,
# else derived from the time and pid.  Printed, and given to srand.
sub test_seed
{
	my $seed = $ENV{FOREIN_SEED} // (time ^ ($$ << 8)) % 1_000_000_007;
	diag "random seed: $seed (rerun with FOREIN_SEED=$seed)";
	srand($seed);
	return $seed;
}

# run_marked_script(node, db, settings, queries): run all queries in one
# psql session (after settings), return a list of their outputs in order.
sub run_marked_script
{
	my ($node, $db, $settings, $queries) = @_;
	my $sql = "$settings\n";
	for my $i (0 .. $#$queries)
	{
		$sql .= "\\echo ==Q$i==\n$queries->[$i];\n";
	}
	$sql .= "\\echo ==END==\n";
	my $out = $node->safe_psql($db, $sql);
	my @res;
	my @parts = split(/^==Q(\d+)==\n?/m, $out);
	shift @parts;    # before the first marker: the settings' output
	while (@parts)
	{
		my ($i, $text) = splice(@parts, 0, 2);
		$text //= '';
		$text =~ s/==END==\n?$//;
		$res[$i] = $text;
	}
	die "lost query outputs (" . scalar(@res) . " of " . scalar(@$queries) . ")"
	  unless @res == @$queries;
	return @res;
}

# compare_outputs(name, queries, got, want, got_label, want_label): one test
# per call; on a difference names the first differing query and both
# answers.
sub compare_outputs
{
	my ($name, $queries, $got, $want, $gl, $wl) = @_;
	for my $i (0 .. $#$queries)
	{
		next if $got->[$i] eq $want->[$i];
		fail($name);
		diag "query $i differs: $queries->[$i]\n"
		  . "--- $wl:\n$want->[$i]\n--- $gl:\n$got->[$i]";
		return 0;
	}
	pass($name);
	return 1;
}

1;

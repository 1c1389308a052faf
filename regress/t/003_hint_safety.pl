# Hint safety: a hint only ever changes where a descent starts, never what
# a query returns.  With forein.debug_random_hints = on (every descent gets
# random blocks and levels as hints) the answers equal those without hints
# and those of a btree index, and the bad hints are counted as fallbacks.
# With real offload tables installed (forein_refresh) by every registered
# backend that gives hints (switch_lpm, fattree, fpga, dpa, ...) hints are used
# (hint_hits > 0), and stay safe when page splits make them stale.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use ForeinTAP;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $seed = test_seed();
# The background worker's control plane waits an hour before installing a
# table, so only forein_refresh (with no delay) installs one: hints go
# stale when pages split afterwards.
my $node = forein_node('hints', conf => "forein.install_delay_ms = 3600000\n");

# h (forein) and hb (btree) hold the same rows: 150,000 keys 0, 3, 6, ...
# (so that misses fall between keys), some duplicated, some NULLs.
$node->safe_psql(
	'postgres', q{
	CREATE TABLE h (id int4, k int8, t text);
	INSERT INTO h SELECT g, g * 3, 't' || lpad(g::text, 7, '0') FROM generate_series(0, 149999) g;
	INSERT INTO h SELECT -g, (g % 1000) * 300, NULL FROM generate_series(1, 5000) g;
	INSERT INTO h SELECT -100000 - g, NULL, NULL FROM generate_series(1, 100) g;
	CREATE TABLE hb AS SELECT * FROM h;
	CREATE INDEX h_k ON h USING forein (k) WITH (offload = 'switch_lpm');
	CREATE INDEX h_t ON h USING forein (t) WITH (offload = 'switch_lpm');
	CREATE INDEX hb_k ON hb USING btree (k);
	CREATE INDEX hb_t ON hb USING btree (t);
	VACUUM ANALYZE h;
	VACUUM ANALYZE hb;
});

my $maxk = 150000 * 3;
sub rk { return int(rand($maxk + 10)) - 5; }

# Query templates; %T is the table.
my @templates;
push @templates, 'SELECT id FROM %T WHERE k = ' . rk() . ' ORDER BY id' for 1 .. 300;
for (1 .. 40)
{
	my $a = rk();
	my $b = $a + int(rand(3000));
	push @templates, "SELECT count(*), sum(id) FROM %T WHERE k BETWEEN $a AND $b";
	push @templates, "SELECT k FROM %T WHERE k > $a ORDER BY k LIMIT 7";
	push @templates, "SELECT k FROM %T WHERE k <= $b ORDER BY k DESC LIMIT 7";
	push @templates, "SELECT k FROM %T WHERE k < $a AND k >= $a - 12 ORDER BY k DESC";
	push @templates, 'SELECT count(*) FROM %T WHERE k IN ('
	  . join(', ', map { rk() } 1 .. 8) . ')';
	my $t = sprintf('t%07d', int(rand(150000)));
	push @templates, "SELECT t FROM %T WHERE t >= '$t' ORDER BY t LIMIT 5";
	push @templates, "SELECT id FROM %T WHERE t = '$t'";
}
push @templates,
  'SELECT count(*), sum(x.id) FROM generate_series(0, 20000, 7) s(v) JOIN %T x ON x.k = s.v';
push @templates, 'SELECT count(*) FROM %T WHERE k IS NULL';
push @templates, 'SELECT min(k), max(k) FROM %T';

my @forein = map { (my $q = $_) =~ s/%T/h/g; $q } @templates;
my @btree = map { (my $q = $_) =~ s/%T/hb/g; $q } @templates;

my $force = "SET enable_seqscan = off; SET enable_bitmapscan = off; SET enable_hashjoin = off; SET enable_mergejoin = off;";
index_plan_ok($node, 'postgres', $forein[0], 'h_k', $force);
index_plan_ok($node, 'postgres', $forein[-3], 'h_k', $force);

my $stats = "SELECT lookups, hint_hits, move_rights, fallbacks FROM forein_stats('h_k')";

# run(settings, queries): the answers, and forein_stats of h_k before and
# after, read in the same session.
sub run
{
	my ($settings, $queries, $st) = @_;
	$st //= $stats;
	my @out = run_marked_script($node, 'postgres', $settings, [ $st, @$queries, $st ]);
	my @before = split /\|/, shift @out;
	my @after = split /\|/, pop @out;
	my %d;
	@d{qw(lookups hint_hits move_rights fallbacks)} =
	  map { $after[$_] - $before[$_] } 0 .. 3;
	note "stats delta: " . join(', ', map { "$_=$d{$_}" } sort keys %d);
	return (\@out, \%d);
}

my ($want) = run($force, \@btree);
my ($plain) = run("$force SET forein.offload = off;", \@forein);
compare_outputs('no hints: forein answers equal btree', \@templates, $plain, $want, 'forein', 'btree');

my ($random, $d) = run("$force SET forein.debug_random_hints = on;", \@forein);
compare_outputs('random hints: forein answers equal btree', \@templates, $random, $want,
	'forein random hints', 'btree');
cmp_ok($d->{lookups}, '>', 0, 'random hints: descents counted');
cmp_ok($d->{fallbacks}, '>', 0, "random hints: fallbacks counted ($d->{fallbacks})");

# Random hints while other sessions split pages of the same index.  The
# load commits keys from 10^12 up (t values 'zz...'), so the queries that
# stay below them (no unbounded ORDER BY ... LIMIT upwards, no max) must
# still give btree's answers.
{
	my @sel = grep { $templates[$_] !~ /min\(k\)|ORDER BY k LIMIT|ORDER BY t LIMIT/ } 0 .. $#templates;
	my @qs = map { $forein[$_] } @sel;
	my @ws = map { $want->[$_] } @sel;
	my $script = $node->basedir . '/split_load.sql';
	PostgreSQL::Test::Utils::append_to_file($script,
		"\\set k random(1, 100000000)\nINSERT INTO h (id, k, t) SELECT -1000001, 1000000000000 + :k::int8 * 50 + g, 'zz' || :k FROM generate_series(1, 50) g;\n");
	# and rolled-back inserts in the queried key range: they split the
	# very pages the queries read, yet no query may see them
	my $script2 = $node->basedir . '/split_abort.sql';
	PostgreSQL::Test::Utils::append_to_file($script2,
		"\\set k random(0, $maxk)\nBEGIN;\nINSERT INTO h (id, k, t) SELECT -1000003, :k + g % 3, 't' || lpad((:k / 3)::text, 7, '0') FROM generate_series(1, 60) g;\nROLLBACK;\n");
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start(
		[ 'pgbench', '--no-vacuum', '-c', '3', '-j', '1', '-T', '300', "--random-seed=$seed",
		  '-h', $node->host, '-p', $node->port, '-f', $script, '-f', $script2, 'postgres' ],
		'>', \$out, '2>', \$err);
	# the load is running before the queries start
	poll_while_running($node, "SELECT count(*) > 2000 FROM h WHERE id = -1000001", $h, \$err);
	my ($concurrent) = run("$force SET forein.debug_random_hints = on;", \@qs);
	my $during = $node->safe_psql('postgres', "SELECT count(*) FROM h WHERE id = -1000001");
	$h->kill_kill;
	$h->finish;
	# a killed client's backend may still finish (and commit) its INSERT:
	# wait until every other session is gone before cleaning up
	$node->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()")
	  or die "load sessions did not end";
	compare_outputs("random hints during concurrent splits ($during rows inserted meanwhile): answers equal btree",
		\@qs, $concurrent, \@ws, 'forein random hints', 'btree');
	$node->safe_psql('postgres', 'DELETE FROM h WHERE id = -1000001; VACUUM h;');
}

# Writes descend with hints too: with random hints, inserts, deletes and
# updates must land where they belong, and unique checks must still find
# the existing key.
{
	my $rh = 'SET forein.debug_random_hints = on;';
	for my $t (qw(h hb))
	{
		$node->safe_psql('postgres', qq{
			$rh
			INSERT INTO $t SELECT -1000004, (g * 7919) % $maxk, 'r' || g FROM generate_series(1, 20000) g;
			DELETE FROM $t WHERE id = -1000004 AND k % 5 = 0;
			UPDATE $t SET k = k + 1 WHERE id = -1000004 AND k % 5 = 1;
		});
	}
	my ($w) = run($force, \@btree);
	my ($f, $dw) = run("$force $rh", \@forein);
	compare_outputs('writes under random hints: answers equal btree', \@templates, $f, $w,
		'forein random hints', 'btree');
	for my $idx (qw(h_k h_t))
	{
		my ($ret, $out, $err) = $node->psql('postgres', "SELECT forein_check('$idx', true)");
		is($ret, 0, "writes under random hints: forein_check('$idx', heapallindexed)") or diag $err;
	}
	$node->safe_psql('postgres', qq{
		CREATE TABLE hu (k int8);
		CREATE UNIQUE INDEX hu_k ON hu USING forein (k);
		$rh
		INSERT INTO hu SELECT (g * 7919) % 100003 FROM generate_series(1, 50000) g;
	});
	my $dups = 0;
	for my $k (map { (($_ * 7919) % 100003) } (1, 777, 12345, 25000, 49999, 50000))
	{
		my ($ret, $out, $err) = $node->psql('postgres', "$rh INSERT INTO hu VALUES ($k)");
		$dups++ if $err =~ /duplicate key value violates unique constraint "hu_k"/;
	}
	is($dups, 6, 'random hints: every duplicate insert into a unique index is refused');
	my ($ret, $out, $err) = $node->psql('postgres', "SELECT forein_check('hu_k', true)");
	is($ret, 0, "random hints: forein_check('hu_k', heapallindexed)") or diag $err;
	# the rows for the next parts: as they were
	$node->safe_psql('postgres', 'DELETE FROM h WHERE id = -1000004; DELETE FROM hb WHERE id = -1000004; VACUUM h; VACUUM hb;');
	is( $node->safe_psql('postgres', 'SELECT count(*), sum(id), sum(k) FROM h'),
		$node->safe_psql('postgres', 'SELECT count(*), sum(id), sum(k) FROM hb'),
		'h and hb hold the original rows again');
}

# Real offload tables, for every registered backend that gives hints
# (FOREIN_HINT_BACKENDS, a space-separated list, chooses), each on a fresh
# copy of the rows: hs (forein, built in one go so its leaves are full:
# later inserts split them and make hints stale) and hbs (btree).
my @backends = offload_backends($node, 'FOREIN_HINT_BACKENDS');
note 'offload backends: ' . join(', ', @backends);
$node->safe_psql('postgres', 'CREATE TABLE hb0 AS SELECT * FROM hb');
for my $backend (@backends)
{
	$node->safe_psql(
		'postgres', qq{
		DROP TABLE IF EXISTS hs, hbs;
		CREATE TABLE hs AS SELECT * FROM hb0;
		CREATE INDEX hs_k ON hs USING forein (k) WITH (offload = '$backend');
		CREATE INDEX hs_t ON hs USING forein (t) WITH (offload = '$backend');
		CREATE TABLE hbs AS SELECT * FROM hb0;
		CREATE INDEX hbs_k ON hbs USING btree (k);
		CREATE INDEX hbs_t ON hbs USING btree (t);
		VACUUM ANALYZE hs;
		VACUUM ANALYZE hbs;
	});
	my @hs = map { (my $q = $_) =~ s/%T/hs/g; $q } @templates;
	my @hbs = map { (my $q = $_) =~ s/%T/hbs/g; $q } @templates;
	my $stats_hs = "SELECT lookups, hint_hits, move_rights, fallbacks FROM forein_stats('hs_k')";
	my $got_backend = $node->safe_psql('postgres', "SELECT backend FROM forein_stats('hs_k')");
	note "forein_stats backend: $got_backend";
  SKIP:
	{
		skip "offload is inactive (forein not preloaded): no installed hints to test", 8
		  if $got_backend eq 'inactive';
		is($got_backend, $backend, "hs_k offloads to the $backend backend");

		my $installed = $node->safe_psql('postgres',
			"SET forein.install_delay_ms = 0; SELECT forein_refresh('hs_k')");
		my $listed = $node->safe_psql('postgres', "SELECT count(*) FROM forein_offload_entries('hs_k')");
		if ($backend eq 'fpga')
		{
			# fpga counts cache bytes: an 8 KB slot of on-board DRAM for each
			# cached interior node but the root (in on-chip SRAM)
			cmp_ok($listed, '>', 0, "$backend: forein_refresh cached $listed interior nodes");
			is($installed, 8192 * ($listed - 1),
				"$backend: $installed cache bytes, 8 KB for each DRAM-cached node");
		}
		elsif ($backend eq 'dpa')
		{
			# dpa counts DPA bytes: a 64-byte metadata line per index node and
			# 16 bytes per leaf boundary, so at least 64 + 16 per boundary;
			# the image lists the boundaries (node > 0) and the inner nodes
			my $boundaries = $node->safe_psql('postgres',
				"SELECT count(*) FROM forein_offload_entries('hs_k') WHERE node > 0");
			cmp_ok($boundaries, '>', 0, "$backend: forein_refresh indexed $boundaries leaf boundaries");
			cmp_ok($installed, '>=', 64 + 16 * $boundaries,
				"$backend: $installed DPA bytes for $boundaries boundaries");
			is($installed % 16, 0, "$backend: DPA bytes in whole 16-byte entries");
		}
		else
		{
			cmp_ok($installed, '>', 0, "$backend: forein_refresh installed $installed entries");
			is($listed, $installed, "$backend: forein_offload_entries lists the $installed entries");
		}

		my ($w0) = run($force, \@hbs);
		my ($hinted, $dh) = run("$force SET forein.offload = on;", \@hs, $stats_hs);
		compare_outputs("$backend: installed hints: forein answers equal btree", \@templates, $hinted,
			$w0, 'forein hinted', 'btree');
		cmp_ok($dh->{hint_hits}, '>', 0, "$backend: installed hints: hint_hits > 0 ($dh->{hint_hits})");

		# Stale hints: split the leaves (in both tables) without refreshing;
		# the worker's install delay is an hour.
		$node->safe_psql(
			'postgres', q{
			INSERT INTO hs SELECT -1000002, g * 3 + 1, 's' || g FROM generate_series(0, 149999, 2) g;
			INSERT INTO hbs SELECT -1000002, g * 3 + 1, 's' || g FROM generate_series(0, 149999, 2) g;
		});
		my ($w1) = run($force, \@hbs);
		my ($stale, $ds) = run("$force SET forein.offload = on;", \@hs, $stats_hs);
		compare_outputs("$backend: stale hints after splits: answers equal btree",
			\@templates, $stale, $w1, 'forein stale hints', 'btree');
		cmp_ok($ds->{move_rights}, '>', 0,
			"$backend: stale hints were met: the descents moved right $ds->{move_rights} times");
		$node->safe_psql(
			'postgres', q{
			DELETE FROM hs WHERE k % 9 = 0;
			DELETE FROM hbs WHERE k % 9 = 0;
			VACUUM hs;
			VACUUM hbs;
		});
		my ($w2) = run($force, \@hbs);
		my ($stale2) = run("$force SET forein.offload = on;", \@hs, $stats_hs);
		compare_outputs("$backend: stale hints after deletes and VACUUM: answers equal btree",
			\@templates, $stale2, $w2, 'forein stale hints', 'btree');
	}
	for my $idx (qw(hs_k hs_t))
	{
		my ($ret, $out, $err) = $node->psql('postgres', "SELECT forein_check('$idx', true)");
		is($ret, 0, "$backend: forein_check('$idx', heapallindexed)") or diag $err;
	}
}

for my $idx (qw(h_k h_t))
{
	my ($ret, $out, $err) = $node->psql('postgres', "SELECT forein_check('$idx', true)");
	is($ret, 0, "forein_check('$idx', heapallindexed)") or diag $err;
}

$node->stop;
done_testing();

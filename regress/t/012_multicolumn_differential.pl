# Differential test of multi-column indexes: random data with duplicates
# and NULLs in three key columns, in two tables with the same rows; the
# table df gets random multi-column forein indexes (2 or 3 key columns,
# each ASC or DESC, NULLS FIRST or LAST, sometimes INCLUDE columns), the
# table db btree indexes of the same definitions.  Random queries aimed at
# one of the indexes (equality on a prefix, a prefix and a range on the next
# column, a range on the first column, conditions on later columns only, IN
# lists on any column, IS [NOT] NULL per column, ORDER BY the index's order
# and its reverse with LIMIT, orders the planner sorts, index-only scans of
# INCLUDE columns, row comparisons, bitmap scans) must give identical
# answers, with index scans forced.  Rounds of identical inserts, deletes,
# updates and VACUUM come in between; forein_check after each round.
#
# Seeded: FOREIN_SEED=<n> replays a run.  FOREIN_MC_ROUNDS (default 8),
# FOREIN_MC_QUERIES (queries per round, default 250) and FOREIN_MC_INDEXES
# (indexes per table, default 3) make it longer.  FOREIN_MC_AM=btree builds
# df's indexes with btree too (deduplication off, db's on) and skips
# forein_check and the extension: that only validates this test itself
# while forein has no multi-column indexes.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use ForeinTAP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $seed = test_seed();
my $rounds = $ENV{FOREIN_MC_ROUNDS} // 8;
my $per_round = $ENV{FOREIN_MC_QUERIES} // 250;
my $nindexes = $ENV{FOREIN_MC_INDEXES} // 3;
my $am = $ENV{FOREIN_MC_AM} // 'forein';
die "FOREIN_MC_AM must be forein or btree" unless $am eq 'forein' || $am eq 'btree';
note "df's indexes use $am";

my $node;
if ($am eq 'forein')
{
	$node = forein_node('mc_differential');
}
else
{
	$node = forein_node('mc_differential', preload => 0, start => 0);
	$node->start;
}

sub r { return int(rand($_[0])); }
sub pick { return $_[ r(scalar @_) ]; }

# The data's shape comes from the seed: how many rows, how many distinct
# values per key column (long runs of duplicates to nearly unique), how
# many NULLs.
my $NROWS = 3000 + r(12000);
my %DOM = (
	a => (4, 60, 3000)[ r(3) ],     # int4 in [0, DOM)
	b => (3, 50, 2000)[ r(3) ],     # text 'b' || lpad(n, 4, '0')
	c => (10, 400, 100000)[ r(3) ], # int8 in [-DOM/2, DOM/2)
);
my %NULLPCT = map { $_ => (0, 2, 10, 30)[ r(4) ] } qw(a b c);
my $next_id = $NROWS + 1;
note "rows $NROWS, domains a $DOM{a} b $DOM{b} c $DOM{c}, NULL % a $NULLPCT{a} b $NULLPCT{b} c $NULLPCT{c}";

# A random value of a column as an SQL literal, a little outside the
# domain too.
sub rv
{
	my ($col) = @_;
	my $n = r($DOM{$col} + 4) - 2;
	return $n if $col eq 'a';
	return $n - int($DOM{c} / 2) if $col eq 'c';
	return $n < 0 ? "'a'" : sprintf("'b%04d'", $n);
}

# Key values of rows in the tables (refreshed every round, NULLs
# included): multi-column equalities on them find rows also where the
# domains are large.
my @sample;
sub refresh_sample
{
	my $off = r($next_id);
	my $out = $node->safe_psql('postgres',
		"SELECT coalesce(a::text, 'NULL'), coalesce(quote_literal(b), 'NULL'), coalesce(c::text, 'NULL')"
		  . " FROM db WHERE id >= $off ORDER BY id LIMIT 300");
	@sample = map { my @f = split /\|/; { a => $f[0], b => $f[1], c => $f[2] } } split /\n/, $out;
	return;
}

# col = value (or col IS NULL) for the columns given, all from one sampled
# row (most of the time) or random values.
sub eq_conds
{
	my @cols = @_;
	my $row = @sample && r(4) ? pick(@sample) : undef;
	return map {
		my $v = $row ? $row->{$_} : r(12) == 0 ? 'NULL' : rv($_);
		$v eq 'NULL' ? "$_ IS NULL" : "$_ = $v"
	} @cols;
}

# A value of a column for an IN list: sampled or random, never NULL (a
# list of NULLs only makes the planner skip the scan).
sub in_value
{
	my ($col) = @_;
	my $v = @sample && r(2) ? pick(@sample)->{$col} : 'NULL';
	return $v eq 'NULL' ? rv($col) : $v;
}

# Two random values of a column, the smaller first.
sub rpair
{
	my ($col) = @_;
	my @v = (rv($col), rv($col));
	return $col eq 'b' ? sort { $a cmp $b } @v : sort { $a <=> $b } @v;
}

# SQL expressions generating a column's random values (random() runs
# under setseed, so both tables get the same rows).
sub gen_expr
{
	my ($col) = @_;
	my $v;
	$v = "(random() * $DOM{a})::int4" if $col eq 'a';
	$v = "'b' || lpad((random() * $DOM{b})::int4::text, 4, '0')" if $col eq 'b';
	$v = "(random() * $DOM{c})::int8 - " . int($DOM{c} / 2) if $col eq 'c';
	my $p = $NULLPCT{$col} / 100;
	return "CASE WHEN random() < $p THEN NULL ELSE $v END";
}
my $rows_sql = join(', ', map { gen_expr($_) } qw(a b c)) . ", 'p' || (random() * 1000)::int4";

# Random index definitions: 2 or 3 of a, b, c in random order, each with a
# random direction and NULLs placement; sometimes INCLUDE columns.
my @indexes;
for my $i (1 .. $nindexes)
{
	my @cols = qw(a b c);
	for my $j (reverse 1 .. $#cols)
	{
		my $k = r($j + 1);
		@cols[ $j, $k ] = @cols[ $k, $j ];
	}
	my $n = 2 + r(2);
	my @keys = map { { col => $_, desc => r(2), nf => undef } } @cols[ 0 .. $n - 1 ];
	$_->{nf} = r(3) == 0 ? !$_->{desc} : $_->{desc} ? 1 : 0 for @keys;    # mostly the default
	my @incl;
	if (r(2))
	{
		push @incl, 'pay';
		push @incl, $cols[2] if $n == 2 && r(2);
	}
	push @indexes, { keys => \@keys, incl => \@incl, name => "i$i" };
}

sub keydef
{
	my ($k) = @_;
	return $k->{col} . ($k->{desc} ? ' DESC' : ' ASC') . ($k->{nf} ? ' NULLS FIRST' : ' NULLS LAST');
}

# ORDER BY in the index's order, or reversed (every direction and NULLs
# placement flipped), for the first $n key columns.
sub order_by
{
	my ($ix, $reverse, $n) = @_;
	my @k = @{ $ix->{keys} };
	$n //= scalar @k;
	return join(', ',
		map {
			my %f = %$_;
			if ($reverse) { $f{desc} = !$f{desc}; $f{nf} = !$f{nf}; }
			keydef(\%f)
		} @k[ 0 .. $n - 1 ]);
}

my @ops = ('=', '<', '<=', '>', '>=');

# One random query aimed at a random index: [pre, sql, post].  pre/post
# (settings) run around the query and around its EXPLAIN.
sub random_query
{
	my $ix = pick(@indexes);
	my @k = map { $_->{col} } @{ $ix->{keys} };
	my $keys = join(', ', @k);
	my $kind = r(15);
	my $n = 1 + r(60);
	my $idx = 1 + r($#k);    # a later column
	if ($kind == 0)
	{
		# equality (or IS NULL) on a prefix
		my $p = 1 + r(scalar @k);
		my @w = eq_conds(@k[ 0 .. $p - 1 ]);
		return [ '', "SELECT id, $keys FROM %T WHERE " . join(' AND ', @w) . ' ORDER BY id', '' ];
	}
	if ($kind == 1)
	{
		# equality on a prefix, a range on the next column
		my $p = 1 + r($#k);
		my @w = eq_conds(@k[ 0 .. $p - 1 ]);
		my ($lo, $hi) = rpair($k[$p]);
		push @w, r(2) ? "$k[$p] BETWEEN $lo AND $hi" : "$k[$p] " . pick(@ops[ 1 .. 4 ]) . " $lo";
		return [ '', "SELECT count(*), sum(id), min(id), max(id) FROM %T WHERE " . join(' AND ', @w), '' ];
	}
	if ($kind == 2)
	{
		# a range on the first column, in the index's order
		my $w = "$k[0] " . pick(@ops[ 1 .. 4 ]) . ' ' . rv($k[0]);
		return [ '', "SELECT $keys FROM %T WHERE $w ORDER BY " . order_by($ix, r(2)) . " LIMIT $n", '' ];
	}
	if ($kind == 3)
	{
		# conditions on later columns only
		my $col = $k[$idx];
		my $w = r(4) == 0 ? "$col IS NULL" : "$col " . pick(@ops) . ' ' . rv($col);
		$w .= " AND $k[2] " . pick(@ops) . ' ' . rv($k[2]) if @k > 2 && $idx == 1 && r(2);
		return [ '', "SELECT count(*), sum(id) FROM %T WHERE $w", '' ];
	}
	if ($kind == 4)
	{
		# IN lists on any key columns, equality elsewhere sometimes
		my @w;
		for my $col (@k)
		{
			my $x = r(3);
			next if $x == 0;
			if ($x == 1) { push @w, eq_conds($col); next; }
			my @in = map { in_value($col) } 1 .. (1 + r(6));
			push @in, 'NULL' if r(5) == 0;
			push @w, "$col IN (" . join(', ', @in) . ')';
		}
		push @w, "$k[0] IN (" . join(', ', map { rv($k[0]) } 1 .. 3) . ')' unless @w;
		return [ '', "SELECT id FROM %T WHERE " . join(' AND ', @w) . ' ORDER BY id', '' ];
	}
	if ($kind == 5)
	{
		# IS NULL / IS NOT NULL per column
		my @w = map { pick("$_ IS NULL", "$_ IS NOT NULL", undef) } @k;
		@w = grep { defined } @w;
		@w = ("$k[$idx] IS NULL") unless @w;
		return [ '', "SELECT count(*), sum(id), count(pay) FROM %T WHERE " . join(' AND ', @w), '' ];
	}
	if ($kind == 6 || $kind == 7)
	{
		# the whole index in its order or reversed, with LIMIT/OFFSET,
		# sometimes after equality on the first column
		my $w = r(3) == 0 ? 'WHERE ' . join(' AND ', eq_conds($k[0])) . ' ' : '';
		my $off = r(3) == 0 ? ' OFFSET ' . r($NROWS) : '';
		return [ '', "SELECT $keys FROM %T ${w}ORDER BY " . order_by($ix, $kind == 7) . " LIMIT $n$off", '' ];
	}
	if ($kind == 8)
	{
		# an order no index gives (one column flipped): the planner sorts
		my @f = @{ $ix->{keys} };
		my $flip = r(scalar @f);
		my $ob = join(', ',
			map {
				my %x = %{ $f[$_] };
				$x{desc} = !$x{desc} if $_ == $flip;
				keydef(\%x)
			} 0 .. $#f);
		return [ '', "SELECT $keys FROM %T WHERE $k[0] " . pick(@ops[ 1 .. 4 ]) . ' ' . rv($k[0]) . " ORDER BY $ob LIMIT $n", '' ];
	}
	if ($kind == 9 && @{ $ix->{incl} })
	{
		# index-only scans returning the INCLUDE columns
		my $cols = join(', ', @k, @{ $ix->{incl} });
		my $w = r(2) ? join(' AND ', eq_conds($k[0])) : "$k[0] BETWEEN " . join(' AND ', rpair($k[0]));
		return [ '', "SELECT $cols FROM %T WHERE $w ORDER BY $cols", '' ];
	}
	if ($kind == 10)
	{
		# row comparisons over a prefix (index conditions for btree only)
		my $p = 2 + r(scalar(@k) - 1);
		my $op = pick(@ops[ 1 .. 4 ]);
		my $row = join(', ', @k[ 0 .. $p - 1 ]);
		my $val = join(', ', map { rv($_) } @k[ 0 .. $p - 1 ]);
		# (PostgreSQL 15's planner gives row comparisons to btree only, so
		# the forein table's plan may be a sequential scan: answers only)
		return [ '', "SELECT count(*), sum(id) FROM %T WHERE ($row) $op ($val)", '', 'any plan' ];
	}
	if ($kind == 11)
	{
		# bitmap scans, BitmapOr too
		my $w = join(' AND ', eq_conds($k[0])) . " AND $k[1] " . pick(@ops) . ' ' . rv($k[1]);
		$w .= " OR $k[$idx] = " . rv($k[$idx]) if r(2);
		return [ 'SET enable_indexscan = off; SET enable_bitmapscan = on; ',
			"SELECT count(*), sum(id) FROM %T WHERE $w", '; RESET enable_indexscan; SET enable_bitmapscan = off' ];
	}
	if ($kind == 12)
	{
		# min/max of the first column, of a later one on an equal prefix
		return [ '', "SELECT min($k[0]), max($k[0]) FROM %T", '' ] if r(2);
		return [ '', "SELECT min($k[1]), max($k[1]), count(*) FROM %T WHERE " . join(' AND ', eq_conds($k[0])), '' ];
	}
	if ($kind == 13)
	{
		# a nested loop probing the index with a two-column key
		my ($lo, $hi) = sort { $a <=> $b } (r(200), r(200));
		return [ 'SET enable_hashjoin = off; SET enable_mergejoin = off; ',
			"SELECT count(*), sum(y.id) FROM (SELECT * FROM %T WHERE id BETWEEN $lo AND $hi) x JOIN %T y ON y.$k[0] = x.$k[0] AND y.$k[1] = x.$k[1]",
			'; RESET enable_hashjoin; RESET enable_mergejoin' ];
	}
	# prefix equality with ORDER BY the index's order, LIMIT
	my $p = 1 + r($#k);
	return [ '', "SELECT $keys FROM %T WHERE " . join(' AND ', eq_conds(@k[ 0 .. $p - 1 ])) . ' ORDER BY ' . order_by($ix, r(2)) . " LIMIT $n", '' ];
}

# Mutations, each one statement template applied to both tables.
sub random_mutations
{
	my @m;
	for (1 .. 2 + r(4))
	{
		my $kind = r(7);
		my $col = pick(qw(a b c));
		my ($x1, $x2) = rpair($col);
		my $ss = sprintf('%.6f', rand() * 2 - 1);
		if ($kind <= 1)
		{
			my $cnt = 200 + r(2000);
			push @m, "SELECT setseed($ss); INSERT INTO %T SELECT $next_id + g, $rows_sql FROM generate_series(0, $cnt - 1) g";
			$next_id += $cnt;
		}
		elsif ($kind == 2)
		{
			# a quarter of a range (all of it would empty the tables
			# where a domain is small)
			push @m, "DELETE FROM %T WHERE $col BETWEEN $x1 AND $x2 AND id % 4 = " . r(4);
		}
		elsif ($kind == 3)
		{
			my $m = 2 + r(9);
			push @m, "DELETE FROM %T WHERE id % $m = " . r($m) . " AND $col < $x2";
		}
		elsif ($kind == 4)
		{
			my $set = $col eq 'b' ? "b = b || 'x'" : "$col = $col + " . (r(21) - 10);
			push @m, "UPDATE %T SET $set WHERE $col BETWEEN $x1 AND $x2";
		}
		elsif ($kind == 5)
		{
			my $other = pick(grep { $_ ne $col } qw(a b c));
			push @m, "UPDATE %T SET $other = NULL, pay = pay || 'u' WHERE $col >= $x1 AND id % 7 = " . r(7);
		}
		else
		{
			push @m, "UPDATE %T SET $col = CASE WHEN id % 2 = 0 THEN NULL ELSE $col END WHERE id % 7 = " . r(7);
		}
	}
	return @m;
}

# (jit off: a disabled sequential scan's cost would compile the plan)
my $force = 'SET enable_seqscan = off; SET enable_bitmapscan = off; SET jit = off;';
my $failures = 0;

my $setseed = sprintf('%.6f', rand() * 2 - 1);
my $ddl = '';
for my $ix (@indexes)
{
	my $def = join(', ', map { keydef($_) } @{ $ix->{keys} });
	my $incl = @{ $ix->{incl} } ? ' INCLUDE (' . join(', ', @{ $ix->{incl} }) . ')' : '';
	my $with = $am eq 'btree' ? ' WITH (deduplicate_items = off)' : '';
	$ddl .= "CREATE INDEX df_$ix->{name} ON df USING $am ($def)$incl$with;\n";
	$ddl .= "CREATE INDEX db_$ix->{name} ON db USING btree ($def)$incl;\n";
}
note "indexes:\n$ddl";
$node->safe_psql(
	'postgres', qq{
	CREATE TABLE df (id int4, a int4, b text, c int8, pay text);
	CREATE TABLE db (id int4, a int4, b text, c int8, pay text);
	SELECT setseed($setseed);
	INSERT INTO df SELECT g, $rows_sql FROM generate_series(1, $NROWS) g;
	INSERT INTO db SELECT * FROM df;
	$ddl
	VACUUM ANALYZE df;
	VACUUM ANALYZE db;
});
my @df_indexes = map { "df_$_->{name}" } @indexes;
my $df_re = join('|', @df_indexes);

for my $round (1 .. $rounds)
{
	if ($round > 1)
	{
		# the same statements on each table, in one session per table
		# (setseed makes the inserted rows the same)
		my @m = random_mutations();
		for my $t (qw(df db))
		{
			$node->safe_psql('postgres', join(";\n", map { (my $x = $_) =~ s/%T/$t/g; $x } @m));
		}
		my $vacuum = $round % 2 == 0;
		$node->safe_psql('postgres', 'VACUUM ANALYZE df; VACUUM ANALYZE db;') if $vacuum;
		note "round $round: " . scalar(@m) . ' mutations' . ($vacuum ? ', VACUUM' : '');
		my $sums = 'SELECT count(*), sum(id), count(a), sum(a), count(b), max(b), count(c), sum(c), count(pay) FROM';
		my $want = $node->safe_psql('postgres', "$sums db");
		is($node->safe_psql('postgres', "$sums df"), $want, "round $round: both tables hold the same rows");
		note "round $round: rows, sum(id), count(a), sum(a), count(b), max(b), count(c), sum(c), count(pay): $want";
	}

	refresh_sample();
	my @spec = map { random_query() } 1 .. $per_round;
	my @qf = map { my $s = $_; join('', map { (my $x = $_) =~ s/%T/df/g; $x } @$s[ 0 .. 2 ]) } @spec;
	my @qb = map { my $s = $_; join('', map { (my $x = $_) =~ s/%T/db/g; $x } @$s[ 0 .. 2 ]) } @spec;

	# every query's plan scans one of df's indexes
	my @plans = run_marked_script($node, 'postgres', $force,
		[ map { (my $s = "$_->[0]EXPLAIN (COSTS OFF) $_->[1]$_->[2]") =~ s/%T/df/g; $s } @spec ]);
	my @noindex = grep { !$spec[$_][3] && $plans[$_] !~ /\b(?:$df_re)\b/ } 0 .. $#plans;
	is(scalar(@noindex), 0, "round $round: every query scans one of df's indexes")
	  or diag "no df index in the plan of: $qf[$noindex[0]]\n$plans[$noindex[0]]";

	my @got = run_marked_script($node, 'postgres', $force, \@qf);
	my @want = run_marked_script($node, 'postgres', $force, \@qb);
	my $empty = grep { $_ eq '' || $_ =~ /^0\|/ } @want;
	note "round $round: $empty of $per_round answers empty or count 0";
	compare_outputs("round $round: $per_round random queries, df ($am) equals db (btree)",
		\@qf, \@got, \@want, "df ($am)", 'db (btree)')
	  or $failures++;

	next if $am ne 'forein';
	for my $idx (@df_indexes)
	{
		my ($ret, $out, $err) = $node->psql('postgres', "SELECT forein_check('$idx', true)");
		is($ret, 0, "round $round: forein_check('$idx', heapallindexed)") or diag $err;
	}
}

diag "multi-column differential test failed; rerun with FOREIN_SEED=$seed" if $failures;
$node->stop;
done_testing();

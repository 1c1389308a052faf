# 010_words.pl: offload words.
#
# 1. The PostgreSQL AM and the C++ engine compute the same words (one
#    definition, forein/word.h): forein_debug_word against the engine tool
#    forein_word (build/tools/forein_word) for int2/int4/int8, date,
#    timestamp, timestamptz, uuid and text, over edge and random values; and
#    the same word intervals for the bounds of real index pages
#    (forein_debug_page_intervals).
# 2. Text words under any deterministic collation (C, C.UTF-8 via strxfrm,
#    ICU sort keys): forein_refresh installs entries, hinted lookups hit and
#    answer like btree, and word order never contradicts the collation's
#    order.  A nondeterministic collation gets no words, with a NOTICE.
#
# Randomized: prints its seed (FOREIN_SEED=<n> replays it).
use strict;
use warnings;

use FindBin;
use IPC::Run qw(run);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use lib $FindBin::RealBin;
use ForeinTAP;

my $build = "$FindBin::RealBin/../../build";
my $tool = $ENV{FOREIN_WORD_TOOL} // "$build/tools/forein_word";
plan skip_all => "$tool not built (cmake --build build --target forein_word)"
  unless -x $tool;

my $seed = test_seed();
my $node = forein_node('words', conf => "forein.max_indexes = 64\n");

# Databases with explicit locales: the test cluster's own may be C.
$node->safe_psql('postgres',
	"CREATE DATABASE wc TEMPLATE template0 ENCODING 'UTF8' LOCALE 'C'");
$node->safe_psql('postgres',
	"CREATE DATABASE wutf8 TEMPLATE template0 ENCODING 'UTF8' LOCALE 'C.UTF-8'");
for my $db (qw(wc wutf8))
{
	$node->safe_psql($db, 'CREATE EXTENSION forein');
	$node->safe_psql($db,
		"ALTER DATABASE $db SET timezone = 'UTC'; ALTER DATABASE $db SET datestyle = 'ISO, YMD'");
}

# The engine's answers for lines of forein_word input.
sub engine_answers
{
	my ($lines) = @_;
	my ($out, $err) = ('', '');
	my $in = join('', map { "$_\n" } @$lines);
	run([$tool], \$in, \$out, \$err) or die "forein_word failed: $err";
	return split(/\n/, $out);
}

# ------------------------------------------------------------------
# 1. words and intervals: the AM against the engine

my $n = 4000;
my %edge = (
	int2 => [qw(-32768 -32767 -1 0 1 255 256 32767)],
	int4 => [qw(-2147483648 -2147483647 -1 0 1 256 65536 2147483647)],
	int8 => [qw(-9223372036854775808 -9223372036854775807 -4294967296 -1 0 1
		  255 256 4294967296 9223372036854775806 9223372036854775807)],
	date => ['-infinity', 'infinity', '4713-11-24 BC', '0001-12-31 BC',
		'0001-01-01', '1999-12-31', '2000-01-01', '2000-01-02', '2000-02-29',
		'2038-01-19', '5874897-12-31'],
	timestamp => ['-infinity', 'infinity', '4713-11-24 00:00:00 BC',
		'0001-01-01 00:00:00', '1970-01-01 00:00:00', '1999-12-31 23:59:59.999999',
		'2000-01-01 00:00:00', '2000-01-01 00:00:00.000001', '2024-02-29 12:34:56.5',
		'294276-12-31 23:59:59.999999'],
	uuid => ['00000000-0000-0000-0000-000000000000',
		'00000000-0000-0000-ffff-ffffffffffff', '00000000-0000-0001-0000-000000000000',
		'7fffffff-ffff-ffff-0000-000000000000', '80000000-0000-0000-0000-000000000000',
		'ffffffff-ffff-ffff-ffff-ffffffffffff'],
	text => ['', 'a', 'ab', 'abcdefg', 'abcdefgh', 'abcdefghi', 'abcdefgh' . 'z' x 40,
		'~~~~~~~~~', "\x{c3}\x{a9}t\x{c3}\x{a9}", "\x{f4}\x{8f}\x{bf}\x{bf}" x 3, ' ', '0'],
);
$edge{timestamptz} = [ map { /infinity/ ? $_ : "$_+00" } @{ $edge{timestamp} } ];
$edge{timestamptz}[2] = '4713-11-24 00:00:00+00 BC';

my @alphabet = (
	'a' .. 'e', 'A', 'B', 'Z', 'z', '0', '9', ' ', '-', '_', '.', ',', '~',
	"\x{c3}\x{a9}",    # e acute
	"\x{c3}\x{89}",    # E acute
	"\x{c3}\x{a7}",    # c cedilla
	"\x{c3}\x{9f}",    # sharp s
	"\x{c3}\x{b8}",    # o slash
	"\x{c5}\x{93}",    # oe
	"\x{ce}\x{b1}",    # alpha
	"\x{e4}\x{b8}\x{ad}",    # CJK
	"\x{f0}\x{9f}\x{98}\x{80}",    # emoji
);

sub random_text
{
	my $len = int(rand(14));
	$len = int(rand(40)) if rand() < 0.1;
	return join('', map { $alphabet[ int(rand(@alphabet)) ] } 1 .. $len);
}

sub random_value
{
	my ($type) = @_;
	my $r = sub { int(rand($_[0])) };
	if ($type eq 'int2') { return $r->(65536) - 32768; }
	if ($type eq 'int4') { return $r->(2**32) - 2**31; }
	if ($type eq 'int8')
	{
		my $v = join('', map { $r->(10) } 1 .. (1 + $r->(18)));
		$v =~ s/^0+(?=\d)//;
		return ($r->(2) ? '-' : '') . $v;
	}
	my $date = sub {
		sprintf('%04d-%02d-%02d', 1 + $r->(3000), 1 + $r->(12), 1 + $r->(28));
	};
	my $time = sub {
		my $s = sprintf('%02d:%02d:%02d', $r->(24), $r->(60), $r->(60));
		$s .= sprintf('.%06d', $r->(1000000)) if $r->(2);
		return $s;
	};
	if ($type eq 'date') { return $date->() . ($r->(10) == 0 ? ' BC' : ''); }
	if ($type eq 'timestamp' || $type eq 'timestamptz')
	{
		return $date->() . ' ' . $time->() . ($r->(10) == 0 ? ' BC' : '');
	}
	if ($type eq 'uuid')
	{
		my $h = join('', map { sprintf('%x', $r->(16)) } 1 .. 32);
		return join('-', substr($h, 0, 8), substr($h, 8, 4), substr($h, 12, 4),
			substr($h, 16, 4), substr($h, 20));
	}
	return random_text();
}

sub quote_literal
{
	my ($s) = @_;
	$s =~ s/'/''/g;
	return "'$s'";
}

# The text a key has in forein_word's input
sub key_form
{
	my ($type, $expr) = @_;
	return $type eq 'text' ? "encode(convert_to($expr, 'UTF8'), 'hex')" : "$expr\::text";
}

for my $type (qw(int2 int4 int8 date timestamp timestamptz uuid text))
{
	my @vals = (@{ $edge{$type} }, map { random_value($type) } 1 .. $n);
	# duplicates, so that page bounds with real heap TIDs occur (one tuple
	# per row: posting lists would hold a run in a few tuples)
	push @vals, ($vals[ int(rand(@vals)) ]) x 600 for 1 .. 3;
	my $values = join(",\n", map { '(' . quote_literal($_) . ')' } @vals);
	$node->safe_psql('wc', "CREATE TABLE w_$type (k $type);
		INSERT INTO w_$type VALUES $values;
		INSERT INTO w_$type VALUES (NULL), (NULL);
		CREATE INDEX w_${type}_f ON w_$type USING forein (k) WITH (deduplicate_items = off);");

	# words
	my $kf = key_form($type, 'k');
	my $rows = $node->safe_psql('wc',
		"SELECT 'W' || E'\\t' || '$type' || E'\\t' || $kf, forein_debug_word(k)
		 FROM w_$type WHERE k IS NOT NULL");
	my (@in, @want);
	for my $row (split /\n/, $rows)
	{
		my ($line, $w) = split /\|/, $row;
		push @in, $line;
		push @want, $w;
	}
	my @got = engine_answers(\@in);
	my $bad = 0;
	for my $i (0 .. $#in)
	{
		next if defined $got[$i] && $got[$i] eq $want[$i];
		diag "$type: engine says " . ($got[$i] // 'nothing') . ", AM $want[$i]: $in[$i]"
		  if $bad++ < 5;
	}
	is($bad, 0, "$type: engine and AM words agree on " . scalar(@in) . ' values');

	# intervals of the index's live pages
	my $lof = key_form($type, 'lo_key');
	my $hif = key_form($type, 'hi_key');
	$rows = $node->safe_psql('wc', "
		SELECT 'I' || E'\\t' || '$type' || E'\\t' ||
		       CASE WHEN NOT has_lo THEN '-' WHEN lo_key IS NULL THEN '\\N' ELSE $lof END
		       || E'\\t' || CASE WHEN lo_owns THEN 't' ELSE 'f' END || E'\\t' ||
		       CASE WHEN NOT has_hi THEN '-' WHEN hi_key IS NULL THEN '\\N' ELSE $hif END
		       || E'\\t' || CASE WHEN hi_owns THEN 't' ELSE 'f' END,
		       lo || ' ' || CASE WHEN hi_inf THEN 'inf' ELSE hi::text END,
		       (has_lo AND NOT lo_owns)::int + (has_hi AND NOT hi_owns)::int
		FROM forein_debug_page_intervals('w_${type}_f')");
	(@in, @want) = ((), ());
	my $tid_bounds = 0;
	for my $row (split /\n/, $rows)
	{
		my ($line, $iv, $t) = split /\|/, $row;
		push @in, $line;
		push @want, $iv;
		$tid_bounds += $t;
	}
	@got = engine_answers(\@in);
	$bad = 0;
	for my $i (0 .. $#in)
	{
		next if defined $got[$i] && $got[$i] eq $want[$i];
		diag "$type: engine interval " . ($got[$i] // 'nothing') . ", AM $want[$i]: $in[$i]"
		  if $bad++ < 5;
	}
	cmp_ok(scalar(@in), '>', 5, "$type: the index has several pages");
	ok($tid_bounds > 0, "$type: some bounds carry heap TIDs ($tid_bounds)");
	is($bad, 0, "$type: engine and AM intervals agree on " . scalar(@in) . ' pages');
}

# ------------------------------------------------------------------
# 2. text words under collations

$node->safe_psql('wc', q{
	CREATE COLLATION en_icu (provider = icu, locale = 'en-US');
	CREATE COLLATION ci_icu (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
});

my @strings = map { random_text() } 1 .. 20000;
push @strings, ('same prefix ' . random_text()) for 1 .. 2000;
push @strings, ($strings[ int(rand(@strings)) ]) x 300 for 1 .. 3;
my $text_values = join(",\n", map { '(' . quote_literal($_) . ')' } @strings);
my @probes = map { $strings[ int(rand(@strings)) ] } 1 .. 150;
push @probes, map { random_text() } 1 .. 50;

for my $case (['wc', '"C"', 'C'], ['wutf8', 'default', 'C.UTF-8 (strxfrm)'],
	['wc', '"und-x-icu"', 'ICU und'], ['wc', 'en_icu', 'ICU en-US'])
{
	my ($db, $coll, $label) = @$case;
	my $col = $coll eq 'default' ? 'text' : "text COLLATE $coll";
	my $tbl = "t_" . lc($coll =~ s/\W//gr);
	$node->safe_psql($db, "
		CREATE TABLE $tbl (k $col);
		INSERT INTO $tbl VALUES $text_values;
		CREATE TABLE ${tbl}_b AS SELECT * FROM $tbl;
		CREATE INDEX ${tbl}_f ON $tbl USING forein (k);
		CREATE INDEX ${tbl}_bt ON ${tbl}_b USING btree (k);
		ANALYZE $tbl; ANALYZE ${tbl}_b;");

	# word order never contradicts the collation's order
	my $contradictions = $node->safe_psql($db, "
		SELECT count(*) FROM (
			SELECT forein_debug_word(k) AS w,
			       lag(forein_debug_word(k)) OVER (ORDER BY k) AS pw
			FROM (SELECT DISTINCT k FROM ${tbl}_b) d) s
		WHERE w < pw OR w IS NULL");
	is($contradictions, '0', "$label: words are non-decreasing in collation order (seed $seed)");

	my $installed = $node->safe_psql($db, "SELECT forein_refresh('${tbl}_f')");
	cmp_ok($installed, '>', 0, "$label: forein_refresh installs entries");
	is($node->safe_psql($db, "SELECT backend FROM forein_stats('${tbl}_f')"),
		'switch_lpm', "$label: backend switch_lpm");

	my $settings = 'SET enable_seqscan = off; SET enable_bitmapscan = off;';
	index_plan_ok($node, $db, "SELECT count(*) FROM $tbl WHERE k = 'x'", "${tbl}_f",
		$settings);
	my @queries = map { "SELECT count(*) FROM %T WHERE k = " . quote_literal($_) } @probes;
	for (1 .. 20)
	{
		my ($a, $b) = sort { $a cmp $b } (random_text(), random_text());
		push @queries, "SELECT k FROM %T WHERE k >= " . quote_literal($a)
		  . " AND k < " . quote_literal($b) . ' ORDER BY k LIMIT 50';
	}
	my $h0 = $node->safe_psql($db, "SELECT hint_hits FROM forein_stats('${tbl}_f')");
	my @fq = map { s/%T/$tbl/r } @queries;
	my @bq = map { s/%T/${tbl}_b/r } @queries;
	my @got = run_marked_script($node, $db, $settings, \@fq);
	my @want = run_marked_script($node, $db, $settings, \@bq);
	compare_outputs("$label: forein answers like btree", \@queries, \@got, \@want,
		'forein', 'btree');
	my $h1 = $node->safe_psql($db, "SELECT hint_hits FROM forein_stats('${tbl}_f')");
	cmp_ok($h1 - $h0, '>', 100, "$label: hinted lookups hit ($h0 -> $h1)");
}

# a nondeterministic collation: no words, said so
$node->safe_psql('wc', "CREATE TABLE t_ci (k text COLLATE ci_icu);
	INSERT INTO t_ci SELECT 'k' || g FROM generate_series(1, 5000) g;
	CREATE INDEX t_ci_f ON t_ci USING forein (k);");
my ($ret, $out, $err) = $node->psql('wc', "SELECT forein_refresh('t_ci_f')");
is($out, '0', 'nondeterministic collation: forein_refresh installs nothing');
like($err, qr/NOTICE:  index "t_ci_f" gets no offload hints.*nondeterministic/s,
	'nondeterministic collation: forein_refresh says why');
is($node->safe_psql('wc', "SELECT backend FROM forein_stats('t_ci_f')"), 'none',
	'nondeterministic collation: backend none');
is($node->safe_psql('wc', "SELECT forein_debug_word('a'::text COLLATE ci_icu) IS NULL"), 't',
	'nondeterministic collation: no word');

# the debug functions are not for everyone
$node->safe_psql('wc', 'CREATE ROLE plain LOGIN');
($ret, $out, $err) = $node->psql('wc', "SET ROLE plain; SELECT forein_debug_word(1)");
like($err, qr/permission denied/, 'forein_debug_word is revoked from PUBLIC');

$node->stop;
done_testing();

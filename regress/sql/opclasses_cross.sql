--
-- opclasses_cross: the 0.4 cross-type members.  date, timestamp and
-- timestamptz compare with each other (each family has the members whose
-- left type is its own), text with name, float4 with float8: such
-- conditions are index conditions and give btree's answers (whose families
-- have the same members).  Uses opclasses.sql's tables and functions.
--
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SET TimeZone = 'UTC';

SELECT make_pair('d', $$
	SELECT date '2000-01-01' + g % 1009 - 500 AS v FROM generate_series(1, 3000) g
	UNION ALL SELECT x::date FROM unnest(ARRAY['infinity', '-infinity', '4713-01-01 BC',
		'5874897-12-31', NULL]) x$$);
SELECT make_pair('ts', $$
	SELECT timestamp '2000-01-01' + (g % 1013 - 500) * interval '7 hours' AS v
	FROM generate_series(1, 3000) g
	UNION ALL SELECT x::timestamp FROM unnest(ARRAY['infinity', '-infinity',
		'294276-12-31 23:59:59', NULL]) x$$);
SELECT make_pair('tz', $$
	SELECT timestamptz '2000-01-01 00:00+00' + (g % 1013 - 500) * interval '7 hours' AS v
	FROM generate_series(1, 3000) g
	UNION ALL SELECT x::timestamptz FROM unnest(ARRAY['infinity', '-infinity', NULL]) x$$);
-- text COLLATE "C": name's collation, else text = name has no collation
-- the index's matches (for btree too)
SELECT make_pair('txt', $$
	SELECT ('n' || (g % 401))::text COLLATE "C" AS v FROM generate_series(1, 3000) g
	UNION ALL SELECT x COLLATE "C" FROM unnest(ARRAY['', repeat('x', 63), repeat('x', 64), NULL]) x$$);

-- the plans: the other type's constant is an index condition
EXPLAIN (COSTS OFF) SELECT v FROM fo_d WHERE v < timestamp '2000-01-05 12:00' ORDER BY v;
EXPLAIN (COSTS OFF) SELECT v FROM fo_d WHERE v >= timestamptz '2000-01-05 12:00+00';
EXPLAIN (COSTS OFF) SELECT v FROM fo_ts WHERE v = date '2000-01-05';
EXPLAIN (COSTS OFF) SELECT v FROM fo_ts WHERE v > timestamptz '2000-01-05 12:00+00';
EXPLAIN (COSTS OFF) SELECT v FROM fo_tz WHERE v <= date '2000-01-05';
EXPLAIN (COSTS OFF) SELECT v FROM fo_tz WHERE v = timestamp '2000-01-05 12:00';
EXPLAIN (COSTS OFF) SELECT v FROM fo_txt WHERE v = name 'n7';
EXPLAIN (COSTS OFF) SELECT v FROM fo_nm WHERE v > text 'n7' COLLATE "C";
EXPLAIN (COSTS OFF) SELECT v FROM fo_f4 WHERE v > 0.5;
EXPLAIN (COSTS OFF) SELECT v FROM fo_f8 WHERE v = real '1.5';

-- the answers, in UTC and in a zone where a date's midnight is not UTC's
SELECT check_like_btree('d', ARRAY['2000-01-05 00:00', '2000-01-05 12:00', 'infinity',
	'-infinity', '294276-12-31 23:59:59'], 'timestamp');
SELECT check_like_btree('d', ARRAY['2000-01-05 00:00+00', '2000-01-05 12:00+00', 'infinity',
	'-infinity'], 'timestamptz');
SELECT check_like_btree('ts', ARRAY['2000-01-05', '1999-06-01', 'infinity', '-infinity',
	'5874897-12-31'], 'date');
SELECT check_like_btree('ts', ARRAY['2000-01-05 12:00+00', '2000-01-05 07:00+00', 'infinity'],
	'timestamptz');
SELECT check_like_btree('tz', ARRAY['2000-01-05', '1999-06-01', 'infinity', '-infinity'], 'date');
SELECT check_like_btree('tz', ARRAY['2000-01-05 12:00', '2000-01-05 07:00', 'infinity'],
	'timestamp');
SET TimeZone = 'America/New_York';
SELECT check_like_btree('d', ARRAY['2000-01-05 00:00-05', '2000-01-05 04:59:59-05'], 'timestamptz');
SELECT check_like_btree('ts', ARRAY['2000-01-05 12:00-05', '2000-01-05 07:00+00'], 'timestamptz');
SELECT check_like_btree('tz', ARRAY['2000-01-05', '2000-01-04'], 'date');
SELECT check_like_btree('tz', ARRAY['2000-01-05 02:00', '2000-01-05 07:00'], 'timestamp');
RESET TimeZone;

-- text vs name, both collation "C" (with different collations neither
-- forein nor btree can use the condition)
SELECT check_like_btree('txt', ARRAY['n7', 'n400', '', repeat('x', 63)], 'name');
SELECT check_like_btree('nm', ARRAY['n7', 'n400', '', repeat('x', 63), repeat('x', 64)],
	'text COLLATE "C"');

-- float4 vs float8: 0.1 is no float4, 1e300 overflows one
SELECT check_like_btree('f4', ARRAY['0.1', '-0', 'NaN', 'Infinity', '1e300', '-1e-300',
	'1.4285714285714286'], 'float8');
SELECT check_like_btree('f8', ARRAY['0.1', '-0', 'NaN', '-Infinity', '1.4285715'], 'float4');
SELECT count(*) FROM fo_f4 WHERE v > 0.5;
SELECT count(*) FROM bt_f4 WHERE v > 0.5;

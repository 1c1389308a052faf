--
-- opclasses: the 0.4 operator classes (float4/float8, numeric, bool,
-- char(n), name, interval, inet/cidr, bytea, oid and the *_pattern_ops)
-- answer like btree, their indexes pass forein_check and their offload
-- words never contradict the opclass's order.
--
-- Each type gets two tables with the same rows in the same heap order:
-- fo_<t> with a forein index fo_<t>_v and bt_<t> with a btree index
-- bt_<t>_v.  check_like_btree() runs ordered scans both ways, equality and
-- the four ranges at every probe, two-sided ranges, IN lists, = ANY,
-- ORDER BY ... DESC LIMIT, min/max, IS [NOT] NULL on both and reports the
-- queries whose answers differ (or whose plan does not use fo_<t>_v, or
-- has no index condition for a comparison).
-- opclasses_cross.sql uses these functions too.
--
SET enable_seqscan = off;
SET enable_bitmapscan = off;

CREATE FUNCTION make_pair(t text, query text, opclass text DEFAULT '')
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE format('CREATE TABLE %I AS SELECT row_number() OVER () AS id, v FROM (%s) s',
				   'fo_' || t, query);
	EXECUTE format('CREATE TABLE %I AS SELECT * FROM %I', 'bt_' || t, 'fo_' || t);
	EXECUTE format('CREATE INDEX %I ON %I USING forein (v %s)', 'fo_' || t || '_v', 'fo_' || t, opclass);
	EXECUTE format('CREATE INDEX %I ON %I USING btree (v %s)', 'bt_' || t || '_v', 'bt_' || t, opclass);
	EXECUTE format('ANALYZE %I, %I', 'fo_' || t, 'bt_' || t);
END $$;

-- probes: values (text) cast to argtype (default: the column's type);
-- ops: the strategies' operators; conds: extra WHERE clauses.
CREATE FUNCTION check_like_btree(t text, probes text[], argtype text DEFAULT NULL,
	ops text[] DEFAULT ARRAY['<', '<=', '=', '>=', '>'], conds text[] DEFAULT '{}')
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	ty text := coalesce(argtype,
		(SELECT format_type(atttypid, NULL) FROM pg_attribute
		 WHERE attrelid = ('fo_' || t)::regclass AND attname = 'v'));
	ps text[] := ARRAY(SELECT quote_literal(p) || '::' || ty FROM unnest(probes) p);
	-- argtype may carry a COLLATE clause
	agg text := format('min(%s)', split_part(ty, ' COLLATE ', 1));
	asc_ text := CASE WHEN ops[1] = '<' THEN 'v' ELSE 'v USING ' || ops[1] END;
	desc_ text := CASE WHEN ops[1] = '<' THEN 'v DESC' ELSE 'v USING ' || ops[5] END;
	qs text[] := ARRAY[
		format('SELECT v FROM TBL ORDER BY %s', asc_),
		format('SELECT v FROM TBL ORDER BY %s', desc_),
		format('SELECT v FROM TBL ORDER BY %s LIMIT 3', desc_),
		format('SELECT v FROM TBL WHERE v IS NULL ORDER BY %s', asc_),
		format('SELECT v FROM TBL WHERE v IS NOT NULL ORDER BY %s', desc_),
		format('SELECT v FROM TBL WHERE v = ANY (ARRAY[%s]) ORDER BY %s', array_to_string(ps, ', '), asc_),
		format('SELECT v FROM TBL WHERE v IN (%s) ORDER BY %s', array_to_string(ps[1:3], ', '), desc_)];
	p text;
	q text;
	r record;
	plan text;
	a text[];
	b text[];
	bad text[] := '{}';
	i int;
BEGIN
	IF ops[1] = '<' AND to_regprocedure(agg) IS NOT NULL THEN
		qs := qs || ARRAY['SELECT min(v)::text AS v FROM TBL', 'SELECT max(v)::text AS v FROM TBL'];
	END IF;
	FOREACH p IN ARRAY ps LOOP
		FOR i IN 1..5 LOOP
			qs := qs || format('SELECT v FROM TBL WHERE v %s %s ORDER BY %s', ops[i], p,
							   CASE WHEN i % 2 = 0 THEN desc_ ELSE asc_ END);
		END LOOP;
		qs := qs || ARRAY[format('SELECT v FROM TBL WHERE v %s %s ORDER BY %s LIMIT 4', ops[2], p, desc_),
						  format('SELECT v FROM TBL WHERE v %s %s AND v %s %s ORDER BY %s',
								 ops[5], p, ops[2], ps[cardinality(ps)], asc_)];
	END LOOP;
	FOREACH p IN ARRAY conds LOOP
		qs := qs || format('SELECT v FROM TBL WHERE %s ORDER BY %s', p, asc_);
	END LOOP;

	FOREACH q IN ARRAY qs LOOP
		BEGIN
			plan := '';
			FOR r IN EXECUTE 'EXPLAIN (COSTS OFF) ' || replace(q, 'TBL', 'fo_' || t) LOOP
				plan := plan || r."QUERY PLAN";
			END LOOP;
			IF position(('fo_' || t || '_v') IN plan) = 0 THEN
				bad := bad || ('no index scan: ' || q);
			ELSIF q ~ 'WHERE v ([<>=~]|IN |IS )' AND position('Index Cond' IN plan) = 0
				  AND NOT (ty = 'boolean' AND q ~ 'WHERE v = ') THEN
				bad := bad || ('no index condition: ' || q);
			END IF;
			EXECUTE format('SELECT array_agg(v::text) FROM (%s) s', replace(q, 'TBL', 'fo_' || t)) INTO a;
			EXECUTE format('SELECT array_agg(v::text) FROM (%s) s', replace(q, 'TBL', 'bt_' || t)) INTO b;
			IF a IS DISTINCT FROM b THEN
				bad := bad || q;
			END IF;
		EXCEPTION WHEN others THEN
			bad := bad || (q || ': ' || SQLERRM);
		END;
	END LOOP;
	RETURN t || ': ' || cardinality(qs) || ' queries, ' ||
		CASE WHEN cardinality(bad) = 0 THEN 'all like btree'
			 ELSE cardinality(bad) || ' differ: ' || array_to_string(bad, E'\n') END;
END $$;

-- Words along the opclass's order (expr: v, or v COLLATE "C" for the
-- pattern opclasses): a word below its predecessor's, equal keys with
-- different words, or no word at all are contract violations.
CREATE FUNCTION check_words(t text, expr text DEFAULT 'v')
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	res text;
BEGIN
	EXECUTE format($q$
		SELECT %L || ': ' || count(*) || ' keys, ' ||
			   count(*) FILTER (WHERE w < pw) || ' out of order, ' ||
			   count(*) FILTER (WHERE k = pk AND w <> pw) || ' equal keys with different words, ' ||
			   count(*) FILTER (WHERE w IS NULL) || ' without words'
		FROM (SELECT k, w, lag(k) OVER o AS pk, lag(w) OVER o AS pw
			  FROM (SELECT %s AS k, forein_debug_word(%s) AS w FROM %I WHERE v IS NOT NULL) s
			  WINDOW o AS (ORDER BY k)) s$q$, t, expr, expr, 'bt_' || t) INTO res;
	RETURN res;
END $$;

-- float4, float8: -0 = +0, NaN (equal to itself, after +Infinity), the
-- infinities, denormals, many duplicates
SELECT make_pair('f4', $$
	SELECT ((g % 501 - 250) / 7.0)::float4 AS v FROM generate_series(1, 3000) g
	UNION ALL SELECT x::float4 FROM unnest(ARRAY['-0', '0', '-0', 'NaN', 'NaN', 'Infinity',
		'-Infinity', '1.4e-45', '-1.4e-45', '3.4028235e38', '-3.4028235e38', NULL, NULL]) x$$);
SELECT make_pair('f8', $$
	SELECT ((g % 501 - 250) / 7.0)::float8 AS v FROM generate_series(1, 3000) g
	UNION ALL SELECT x::float8 FROM unnest(ARRAY['-0', '0', '-0', 'NaN', 'NaN', 'Infinity',
		'-Infinity', '4.9e-324', '-4.9e-324', '1.7976931348623157e308', NULL, NULL]) x$$);
SELECT check_like_btree('f4', ARRAY['0', '-0', 'NaN', 'Infinity', '-Infinity', '1.4e-45', '-3.5714285', '12']);
SELECT check_like_btree('f8', ARRAY['0', '-0', 'NaN', 'Infinity', '-Infinity', '4.9e-324', '-3.5714285714285716', '12']);
SELECT v, count(*) FROM fo_f8 WHERE v = 0 OR v = 'NaN' GROUP BY v ORDER BY v;

-- numeric: NaN, +-Infinity, equal values with different scales, values
-- beyond double's range and precision (their words tie, never invert)
SELECT make_pair('num', $$
	SELECT ((g % 701 - 350) / 3.0)::numeric AS v FROM generate_series(1, 3000) g
	UNION ALL SELECT x::numeric FROM unnest(ARRAY['NaN', 'NaN', 'Infinity', '-Infinity',
		'1.0', '1.00', '1', '0', '-0.000', '1e400', '-1e400', '1e-400', '-1e-400',
		'123456789012345678901234567890.1', '123456789012345678901234567890.2',
		NULL, NULL]) x$$);
SELECT check_like_btree('num', ARRAY['1', '1.000', 'NaN', 'Infinity', '-Infinity', '1e400',
	'1e-400', '123456789012345678901234567890.15', '-116.666666666666666667']);
SELECT count(*) FROM fo_num WHERE v = 1.0;

-- bool.  v = true is simplified to v, which the planner matches to an
-- index only for btree's and hash's own boolean families (their OIDs are
-- hard-coded): for forein it is a filter (the answers stay right).
SELECT make_pair('b', $$
	SELECT (g % 3 = 0) AS v FROM generate_series(1, 2000) g
	UNION ALL SELECT NULL::bool FROM generate_series(1, 5)$$);
SELECT check_like_btree('b', ARRAY['false', 'true']);
EXPLAIN (COSTS OFF) SELECT v FROM fo_b WHERE v = true;
EXPLAIN (COSTS OFF) SELECT v FROM fo_b WHERE v < true;

-- char(n): trailing spaces do not count, '' and ' ' are equal
SELECT make_pair('bpc', $$
	SELECT ('k' || (g % 397))::char(6) AS v FROM generate_series(1, 3000) g
	UNION ALL SELECT x::char(6) FROM unnest(ARRAY['', ' ', 'ab', 'ab ', 'ab  ', 'AB', 'a', 'zzzzzz',
		NULL]) x$$);
SELECT check_like_btree('bpc', ARRAY['ab', 'ab   ', '', 'k1', 'k99', 'zzzzzz', 'b']);
SELECT '[' || v || ']' AS v, count(*) FROM fo_bpc WHERE v = 'ab ' OR v = '' GROUP BY v ORDER BY v;

-- name, collation "C" (a name column's default; a name cast from text
-- keeps the text's collation, and name constants would not match it)
SELECT make_pair('nm', $$
	SELECT ('n' || (g % 401))::name COLLATE "C" AS v FROM generate_series(1, 3000) g
	UNION ALL SELECT x::name COLLATE "C" FROM unnest(ARRAY['', 'pg_class', repeat('x', 63),
		repeat('x', 62), NULL]) x$$);
SELECT check_like_btree('nm', ARRAY['n1', 'n400', '', 'pg_class', repeat('x', 70), 'o']);

-- interval: equal spans written differently ('1 day' = '24 hours',
-- '1 mon' = '30 days'), negative and extreme values
SELECT make_pair('iv', $$
	SELECT (g % 503) * interval '37 minutes' - interval '3 days' AS v FROM generate_series(1, 3000) g
	UNION ALL SELECT x::interval FROM unnest(ARRAY['1 day', '24 hours', '1 mon', '30 days',
		'720 hours', '-1 day', '-24 hours', '178000000 years', '-178000000 years',
		'1 microsecond', '0', NULL]) x$$);
SELECT check_like_btree('iv', ARRAY['24 hours', '1 day', '30 days', '0', '1 microsecond',
	'-1 day', '178000000 years', '5 hours']);
SELECT v, count(*) FROM fo_iv WHERE v = '1 day' OR v = '1 mon' GROUP BY v ORDER BY v;

-- inet (v4 and v6, host bits under the mask) and cidr (inet_ops through
-- binary coercion)
SELECT make_pair('inet', $$
	SELECT ('10.' || (g % 7) || '.' || (g % 13) || '.' || (g % 5) || '/' || (g % 33))::inet AS v
	FROM generate_series(1, 2000) g
	UNION ALL SELECT ('2001:db8::' || to_hex(g % 97) || '/' || (g % 129))::inet
	FROM generate_series(1, 1000) g
	UNION ALL SELECT x::inet FROM unnest(ARRAY['0.0.0.0/0', '255.255.255.255', '10.0.0.0/8',
		'10.1.0.0/8', '10.0.0.0/16', '::/0', '::', 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff',
		'::ffff:10.0.0.1', NULL]) x$$);
SELECT check_like_btree('inet', ARRAY['10.0.0.0/8', '10.1.0.0/8', '10.3.5.1/24', '10.3.5.1',
	'0.0.0.0/0', '::/0', '2001:db8::1/64', '2001:db8::5f/128', '255.255.255.255']);
SELECT make_pair('cidr', $$
	SELECT network(('10.' || (g % 7) || '.' || (g % 13) || '.' || (g % 5) || '/' || (g % 33))::inet) AS v
	FROM generate_series(1, 2000) g
	UNION ALL SELECT network(('2001:db8::' || to_hex(g % 97) || '/' || (g % 129))::inet)
	FROM generate_series(1, 1000) g
	UNION ALL SELECT NULL::cidr$$);
SELECT check_like_btree('cidr', ARRAY['10.0.0.0/8', '10.3.0.0/16', '0.0.0.0/0', '::/0',
	'2001:db8::/32', '2001:db8::5f/128']);
EXPLAIN (COSTS OFF) SELECT v FROM fo_cidr WHERE v = '10.3.0.0/16';

-- bytea: '', zero bytes, long values
SELECT make_pair('by', $$
	SELECT decode(md5((g % 409)::text), 'hex') AS v FROM generate_series(1, 3000) g
	UNION ALL SELECT x::bytea FROM unnest(ARRAY['', '\x00', '\x0000', '\x00000000000000000001',
		'\xffffffffffffffff', '\xffffffffffffffffff', NULL]) x
	UNION ALL SELECT decode(repeat('ab', 1500), 'hex')$$);
SELECT check_like_btree('by', ARRAY['', '\x00', '\x000000', '\xffffffffffffffff', '\x80',
	'\xabab', '\xc4ca4238a0b923820dcc509a6f75849b']);

-- oid: unsigned, 0 to 4294967295
SELECT make_pair('oid', $$
	SELECT ((g * 2654435761) % 4294967296)::oid AS v FROM generate_series(1, 3000) g
	UNION ALL SELECT x::oid FROM unnest(ARRAY['0', '0', '4294967295', '2147483647', '2147483648',
		NULL]) x$$);
SELECT check_like_btree('oid', ARRAY['0', '4294967295', '2147483648', '2147483647', '1000']);

-- text_pattern_ops, varchar_pattern_ops, bpchar_pattern_ops on columns
-- with an ICU collation: byte order whatever the collation.  LIKE 'abc%'
-- is no index range with them: PostgreSQL 15's planner (like_support.c)
-- derives prefix ranges with the ~>=~/~<~ operators only for btree's and
-- SP-GiST's own pattern families (their OIDs are hard-coded), else with
-- < and >= under a "C" index collation.  Written as ~>=~ and ~<~ the range
-- is an index condition; a forein text_ops index COLLATE "C" gets LIKE's.
SELECT make_pair('tp', $$
	SELECT (CASE g % 4 WHEN 0 THEN 'abc' WHEN 1 THEN 'ABC' WHEN 2 THEN 'abd' ELSE 'Ab' END
			|| (g % 211)) COLLATE "und-x-icu" AS v FROM generate_series(1, 3000) g
	UNION ALL SELECT x COLLATE "und-x-icu" FROM unnest(ARRAY['', 'abc', 'abc', 'ab', 'b', 'é', 'e',
		'z', NULL]) x$$, 'text_pattern_ops');
SELECT check_like_btree('tp', ARRAY['abc', 'ABC', 'abc1', 'b', '', 'é', 'Ab99'], NULL,
	ARRAY['~<~', '~<=~', '=', '~>=~', '~>~'], ARRAY[$$v LIKE 'abc%'$$, $$v LIKE 'Ab1%'$$]);
EXPLAIN (COSTS OFF) SELECT v FROM fo_tp WHERE v LIKE 'abc%';
EXPLAIN (COSTS OFF) SELECT v FROM fo_tp WHERE v ~>=~ 'abc' AND v ~<~ 'abd' AND v LIKE 'abc%';
SELECT count(*) FROM fo_tp WHERE v ~>=~ 'abc1' AND v ~<~ 'abc2' AND v LIKE 'abc1%';
SELECT count(*) FROM bt_tp WHERE v LIKE 'abc1%';
CREATE INDEX fo_tp_c ON fo_tp USING forein ((v COLLATE "C"));
EXPLAIN (COSTS OFF) SELECT v FROM fo_tp WHERE (v COLLATE "C") LIKE 'abc%';
SELECT count(*) FROM fo_tp WHERE (v COLLATE "C") LIKE 'abc1%';
DROP INDEX fo_tp_c;
SELECT make_pair('vp', $$
	SELECT ((CASE g % 3 WHEN 0 THEN 'abc' WHEN 1 THEN 'ABC' ELSE 'abd' END) || (g % 211))::varchar(20)
		COLLATE "und-x-icu" AS v FROM generate_series(1, 3000) g
	UNION ALL SELECT x::varchar(20) COLLATE "und-x-icu" FROM unnest(ARRAY['', 'abc', NULL]) x$$,
	'varchar_pattern_ops');
SELECT check_like_btree('vp', ARRAY['abc', 'ABC', 'abd100', ''], 'text',
	ARRAY['~<~', '~<=~', '=', '~>=~', '~>~'], ARRAY[$$v LIKE 'abc%'$$]);
EXPLAIN (COSTS OFF) SELECT v FROM fo_vp WHERE v LIKE 'abc%';
SELECT make_pair('bp', $$
	SELECT ((CASE g % 3 WHEN 0 THEN 'abc' WHEN 1 THEN 'ABC' ELSE 'ab' END) || (g % 97))::char(8)
		COLLATE "und-x-icu" AS v FROM generate_series(1, 3000) g
	UNION ALL SELECT x::char(8) COLLATE "und-x-icu" FROM unnest(ARRAY['', ' ', 'abc', 'abc ', NULL]) x$$,
	'bpchar_pattern_ops');
SELECT check_like_btree('bp', ARRAY['abc', 'abc  ', 'ABC', 'ab5', ''], NULL,
	ARRAY['~<~', '~<=~', '=', '~>=~', '~>~']);
EXPLAIN (COSTS OFF) SELECT v FROM fo_bp WHERE v ~>=~ 'abc' AND v ~<~ 'abd';

-- every index is sound and holds every heap row
SELECT t, forein_check(('fo_' || t || '_v')::regclass, true)::text = '' AS checked
FROM unnest(ARRAY['f4', 'f8', 'num', 'b', 'bpc', 'nm', 'iv', 'inet', 'cidr', 'by', 'oid',
	'tp', 'vp', 'bp']) t;

-- words never contradict the order
SELECT check_words(t) FROM unnest(ARRAY['f4', 'f8', 'num', 'b', 'bpc', 'nm', 'iv', 'inet', 'cidr',
	'by', 'oid']) t;
SELECT check_words(t, 'v COLLATE "C"') FROM unnest(ARRAY['tp', 'vp', 'bp']) t;
SELECT forein_debug_word('-0'::float8) = forein_debug_word('0'::float8) AS zeros_tie,
	   forein_debug_word('NaN'::float4) > forein_debug_word('Infinity'::float4) AS nan_last,
	   forein_debug_word(1.5::float4) = forein_debug_word(1.5::float8) AS float4_is_float8,
	   forein_debug_word('1 day'::interval) = forein_debug_word('24 hours'::interval) AS day_is_24h,
	   forein_debug_word('ab'::char(4)) = forein_debug_word('ab'::text) AS bpchar_strips;

-- offload: the refresh installs entries, hinted scans hit and still answer
-- like btree
SELECT t, forein_refresh(('fo_' || t || '_v')::regclass) > 0 AS installed
FROM unnest(ARRAY['f8', 'num', 'iv', 'inet', 'tp']) t;
SELECT check_like_btree('f8', ARRAY['0', 'NaN', '-Infinity', '12']);
SELECT check_like_btree('num', ARRAY['1', 'NaN', '1e400']);
SELECT check_like_btree('iv', ARRAY['1 day', '-1 day']);
SELECT check_like_btree('inet', ARRAY['10.1.0.0/8', '::/0']);
SELECT check_like_btree('tp', ARRAY['abc', 'ABC'], NULL, ARRAY['~<~', '~<=~', '=', '~>=~', '~>~']);
SELECT t, backend, hint_hits > 0 AS hits, status
FROM unnest(ARRAY['f8', 'num', 'iv', 'inet', 'tp']) t,
	 forein_stats(('fo_' || t || '_v')::regclass);

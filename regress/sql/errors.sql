--
-- errors: what forein refuses, and how it says so.
--
SET enable_seqscan = off;
SET enable_bitmapscan = off;

-- unsupported types (no default operator class)
CREATE TABLE unsup (p point, j jsonb, n money, f macaddr, b varbit, a int4, t text);
CREATE INDEX ON unsup USING forein (p);
CREATE INDEX ON unsup USING forein (j);
CREATE INDEX ON unsup USING forein (n);
CREATE INDEX ON unsup USING forein (f);
CREATE INDEX ON unsup USING forein (b);
-- an operator class of another type
CREATE INDEX ON unsup USING forein (t int4_ops);
-- expressions of supported types are fine
CREATE INDEX unsup_expr ON unsup USING forein ((a + 1));
INSERT INTO unsup (a) VALUES (1), (2), (NULL);
SELECT a FROM unsup WHERE a + 1 = 3;
CREATE INDEX unsup_lower ON unsup USING forein (lower(t));
INSERT INTO unsup (t) VALUES ('Hello'), ('WORLD');
SELECT t FROM unsup WHERE lower(t) = 'world';
-- partial indexes too
CREATE INDEX unsup_partial ON unsup USING forein (a) WHERE a > 1;
SELECT a FROM unsup WHERE a > 1 AND a < 5;

-- exclusion constraints
ALTER TABLE unsup ADD CONSTRAINT unsup_excl EXCLUDE USING forein (a WITH =);
INSERT INTO unsup (a) VALUES (2);
INSERT INTO unsup (a) VALUES (NULL);
-- CLUSTER
CREATE INDEX unsup_a ON unsup USING forein (a);
CLUSTER unsup USING unsup_a;
SELECT a FROM unsup WHERE a IS NOT NULL ORDER BY a;

-- keys up to btree's 1/3 of a page fit (2,688 characters: a 2,700-byte
-- index tuple, so a leaf holds its bounds and one key, an inner page its
-- bounds and one downlink: splits at every insert, a tall tree); larger
-- ones, after compression, get forein's error, shaped like btree's
-- (DETAIL: the heap tuple; HINT: the limit and what to do instead)
\set VERBOSITY default
CREATE TABLE big (t text);
CREATE INDEX big_t ON big USING forein (t);
INSERT INTO big SELECT string_agg(md5(g::text || x::text), '' ORDER BY x)
  FROM generate_series(1, 84) x, generate_series(1, 60) g GROUP BY g;
SELECT count(*), min(length(t)), max(length(t)) FROM big WHERE t > '';
SELECT forein_check('big_t', true);
DELETE FROM big WHERE t < '8';
VACUUM big;
INSERT INTO big SELECT string_agg(md5(x::text || g::text), '' ORDER BY x)
  FROM generate_series(1, 84) x, generate_series(1, 30) g GROUP BY g;
SELECT forein_check('big_t', true);
-- the index's answers (in its order) against a sort of the table's rows
SELECT (SELECT array_agg(t) FROM (SELECT t FROM big WHERE t > '' ORDER BY t) i) =
       (SELECT array_agg(t ORDER BY t) FROM (SELECT t || '' AS t FROM big) s)
  AS same_rows_same_order;
INSERT INTO big SELECT string_agg(md5(x::text), '' ORDER BY x) FROM generate_series(1, 85) x;
-- btree's SQLSTATE (program_limit_exceeded), table and constraint fields
DO $$
DECLARE
	state text;
	tab text;
	con text;
BEGIN
	INSERT INTO big SELECT string_agg(md5(x::text), '' ORDER BY x) FROM generate_series(1, 85) x;
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, tab = TABLE_NAME,
		con = CONSTRAINT_NAME;
	RAISE NOTICE 'SQLSTATE %, table %, constraint %', state, tab, con;
END $$;
INSERT INTO big SELECT string_agg(md5(x::text), '' ORDER BY x) FROM generate_series(1, 300) x;
INSERT INTO big VALUES (repeat('x', 100000));
INSERT INTO big VALUES (repeat('y', 1000));
SELECT length(t) FROM big WHERE t > 'x' ORDER BY t;
SELECT forein_check('big_t', true);
-- and at build time
DROP INDEX big_t;
CREATE INDEX big_t ON big USING forein (t);
SELECT forein_check('big_t', true);
DROP INDEX big_t;
INSERT INTO big SELECT string_agg(md5(x::text), '' ORDER BY x) FROM generate_series(1, 85) x;
SET enable_seqscan = on;
SELECT count(*) FROM big;
CREATE INDEX big_t ON big USING forein (t);
SET enable_seqscan = off;

-- exclusion constraints with = work like a unique index
ALTER TABLE unsup ADD CONSTRAINT unsup_excl2 EXCLUDE USING forein (t WITH =);
INSERT INTO unsup (t) VALUES ('hello');
INSERT INTO unsup (t) VALUES ('WORLD');

-- PostgreSQL 15 only lets btree unique indexes arbitrate ON CONFLICT and
-- back UNIQUE constraints.  A speculative insertion checks every unique
-- index of the table, so forein refuses ON CONFLICT on a table with a
-- forein unique index before the executor's internal error (the hook is
-- there: this session has used forein indexes, and the suite preloads).
CREATE TABLE oc (id int4, n int4);
CREATE UNIQUE INDEX oc_id ON oc USING forein (id);
INSERT INTO oc VALUES (1, 0);
INSERT INTO oc VALUES (1, 0) ON CONFLICT (id) DO NOTHING;
INSERT INTO oc VALUES (1, 0) ON CONFLICT DO NOTHING;
INSERT INTO oc VALUES (1, 0) ON CONFLICT (id) DO UPDATE SET n = oc.n + 1;
WITH ins AS (INSERT INTO oc VALUES (2, 0) ON CONFLICT DO NOTHING RETURNING id)
SELECT count(*) FROM ins;
-- also when another unique index (btree) is the arbiter
CREATE UNIQUE INDEX oc_n ON oc USING btree (n);
INSERT INTO oc VALUES (3, 3) ON CONFLICT (n) DO NOTHING;
DROP INDEX oc_n;
-- without ON CONFLICT, and on other tables, nothing changes
INSERT INTO oc VALUES (2, 0);
ALTER TABLE oc ADD CONSTRAINT oc_id_key UNIQUE USING INDEX oc_id;
SELECT id, n FROM oc ORDER BY id;
-- the workaround: a btree unique index arbitrates, a non-unique forein
-- index on the same column serves scans (here the cheaper one: the btree
-- is packed loosely)
DROP INDEX oc_id;
CREATE UNIQUE INDEX oc_id_btree ON oc USING btree (id) WITH (fillfactor = 10);
CREATE INDEX oc_id_forein ON oc USING forein (id);
INSERT INTO oc SELECT g, 0 FROM generate_series(3, 2000) g;
INSERT INTO oc VALUES (1, 0) ON CONFLICT (id) DO NOTHING;
INSERT INTO oc VALUES (1, 0), (2001, 0) ON CONFLICT DO NOTHING;
INSERT INTO oc VALUES (1, 0), (2, 0) ON CONFLICT (id) DO UPDATE SET n = oc.n + 1;
ALTER TABLE oc ADD CONSTRAINT oc_id_key UNIQUE USING INDEX oc_id_btree;
INSERT INTO oc VALUES (1, 0) ON CONFLICT ON CONSTRAINT oc_id_key DO UPDATE SET n = oc.n + 1;
ANALYZE oc;
EXPLAIN (COSTS OFF) SELECT id, n FROM oc WHERE id BETWEEN 1 AND 300;
SELECT count(*), sum(n) FROM oc WHERE id BETWEEN 1 AND 300;
SELECT id, n FROM oc WHERE id IN (1, 2, 2001) ORDER BY id;
SELECT count(*), count(DISTINCT id) FROM oc;
SELECT forein_check('oc_id_forein', true);

-- forein_check on the wrong kind of relation
SELECT forein_check('unsup');
CREATE INDEX unsup_btree ON unsup USING btree (a);
SELECT forein_check('unsup_btree');
SELECT forein_check(0);
SELECT forein_check(NULL);

RESET enable_seqscan;
RESET enable_bitmapscan;

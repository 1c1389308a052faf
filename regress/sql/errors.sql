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

-- multi-column, INCLUDE, and orderings other than ASC NULLS LAST
CREATE INDEX ON unsup USING forein (a, t);
CREATE INDEX ON unsup USING forein (a) INCLUDE (t);
CREATE INDEX ON unsup USING forein (a DESC);
CREATE INDEX ON unsup USING forein (a NULLS FIRST);
CREATE INDEX ON unsup USING forein (a DESC NULLS LAST);
-- exclusion constraints
ALTER TABLE unsup ADD CONSTRAINT unsup_excl EXCLUDE USING forein (a WITH =);
INSERT INTO unsup (a) VALUES (2);
INSERT INTO unsup (a) VALUES (NULL);
-- CLUSTER
CREATE INDEX unsup_a ON unsup USING forein (a);
CLUSTER unsup USING unsup_a;
SELECT a FROM unsup WHERE a IS NOT NULL ORDER BY a;

-- keys up to 1/5 of a page fit (five per page: splits with big keys);
-- larger ones, after compression, get forein's error
CREATE TABLE big (t text);
CREATE INDEX big_t ON big USING forein (t);
INSERT INTO big SELECT string_agg(md5(g::text || x::text), '' ORDER BY x)
  FROM generate_series(1, 45) x, generate_series(1, 60) g GROUP BY g;
SELECT count(*), min(length(t)), max(length(t)) FROM big WHERE t > '';
SELECT forein_check('big_t', true);
INSERT INTO big SELECT string_agg(md5(x::text), '' ORDER BY x) FROM generate_series(1, 60) x;
INSERT INTO big SELECT string_agg(md5(x::text), '' ORDER BY x) FROM generate_series(1, 300) x;
INSERT INTO big VALUES (repeat('x', 100000));
INSERT INTO big VALUES (repeat('y', 1000));
SELECT length(t) FROM big WHERE t > 'x' ORDER BY t;
SELECT forein_check('big_t', true);
-- and at build time
DROP INDEX big_t;
INSERT INTO big SELECT string_agg(md5(x::text), '' ORDER BY x) FROM generate_series(1, 60) x;
SET enable_seqscan = on;
SELECT count(*) FROM big;
CREATE INDEX big_t ON big USING forein (t);
SET enable_seqscan = off;

-- exclusion constraints with = work like a unique index
ALTER TABLE unsup ADD CONSTRAINT unsup_excl2 EXCLUDE USING forein (t WITH =);
INSERT INTO unsup (t) VALUES ('hello');
INSERT INTO unsup (t) VALUES ('WORLD');

-- PostgreSQL 15 only lets btree unique indexes arbitrate ON CONFLICT and
-- back UNIQUE constraints
CREATE TABLE oc (id int4);
CREATE UNIQUE INDEX oc_id ON oc USING forein (id);
INSERT INTO oc VALUES (1);
INSERT INTO oc VALUES (1) ON CONFLICT (id) DO NOTHING;
INSERT INTO oc VALUES (1) ON CONFLICT DO NOTHING;
ALTER TABLE oc ADD CONSTRAINT oc_id_key UNIQUE USING INDEX oc_id;
SELECT count(*) FROM oc;

-- forein_check on the wrong kind of relation
SELECT forein_check('unsup');
CREATE INDEX unsup_btree ON unsup USING btree (a);
SELECT forein_check('unsup_btree');
SELECT forein_check(0);
SELECT forein_check(NULL);

RESET enable_seqscan;
RESET enable_bitmapscan;

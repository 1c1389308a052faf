--
-- multicolumn: multi-column forein indexes with btree's semantics:
-- per-column ASC/DESC and NULLS FIRST/LAST, INCLUDE columns, row
-- comparisons, multi-column unique indexes.  Tables mf and mb hold the same
-- rows (duplicates and NULLs in every column); mf has forein indexes, mb
-- btree indexes of the same definitions.  Every query of mc_q runs on both
-- with index scans forced and must give the same answer (mc_same); small
-- answers are shown for both tables.
--
SET TimeZone = 'UTC';
-- a plan with a disabled sequential scan costs enough to be compiled
SET jit = off;
SET enable_seqscan = off;
SET enable_bitmapscan = off;

CREATE TABLE mf (id int4, tenant_id int4, created_at timestamptz, k text,
                 v int8, payload text);
INSERT INTO mf SELECT g,
  CASE WHEN g % 17 = 0 THEN NULL ELSE g % 7 END,
  CASE WHEN g % 13 = 0 THEN NULL
       ELSE timestamptz '2024-01-01 00:00+00' + ((g * 37) % 60) * interval '1 hour' END,
  CASE WHEN g % 11 = 0 THEN NULL ELSE 'k' || lpad(((g * 7) % 40)::text, 2, '0') END,
  CASE WHEN g % 19 = 0 THEN NULL ELSE (g * 13) % 100 - 20 END,
  CASE WHEN g % 23 = 0 THEN NULL ELSE 'p' || (g % 300) END
FROM generate_series(1, 4000) g;
CREATE TABLE mb (LIKE mf);
INSERT INTO mb SELECT * FROM mf;

CREATE INDEX mf_tc ON mf USING forein (tenant_id, created_at);
CREATE INDEX mf_vk ON mf USING forein (v, k DESC);
CREATE INDEX mf_tv ON mf USING forein (tenant_id DESC NULLS LAST, v NULLS FIRST);
CREATE INDEX mf_kv ON mf USING forein (k, v) INCLUDE (payload);
CREATE INDEX mf_k3 ON mf USING forein (k DESC NULLS LAST, tenant_id, v DESC);
CREATE INDEX mb_tc ON mb USING btree (tenant_id, created_at);
CREATE INDEX mb_vk ON mb USING btree (v, k DESC);
CREATE INDEX mb_tv ON mb USING btree (tenant_id DESC NULLS LAST, v NULLS FIRST);
CREATE INDEX mb_kv ON mb USING btree (k, v) INCLUDE (payload);
CREATE INDEX mb_k3 ON mb USING btree (k DESC NULLS LAST, tenant_id, v DESC);
VACUUM (ANALYZE) mf;
VACUUM (ANALYZE) mb;

-- the index definitions as the catalog shows them
-- (vs-btree runs add a reloption: not shown)
SELECT c.relname, regexp_replace(regexp_replace(pg_get_indexdef(c.oid), ' USING \w+', ' USING ...'),
                                 ' WITH \(.*\)$', '') AS def
FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid
WHERE i.indrelid IN ('mf'::regclass, 'mb'::regclass) ORDER BY c.relname;
SELECT pg_get_indexdef('mf_k3'::regclass, 1, true), pg_get_indexdef('mf_k3'::regclass, 3, true),
       pg_get_indexdef('mf_tv'::regclass, 1, true), pg_get_indexdef('mf_kv'::regclass, 3, true);

-- mc_same(query, ordered, mode): query (%T: the table) run on mf and on mb.
-- forein_rows: mf's row count; same: equal answers (in the same order when
-- ordered, as multisets otherwise); index_scan: mf's plan scans one of mf's
-- indexes.  mode: 'index' (index scans, no bitmap scans), 'bitmap' (bitmap
-- scans only) or 'any' (both allowed); sequential scans are always off.
-- Plans are not compared here: which of two indexes with the same leading
-- column wins, or an index scan against a bitmap scan, depends on the
-- indexes' sizes, which differ between forein and btree (the EXPLAINs below
-- show the plans where only one index fits).
CREATE FUNCTION mc_same(q text, ordered boolean, mode text,
  OUT forein_rows bigint, OUT same boolean, OUT index_scan boolean)
LANGUAGE plpgsql AS $fn$
DECLARE
  f text[];
  b text[];
  plan text := '';
  line text;
  agg text := CASE WHEN ordered THEN 'array_agg(r::text)'
                   ELSE 'array_agg(r::text ORDER BY r::text)' END;
BEGIN
  PERFORM set_config('enable_indexscan', CASE WHEN mode = 'bitmap' THEN 'off' ELSE 'on' END, true);
  PERFORM set_config('enable_bitmapscan', CASE WHEN mode = 'index' THEN 'off' ELSE 'on' END, true);
  EXECUTE format('SELECT %s FROM (%s) r', agg, replace(q, '%T', 'mf')) INTO f;
  EXECUTE format('SELECT %s FROM (%s) r', agg, replace(q, '%T', 'mb')) INTO b;
  FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || replace(q, '%T', 'mf') LOOP
    plan := plan || line || E'\n';
  END LOOP;
  PERFORM set_config('enable_indexscan', 'on', true);
  PERFORM set_config('enable_bitmapscan', 'off', true);
  forein_rows := coalesce(cardinality(f), 0);
  same := f IS NOT DISTINCT FROM b;
  index_scan := plan ~ '\m(Index Scan|Index Only Scan|Bitmap Index Scan)( Backward)? (using|on) mf_\w+\M';
END
$fn$;

-- The queries: n, the query, ordered (compare in order: the query's ORDER
-- BY covers every column it returns), mode.
CREATE TABLE mc_q (n int4 PRIMARY KEY, q text, ordered boolean,
                   mode text DEFAULT 'index');
INSERT INTO mc_q (n, q, ordered) VALUES
-- equality on a prefix
(1,  $$SELECT id, tenant_id, created_at FROM %T WHERE tenant_id = 3$$, false),
(2,  $$SELECT id FROM %T WHERE tenant_id = 3 AND created_at = '2024-01-01 05:00+00'$$, false),
(3,  $$SELECT id, payload FROM %T WHERE k = 'k07' AND v = 33$$, false),
(4,  $$SELECT k, tenant_id, v FROM %T WHERE k = 'k21' AND tenant_id = 0 AND v = 39$$, false),
(5,  $$SELECT id FROM %T WHERE v = -7 AND k = 'k27'$$, false),
-- equality on the first column, range on the second
(6,  $$SELECT id FROM %T WHERE tenant_id = 2 AND created_at >= '2024-01-02 00:00+00' AND created_at < '2024-01-02 12:00+00'$$, false),
(7,  $$SELECT tenant_id, created_at FROM %T WHERE tenant_id = 5 AND created_at > '2024-01-02 20:00+00' ORDER BY tenant_id, created_at$$, true),
(8,  $$SELECT tenant_id, created_at FROM %T WHERE tenant_id = 5 AND created_at <= '2024-01-01 10:00+00' ORDER BY created_at DESC$$, true),
(9,  $$SELECT v, k FROM %T WHERE v = 40 AND k > 'k10' ORDER BY k DESC$$, true),
(10, $$SELECT v, k FROM %T WHERE v = 40 AND k <= 'k10' ORDER BY k$$, true),
(11, $$SELECT tenant_id, v FROM %T WHERE tenant_id = 1 AND v BETWEEN 10 AND 30 ORDER BY v NULLS FIRST$$, true),
(12, $$SELECT k, tenant_id, v FROM %T WHERE k = 'k20' AND tenant_id BETWEEN 1 AND 4 AND v > 0 ORDER BY k DESC NULLS LAST, tenant_id, v DESC$$, true),
-- a range on the first column only
(13, $$SELECT id FROM %T WHERE tenant_id BETWEEN 2 AND 4$$, false),
(14, $$SELECT tenant_id, created_at FROM %T WHERE tenant_id > 4 ORDER BY tenant_id, created_at$$, true),
(15, $$SELECT v, k FROM %T WHERE v < -15 ORDER BY v, k DESC$$, true),
(16, $$SELECT v, k FROM %T WHERE v >= 75 ORDER BY v DESC, k$$, true),
(17, $$SELECT k, v FROM %T WHERE k > 'k36' ORDER BY k, v$$, true),
(18, $$SELECT id FROM %T WHERE v BETWEEN 10 AND 20 AND k = 'k10'$$, false),
(19, $$SELECT k, tenant_id, v FROM %T WHERE k < 'k02' ORDER BY k DESC NULLS LAST, tenant_id, v DESC$$, true),
-- conditions on later columns only (a full index scan with index quals)
(20, $$SELECT id FROM %T WHERE created_at = '2024-01-01 07:00+00'$$, false),
(21, $$SELECT tenant_id, created_at FROM %T WHERE created_at > '2024-01-03 10:00+00' ORDER BY tenant_id, created_at$$, true),
(22, $$SELECT k, v FROM %T WHERE v = 55 ORDER BY k, v$$, true),
(23, $$SELECT id FROM %T WHERE created_at IS NULL$$, false),
(24, $$SELECT k, tenant_id, v FROM %T WHERE tenant_id = 6 AND v < 0 ORDER BY k DESC NULLS LAST, tenant_id, v DESC$$, true),
-- IN lists on the first and on later columns
(25, $$SELECT id FROM %T WHERE tenant_id IN (1, 4, 6) AND created_at < '2024-01-01 12:00+00'$$, false),
(26, $$SELECT id FROM %T WHERE tenant_id = 0 AND created_at IN ('2024-01-01 03:00+00', '2024-01-02 01:00+00', '2024-01-03 11:00+00')$$, false),
(27, $$SELECT id FROM %T WHERE v IN (-20, 0, 55, 79, NULL) AND k IN ('k00', 'k13', 'k39', 'k99')$$, false),
(28, $$SELECT k, v FROM %T WHERE k = ANY ('{k01,k05,k33}') ORDER BY k, v$$, true),
(29, $$SELECT id FROM %T WHERE tenant_id IN (2, 3) AND v IN (5, 6, 7, 12)$$, false),
(30, $$SELECT id FROM %T WHERE k IN ('k04', 'k08', 'k24') AND tenant_id IN (0, 3, 5) AND v IN (-4, 16, 36, 56, 76)$$, false),
(31, $$SELECT v, k FROM %T WHERE v = ANY ('{3,33,-3}'::int8[]) ORDER BY v DESC, k$$, true),
-- IS NULL / IS NOT NULL per column
(32, $$SELECT id FROM %T WHERE tenant_id IS NULL$$, false),
(33, $$SELECT id FROM %T WHERE tenant_id IS NULL AND created_at IS NULL$$, false),
(34, $$SELECT id FROM %T WHERE tenant_id = 6 AND created_at IS NULL$$, false),
(35, $$SELECT id FROM %T WHERE tenant_id IS NOT NULL AND created_at IS NULL$$, false),
(36, $$SELECT id FROM %T WHERE v IS NULL AND k IS NOT NULL$$, false),
(37, $$SELECT id FROM %T WHERE k IS NULL AND v > 50$$, false),
(38, $$SELECT count(*), count(created_at), count(tenant_id) FROM %T WHERE created_at IS NOT NULL$$, false),
(39, $$SELECT tenant_id, v FROM %T WHERE tenant_id IS NULL ORDER BY tenant_id DESC NULLS LAST, v NULLS FIRST$$, true),
(40, $$SELECT id FROM %T WHERE k IS NULL AND tenant_id IS NULL AND v IS NOT NULL$$, false),
-- ORDER BY every column in the index's order, its reverse, with LIMIT
(41, $$SELECT tenant_id, created_at FROM %T ORDER BY tenant_id, created_at LIMIT 50$$, true),
(42, $$SELECT tenant_id, created_at FROM %T ORDER BY tenant_id DESC, created_at DESC LIMIT 50$$, true),
(43, $$SELECT v, k FROM %T ORDER BY v, k DESC LIMIT 40$$, true),
(44, $$SELECT v, k FROM %T ORDER BY v DESC, k LIMIT 40$$, true),
(45, $$SELECT tenant_id, v FROM %T ORDER BY tenant_id DESC NULLS LAST, v NULLS FIRST LIMIT 60$$, true),
(46, $$SELECT tenant_id, v FROM %T ORDER BY tenant_id NULLS FIRST, v DESC NULLS LAST LIMIT 300$$, true),
(47, $$SELECT k, tenant_id, v FROM %T ORDER BY k DESC NULLS LAST, tenant_id, v DESC LIMIT 70$$, true),
(48, $$SELECT k, tenant_id, v FROM %T ORDER BY k NULLS FIRST, tenant_id DESC, v LIMIT 400$$, true),
(49, $$SELECT tenant_id, created_at FROM %T ORDER BY tenant_id, created_at LIMIT 20 OFFSET 3900$$, true),
(50, $$SELECT k, v FROM %T ORDER BY k, v$$, true),
(51, $$SELECT k, v FROM %T ORDER BY k DESC, v DESC$$, true),
(52, $$SELECT v, k FROM %T WHERE k IS NOT NULL ORDER BY v DESC, k LIMIT 25 OFFSET 100$$, true),
-- ORDER BY not matching any index: the planner sorts
(53, $$SELECT v, k FROM %T WHERE v BETWEEN 0 AND 5 ORDER BY v, k$$, true),
(54, $$SELECT tenant_id, created_at FROM %T WHERE tenant_id < 3 ORDER BY tenant_id, created_at DESC$$, true),
(55, $$SELECT tenant_id, v FROM %T ORDER BY tenant_id DESC, v LIMIT 30$$, true),
(56, $$SELECT k, created_at FROM %T WHERE k = 'k11' ORDER BY created_at DESC NULLS LAST$$, true),
-- index-only scans returning INCLUDE columns
(57, $$SELECT k, v, payload FROM %T WHERE k = 'k05' AND v < 30$$, false),
(58, $$SELECT k, v, payload FROM %T WHERE k BETWEEN 'k10' AND 'k12' ORDER BY k, v, payload$$, true),
(59, $$SELECT payload FROM %T WHERE k IS NULL$$, false),
(60, $$SELECT count(payload), min(payload), max(payload) FROM %T WHERE k >= 'k30'$$, false),
(61, $$SELECT k, v, payload FROM %T WHERE k = 'k22' AND payload IS NULL$$, false);
-- row comparisons (btree's plans have them as index conditions; in PostgreSQL
-- 15 the planner gives them only to btree, so forein's plans filter; 64,
-- with no order to keep, gets a sequential scan on the forein table)
INSERT INTO mc_q (n, q, ordered) VALUES
(62, $$SELECT tenant_id, created_at FROM %T WHERE (tenant_id, created_at) > (3, '2024-01-02 05:00+00') ORDER BY tenant_id, created_at$$, true),
(63, $$SELECT v, k FROM %T WHERE (v, k) <= (0, 'k20') ORDER BY v, k DESC$$, true),
(64, $$SELECT id FROM %T WHERE (tenant_id, created_at) >= (2, '2024-01-01 10:00+00') AND (tenant_id, created_at) < (4, '2024-01-01 00:00+00')$$, false),
(65, $$SELECT k, v FROM %T WHERE (k, v) > ('k38', 50) ORDER BY k, v$$, true),
(66, $$SELECT tenant_id, v FROM %T WHERE (tenant_id, v) < (5, 10) ORDER BY tenant_id DESC NULLS LAST, v NULLS FIRST$$, true),
(67, $$SELECT k, tenant_id, v FROM %T WHERE (k, tenant_id, v) >= ('k30', 3, 10) ORDER BY k DESC NULLS LAST, tenant_id, v DESC$$, true);
-- bitmap scans, and the planner's choice between index and bitmap scans
INSERT INTO mc_q (n, q, ordered, mode) VALUES
(68, $$SELECT count(*), sum(id) FROM %T WHERE tenant_id = 4 AND created_at < '2024-01-02 00:00+00'$$, false, 'bitmap'),
(69, $$SELECT count(*), sum(id) FROM %T WHERE created_at = '2024-01-02 02:00+00'$$, false, 'bitmap'),
(70, $$SELECT count(*), sum(id) FROM %T WHERE (tenant_id = 1 AND created_at < '2024-01-01 06:00+00') OR v = 3$$, false, 'bitmap'),
(71, $$SELECT count(*), sum(id) FROM %T WHERE k = 'k07' AND v IN (1, 21, 41, 61) AND tenant_id = 2$$, false, 'bitmap'),
(72, $$SELECT count(*), sum(id) FROM %T WHERE tenant_id IS NULL OR k IS NULL$$, false, 'bitmap'),
(73, $$SELECT id FROM %T WHERE tenant_id = 3 AND created_at IS NOT NULL$$, false, 'any'),
(74, $$SELECT id FROM %T WHERE v BETWEEN 50 AND 52 AND k IN ('k30', 'k31', 'k32')$$, false, 'any'),
(75, $$SELECT tenant_id, v FROM %T WHERE tenant_id = 2 ORDER BY v NULLS FIRST LIMIT 5$$, true, 'any');

-- a few plans where only one index fits: both tables' must be the same
-- (index conditions on later columns, no Sort where the index gives the
-- order, index-only scans of INCLUDE columns)
EXPLAIN (COSTS OFF) SELECT tenant_id, created_at FROM mf WHERE tenant_id = 5 AND created_at > '2024-01-02 20:00+00' ORDER BY tenant_id, created_at;
EXPLAIN (COSTS OFF) SELECT tenant_id, created_at FROM mb WHERE tenant_id = 5 AND created_at > '2024-01-02 20:00+00' ORDER BY tenant_id, created_at;
EXPLAIN (COSTS OFF) SELECT v, k FROM mf ORDER BY v DESC, k LIMIT 40;
EXPLAIN (COSTS OFF) SELECT v, k FROM mb ORDER BY v DESC, k LIMIT 40;
EXPLAIN (COSTS OFF) SELECT tenant_id, v FROM mf ORDER BY tenant_id DESC NULLS LAST, v NULLS FIRST LIMIT 60;
EXPLAIN (COSTS OFF) SELECT tenant_id, v FROM mb ORDER BY tenant_id DESC NULLS LAST, v NULLS FIRST LIMIT 60;
EXPLAIN (COSTS OFF) SELECT k, tenant_id, v FROM mf ORDER BY k NULLS FIRST, tenant_id DESC, v LIMIT 400;
EXPLAIN (COSTS OFF) SELECT k, tenant_id, v FROM mb ORDER BY k NULLS FIRST, tenant_id DESC, v LIMIT 400;
EXPLAIN (COSTS OFF) SELECT id FROM mf WHERE created_at = '2024-01-01 07:00+00';
EXPLAIN (COSTS OFF) SELECT id FROM mb WHERE created_at = '2024-01-01 07:00+00';
EXPLAIN (COSTS OFF) SELECT id FROM mf WHERE tenant_id = 0 AND created_at IN ('2024-01-01 03:00+00', '2024-01-02 01:00+00');
EXPLAIN (COSTS OFF) SELECT id FROM mb WHERE tenant_id = 0 AND created_at IN ('2024-01-01 03:00+00', '2024-01-02 01:00+00');
EXPLAIN (COSTS OFF) SELECT id FROM mf WHERE tenant_id = 6 AND created_at IS NULL;
EXPLAIN (COSTS OFF) SELECT id FROM mb WHERE tenant_id = 6 AND created_at IS NULL;
EXPLAIN (COSTS OFF) SELECT v, k FROM mf WHERE v BETWEEN 0 AND 5 ORDER BY v, k;
EXPLAIN (COSTS OFF) SELECT v, k FROM mb WHERE v BETWEEN 0 AND 5 ORDER BY v, k;
EXPLAIN (COSTS OFF) SELECT k, v, payload FROM mf WHERE k = 'k05' AND v < 30;
EXPLAIN (COSTS OFF) SELECT k, v, payload FROM mb WHERE k = 'k05' AND v < 30;
EXPLAIN (COSTS OFF) SELECT count(payload), min(payload), max(payload) FROM mf WHERE k >= 'k30';
EXPLAIN (COSTS OFF) SELECT count(payload), min(payload), max(payload) FROM mb WHERE k >= 'k30';
SET enable_indexscan = off;
SET enable_bitmapscan = on;
EXPLAIN (COSTS OFF) SELECT count(*) FROM mf WHERE tenant_id = 4 AND created_at < '2024-01-02 00:00+00';
EXPLAIN (COSTS OFF) SELECT count(*) FROM mb WHERE tenant_id = 4 AND created_at < '2024-01-02 00:00+00';
RESET enable_indexscan;
SET enable_bitmapscan = off;

-- small answers, shown for both tables
SELECT tenant_id, created_at FROM mf WHERE tenant_id = 5 AND created_at > '2024-01-02 20:00+00' ORDER BY tenant_id, created_at LIMIT 8;
SELECT tenant_id, created_at FROM mb WHERE tenant_id = 5 AND created_at > '2024-01-02 20:00+00' ORDER BY tenant_id, created_at LIMIT 8;
SELECT v, k FROM mf ORDER BY v DESC, k LIMIT 6;
SELECT v, k FROM mb ORDER BY v DESC, k LIMIT 6;
SELECT tenant_id, v FROM mf ORDER BY tenant_id DESC NULLS LAST, v NULLS FIRST LIMIT 4;
SELECT tenant_id, v FROM mb ORDER BY tenant_id DESC NULLS LAST, v NULLS FIRST LIMIT 4;
SELECT tenant_id, v FROM mf ORDER BY tenant_id NULLS FIRST, v DESC NULLS LAST LIMIT 4;
SELECT tenant_id, v FROM mb ORDER BY tenant_id NULLS FIRST, v DESC NULLS LAST LIMIT 4;
SELECT k, tenant_id, v FROM mf ORDER BY k DESC NULLS LAST, tenant_id, v DESC LIMIT 5;
SELECT k, tenant_id, v FROM mb ORDER BY k DESC NULLS LAST, tenant_id, v DESC LIMIT 5;
SELECT k, v, payload FROM mf WHERE k = 'k05' AND v < 0 ORDER BY k, v, payload;
SELECT k, v, payload FROM mb WHERE k = 'k05' AND v < 0 ORDER BY k, v, payload;
SELECT count(*) FROM mf WHERE tenant_id IS NULL AND created_at IS NULL;
SELECT count(*) FROM mb WHERE tenant_id IS NULL AND created_at IS NULL;
SELECT min(tenant_id), max(tenant_id), min(v), max(v) FROM mf;
SELECT min(tenant_id), max(tenant_id), min(v), max(v) FROM mb;

-- every query on both tables
SELECT n, (mc_same(q, ordered, mode)).* FROM mc_q ORDER BY n;

SELECT forein_check('mf_tc', true);
SELECT forein_check('mf_vk', true);
SELECT forein_check('mf_tv', true);
SELECT forein_check('mf_kv', true);
SELECT forein_check('mf_k3', true);

-- identical inserts, deletes and updates on both tables, then VACUUM
INSERT INTO mf SELECT g,
  CASE WHEN g % 5 = 0 THEN NULL ELSE g % 9 END,
  CASE WHEN g % 7 = 0 THEN NULL
       ELSE timestamptz '2024-01-01 00:00+00' + ((g * 11) % 80) * interval '1 hour' END,
  CASE WHEN g % 6 = 0 THEN NULL ELSE 'k' || lpad(((g * 3) % 45)::text, 2, '0') END,
  CASE WHEN g % 8 = 0 THEN NULL ELSE (g * 7) % 120 - 30 END,
  CASE WHEN g % 4 = 0 THEN NULL ELSE 'q' || (g % 50) END
FROM generate_series(4001, 6000) g;
INSERT INTO mb SELECT * FROM mf WHERE id > 4000;
DELETE FROM mf WHERE tenant_id = 2 AND created_at < '2024-01-02 00:00+00';
DELETE FROM mb WHERE tenant_id = 2 AND created_at < '2024-01-02 00:00+00';
DELETE FROM mf WHERE v BETWEEN 60 AND 72 OR k IS NULL AND id % 3 = 0;
DELETE FROM mb WHERE v BETWEEN 60 AND 72 OR k IS NULL AND id % 3 = 0;
UPDATE mf SET created_at = created_at + interval '90 minutes', payload = payload || 'u' WHERE k = 'k03';
UPDATE mb SET created_at = created_at + interval '90 minutes', payload = payload || 'u' WHERE k = 'k03';
UPDATE mf SET tenant_id = NULL, v = -v WHERE id % 10 = 7 AND tenant_id > 4;
UPDATE mb SET tenant_id = NULL, v = -v WHERE id % 10 = 7 AND tenant_id > 4;
SELECT count(*), sum(id), count(tenant_id), count(created_at), count(k), count(v), count(payload) FROM mf;
SELECT count(*), sum(id), count(tenant_id), count(created_at), count(k), count(v), count(payload) FROM mb;
-- before VACUUM: dead entries, index-only scans fetch heap tuples
SELECT n, (mc_same(q, ordered, mode)).* FROM mc_q WHERE n % 4 = 1 ORDER BY n;
VACUUM (ANALYZE) mf;
VACUUM (ANALYZE) mb;
SELECT n, (mc_same(q, ordered, mode)).* FROM mc_q ORDER BY n;
EXPLAIN (COSTS OFF) SELECT k, v, payload FROM mf WHERE k BETWEEN 'k10' AND 'k12' ORDER BY k, v, payload;
EXPLAIN (COSTS OFF) SELECT k, v, payload FROM mb WHERE k BETWEEN 'k10' AND 'k12' ORDER BY k, v, payload;

SELECT forein_check('mf_tc', true);
SELECT forein_check('mf_vk', true);
SELECT forein_check('mf_tv', true);
SELECT forein_check('mf_kv', true);
SELECT forein_check('mf_k3', true);

-- multi-column unique indexes: a violation needs every key column equal and
-- not NULL (INCLUDE columns take no part)
CREATE TABLE uf (tenant_id int4, v int8, note text);
CREATE TABLE ub (tenant_id int4, v int8, note text);
INSERT INTO uf SELECT g % 10, g / 10, 'n' || g FROM generate_series(0, 1999) g;
INSERT INTO ub SELECT * FROM uf;
CREATE UNIQUE INDEX uf_tv ON uf USING forein (tenant_id, v);
CREATE UNIQUE INDEX uf_nt ON uf USING forein (note DESC, tenant_id NULLS FIRST) INCLUDE (v);
CREATE UNIQUE INDEX ub_tv ON ub USING btree (tenant_id, v);
CREATE UNIQUE INDEX ub_nt ON ub USING btree (note DESC, tenant_id NULLS FIRST) INCLUDE (v);
INSERT INTO uf VALUES (3, 150, 'x');
INSERT INTO ub VALUES (3, 150, 'x');
INSERT INTO uf VALUES (3, 200, 'y'), (4, 200, 'z');
INSERT INTO ub VALUES (3, 200, 'y'), (4, 200, 'z');
INSERT INTO uf VALUES (3, 201, 'n17');
INSERT INTO ub VALUES (3, 201, 'n17');
INSERT INTO uf VALUES (7, 201, 'n17');
INSERT INTO ub VALUES (7, 201, 'n17');
-- the same key twice in one statement
INSERT INTO uf VALUES (8, 300, 'a'), (8, 300, 'b');
INSERT INTO ub VALUES (8, 300, 'a'), (8, 300, 'b');
UPDATE uf SET v = v + 1 WHERE tenant_id = 5 AND v = 10;
UPDATE ub SET v = v + 1 WHERE tenant_id = 5 AND v = 10;
UPDATE uf SET tenant_id = 6 WHERE note = 'n5';
UPDATE ub SET tenant_id = 6 WHERE note = 'n5';
-- NULLs never conflict: in either column, in both, in the INCLUDE column
INSERT INTO uf VALUES (1, NULL, 'm1'), (1, NULL, 'm2'), (NULL, 5, 'm3'), (NULL, 5, 'm4'),
  (NULL, NULL, 'm5'), (NULL, NULL, 'm6'), (2, NULL, NULL), (2, NULL, NULL), (9, 900, NULL);
INSERT INTO ub VALUES (1, NULL, 'm1'), (1, NULL, 'm2'), (NULL, 5, 'm3'), (NULL, 5, 'm4'),
  (NULL, NULL, 'm5'), (NULL, NULL, 'm6'), (2, NULL, NULL), (2, NULL, NULL), (9, 900, NULL);
INSERT INTO uf VALUES (9, 901, NULL), (NULL, 902, 'm7'), (NULL, 903, 'm7');
INSERT INTO ub VALUES (9, 901, NULL), (NULL, 902, 'm7'), (NULL, 903, 'm7');
-- a key deleted, or updated away, frees it; a savepoint's rolled-back row
-- does not hold it
DELETE FROM uf WHERE tenant_id = 6 AND v = 100;
DELETE FROM ub WHERE tenant_id = 6 AND v = 100;
INSERT INTO uf VALUES (6, 100, 'again');
INSERT INTO ub VALUES (6, 100, 'again');
UPDATE uf SET v = 5000 WHERE tenant_id = 0 AND v = 0;
UPDATE ub SET v = 5000 WHERE tenant_id = 0 AND v = 0;
BEGIN;
SAVEPOINT s;
INSERT INTO uf VALUES (0, 0, 'rolled back');
ROLLBACK TO s;
INSERT INTO uf VALUES (0, 0, 'kept');
COMMIT;
BEGIN;
SAVEPOINT s;
INSERT INTO ub VALUES (0, 0, 'rolled back');
ROLLBACK TO s;
INSERT INTO ub VALUES (0, 0, 'kept');
COMMIT;
INSERT INTO uf VALUES (0, 0, 'again');
INSERT INTO ub VALUES (0, 0, 'again');
SELECT count(*), count(tenant_id), count(v), count(note) FROM uf;
SELECT count(*), count(tenant_id), count(v), count(note) FROM ub;
SELECT tenant_id, v, note FROM uf WHERE (tenant_id = 1 OR tenant_id IS NULL) AND (v IS NULL OR v = 5) ORDER BY note;
SELECT tenant_id, v, note FROM ub WHERE (tenant_id = 1 OR tenant_id IS NULL) AND (v IS NULL OR v = 5) ORDER BY note;
SELECT note, tenant_id, v FROM uf WHERE note IN ('m7', 'n17', 'kept') ORDER BY note DESC, tenant_id NULLS FIRST;
SELECT note, tenant_id, v FROM ub WHERE note IN ('m7', 'n17', 'kept') ORDER BY note DESC, tenant_id NULLS FIRST;
-- a unique index over existing duplicates (one duplicated key) fails
CREATE TABLE udf (a int4, b text);
INSERT INTO udf SELECT g % 50, 'b' || (g / 50) FROM generate_series(0, 999) g;
INSERT INTO udf VALUES (13, 'b7'), (NULL, 'b1'), (NULL, 'b1'), (13, NULL), (13, NULL);
CREATE UNIQUE INDEX udf_ab ON udf USING forein (a, b);
CREATE UNIQUE INDEX udf_ab ON udf USING btree (a, b);
CREATE UNIQUE INDEX udf_ba ON udf USING forein (b DESC, a DESC);
CREATE UNIQUE INDEX udf_ba ON udf USING btree (b DESC, a DESC);
DELETE FROM udf WHERE a = 13 AND b = 'b7';
CREATE UNIQUE INDEX udf_ab ON udf USING forein (a, b);
SELECT forein_check('udf_ab', true);
SELECT forein_check('uf_tv', true);
SELECT forein_check('uf_nt', true);

DROP TABLE udf;
DROP FUNCTION mc_same(text, boolean, text);
RESET enable_seqscan;
RESET enable_bitmapscan;
RESET TimeZone;
RESET jit;

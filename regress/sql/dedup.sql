--
-- dedup: posting lists.  Runs of identical keys are stored once with their
-- heap TIDs (btree's deduplication), so heavily duplicated columns take
-- about btree's space; deduplicate_items = off, unique indexes and INCLUDE
-- indexes keep one tuple per row.  Answers, VACUUM, TIDs that land inside
-- a posting list's range, and forein_check with heapallindexed.
--
SET enable_seqscan = off;
SET enable_bitmapscan = off;

-- size with 5 distinct values over 20,000 rows: built, and grown by inserts
CREATE TABLE dd (c int4, t text, n numeric);
INSERT INTO dd SELECT g % 5, 'category_' || (g % 5), (g % 5)::numeric
  FROM generate_series(1, 20000) g;
CREATE INDEX dd_c ON dd USING forein (c);
CREATE INDEX dd_c_bt ON dd USING btree (c);
CREATE INDEX dd_t ON dd USING forein (t);
CREATE INDEX dd_t_bt ON dd USING btree (t);
CREATE INDEX dd_c_nodedup ON dd USING forein (c) WITH (deduplicate_items = off);
SELECT pg_relation_size('dd_c') <= 1.1 * pg_relation_size('dd_c_bt') AS int_built_within_10pct,
       pg_relation_size('dd_t') <= 1.1 * pg_relation_size('dd_t_bt') AS text_built_within_10pct,
       pg_relation_size('dd_c_nodedup') > 2 * pg_relation_size('dd_c') AS off_is_larger;

CREATE TABLE di (c int4, t text);
CREATE INDEX di_c ON di USING forein (c);
CREATE INDEX di_c_bt ON di USING btree (c);
CREATE INDEX di_t ON di USING forein (t);
CREATE INDEX di_t_bt ON di USING btree (t);
INSERT INTO di SELECT g % 5, 'category_' || (g % 5) FROM generate_series(1, 20000) g;
SELECT pg_relation_size('di_c') <= 1.1 * pg_relation_size('di_c_bt') AS int_inserted_within_10pct,
       pg_relation_size('di_t') <= 1.1 * pg_relation_size('di_t_bt') AS text_inserted_within_10pct;
-- from here on the scans below must use the forein indexes
DROP INDEX dd_c_bt, dd_t_bt, di_c_bt, di_t_bt;

-- the reloption
SELECT relname, reloptions FROM pg_class WHERE relname = 'dd_c_nodedup';
ALTER INDEX dd_c SET (deduplicate_items = off);
ALTER INDEX dd_c RESET (deduplicate_items);
CREATE INDEX ON dd USING forein (c) WITH (deduplicate_items = maybe);
DROP INDEX dd_c_nodedup;
-- unique and INCLUDE indexes never deduplicate (btree's rule)
CREATE TABLE du (a int4, b int4);
INSERT INTO du SELECT g % 3, g FROM generate_series(1, 3000) g;
CREATE INDEX du_incl ON du USING forein (a) INCLUDE (b);
CREATE INDEX du_plain ON du USING forein (a);
SELECT pg_relation_size('du_incl') > 2 * pg_relation_size('du_plain') AS include_not_deduplicated;

-- answers through posting lists, both directions, index-only
SELECT c, count(*) FROM dd WHERE c BETWEEN 1 AND 3 GROUP BY c ORDER BY c;
SELECT count(*), min(c), max(c) FROM di WHERE c >= 2;
SELECT count(*) FROM dd WHERE t = 'category_4';
BEGIN;
DECLARE cur SCROLL CURSOR FOR SELECT c FROM di WHERE c = 3 ORDER BY c;
MOVE FORWARD 2500 IN cur;
FETCH BACKWARD 2 FROM cur;
FETCH ABSOLUTE 4000 FROM cur;
FETCH FORWARD 1 FROM cur;
COMMIT;
SELECT (array_agg(ctid ORDER BY c DESC, ctid DESC))[1:3] =
       (SELECT (array_agg(ctid ORDER BY ctid DESC))[1:3] FROM di WHERE c = 4) AS backward_tid_order
  FROM di WHERE c = 4;
EXPLAIN (COSTS OFF) SELECT count(*) FROM dd WHERE c = 2;

-- numeric 1.0 and 1.00 are equal keys with different images: not merged
CREATE TABLE dn (n numeric);
INSERT INTO dn SELECT CASE WHEN g % 2 = 0 THEN 1.0 ELSE 1.00 END FROM generate_series(1, 600) g;
CREATE INDEX dn_n ON dn USING forein (n);
INSERT INTO dn SELECT CASE WHEN g % 3 = 0 THEN 1.0 ELSE 1.00 END FROM generate_series(1, 600) g;
SELECT n::text, count(*) FROM dn WHERE n = 1 GROUP BY 1 ORDER BY 1;
SELECT forein_check('dn_n', true);
-- freed heap space: new TIDs of either image land inside posting lists of
-- the other one, which are cut around them
DELETE FROM dn WHERE ctid::text LIKE '%,1_)' OR ctid::text LIKE '%,5_)';
VACUUM dn;
INSERT INTO dn SELECT CASE WHEN g % 5 < 2 THEN 1.0 ELSE 1.00 END FROM generate_series(1, 500) g;
SELECT n::text, count(*) FROM dn WHERE n = 1 GROUP BY 1 ORDER BY 1;
SET enable_indexscan = off; SET enable_seqscan = on;
SELECT n::text, count(*) FROM dn WHERE n = 1 GROUP BY 1 ORDER BY 1;
RESET enable_indexscan; SET enable_seqscan = off;
SELECT forein_check('dn_n', true);

-- VACUUM: posting lists lose some TIDs, some lose all
DELETE FROM di WHERE c = 1 AND ctid::text LIKE '%,1_)';
DELETE FROM di WHERE c = 2;
VACUUM di;
SELECT c, count(*) FROM di GROUP BY c ORDER BY c;
SET enable_indexscan = off; SET enable_seqscan = on;
SELECT c, count(*) FROM di GROUP BY c ORDER BY c;
RESET enable_indexscan; SET enable_seqscan = off;
SELECT forein_check('di_c', true), forein_check('di_t', true);

-- new rows reuse the freed heap space: their TIDs fall inside posting
-- lists' ranges, which take them in (or are cut around a different image)
INSERT INTO di SELECT g % 5, 'category_' || (g % 5) FROM generate_series(1, 3000) g;
SELECT c, count(*) FROM di GROUP BY c ORDER BY c;
SELECT forein_check('di_c', true), forein_check('di_t', true);
SELECT count(*) FROM di WHERE c = 1;
SET enable_indexscan = off; SET enable_seqscan = on;
SELECT count(*) FROM di WHERE c = 1;

RESET enable_seqscan;
RESET enable_bitmapscan;
RESET enable_indexscan;

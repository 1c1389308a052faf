--
-- scans: index-only scans, bitmap scans, scrollable cursors (direction
-- changes inside a scan, across leaf pages and duplicate runs).
--
SET enable_seqscan = off;
SET enable_bitmapscan = off;

-- 200 duplicates of each key 0..99, plus unique keys 1000..10999
CREATE TABLE sc (id serial, k int4, pad text);
INSERT INTO sc (k, pad) SELECT g % 100, 'p' || g FROM generate_series(0, 19999) g;
INSERT INTO sc (k, pad) SELECT g, 'u' || g FROM generate_series(1000, 10999) g;
CREATE INDEX sc_k ON sc USING forein (k);
VACUUM ANALYZE sc;

-- index-only scans
EXPLAIN (COSTS OFF) SELECT k FROM sc WHERE k BETWEEN 1000 AND 1004;
SELECT k FROM sc WHERE k BETWEEN 1000 AND 1004;
EXPLAIN (COSTS OFF) SELECT count(*) FROM sc WHERE k < 50;
SELECT count(*) FROM sc WHERE k < 50;
SELECT k FROM sc WHERE k > 10995 ORDER BY k DESC;
SELECT count(k), sum(k) FROM sc WHERE k >= 0;
-- index-only scan after updates (not all-visible: heap fetches)
UPDATE sc SET pad = pad || 'x' WHERE k = 1002;
SELECT k FROM sc WHERE k BETWEEN 1000 AND 1004;
VACUUM sc;

-- plain index scans returning heap columns
EXPLAIN (COSTS OFF) SELECT k, pad FROM sc WHERE k = 5000;
SELECT k, pad FROM sc WHERE k = 5000;
SELECT k, pad FROM sc WHERE k IN (4000, 4001, 9) AND pad LIKE 'u%' ORDER BY k;

-- bitmap scans
SET enable_indexscan = off;
SET enable_bitmapscan = on;
EXPLAIN (COSTS OFF) SELECT count(*) FROM sc WHERE k = 42;
SELECT count(*) FROM sc WHERE k = 42;
SELECT count(*), sum(k) FROM sc WHERE k < 10;
SELECT count(*), sum(k) FROM sc WHERE k >= 10990;
SELECT count(*) FROM sc WHERE k IS NULL;
EXPLAIN (COSTS OFF) SELECT count(*) FROM sc WHERE k IN (1, 2, 5555);
SELECT count(*) FROM sc WHERE k IN (1, 2, 5555);
EXPLAIN (COSTS OFF) SELECT count(*) FROM sc WHERE k = 3 OR k > 10995;
SELECT count(*) FROM sc WHERE k = 3 OR k > 10995;
SELECT k, pad FROM sc WHERE k BETWEEN 7000 AND 7003 ORDER BY k;
-- BitmapAnd of two forein indexes
CREATE INDEX sc_id ON sc USING forein (id);
EXPLAIN (COSTS OFF) SELECT count(*) FROM sc WHERE k = 7 AND id < 1000;
SELECT count(*) FROM sc WHERE k = 7 AND id < 1000;
DROP INDEX sc_id;
RESET enable_indexscan;
SET enable_bitmapscan = off;

-- scrollable cursors: forward, backward, absolute positioning
BEGIN;
DECLARE c SCROLL CURSOR FOR SELECT k FROM sc WHERE k >= 10990 ORDER BY k;
FETCH 3 FROM c;
FETCH BACKWARD 2 FROM c;
FETCH BACKWARD 2 FROM c;
FETCH FORWARD 4 FROM c;
FETCH LAST FROM c;
FETCH PRIOR FROM c;
FETCH NEXT FROM c;
FETCH NEXT FROM c;
FETCH PRIOR FROM c;
FETCH ABSOLUTE 5 FROM c;
FETCH RELATIVE -2 FROM c;
FETCH FIRST FROM c;
FETCH PRIOR FROM c;
FETCH NEXT FROM c;
CLOSE c;
-- the same through an index-only scan and a descending order
DECLARE c2 SCROLL CURSOR FOR SELECT k FROM sc WHERE k < 1004 AND k > 97 ORDER BY k DESC;
FETCH 3 FROM c2;
FETCH BACKWARD 3 FROM c2;
FETCH ABSOLUTE 4 FROM c2;
FETCH RELATIVE 200 FROM c2;
FETCH RELATIVE 200 FROM c2;
FETCH RELATIVE 200 FROM c2;
FETCH BACKWARD 1 FROM c2;
FETCH LAST FROM c2;
MOVE BACKWARD 199 FROM c2;
FETCH BACKWARD 2 FROM c2;
CLOSE c2;
-- a cursor walking back and forth across a run of 200 duplicates
DECLARE c3 SCROLL CURSOR FOR SELECT k, id FROM sc WHERE k = 50 ORDER BY k;
MOVE FORWARD 150 FROM c3;
FETCH 2 FROM c3;
MOVE FORWARD 100 FROM c3;
FETCH BACKWARD 2 FROM c3;
MOVE BACKWARD 200 FROM c3;
FETCH 1 FROM c3;
MOVE ABSOLUTE 0 FROM c3;
FETCH BACKWARD 1 FROM c3;
CLOSE c3;
COMMIT;

-- an index scan concurrent with inserts into the same pages in its own
-- transaction: the cursor's snapshot does not see them
BEGIN;
DECLARE c4 CURSOR FOR SELECT k FROM sc WHERE k BETWEEN 2000 AND 2010 ORDER BY k;
FETCH 3 FROM c4;
INSERT INTO sc (k, pad) SELECT 2005, 'new' || g FROM generate_series(1, 2000) g;
FETCH ALL FROM c4;
COMMIT;
SELECT count(*) FROM sc WHERE k = 2005;
SELECT forein_check('sc_k', true);

RESET enable_seqscan;
RESET enable_bitmapscan;

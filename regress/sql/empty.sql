--
-- empty: empty and one-row tables, both built that way and emptied.
--
SET enable_seqscan = off;
SET enable_bitmapscan = off;

CREATE TABLE e0 (a int4, t text);
CREATE INDEX e0_a ON e0 USING forein (a);
CREATE INDEX e0_t ON e0 USING forein (t);
SELECT forein_check('e0_a', true);
EXPLAIN (COSTS OFF) SELECT a FROM e0 WHERE a = 1;
SELECT a FROM e0 WHERE a = 1;
SELECT a FROM e0 WHERE a > 0;
SELECT a FROM e0 ORDER BY a LIMIT 1;
SELECT a FROM e0 ORDER BY a DESC LIMIT 1;
SELECT t FROM e0 WHERE t IN ('a', 'b');
SELECT count(*) FROM e0 WHERE a IS NULL;
SELECT min(a), max(a), min(t), max(t) FROM e0;
SET enable_indexscan = off;
SET enable_bitmapscan = on;
SELECT count(*) FROM e0 WHERE a < 10;
RESET enable_indexscan;
SET enable_bitmapscan = off;

-- one row
INSERT INTO e0 VALUES (7, 'seven');
SELECT a FROM e0 WHERE a = 7;
SELECT a FROM e0 WHERE a = 6;
SELECT a FROM e0 WHERE a < 7;
SELECT a FROM e0 WHERE a <= 7;
SELECT a FROM e0 WHERE a > 7;
SELECT a FROM e0 WHERE a >= 7;
SELECT a FROM e0 ORDER BY a LIMIT 5;
SELECT a FROM e0 ORDER BY a DESC LIMIT 5;
SELECT t FROM e0 WHERE t = 'seven';
SELECT t FROM e0 WHERE t > 's' ORDER BY t DESC;
SELECT min(a), max(a), min(t), max(t) FROM e0;
SELECT forein_check('e0_a', true);
SELECT forein_check('e0_t', true);

-- emptied again by DELETE and VACUUM
DELETE FROM e0;
VACUUM e0;
SELECT a FROM e0 WHERE a = 7;
SELECT a FROM e0 ORDER BY a DESC LIMIT 1;
SELECT forein_check('e0_a', true);
INSERT INTO e0 VALUES (8, 'eight');
SELECT a FROM e0 WHERE a >= 7;
SELECT forein_check('e0_a', true);

-- built over a one-row table
CREATE TABLE e1 (a int8);
INSERT INTO e1 VALUES (-1);
CREATE INDEX e1_a ON e1 USING forein (a);
SELECT a FROM e1 WHERE a = -1;
SELECT a FROM e1 WHERE a < 0 ORDER BY a DESC;
SELECT a FROM e1 WHERE a = ANY ('{-1, 1}');
SELECT forein_check('e1_a', true);

-- TRUNCATE empties the index
CREATE TABLE e2 (a int4);
INSERT INTO e2 SELECT generate_series(1, 5000);
CREATE INDEX e2_a ON e2 USING forein (a);
TRUNCATE e2;
SELECT count(*) FROM e2 WHERE a > 0;
INSERT INTO e2 VALUES (3), (1), (2);
SELECT a FROM e2 WHERE a > 0 ORDER BY a;
SELECT forein_check('e2_a', true);

RESET enable_seqscan;
RESET enable_bitmapscan;

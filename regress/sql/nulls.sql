--
-- nulls: NULL keys sort after every other key (ASC NULLS LAST); IS NULL
-- and IS NOT NULL are index quals.
--
SET enable_seqscan = off;
SET enable_bitmapscan = off;

-- many NULLs, enough to fill several leaf pages, mixed with values
CREATE TABLE nn (id serial, a int4);
INSERT INTO nn (a) SELECT CASE WHEN g % 3 = 0 THEN NULL ELSE g END
FROM generate_series(1, 30000) g;
CREATE INDEX nn_a ON nn USING forein (a);
VACUUM ANALYZE nn;

EXPLAIN (COSTS OFF) SELECT count(*) FROM nn WHERE a IS NULL;
SELECT count(*) FROM nn WHERE a IS NULL;
EXPLAIN (COSTS OFF) SELECT count(*) FROM nn WHERE a IS NOT NULL;
SELECT count(*) FROM nn WHERE a IS NOT NULL;
SELECT sum(id) FROM nn WHERE a IS NULL;
SELECT a FROM nn WHERE a IS NOT NULL ORDER BY a DESC LIMIT 3;
SELECT a FROM nn WHERE a IS NOT NULL ORDER BY a LIMIT 3;
SELECT a, id FROM nn ORDER BY a DESC LIMIT 3;
SELECT a FROM nn ORDER BY a LIMIT 3 OFFSET 19998;
SELECT count(*) FROM nn WHERE a IS NULL AND a > 5;
SELECT count(*) FROM nn WHERE a IS NOT NULL AND a > 29990;
SELECT count(*) FROM nn WHERE a IS NULL AND a IS NOT NULL;
SELECT count(*) FROM nn WHERE a > 29995 OR a IS NULL;
SELECT min(a), max(a) FROM nn;

-- an index with nothing but NULLs
CREATE TABLE only_nulls (a int8);
CREATE INDEX only_nulls_a ON only_nulls USING forein (a);
INSERT INTO only_nulls SELECT NULL FROM generate_series(1, 5000);
SELECT count(*) FROM only_nulls WHERE a IS NULL;
SELECT count(*) FROM only_nulls WHERE a IS NOT NULL;
SELECT count(*) FROM only_nulls WHERE a = 1;
SELECT count(*) FROM only_nulls WHERE a < 1;
SELECT a FROM only_nulls ORDER BY a DESC LIMIT 2;
SELECT min(a), max(a) FROM only_nulls;

SELECT forein_check('nn_a', true);
SELECT forein_check('only_nulls_a', true);

RESET enable_seqscan;
RESET enable_bitmapscan;

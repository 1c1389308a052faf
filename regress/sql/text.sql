--
-- text: the database's collation (C here), explicit "C", ICU, and a
-- nondeterministic (case-insensitive) ICU collation.
--
SET enable_seqscan = off;
SET enable_bitmapscan = off;

CREATE TABLE words (w text);
INSERT INTO words
SELECT v FROM (VALUES ('apple'), ('Apple'), ('APPLE'), ('banana'), ('Banana'),
  ('cherry'), (''), (' '), ('a'), ('A'), ('b'), ('B'), ('z'), ('Z'), ('_'),
  ('zz'), ('äpfel'), ('Äpfel'), ('éclair'), ('ångström'), ('中文'), ('1'),
  ('10'), ('2'), (NULL), ('apple')) v(v);
-- many longer keys so the tree has several levels
INSERT INTO words SELECT 'key-' || lpad(g::text, 6, '0') || repeat('x', g % 50)
FROM generate_series(1, 20000) g;
CREATE INDEX words_w ON words USING forein (w);
VACUUM ANALYZE words;

EXPLAIN (COSTS OFF) SELECT w FROM words WHERE w = 'apple';
SELECT w FROM words WHERE w = 'apple';
SELECT w FROM words WHERE w = 'Apple';
SELECT w FROM words WHERE w = '';
SELECT w FROM words WHERE w = 'key-000042' || repeat('x', 42);
SELECT w FROM words WHERE w = 'key-000042';
EXPLAIN (COSTS OFF) SELECT w FROM words WHERE w < 'b' AND w NOT LIKE 'key-%' ORDER BY w;
SELECT w FROM words WHERE w < 'b' AND w NOT LIKE 'key-%' ORDER BY w;
SELECT w FROM words WHERE w <= 'b' AND w NOT LIKE 'key-%' ORDER BY w DESC;
SELECT w FROM words WHERE w > 'key-019998' ORDER BY w;
SELECT w FROM words WHERE w >= 'key-019998xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx' ORDER BY w DESC;
SELECT count(*) FROM words WHERE w BETWEEN 'key-001000' AND 'key-002000';
SELECT count(*) FROM words WHERE w LIKE 'key-0010%';
SELECT w FROM words WHERE w IN ('zz', 'B', 'nope', '', 'apple') ORDER BY w;
SELECT w FROM words WHERE w = ANY (ARRAY['zz', 'B', NULL]) ORDER BY w DESC;
SELECT w FROM words ORDER BY w LIMIT 12;
SELECT w FROM words ORDER BY w DESC LIMIT 12;
SELECT count(*), count(w) FROM words WHERE w IS NOT NULL;
SELECT w IS NULL AS isnull, count(*) FROM words WHERE w IS NULL GROUP BY 1;
SELECT min(w), max(w) FROM words;

-- an index on the column under an explicit "C" collation serves queries
-- that name it; another collation cannot use it for ordering (a Sort
-- appears) but answers the same
CREATE INDEX words_w_c ON words USING forein (w COLLATE "C");
EXPLAIN (COSTS OFF) SELECT w FROM words WHERE w < 'b' COLLATE "C" ORDER BY w COLLATE "C" LIMIT 3;
SELECT w FROM words WHERE w < 'b' COLLATE "C" ORDER BY w COLLATE "C" LIMIT 3;
SELECT w FROM words WHERE w COLLATE "C" >= 'z' ORDER BY w COLLATE "C" DESC;
DROP INDEX words_w_c;
SELECT w FROM words WHERE w NOT LIKE 'key-%' ORDER BY w COLLATE "und-x-icu", w COLLATE "C";

-- an index under an ICU collation orders by it: 'a' < 'A' < 'b' < 'B'
CREATE TABLE words_icu (w text COLLATE "und-x-icu");
INSERT INTO words_icu SELECT w FROM words;
CREATE INDEX words_icu_w ON words_icu USING forein (w);
VACUUM ANALYZE words_icu;
EXPLAIN (COSTS OFF) SELECT w FROM words_icu WHERE w < 'c' AND w NOT LIKE 'key-%' ORDER BY w;
SELECT w FROM words_icu WHERE w < 'c' AND w NOT LIKE 'key-%' ORDER BY w;
SELECT w FROM words_icu WHERE w < 'c' AND w NOT LIKE 'key-%' ORDER BY w DESC;
SELECT w FROM words_icu WHERE w = 'Äpfel';
SELECT w FROM words_icu WHERE w > 'Z' ORDER BY w;
SELECT count(*) FROM words_icu WHERE w BETWEEN 'key-001000' AND 'key-002000';
SELECT w FROM words_icu ORDER BY w LIMIT 12;
SELECT w FROM words_icu ORDER BY w DESC LIMIT 4;
-- the same query under "C" cannot use this index's order
SELECT w FROM words_icu WHERE w COLLATE "C" < 'b' AND w NOT LIKE 'key-%' ORDER BY w COLLATE "C";

-- a case-insensitive nondeterministic collation: equal keys differ in bytes
CREATE COLLATION ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE TABLE words_ci (w text COLLATE ci);
INSERT INTO words_ci SELECT w FROM words WHERE w NOT LIKE 'key-%';
INSERT INTO words_ci SELECT w FROM words WHERE w LIKE 'key-%';
CREATE INDEX words_ci_w ON words_ci USING forein (w);
VACUUM ANALYZE words_ci;
EXPLAIN (COSTS OFF) SELECT w FROM words_ci WHERE w = 'APPLE';
SELECT w FROM words_ci WHERE w = 'APPLE' ORDER BY w COLLATE "C";
SELECT w FROM words_ci WHERE w = 'äPFEL' ORDER BY w COLLATE "C";
SELECT count(*) FROM words_ci WHERE w IN ('A', 'b', 'KEY-000001X');
SELECT count(*) FROM words_ci WHERE w > 'KEY-019990';

SELECT forein_check('words_w', true);
SELECT forein_check('words_icu_w', true);
SELECT forein_check('words_ci_w', true);

-- inserts into a text index with long keys (splits on variable-width keys)
CREATE TABLE long_words (w text);
CREATE INDEX long_words_w ON long_words USING forein (w);
INSERT INTO long_words SELECT repeat(chr(65 + g % 26), 1 + g % 700) || g
FROM generate_series(1, 4000) g ORDER BY md5(g::text);
SELECT count(*) FROM long_words WHERE w > 'M';
SELECT left(w, 10), length(w) FROM long_words WHERE w > 'ZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZ' ORDER BY w DESC LIMIT 5;
SELECT length(w) FROM long_words WHERE w = repeat('Q', 511) || '510';
SELECT forein_check('long_words_w', true);

RESET enable_seqscan;
RESET enable_bitmapscan;

-- A build past maintenance_work_mem (1MB) sorts the keys in batches and
-- merges them; a compressed key moves the build to the general sort.
SET maintenance_work_mem = '1MB';
CREATE TABLE many_words AS
  SELECT md5((g % 20000)::text) AS w FROM generate_series(1, 40000) g;
INSERT INTO many_words VALUES (NULL), (''), ('a'), (repeat('b', 200));
CREATE INDEX many_words_w ON many_words USING forein (w);
SELECT forein_check('many_words_w', true);
SELECT count(*), count(DISTINCT w) FROM many_words WHERE w > '8';
SELECT w FROM many_words WHERE w >= 'fff8' ORDER BY w;
INSERT INTO many_words VALUES (repeat('~', 3000) || 'compressed');
SELECT pg_column_compression(w) IS NOT NULL AS compressed
  FROM many_words WHERE w > 'g';
REINDEX INDEX many_words_w;
SELECT forein_check('many_words_w', true);
SELECT length(w) FROM many_words WHERE w > 'g';
SELECT count(*) FROM many_words WHERE w >= 'ffff';
RESET maintenance_work_mem;
DROP TABLE many_words;

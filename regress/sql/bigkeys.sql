--
-- bigkeys: keys up to the limit (btree's 1/3 of a page, 2,704-byte index
-- tuples), mixed with small ones, through inserts, duplicates, deletes,
-- VACUUM and CREATE INDEX, on one- and two-column indexes with INCLUDE.
-- Pages then hold their two bounds and as few as one item, and some
-- splits cannot take the new entry at all: the page splits without it and
-- the insert retries (forein_insert.c, choose_split).  Seeded, so the
-- same rows every run.
--
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT setseed(0.42);
-- n characters of incompressible text (md5 digests)
CREATE FUNCTION rtxt(n int) RETURNS text LANGUAGE sql AS
$$ SELECT substr(string_agg(md5(random()::text), ''), 1, n) FROM generate_series(1, n / 32 + 1) $$;

CREATE TABLE bk (a int, t text, inc text);
CREATE INDEX bk_t ON bk USING forein (t);
CREATE INDEX bk_at ON bk USING forein (a, t DESC) INCLUDE (inc);
CREATE INDEX bk_ta ON bk USING forein (t, a);
DO $$
BEGIN
  FOR r IN 1..12 LOOP
    INSERT INTO bk SELECT (random() * 20)::int,
      rtxt((ARRAY[5, 100, 900, 1300, 1800, 2000, 2600, 2650, 2660])[1 + floor(random() * 9)::int]),
      CASE WHEN random() < 0.3 THEN rtxt(10) END
    FROM generate_series(1, 150);
    -- duplicates: posting lists next to big keys
    INSERT INTO bk SELECT a, t, inc FROM bk WHERE random() < 0.1 AND length(t) < 200;
    DELETE FROM bk WHERE random() < 0.3;
  END LOOP;
END $$;
VACUUM bk;
INSERT INTO bk SELECT 1, rtxt(2660), NULL FROM generate_series(1, 100);
SELECT forein_check('bk_t', true) AS t, forein_check('bk_at', true) AS at,
       forein_check('bk_ta', true) AS ta;

-- the indexes' answers against the table's, in both directions
CREATE TABLE bk_rows AS SELECT a, t || '' AS t, inc FROM bk;
SELECT (SELECT array_agg(t) FROM (SELECT t FROM bk WHERE t > '' ORDER BY t) i) =
       (SELECT array_agg(t ORDER BY t) FROM bk_rows) AS asc_same;
SELECT (SELECT array_agg(t) FROM (SELECT t FROM bk WHERE t > '' ORDER BY t DESC) i) =
       (SELECT array_agg(t ORDER BY t DESC) FROM bk_rows) AS desc_same;
SELECT (SELECT array_agg(md5(t) || coalesce(inc, '-'))
          FROM (SELECT t, inc FROM bk WHERE a = 7 ORDER BY a, t DESC) i) =
       (SELECT array_agg(md5(t) || coalesce(inc, '-') ORDER BY t DESC) FROM bk_rows WHERE a = 7)
  AS prefix_same;
SELECT (SELECT count(*) FROM bk WHERE t BETWEEN '4' AND '9') =
       (SELECT count(*) FROM bk_rows WHERE t BETWEEN '4' AND '9') AS range_same;
SELECT count(*) > 0 AS some_rows, max(length(t)) AS longest FROM bk_rows;

-- CREATE INDEX over the same rows builds pages of as few items
CREATE INDEX bk_t2 ON bk USING forein (t);
CREATE INDEX bk_at2 ON bk USING forein (a, t DESC) INCLUDE (inc);
SELECT forein_check('bk_t2', true) AS t2, forein_check('bk_at2', true) AS at2;
DROP INDEX bk_t, bk_at, bk_ta;
SELECT (SELECT array_agg(t) FROM (SELECT t FROM bk WHERE t > '' ORDER BY t DESC) i) =
       (SELECT array_agg(t ORDER BY t DESC) FROM bk_rows) AS built_desc_same;

-- exactly at the limit: 2,692 characters + 4-byte header + 8-byte tuple
-- header = 2,704 bytes; one more character is refused
CREATE TABLE bk_limit (t text);
CREATE INDEX bk_limit_t ON bk_limit USING forein (t);
INSERT INTO bk_limit SELECT rtxt(2692) FROM generate_series(1, 20);
SELECT count(*), min(length(t)), max(length(t)) FROM bk_limit WHERE t > '';
SELECT forein_check('bk_limit_t', true);
INSERT INTO bk_limit VALUES (rtxt(2693));
DROP TABLE bk, bk_rows, bk_limit;
DROP FUNCTION rtxt(int);

--
-- integer: int2, int4 and int8 keys, every operator, the cross-type
-- operators of the integer family, ordering in both directions.
--
SET enable_seqscan = off;
SET enable_bitmapscan = off;

-- i2: -500..499, 20 duplicates each; i4: unique -9999..10000; i8: unique,
-- crossing zero; plus the extremes of each type and two NULL rows.
CREATE TABLE ints (id serial, i2 int2, i4 int4, i8 int8);
INSERT INTO ints (i2, i4, i8)
SELECT (g % 1000 - 500)::int2, g - 10000, g::int8 * 1000000000 - 5000000000000
FROM generate_series(1, 20000) g;
INSERT INTO ints (i2, i4, i8) VALUES
  (32767, 2147483647, 9223372036854775807),
  (-32768, -2147483648, -9223372036854775808),
  (NULL, NULL, NULL), (NULL, NULL, NULL);
CREATE INDEX ints_i2 ON ints USING forein (i2);
CREATE INDEX ints_i4 ON ints USING forein (i4);
CREATE INDEX ints_i8 ON ints USING forein (i8);
VACUUM ANALYZE ints;

-- int4, each strategy
EXPLAIN (COSTS OFF) SELECT i4 FROM ints WHERE i4 = 42;
SELECT i4 FROM ints WHERE i4 = 42;
SELECT i4 FROM ints WHERE i4 = 10001;
EXPLAIN (COSTS OFF) SELECT id, i4 FROM ints WHERE i4 < -9995;
SELECT id, i4 FROM ints WHERE i4 < -9995;
SELECT i4 FROM ints WHERE i4 <= -9995;
SELECT i4 FROM ints WHERE i4 > 9996;
SELECT i4 FROM ints WHERE i4 >= 9996;
SELECT count(*), sum(i4) FROM ints WHERE i4 < 0;
SELECT count(*), sum(i4) FROM ints WHERE i4 >= 0;
SELECT count(*), sum(i4) FROM ints WHERE i4 > -50 AND i4 <= 50;
SELECT count(*) FROM ints WHERE i4 IS NOT NULL;
SELECT count(*) FROM ints WHERE i4 IS NULL;
EXPLAIN (COSTS OFF) SELECT i4 FROM ints WHERE i4 BETWEEN 100 AND 105 ORDER BY i4 DESC;
SELECT i4 FROM ints WHERE i4 BETWEEN 100 AND 105 ORDER BY i4 DESC;
SELECT i4 FROM ints WHERE i4 BETWEEN 105 AND 100;
SELECT i4 FROM ints WHERE i4 BETWEEN SYMMETRIC 105 AND 103;
-- contradictory and redundant quals
SELECT i4 FROM ints WHERE i4 > 5 AND i4 < 3;
SELECT i4 FROM ints WHERE i4 = 5 AND i4 = 6;
SELECT i4 FROM ints WHERE i4 = 5 AND i4 >= 5 AND i4 <= 5;
SELECT i4 FROM ints WHERE i4 > 0 AND i4 > 9997 AND i4 < 100000 AND i4 <= 9999;
SELECT i4 FROM ints WHERE i4 = NULL;
SELECT i4 FROM ints WHERE i4 < NULL;

-- extremes
SELECT i4 FROM ints WHERE i4 = 2147483647;
SELECT i4 FROM ints WHERE i4 = -2147483648;
SELECT i4 FROM ints WHERE i4 < -9998 ORDER BY i4;
SELECT i4 FROM ints WHERE i4 > 9999 ORDER BY i4 DESC;

-- int2 with duplicates spanning leaf pages
EXPLAIN (COSTS OFF) SELECT count(*) FROM ints WHERE i2 = 7;
SELECT count(*) FROM ints WHERE i2 = 7;
SELECT count(*), sum(i2) FROM ints WHERE i2 < -490;
SELECT count(*), sum(i2) FROM ints WHERE i2 <= -490;
SELECT count(*), sum(i2) FROM ints WHERE i2 > 490;
SELECT count(*), sum(i2) FROM ints WHERE i2 >= 490;
SELECT i2, count(*) FROM ints WHERE i2 >= 497 GROUP BY i2 ORDER BY i2;
SELECT i2 FROM ints WHERE i2 IN (-32768, 32767, 0) ORDER BY i2;
SELECT i2 FROM ints WHERE i2 > 498 ORDER BY i2 DESC LIMIT 25;

-- int8
SELECT i8 FROM ints WHERE i8 = 42000000000;
SELECT i8 FROM ints WHERE i8 = 9223372036854775807;
SELECT i8 FROM ints WHERE i8 = -9223372036854775808;
SELECT i8 FROM ints WHERE i8 < -4997000000000 ORDER BY i8;
SELECT i8 FROM ints WHERE i8 >= 14998000000000 ORDER BY i8 DESC;
SELECT count(*), sum(i8) FROM ints WHERE i8 > 0;
SELECT count(*), sum(i8) FROM ints WHERE i8 <= 0;
SELECT count(*) FROM ints WHERE i8 BETWEEN -1000000000 AND 1000000000;

-- cross-type: int4 column, int8 and int2 values (and the other way round)
EXPLAIN (COSTS OFF) SELECT i4 FROM ints WHERE i4 = 5::int8;
SELECT i4 FROM ints WHERE i4 = 5::int8;
EXPLAIN (COSTS OFF) SELECT i4 FROM ints WHERE i4 = 5::int2;
SELECT i4 FROM ints WHERE i4 = 5::int2;
SELECT count(*) FROM ints WHERE i4 < 3000000000;
SELECT count(*) FROM ints WHERE i4 > -3000000000;
SELECT count(*) FROM ints WHERE i4 >= 3000000000;
SELECT count(*) FROM ints WHERE i4 <= -3000000000;
SELECT count(*) FROM ints WHERE i4 = 4294967338;
SELECT i4 FROM ints WHERE i4 > 9990::int2 AND i4 < 9995::int8;
SELECT i4 FROM ints WHERE i4 >= 100 AND i4 >= 9996::int8 AND i4 < 9998::int2 ORDER BY i4 DESC;
EXPLAIN (COSTS OFF) SELECT count(*) FROM ints WHERE i2 = 7::int8;
SELECT count(*) FROM ints WHERE i2 = 7::int8;
SELECT count(*) FROM ints WHERE i2 = 7::int4;
SELECT count(*) FROM ints WHERE i2 < 100000;
SELECT count(*) FROM ints WHERE i2 > -100000;
SELECT count(*) FROM ints WHERE i2 > 40000;
SELECT count(*) FROM ints WHERE i2 < -40000::int8;
SELECT count(*) FROM ints WHERE i2 = 65543;
EXPLAIN (COSTS OFF) SELECT count(*) FROM ints WHERE i8 < 100::int2;
SELECT count(*) FROM ints WHERE i8 < 100::int2;
SELECT count(*) FROM ints WHERE i8 >= -1::int4 AND i8 <= 2147483647::int4;
SELECT i8 FROM ints WHERE i8 = 0::int4;
SELECT i8 FROM ints WHERE i8 = 2000000000::int4;

-- parameters of either width reach the index
PREPARE p4(int4) AS SELECT i4 FROM ints WHERE i4 = $1;
PREPARE p8(int8) AS SELECT i4 FROM ints WHERE i4 = $1;
EXPLAIN (COSTS OFF) EXECUTE p8(7);
EXECUTE p4(7);
EXECUTE p8(7);
EXECUTE p8(7000000000);
EXECUTE p8(NULL);
DEALLOCATE p4;
DEALLOCATE p8;

-- IN and = ANY: an index condition (amsearcharray); the scan visits the
-- sorted distinct elements in scan order (bitmap scans too, see scans.sql)
EXPLAIN (COSTS OFF) SELECT i4 FROM ints WHERE i4 IN (30, 10, 20, 20, 99999) ORDER BY i4;
SELECT i4 FROM ints WHERE i4 IN (30, 10, 20, 20, 99999) ORDER BY i4;
SELECT i4 FROM ints WHERE i4 IN (30, 10, 20, 20, 99999) ORDER BY i4 DESC;
SELECT i4 FROM ints WHERE i4 = ANY ('{5, NULL, -5}'::int8[]) ORDER BY i4;
SELECT i4 FROM ints WHERE i4 = ANY ('{}'::int4[]);
SELECT i4 FROM ints WHERE i4 = ANY (NULL::int4[]);
SELECT i4 FROM ints WHERE i4 = ANY ('{1, 2, 3}') AND i4 > 1 ORDER BY i4;
SELECT count(*) FROM ints WHERE i4 < ANY ('{-9990, -9995}');
SELECT count(*) FROM ints WHERE i4 > ALL ('{9990, 9995}');
SELECT count(*) FROM ints WHERE i2 IN (1, 2, 3);
SELECT count(*) FROM ints WHERE i8 IN (1000000000, 3000000000, -1);
SELECT i4 FROM ints WHERE i4 = ANY ('{7, 8}') AND i4 = ANY ('{8, 9}');
BEGIN;
DECLARE ca SCROLL CURSOR FOR SELECT i4 FROM ints WHERE i4 IN (30, 10, 20, -7) ORDER BY i4;
FETCH 2 FROM ca;
FETCH BACKWARD 1 FROM ca;
FETCH LAST FROM ca;
FETCH BACKWARD 2 FROM ca;
FETCH ABSOLUTE 3 FROM ca;
COMMIT;

-- ORDER BY ... LIMIT, both directions (NULLs last ascending, first descending)
EXPLAIN (COSTS OFF) SELECT i4 FROM ints ORDER BY i4 LIMIT 3;
SELECT i4 FROM ints ORDER BY i4 LIMIT 3;
EXPLAIN (COSTS OFF) SELECT i4 FROM ints ORDER BY i4 DESC LIMIT 4;
SELECT i4 FROM ints ORDER BY i4 DESC LIMIT 4;
SELECT i4 FROM ints ORDER BY i4 NULLS FIRST LIMIT 3;
SELECT i4 FROM ints ORDER BY i4 DESC NULLS LAST LIMIT 3;
SELECT i4 FROM ints WHERE i4 < 0 ORDER BY i4 DESC LIMIT 3;
SELECT i4 FROM ints WHERE i4 > 0 ORDER BY i4 LIMIT 3;
SELECT i4 FROM ints WHERE i4 >= 5000 ORDER BY i4 DESC LIMIT 3 OFFSET 5000;
SELECT i8 FROM ints ORDER BY i8 LIMIT 2;
SELECT i8 FROM ints ORDER BY i8 DESC LIMIT 3;
SELECT i2 FROM ints ORDER BY i2 LIMIT 3;
SELECT i2 FROM ints ORDER BY i2 DESC LIMIT 3;

-- min/max come from the index ends
EXPLAIN (COSTS OFF) SELECT min(i4), max(i4) FROM ints;
SELECT min(i2), max(i2), min(i4), max(i4), min(i8), max(i8) FROM ints;

-- the whole index in order equals the sorted heap
SELECT count(*) FROM (SELECT i4, lag(i4) OVER () AS prev FROM (SELECT i4 FROM ints ORDER BY i4) s) t
WHERE prev > i4;
SELECT sum(i4), count(i4), count(*) FROM (SELECT i4 FROM ints ORDER BY i4) s;
SELECT sum(i4), count(i4), count(*) FROM (SELECT i4 FROM ints ORDER BY i4 DESC) s;

-- an index built empty and filled by inserts (page splits), keys inserted
-- in a scrambled order
CREATE TABLE ints_ins (i4 int4, i8 int8);
CREATE INDEX ints_ins_i4 ON ints_ins USING forein (i4);
CREATE INDEX ints_ins_i8 ON ints_ins USING forein (i8);
INSERT INTO ints_ins SELECT g, g FROM generate_series(1, 30000) g ORDER BY md5(g::text);
INSERT INTO ints_ins SELECT g % 10, NULL FROM generate_series(1, 3000) g;
VACUUM ANALYZE ints_ins;
SELECT count(*), sum(i4) FROM ints_ins WHERE i4 > 29000;
SELECT count(*) FROM ints_ins WHERE i4 = 3;
SELECT i4 FROM ints_ins WHERE i4 BETWEEN 14998 AND 15002 ORDER BY i4;
SELECT i4 FROM ints_ins WHERE i4 BETWEEN 14998 AND 15002 ORDER BY i4 DESC;
SELECT i4 FROM ints_ins ORDER BY i4 DESC LIMIT 3;
SELECT count(*) FROM ints_ins WHERE i8 IS NULL;
SELECT i8 FROM ints_ins WHERE i8 < 4::int2 ORDER BY i8 DESC;
SELECT forein_check('ints_ins_i4');
SELECT forein_check('ints_ins_i8', true);
SELECT forein_check('ints_i2', true);
SELECT forein_check('ints_i4', true);
SELECT forein_check('ints_i8', true);

RESET enable_seqscan;
RESET enable_bitmapscan;

--
-- uuid keys
--
SET enable_seqscan = off;
SET enable_bitmapscan = off;

CREATE TABLE ids (u uuid);
INSERT INTO ids SELECT md5(g::text)::uuid FROM generate_series(1, 20000) g;
INSERT INTO ids VALUES ('00000000-0000-0000-0000-000000000000'),
  ('ffffffff-ffff-ffff-ffff-ffffffffffff'), ('7fffffff-ffff-ffff-ffff-ffffffffffff'),
  ('80000000-0000-0000-0000-000000000000'), (NULL),
  (md5('17')::uuid), (md5('17')::uuid);
CREATE INDEX ids_u ON ids USING forein (u);
VACUUM ANALYZE ids;

EXPLAIN (COSTS OFF) SELECT u FROM ids WHERE u = md5('17')::uuid;
SELECT u FROM ids WHERE u = md5('17')::uuid;
SELECT u FROM ids WHERE u = '00000000-0000-0000-0000-000000000000';
SELECT u FROM ids WHERE u = 'ffffffff-ffff-ffff-ffff-ffffffffffff';
SELECT u FROM ids WHERE u = '12345678-1234-1234-1234-123456789abc';
SELECT u FROM ids WHERE u < '00100000-0000-0000-0000-000000000000' ORDER BY u;
SELECT u FROM ids WHERE u >= 'ffe00000-0000-0000-0000-000000000000' ORDER BY u DESC;
SELECT u FROM ids WHERE u > '7ffff000-0000-0000-0000-000000000000'
  AND u <= '80000000-0000-0000-0000-000000000000' ORDER BY u;
SELECT count(*) FROM ids WHERE u < '80000000-0000-0000-0000-000000000000';
SELECT count(*) FROM ids WHERE u >= '80000000-0000-0000-0000-000000000000';
SELECT u FROM ids WHERE u IN (md5('1')::uuid, md5('2')::uuid, md5('3')::uuid) ORDER BY u;
SELECT u FROM ids ORDER BY u LIMIT 3;
SELECT u FROM ids ORDER BY u DESC LIMIT 3;
SELECT forein_check('ids_u', true);

RESET enable_seqscan;
RESET enable_bitmapscan;

-- A build past maintenance_work_mem (1MB: about 43,000 keys) sorts the keys
-- in batches and merges them.
SET maintenance_work_mem = '1MB';
CREATE TABLE many_ids AS
  SELECT md5((g % 60000)::text)::uuid AS u FROM generate_series(1, 120000) g;
INSERT INTO many_ids VALUES (NULL);
CREATE INDEX many_ids_u ON many_ids USING forein (u);
SELECT forein_check('many_ids_u', true);
SELECT count(*), count(DISTINCT u) FROM many_ids
  WHERE u > '80000000-0000-0000-0000-000000000000';
SELECT u FROM many_ids WHERE u >= 'fffc0000-0000-0000-0000-000000000000' ORDER BY u;
SELECT count(*) FROM many_ids WHERE u IS NULL;
\set VERBOSITY terse
CREATE UNIQUE INDEX many_ids_uniq ON many_ids USING forein (u);
\set VERBOSITY default
DELETE FROM many_ids WHERE ctid IN
  (SELECT min(ctid) FROM many_ids GROUP BY u HAVING count(*) > 1);
CREATE UNIQUE INDEX many_ids_uniq ON many_ids USING forein (u);
SELECT forein_check('many_ids_uniq', true);
RESET maintenance_work_mem;
DROP TABLE many_ids;

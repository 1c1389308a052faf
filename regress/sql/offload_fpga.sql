--
-- offload_fpga: an index whose hints come from the fpga backend
-- (Honeycomb's interior-node cache: the root in on-chip SRAM, other
-- interior nodes in 8 KB slots of 4 GB on-board DRAM, four-way set
-- associative; leaves never cached).  Capacity and usage are in cache
-- bytes.  forein_refresh installs synchronously; hints may only change
-- speed, so every answer is compared with a btree's over the same rows.
--
CREATE TABLE fp (k int8);
-- 200,000 keys, a run of duplicates, NULLs; leaves filled to 10% give
-- three levels, so the level below the root is cached in DRAM
INSERT INTO fp SELECT g * 3 FROM generate_series(1, 200000) g;
INSERT INTO fp SELECT 300000 FROM generate_series(1, 500);
INSERT INTO fp SELECT NULL FROM generate_series(1, 20);
CREATE INDEX fp_f ON fp USING forein (k) WITH (offload = 'fpga', fillfactor = 10);
CREATE TABLE fp_b AS SELECT * FROM fp;
CREATE INDEX fp_b_k ON fp_b USING btree (k);
VACUUM ANALYZE fp;
VACUUM ANALYZE fp_b;
SET enable_seqscan = off;
SET enable_bitmapscan = off;

SELECT reloptions FROM pg_class WHERE relname = 'fp_f';

-- forein_refresh installs synchronously; installed in cache bytes: 8 KB
-- for each DRAM-cached node (the root, in SRAM, takes none)
SELECT forein_refresh('fp_f') > 0 AS installed;
SELECT backend, installed_entries > 0 AS has_entries,
       installed_entries <= capacity_entries AS fits,
       installed_entries % 8192 = 0 AS whole_slots,
       status
FROM forein_stats('fp_f');
-- the image lists the root (in SRAM) and the DRAM-cached nodes, interior
-- nodes only
SELECT count(*) >= 2 AS root_and_dram,
       (count(*) - 1) * 8192 = (SELECT installed_entries FROM forein_stats('fp_f')) AS dram_is_installed,
       bool_and(node > 0 AND level >= 1) AS interior_only,
       count(*) FILTER (WHERE level = (SELECT max(level) FROM forein_offload_entries('fp_f'))) = 1 AS one_root
FROM forein_offload_entries('fp_f');

-- forein_offload_usage: SRAM root, DRAM bytes, slots, chunks, ways
SELECT device, resource, unit, used <= capacity AS fits, used > 0 AS used_some
FROM forein_offload_usage('fp_f') ORDER BY resource;
SELECT u.used = s.installed_entries AS used_is_installed,
       u.capacity = s.capacity_entries AS capacity_is_stats
FROM forein_offload_usage('fp_f') u, forein_stats('fp_f') s
WHERE u.resource = 'on-board DRAM: interior-node cache';

-- point lookups through a nested loop: one descent each, hinted
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SELECT lookups AS l0, hint_hits AS h0 FROM forein_stats('fp_f') \gset
SELECT (SELECT count(*) || ' ' || sum(fp.k) FROM generate_series(1, 3000) s(x) JOIN fp ON fp.k = s.x * 199) =
       (SELECT count(*) || ' ' || sum(fp_b.k) FROM generate_series(1, 3000) s(x) JOIN fp_b ON fp_b.k = s.x * 199)
       AS join_same;
SELECT lookups - :l0 >= 3000 AS counted, hint_hits - :h0 > 0 AS hinted
FROM forein_stats('fp_f');
RESET enable_hashjoin;
RESET enable_mergejoin;

-- the same answers as btree: points, ranges, IN lists, ORDER BY, NULLs
SELECT k FROM fp WHERE k = 3;
SELECT k FROM fp WHERE k = 600000;
SELECT k FROM fp WHERE k = 4;
SELECT array(SELECT k FROM fp WHERE k = 300000) = array(SELECT k FROM fp_b WHERE k = 300000) AS dup_same;
SELECT array(SELECT k FROM fp WHERE k BETWEEN 123456 AND 125000 ORDER BY k) =
       array(SELECT k FROM fp_b WHERE k BETWEEN 123456 AND 125000 ORDER BY k) AS range_same;
SELECT array(SELECT k FROM fp WHERE k > 599000 ORDER BY k DESC) =
       array(SELECT k FROM fp_b WHERE k > 599000 ORDER BY k DESC) AS desc_same;
SELECT array(SELECT k FROM fp WHERE k IN (-1, 0, 3, 299997, 300000, 300003, 599999, 600000, 600003) ORDER BY k) =
       array(SELECT k FROM fp_b WHERE k IN (-1, 0, 3, 299997, 300000, 300003, 599999, 600000, 600003) ORDER BY k)
       AS in_same;
SELECT (SELECT count(*) FROM fp WHERE k IS NULL) = (SELECT count(*) FROM fp_b WHERE k IS NULL) AS nulls_same;
SELECT forein_check('fp_f');

-- stale hints: inserts split leaves under the installed image, deletes and
-- VACUUM empty pages; answers stay right, then a refresh installs again
INSERT INTO fp SELECT g * 3 + 1 FROM generate_series(1, 40000) g;
INSERT INTO fp_b SELECT g * 3 + 1 FROM generate_series(1, 40000) g;
DELETE FROM fp WHERE k BETWEEN 30000 AND 90000;
DELETE FROM fp_b WHERE k BETWEEN 30000 AND 90000;
VACUUM fp;
VACUUM fp_b;
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SELECT (SELECT count(*) || ' ' || sum(fp.k) FROM generate_series(1, 3000) s(x) JOIN fp ON fp.k = s.x * 67) =
       (SELECT count(*) || ' ' || sum(fp_b.k) FROM generate_series(1, 3000) s(x) JOIN fp_b ON fp_b.k = s.x * 67)
       AS stale_join_same;
SELECT array(SELECT k FROM fp WHERE k BETWEEN 29000 AND 91000 ORDER BY k) =
       array(SELECT k FROM fp_b WHERE k BETWEEN 29000 AND 91000 ORDER BY k) AS stale_range_same;
SELECT forein_refresh('fp_f') > 0 AS reinstalled;
SELECT hint_hits AS h1 FROM forein_stats('fp_f') \gset
SELECT (SELECT count(*) || ' ' || sum(fp.k) FROM generate_series(1, 3000) s(x) JOIN fp ON fp.k = s.x * 67) =
       (SELECT count(*) || ' ' || sum(fp_b.k) FROM generate_series(1, 3000) s(x) JOIN fp_b ON fp_b.k = s.x * 67)
       AS fresh_join_same;
SELECT hint_hits - :h1 > 0 AS hinted_again FROM forein_stats('fp_f');
RESET enable_hashjoin;
RESET enable_mergejoin;

-- random hints: the same answers, bad hints counted as fallbacks
SET forein.debug_random_hints = on;
SELECT fallbacks AS f0 FROM forein_stats('fp_f') \gset
SELECT array(SELECT k FROM fp WHERE k BETWEEN 100000 AND 101000 ORDER BY k) =
       array(SELECT k FROM fp_b WHERE k BETWEEN 100000 AND 101000 ORDER BY k) AS random_range_same;
SELECT fallbacks > :f0 AS fell_back FROM forein_stats('fp_f');
RESET forein.debug_random_hints;

-- switching an index between backends: the unit follows the backend
ALTER INDEX fp_f SET (offload = 'switch_lpm');
SELECT backend FROM forein_stats('fp_f');
ALTER INDEX fp_f SET (offload = 'fpga');
SELECT backend FROM forein_stats('fp_f');
SELECT forein_refresh('fp_f') > 0 AS installed;

RESET enable_seqscan;
RESET enable_bitmapscan;
DROP TABLE fp;
DROP TABLE fp_b;

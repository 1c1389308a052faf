--
-- offload_dpa: an index whose hints come from the dpa backend (DPA-Store's
-- learned index in a BlueField-3's DPA memory: PLA-model index leaves over
-- the tree's leaf boundaries and 7-segment inner nodes above them, placed
-- in 1 GiB of DPA memory by COPY and CONNECT stitches).  Capacity and usage
-- are in DPA bytes.  forein_refresh installs synchronously; hints may only
-- change speed, so every answer is compared with a btree's over the same
-- rows.
--
CREATE TABLE dp (k int8);
-- 200,000 keys, a run of duplicates, NULLs; leaves filled to 10%: some
-- thousands of leaves, so the learned index has index leaves and a root
INSERT INTO dp SELECT g * 3 FROM generate_series(1, 200000) g;
INSERT INTO dp SELECT 300000 FROM generate_series(1, 500);
INSERT INTO dp SELECT NULL FROM generate_series(1, 20);
CREATE INDEX dp_f ON dp USING forein (k) WITH (offload = 'dpa', fillfactor = 10);
CREATE TABLE dp_b AS SELECT * FROM dp;
CREATE INDEX dp_b_k ON dp_b USING btree (k);
VACUUM ANALYZE dp;
VACUUM ANALYZE dp_b;
SET enable_seqscan = off;
SET enable_bitmapscan = off;

SELECT reloptions FROM pg_class WHERE relname = 'dp_f';

-- forein_refresh installs synchronously; installed in DPA bytes: 64 per
-- node's metadata line, 16 per boundary (index leaves) or pivot and child
-- (inner nodes), 64 per inner segment's model line
SELECT forein_refresh('dp_f') > 0 AS installed;
SELECT backend, installed_entries > 0 AS has_entries,
       installed_entries <= capacity_entries AS fits,
       capacity_entries = 1073741824 AS one_gib,
       installed_entries % 16 = 0 AS whole_lines,
       status
FROM forein_stats('dp_f');
-- the image lists every leaf boundary (its leaf's node, level 0) and the
-- inner nodes (no node of the tree)
SELECT count(*) FILTER (WHERE node > 0) > 1000 AS boundaries,
       bool_and(level = 0) AS leaf_level,
       count(*) FILTER (WHERE node = 0) >= 1 AS inner_nodes,
       count(DISTINCT node) FILTER (WHERE node > 0) = count(*) FILTER (WHERE node > 0) AS one_per_leaf
FROM forein_offload_entries('dp_f');

-- forein_offload_usage: DPA memory by node kind, the index's shape
SELECT device, resource, unit, used <= capacity OR capacity = 0 AS fits, used > 0 AS used_some
FROM forein_offload_usage('dp_f') ORDER BY resource;
SELECT u.used = s.installed_entries AS used_is_installed,
       u.capacity = s.capacity_entries AS capacity_is_stats
FROM forein_offload_usage('dp_f') u, forein_stats('dp_f') s
WHERE u.resource = 'DPA memory: index nodes';
SELECT used AS depth FROM forein_offload_usage('dp_f') WHERE resource = 'learned index: depth';

-- point lookups through a nested loop: one descent each, hinted
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SELECT lookups AS l0, hint_hits AS h0 FROM forein_stats('dp_f') \gset
SELECT (SELECT count(*) || ' ' || sum(dp.k) FROM generate_series(1, 3000) s(x) JOIN dp ON dp.k = s.x * 199) =
       (SELECT count(*) || ' ' || sum(dp_b.k) FROM generate_series(1, 3000) s(x) JOIN dp_b ON dp_b.k = s.x * 199)
       AS join_same;
SELECT lookups - :l0 >= 3000 AS counted, hint_hits - :h0 > 0 AS hinted
FROM forein_stats('dp_f');
RESET enable_hashjoin;
RESET enable_mergejoin;

-- the same answers as btree: points, ranges, IN lists, ORDER BY, NULLs
SELECT k FROM dp WHERE k = 3;
SELECT k FROM dp WHERE k = 600000;
SELECT k FROM dp WHERE k = 4;
SELECT array(SELECT k FROM dp WHERE k = 300000) = array(SELECT k FROM dp_b WHERE k = 300000) AS dup_same;
SELECT array(SELECT k FROM dp WHERE k BETWEEN 123456 AND 125000 ORDER BY k) =
       array(SELECT k FROM dp_b WHERE k BETWEEN 123456 AND 125000 ORDER BY k) AS range_same;
SELECT array(SELECT k FROM dp WHERE k > 599000 ORDER BY k DESC) =
       array(SELECT k FROM dp_b WHERE k > 599000 ORDER BY k DESC) AS desc_same;
SELECT array(SELECT k FROM dp WHERE k IN (-1, 0, 3, 299997, 300000, 300003, 599999, 600000, 600003) ORDER BY k) =
       array(SELECT k FROM dp_b WHERE k IN (-1, 0, 3, 299997, 300000, 300003, 599999, 600000, 600003) ORDER BY k)
       AS in_same;
SELECT (SELECT count(*) FROM dp WHERE k IS NULL) = (SELECT count(*) FROM dp_b WHERE k IS NULL) AS nulls_same;
SELECT forein_check('dp_f');

-- stale hints: inserts split leaves under the installed image, deletes and
-- VACUUM empty pages; answers stay right, then a refresh installs again
INSERT INTO dp SELECT g * 3 + 1 FROM generate_series(1, 40000) g;
INSERT INTO dp_b SELECT g * 3 + 1 FROM generate_series(1, 40000) g;
DELETE FROM dp WHERE k BETWEEN 30000 AND 90000;
DELETE FROM dp_b WHERE k BETWEEN 30000 AND 90000;
VACUUM dp;
VACUUM dp_b;
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SELECT (SELECT count(*) || ' ' || sum(dp.k) FROM generate_series(1, 3000) s(x) JOIN dp ON dp.k = s.x * 67) =
       (SELECT count(*) || ' ' || sum(dp_b.k) FROM generate_series(1, 3000) s(x) JOIN dp_b ON dp_b.k = s.x * 67)
       AS stale_join_same;
SELECT array(SELECT k FROM dp WHERE k BETWEEN 29000 AND 91000 ORDER BY k) =
       array(SELECT k FROM dp_b WHERE k BETWEEN 29000 AND 91000 ORDER BY k) AS stale_range_same;
SELECT forein_refresh('dp_f') > 0 AS reinstalled;
SELECT hint_hits AS h1 FROM forein_stats('dp_f') \gset
SELECT (SELECT count(*) || ' ' || sum(dp.k) FROM generate_series(1, 3000) s(x) JOIN dp ON dp.k = s.x * 67) =
       (SELECT count(*) || ' ' || sum(dp_b.k) FROM generate_series(1, 3000) s(x) JOIN dp_b ON dp_b.k = s.x * 67)
       AS fresh_join_same;
SELECT hint_hits - :h1 > 0 AS hinted_again FROM forein_stats('dp_f');
RESET enable_hashjoin;
RESET enable_mergejoin;

-- random hints: the same answers, bad hints counted as fallbacks
SET forein.debug_random_hints = on;
SELECT fallbacks AS f0 FROM forein_stats('dp_f') \gset
SELECT array(SELECT k FROM dp WHERE k BETWEEN 100000 AND 101000 ORDER BY k) =
       array(SELECT k FROM dp_b WHERE k BETWEEN 100000 AND 101000 ORDER BY k) AS random_range_same;
SELECT fallbacks > :f0 AS fell_back FROM forein_stats('dp_f');
RESET forein.debug_random_hints;

-- switching an index between backends: the unit follows the backend
ALTER INDEX dp_f SET (offload = 'fpga');
SELECT backend FROM forein_stats('dp_f');
ALTER INDEX dp_f SET (offload = 'dpa');
SELECT backend FROM forein_stats('dp_f');
SELECT forein_refresh('dp_f') > 0 AS installed;

RESET enable_seqscan;
RESET enable_bitmapscan;
DROP TABLE dp;
DROP TABLE dp_b;

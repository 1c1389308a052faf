--
-- offload_fattree: an index whose hints come from the fattree backend
-- (Fat-B+Tree: a fat root of TCAM ranges in the core switch, 16-branch node
-- sets in the switches below it; capacity in in-switch nodes, 21,504 by
-- default, not forein.lpm_entries).  forein_refresh installs synchronously;
-- hints may only change speed, so every answer is compared with a btree's
-- over the same rows.
--
CREATE TABLE ft (k int8);
-- 200,000 keys, a run of duplicates, NULLs; leaves filled to 10% give
-- three levels and more leaves (~5,300) than the fat root has ranges, so
-- the plan fills the fat root and a node set below it
INSERT INTO ft SELECT g * 3 FROM generate_series(1, 200000) g;
INSERT INTO ft SELECT 300000 FROM generate_series(1, 500);
INSERT INTO ft SELECT NULL FROM generate_series(1, 20);
CREATE INDEX ft_f ON ft USING forein (k) WITH (offload = 'fattree', fillfactor = 10);
CREATE TABLE ft_b AS SELECT * FROM ft;
CREATE INDEX ft_b_k ON ft_b USING btree (k);
VACUUM ANALYZE ft;
VACUUM ANALYZE ft_b;
SET enable_seqscan = off;
SET enable_bitmapscan = off;

-- the reloption names the backend; lpm_entries does not apply to it
SELECT reloptions FROM pg_class WHERE relname = 'ft_f';
SELECT pg_relation_size('ft_f') / 8192 > 1024 AS more_leaves_than_ranges;

-- forein_refresh installs synchronously: no waiting for the worker
SELECT forein_refresh('ft_f') > 0 AS installed;
SELECT backend, capacity_entries, installed_entries > 0 AS has_entries,
       installed_entries <= capacity_entries AS fits,
       lookups >= 0 AND hint_hits >= 0 AND move_rights >= 0 AND fallbacks >= 0 AS counters_ok,
       status
FROM forein_stats('ft_f');
-- the image lists fat-root ranges and in-switch nodes, one record each,
-- naming leaves and inner nodes
SELECT count(*) = (SELECT installed_entries FROM forein_stats('ft_f')) AS entries_listed,
       bool_and(node > 0 AND level >= 0) AS entries_sane,
       max(level) >= 1 AS inner_levels
FROM forein_offload_entries('ft_f');

-- forein_offload_usage: one row per switch and table (the parts'
-- capacities are the backend's model figures, checked in tests/offload)
SELECT device, resource, unit, used <= capacity AS fits
FROM forein_offload_usage('ft_f') ORDER BY device, resource;
SELECT u.used = (SELECT count(*) FROM forein_offload_entries('ft_f')) AS used_is_entries,
       u.used = s.installed_entries AS used_is_installed,
       u.capacity = s.capacity_entries AS capacity_is_stats,
       u.capacity = 21504 AS default_capacity
FROM forein_offload_usage('ft_f') u, forein_stats('ft_f') s
WHERE u.device = 'all switches';
SELECT device, resource, used > 0 AS used_some
FROM forein_offload_usage('ft_f') WHERE resource IN ('fat root', 'node set 1');
-- all switches = fat-root ranges + the nodes of the five node sets
SELECT sum(used) FILTER (WHERE resource = 'fat root') +
       sum(used) FILTER (WHERE resource ~ '^node set [0-9]+$') =
       sum(used) FILTER (WHERE device = 'all switches') AS parts_add_up,
       bool_and(used > 0) FILTER (WHERE unit = 'stages' AND device ~ 'core') AS core_stages_used
FROM forein_offload_usage('ft_f');

-- point lookups through a nested loop: one descent each, hinted
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SELECT lookups AS l0, hint_hits AS h0 FROM forein_stats('ft_f') \gset
EXPLAIN (COSTS OFF)
SELECT count(*) FROM generate_series(1, 3000) s(x) JOIN ft ON ft.k = s.x * 199;
SELECT (SELECT count(*) || ' ' || sum(ft.k) FROM generate_series(1, 3000) s(x) JOIN ft ON ft.k = s.x * 199) =
       (SELECT count(*) || ' ' || sum(ft_b.k) FROM generate_series(1, 3000) s(x) JOIN ft_b ON ft_b.k = s.x * 199)
       AS join_same;
SELECT lookups - :l0 >= 3000 AS counted, hint_hits - :h0 > 0 AS hinted
FROM forein_stats('ft_f');
RESET enable_hashjoin;
RESET enable_mergejoin;

-- the same answers as btree: points, ranges, IN lists, ORDER BY, NULLs
EXPLAIN (COSTS OFF) SELECT k FROM ft WHERE k > 599000 ORDER BY k DESC LIMIT 5;
SELECT k FROM ft WHERE k = 3;
SELECT k FROM ft WHERE k = 600000;
SELECT k FROM ft WHERE k = 4;
SELECT count(*) FROM ft WHERE k = 300000;
SELECT array(SELECT k FROM ft WHERE k = 300000) = array(SELECT k FROM ft_b WHERE k = 300000) AS dup_same;
SELECT array(SELECT k FROM ft WHERE k BETWEEN 123456 AND 125000 ORDER BY k) =
       array(SELECT k FROM ft_b WHERE k BETWEEN 123456 AND 125000 ORDER BY k) AS range_same;
SELECT array(SELECT k FROM ft WHERE k > 599000 ORDER BY k DESC) =
       array(SELECT k FROM ft_b WHERE k > 599000 ORDER BY k DESC) AS desc_same;
SELECT array(SELECT k FROM ft WHERE k < 100 ORDER BY k) =
       array(SELECT k FROM ft_b WHERE k < 100 ORDER BY k) AS low_same;
SELECT array(SELECT k FROM ft WHERE k IN (-1, 0, 3, 299997, 300000, 300003, 599999, 600000, 600003) ORDER BY k) =
       array(SELECT k FROM ft_b WHERE k IN (-1, 0, 3, 299997, 300000, 300003, 599999, 600000, 600003) ORDER BY k)
       AS in_same;
SELECT array(SELECT k FROM ft WHERE k = ANY (array(SELECT g * 1009 FROM generate_series(1, 500) g)) ORDER BY k) =
       array(SELECT k FROM ft_b WHERE k = ANY (array(SELECT g * 1009 FROM generate_series(1, 500) g)) ORDER BY k)
       AS any_same;
SELECT array(SELECT k FROM ft WHERE k >= 299990 ORDER BY k LIMIT 600) =
       array(SELECT k FROM ft_b WHERE k >= 299990 ORDER BY k LIMIT 600) AS limit_same;
SELECT (SELECT count(*) FROM ft WHERE k IS NULL) = (SELECT count(*) FROM ft_b WHERE k IS NULL) AS nulls_same,
       (SELECT count(*) FROM ft WHERE k IS NOT NULL) = (SELECT count(*) FROM ft_b WHERE k IS NOT NULL) AS not_nulls_same;
SELECT array(SELECT k FROM ft ORDER BY k DESC NULLS FIRST LIMIT 25) =
       array(SELECT k FROM ft_b ORDER BY k DESC NULLS FIRST LIMIT 25) AS nulls_first_same;
SELECT (SELECT min(k) FROM ft) = (SELECT min(k) FROM ft_b) AS min_same,
       (SELECT max(k) FROM ft) = (SELECT max(k) FROM ft_b) AS max_same;
SELECT forein_check('ft_f');

-- stale hints: inserts split leaves under the installed image, deletes and
-- VACUUM empty pages; answers stay right without a refresh, then a refresh
-- installs again
INSERT INTO ft SELECT g * 3 + 1 FROM generate_series(1, 40000) g;
INSERT INTO ft_b SELECT g * 3 + 1 FROM generate_series(1, 40000) g;
DELETE FROM ft WHERE k BETWEEN 30000 AND 90000;
DELETE FROM ft_b WHERE k BETWEEN 30000 AND 90000;
VACUUM ft;
VACUUM ft_b;
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SELECT (SELECT count(*) || ' ' || sum(ft.k) FROM generate_series(1, 3000) s(x) JOIN ft ON ft.k = s.x * 67) =
       (SELECT count(*) || ' ' || sum(ft_b.k) FROM generate_series(1, 3000) s(x) JOIN ft_b ON ft_b.k = s.x * 67)
       AS stale_join_same;
SELECT array(SELECT k FROM ft WHERE k BETWEEN 29000 AND 91000 ORDER BY k) =
       array(SELECT k FROM ft_b WHERE k BETWEEN 29000 AND 91000 ORDER BY k) AS stale_range_same;
SELECT forein_refresh('ft_f') > 0 AS reinstalled;
SELECT hint_hits AS h1 FROM forein_stats('ft_f') \gset
SELECT (SELECT count(*) || ' ' || sum(ft.k) FROM generate_series(1, 3000) s(x) JOIN ft ON ft.k = s.x * 67) =
       (SELECT count(*) || ' ' || sum(ft_b.k) FROM generate_series(1, 3000) s(x) JOIN ft_b ON ft_b.k = s.x * 67)
       AS fresh_join_same;
SELECT hint_hits - :h1 > 0 AS hinted_again FROM forein_stats('ft_f');
RESET enable_hashjoin;
RESET enable_mergejoin;

-- random hints: the same answers, bad hints counted as fallbacks
SET forein.debug_random_hints = on;
SELECT fallbacks AS f0 FROM forein_stats('ft_f') \gset
SELECT array(SELECT k FROM ft WHERE k BETWEEN 100000 AND 101000 ORDER BY k) =
       array(SELECT k FROM ft_b WHERE k BETWEEN 100000 AND 101000 ORDER BY k) AS random_range_same;
SELECT (SELECT count(*) FROM generate_series(1, 2000) s(x) JOIN ft ON ft.k = s.x * 251) =
       (SELECT count(*) FROM generate_series(1, 2000) s(x) JOIN ft_b ON ft_b.k = s.x * 251) AS random_join_same;
SELECT fallbacks > :f0 AS fell_back FROM forein_stats('ft_f');
RESET forein.debug_random_hints;

-- switching an index between backends: capacity follows the backend
ALTER INDEX ft_f SET (offload = 'switch_lpm');
SELECT backend, capacity_entries FROM forein_stats('ft_f');
ALTER INDEX ft_f SET (offload = 'fattree', lpm_entries = 1000);
SELECT backend, capacity_entries FROM forein_stats('ft_f');
SELECT forein_refresh('ft_f') > 0 AS installed;
SELECT capacity FROM forein_offload_usage('ft_f') WHERE device = 'all switches';

RESET enable_seqscan;
RESET enable_bitmapscan;
DROP TABLE ft;
DROP TABLE ft_b;

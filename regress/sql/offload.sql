--
-- offload: GUCs, the offload SQL functions, and hints that never change
-- answers.  (The server runs with shared_preload_libraries = 'forein'.)
--
SELECT name, setting, unit, context FROM pg_settings WHERE name LIKE 'forein.%' ORDER BY name;

CREATE TABLE off (a int4);
INSERT INTO off SELECT generate_series(1, 50000);
CREATE INDEX off_a ON off USING forein (a) WITH (offload = 'switch_lpm');
CREATE TABLE off_n AS SELECT * FROM off;
CREATE INDEX off_none ON off_n USING forein (a) WITH (offload = 'none');
VACUUM ANALYZE off;
VACUUM ANALYZE off_n;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SET enable_indexonlyscan = off;

-- forein_refresh installs entries synchronously; the table then lists them
SELECT forein_refresh('off_a') > 0 AS installed;
SELECT backend, lookups >= 0 AS lookups_ok, capacity_entries > 0 AS has_capacity,
       installed_entries <= capacity_entries AS fits,
       installed_nodes <= installed_entries AS nodes_le_entries
FROM forein_stats('off_a');
SELECT count(*) = (SELECT installed_entries FROM forein_stats('off_a')) AS entries_listed
FROM forein_offload_entries('off_a');
SELECT bool_and(prefix_len BETWEEN 0 AND 64 AND level >= 0 AND node > 0) AS entries_sane
FROM forein_offload_entries('off_a');
-- prefix_hex (0.5): prefix as 16 hex digits and prefix_len, CIDR style
SELECT pg_get_function_arguments('forein_offload_entries(regclass)'::regprocedure) AS arguments;
SELECT bool_and(prefix_hex ~ '^0x[0-9a-f]{16}/[0-9]+$'
                AND split_part(prefix_hex, '/', 2)::int = prefix_len
                AND ('x' || substr(prefix_hex, 3, 16))::bit(64)::int8::numeric
                    + CASE WHEN substr(prefix_hex, 3, 1) ~ '[89a-f]' THEN 18446744073709551616 ELSE 0 END
                    = prefix) AS prefix_hex_is_prefix
FROM forein_offload_entries('off_a');
SELECT backend, installed_entries, status FROM forein_stats('off_none');
SELECT status FROM forein_stats('off_a');
-- an index cannot ask for more entries than the server reserved per slot
CREATE INDEX off_big ON off USING forein (a) WITH (lpm_entries = 100000);
ALTER INDEX off_a SET (lpm_entries = 100000);
\set VERBOSITY terse
ALTER INDEX off_a SET (offload = 'honeycomb');
\set VERBOSITY default
-- the same under the capacity's generic name
CREATE INDEX off_big ON off USING forein (a) WITH (offload_capacity = 100000);
SELECT forein_refresh('off_none');

-- lookups are counted
SELECT lookups AS l0 FROM forein_stats('off_a') \gset
SELECT a FROM off WHERE a = 17;
SELECT a FROM off WHERE a = 40000;
SELECT a FROM off WHERE a = 49999;
SELECT lookups - :l0 >= 3 AS counted, hint_hits > 0 AS hinted FROM forein_stats('off_a');

-- random hints: the same answers, and the bad ones are counted as fallbacks
SET forein.debug_random_hints = on;
SELECT fallbacks AS f0 FROM forein_stats('off_a') \gset
SELECT a FROM off WHERE a = 17;
SELECT count(*), sum(a) FROM off WHERE a > 25000;
SELECT a FROM off WHERE a < 40010 AND a > 39990 ORDER BY a DESC;
SELECT count(*) FROM generate_series(1, 2000) s(x) JOIN off ON off.a = s.x * 25;
SELECT fallbacks > :f0 AS fell_back FROM forein_stats('off_a');
RESET forein.debug_random_hints;

-- counts belong to the index: one created after a DROP starts from zero,
-- though this backend counted for the dropped one (and likely its slot)
DROP INDEX off_a;
CREATE INDEX off_a2 ON off USING forein (a);
SELECT lookups, hint_hits, fallbacks FROM forein_stats('off_a2');
SELECT a FROM off WHERE a = 17;
SELECT a FROM off WHERE a = 40000;
SELECT lookups FROM forein_stats('off_a2');

-- errors
CREATE TABLE off_b (a int4);
CREATE INDEX off_b_btree ON off_b USING btree (a);
SELECT * FROM forein_stats('off_b_btree');
SELECT forein_refresh('off_b_btree');
SELECT * FROM forein_offload_entries('off');
SET forein.lpm_entries = -1;
SET forein.offload_capacity = 1000;
SET forein.sample_rate = 2;

RESET enable_seqscan;
RESET enable_bitmapscan;
RESET enable_indexonlyscan;

--
-- explain: EXPLAIN (ANALYZE) shows each forein index scan's hint counters
-- for that execution (lookups = leaf descents, hits, move-rights,
-- fallbacks): a "Hints:" line after the node's details in text, "Hint ..."
-- properties after "Index Name" in JSON/YAML/XML.  They are the events
-- forein_stats counts, so their sum over a statement's scans is the
-- forein_stats delta.  This cluster preloads forein (run-pg-regress.sh).
--
CREATE TABLE ex (k int4, v text);
INSERT INTO ex SELECT g, 'v' || g FROM generate_series(1, 10000) g;
-- a name that needs quoting: the text output quotes it
CREATE INDEX "Ex Idx" ON ex USING forein (k) WITH (offload = 'none');
CREATE TABLE ex_b (k int4);
INSERT INTO ex_b SELECT g FROM generate_series(1, 100) g;
CREATE INDEX ex_b_k ON ex_b USING btree (k);
VACUUM ANALYZE ex;
VACUUM ANALYZE ex_b;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SET enable_hashjoin = off;
SET enable_mergejoin = off;

-- the per-node counters as rows, from the JSON output (nested plans too)
CREATE FUNCTION explain_hints(q text)
RETURNS TABLE (node text, index_name text, loops int8, lookups int8,
               hits int8, move_rights int8, fallbacks int8)
LANGUAGE plpgsql AS $$
DECLARE
    plan json;
BEGIN
    EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, FORMAT JSON) ' || q
        INTO plan;
    RETURN QUERY
    WITH RECURSIVE n(p) AS (
        SELECT plan -> 0 -> 'Plan'
        UNION ALL
        SELECT c FROM n, json_array_elements(n.p -> 'Plans') c
    )
    SELECT p ->> 'Node Type', p ->> 'Index Name', (p ->> 'Actual Loops')::int8,
           (p ->> 'Hint Lookups')::int8, (p ->> 'Hint Hits')::int8,
           (p ->> 'Hint Move Rights')::int8, (p ->> 'Hint Fallbacks')::int8
    FROM n WHERE p ->> 'Index Name' IS NOT NULL;
END
$$;

-- offload = 'none': every descent starts at the root, one per probe
SELECT lookups AS l0, hint_hits AS h0 FROM forein_stats('"Ex Idx"') \gset
SELECT idx_scan AS s0 FROM pg_stat_user_indexes WHERE indexrelname = 'Ex Idx' \gset
-- a point lookup (Index Scan)
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT * FROM ex WHERE k = 42;
-- a range (Index Only Scan): one descent, then the leaves' right links
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT k FROM ex WHERE k BETWEEN 1000 AND 3000;
-- backward, from the top: a descent to the rightmost leaf
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT k FROM ex ORDER BY k DESC LIMIT 2;
-- a nested loop: one descent per probe (totals over the node's loops); the
-- btree index scan of the same plan gets no line
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT count(*) FROM ex_b JOIN ex ON ex.k = ex_b.k * 7 WHERE ex_b.k <= 50;
-- an InitPlan under the node: the line comes before it
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT v FROM ex WHERE k = (SELECT max(k) FROM ex WHERE k < 100);
-- a bitmap scan: one descent per array element
SET enable_bitmapscan = on;
SET enable_indexscan = off;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT count(*) FROM ex WHERE k IN (5, 500, 5000);
-- a BitmapOr of two scans of the index: a line each
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT count(*) FROM ex WHERE k < 3 OR k > 9998;
-- a scan that never ran gets no line
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT count(*) FROM ex_b JOIN ex ON ex.k = ex_b.k WHERE ex_b.k < 0;
RESET enable_indexscan;
SET enable_bitmapscan = off;
-- EXPLAIN EXECUTE too
PREPARE ex_p(int4) AS SELECT v FROM ex WHERE k = $1;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) EXECUTE ex_p(77);
DEALLOCATE ex_p;
-- the scans above made exactly the descents shown: 1+1+1+50+2+3+2+1
SELECT lookups - :l0 AS lookups, hint_hits - :h0 AS hits FROM forein_stats('"Ex Idx"');
-- idx_scan counts as before: one per scan start (a loop of the nested
-- loop, an element of the IN list)
SELECT pg_stat_force_next_flush();
SELECT idx_scan - :s0 AS idx_scans FROM pg_stat_user_indexes WHERE indexrelname = 'Ex Idx';

-- YAML and XML carry the same counters after "Index Name"
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, FORMAT YAML)
SELECT * FROM ex WHERE k = 42;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, FORMAT XML)
SELECT * FROM ex WHERE k = 42;
-- JSON, read back: both scans of a self-join, each with its own counters
SELECT * FROM explain_hints('SELECT count(*) FROM ex a JOIN ex b ON b.k = a.k + 1 WHERE a.k <= 20')
ORDER BY loops;

-- only with ANALYZE, and not with forein.explain_hints off
EXPLAIN (COSTS OFF) SELECT * FROM ex WHERE k = 42;
SET forein.explain_hints = off;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT * FROM ex WHERE k = 42;
RESET forein.explain_hints;
-- a failed EXPLAIN leaves the next one intact
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT * FROM ex WHERE k = 1 / (k - k);
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT * FROM ex WHERE k = 43;

-- hints installed synchronously (forein_refresh): point probes start from
-- validated hints; the counters shown add up to the forein_stats delta
CREATE TABLE exh (k int8);
INSERT INTO exh SELECT g * 3 FROM generate_series(1, 100000) g;
CREATE INDEX exh_f ON exh USING forein (k) WITH (offload = 'switch_lpm', fillfactor = 10);
VACUUM ANALYZE exh;
SELECT forein_refresh('exh_f') > 0 AS installed;
SELECT lookups AS l0, hint_hits AS h0, move_rights AS m0, fallbacks AS f0
FROM forein_stats('exh_f') \gset
CREATE TEMP TABLE shown AS
SELECT * FROM explain_hints('SELECT count(*) FROM generate_series(1, 1000) s(x) JOIN exh ON exh.k = s.x * 199');
INSERT INTO shown
SELECT * FROM explain_hints('SELECT * FROM exh WHERE k = 300');
SELECT node, index_name, loops, lookups,
       hits > 0 AS hinted, hits + fallbacks <= lookups AS hits_le_lookups
FROM shown ORDER BY loops;
SELECT s.lookups - :l0 = t.lookups AS lookups_match,
       s.hint_hits - :h0 = t.hits AS hits_match,
       s.move_rights - :m0 = t.move_rights AS move_rights_match,
       s.fallbacks - :f0 = t.fallbacks AS fallbacks_match
FROM forein_stats('exh_f') s,
     (SELECT sum(lookups) AS lookups, sum(hits) AS hits,
             sum(move_rights) AS move_rights, sum(fallbacks) AS fallbacks
      FROM shown) t;

RESET enable_seqscan;
RESET enable_bitmapscan;
RESET enable_hashjoin;
RESET enable_mergejoin;
DROP TABLE shown;
DROP FUNCTION explain_hints(text);
DROP TABLE ex, ex_b, exh;

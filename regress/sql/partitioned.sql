--
-- partitioned: CREATE INDEX ... USING forein on a partitioned table makes
-- a forein index on every partition (also on partitions added or attached
-- later); the planner scans the partitions' indexes (pruned, or merged in
-- order).  forein_check given the partitioned index checks every
-- partition's index; forein_stats, forein_refresh, forein_offload_entries
-- and forein_offload_usage report on one index with storage and refuse a
-- partitioned one, naming its partitions' indexes.
--
CREATE TABLE fp (k int4, t text) PARTITION BY RANGE (k);
CREATE TABLE fp1 PARTITION OF fp FOR VALUES FROM (0) TO (10000);
CREATE TABLE fp2 PARTITION OF fp FOR VALUES FROM (10000) TO (20000);
-- a sub-partitioned partition: its own partitioned index, leaves below
CREATE TABLE fp3 PARTITION OF fp FOR VALUES FROM (20000) TO (40000)
  PARTITION BY RANGE (k);
CREATE TABLE fp3a PARTITION OF fp3 FOR VALUES FROM (20000) TO (30000);
CREATE TABLE fp3b PARTITION OF fp3 FOR VALUES FROM (30000) TO (40000);
INSERT INTO fp SELECT g, 't' || (g % 100) FROM generate_series(0, 39999, 2) g;
CREATE INDEX fp_k ON fp USING forein (k);
CREATE INDEX fp_t ON fp USING forein (t, k);
-- PostgreSQL 15 makes unique indexes on partitioned tables only with btree
CREATE UNIQUE INDEX fp_uk ON fp USING forein (k);
-- a partition created afterwards gets the indexes too
CREATE TABLE fp4 PARTITION OF fp FOR VALUES FROM (40000) TO (50000);
-- an attached table's matching forein index becomes the partition's index
CREATE TABLE fp5 (k int4, t text);
CREATE INDEX fp5_own_k ON fp5 USING forein (k);
ALTER TABLE fp ATTACH PARTITION fp5 FOR VALUES FROM (50000) TO (60000);
INSERT INTO fp SELECT g, 't' || (g % 100) FROM generate_series(40000, 59999, 2) g;
ANALYZE fp;

SELECT c.relname, c.relkind, a.amname, i.inhparent::regclass AS parent
FROM pg_class c
JOIN pg_am a ON a.oid = c.relam
LEFT JOIN pg_inherits i ON i.inhrelid = c.oid
WHERE c.relname ~ '^fp[0-9a-z]*_(own_)?(k|t_k|uk|t)(_idx)?[0-9]*$'
ORDER BY c.relname;

-- plans over the partitioned table use the partitions' forein indexes
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT k, t FROM fp WHERE k BETWEEN 10000 AND 10010;
SELECT k, t FROM fp WHERE k BETWEEN 10000 AND 10010;
EXPLAIN (COSTS OFF) SELECT k FROM fp WHERE k > 9990 ORDER BY k LIMIT 8;
SELECT k FROM fp WHERE k > 9990 ORDER BY k LIMIT 8;
EXPLAIN (COSTS OFF) SELECT count(*) FROM fp WHERE t = 't42';
SELECT count(*) FROM fp WHERE t = 't42';
SELECT k FROM fp WHERE k >= 29996 ORDER BY k DESC LIMIT 5 OFFSET 10000;
-- answers equal a sequential scan's
SELECT (SELECT count(*) FROM fp WHERE k % 7 = 0 AND k >= 0) AS by_index,
       (SELECT count(*) FROM fp WHERE k % 7 = 0) AS total;
RESET enable_seqscan;
RESET enable_bitmapscan;
-- but a partition's own unique forein index holds for rows routed through
-- the parent
CREATE UNIQUE INDEX fp2_uk ON fp2 USING forein (k);
INSERT INTO fp VALUES (10002, 'dup');
INSERT INTO fp VALUES (10003, 'new');

-- forein_check: every partition's index, also below fp3's partitioned one
SELECT forein_check('fp_k', true), forein_check('fp_t', true),
       forein_check('fp2_uk'), forein_check('fp3_k_idx', true);

-- each partition's index is checked as if named: with its own table's
-- privileges (SELECT on the parent alone is not enough)
CREATE ROLE regress_forein_part;
GRANT SELECT ON fp TO regress_forein_part;
GRANT EXECUTE ON FUNCTION forein_check(regclass, boolean) TO regress_forein_part;
SET ROLE regress_forein_part;
SELECT forein_check('fp_k');
RESET ROLE;
GRANT SELECT ON fp1, fp2, fp3a, fp3b, fp4, fp5 TO regress_forein_part;
SET ROLE regress_forein_part;
SELECT forein_check('fp_k');
RESET ROLE;
REVOKE ALL ON fp, fp1, fp2, fp3a, fp3b, fp4, fp5 FROM regress_forein_part;
REVOKE EXECUTE ON FUNCTION forein_check(regclass, boolean) FROM regress_forein_part;
DROP ROLE regress_forein_part;

-- the functions that report on one index refuse a partitioned one
SELECT * FROM forein_stats('fp_k');
SELECT forein_refresh('fp_k');
SELECT * FROM forein_offload_entries('fp3_k_idx');
SELECT * FROM forein_offload_usage('fp_t');
-- and answer for each partition's index, as the hint says
SELECT t.relid, t.level, s.lookups >= 0 AS has_stats
FROM pg_partition_tree('fp_k') t, LATERAL forein_stats(t.relid) s
WHERE t.isleaf
ORDER BY t.relid::text;

-- a partitioned index without partitions
CREATE TABLE fp_empty (k int4) PARTITION BY LIST (k);
CREATE INDEX fp_empty_k ON fp_empty USING forein (k);
SELECT * FROM forein_stats('fp_empty_k');
SELECT forein_check('fp_empty_k');

DROP TABLE fp, fp_empty;

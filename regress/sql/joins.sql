--
-- joins: merge joins over ordered index scans (mark/restore with
-- duplicates on both sides), nested loops probing the index.
--
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SET enable_hashjoin = off;
SET enable_sort = off;

CREATE TABLE lhs (k int4, v int4);
CREATE TABLE rhs (k int8, w int4);
INSERT INTO lhs SELECT g % 500, g FROM generate_series(1, 5000) g;
INSERT INTO rhs SELECT g % 700, g FROM generate_series(1, 7000) g;
INSERT INTO lhs VALUES (NULL, -1), (NULL, -2);
INSERT INTO rhs VALUES (NULL, -1);
CREATE INDEX lhs_k ON lhs USING forein (k);
CREATE INDEX rhs_k ON rhs USING forein (k);
VACUUM ANALYZE lhs;
VACUUM ANALYZE rhs;

-- merge join: 10 duplicates per key on the left, 10 on the right: the
-- inner side is restored to its mark for every outer duplicate
SET enable_nestloop = off;
EXPLAIN (COSTS OFF)
SELECT count(*), sum(l.v), sum(r.w) FROM lhs l JOIN rhs r ON l.k = r.k;
SELECT count(*), sum(l.v), sum(r.w) FROM lhs l JOIN rhs r ON l.k = r.k;
SELECT count(*) FROM lhs l JOIN rhs r ON l.k = r.k WHERE l.k BETWEEN 100 AND 110;
EXPLAIN (COSTS OFF)
SELECT l.k, l.v, r.w FROM lhs l JOIN rhs r ON l.k = r.k WHERE l.k < 2 ORDER BY l.k, l.v, r.w LIMIT 5;
SELECT l.k, l.v, r.w FROM lhs l JOIN rhs r ON l.k = r.k WHERE l.k < 2 ORDER BY l.k, l.v, r.w LIMIT 5;
-- merge full and left joins: unmatched keys and NULLs survive
SELECT count(*), count(l.k), count(r.k) FROM lhs l FULL JOIN rhs r ON l.k = r.k;
SELECT count(*), count(r.k) FROM lhs l LEFT JOIN rhs r ON l.k = r.k;
-- descending merge join (both sides scanned backward)
EXPLAIN (COSTS OFF)
SELECT l.k FROM lhs l JOIN rhs r ON l.k = r.k ORDER BY l.k DESC LIMIT 3;
SELECT l.k FROM lhs l JOIN rhs r ON l.k = r.k ORDER BY l.k DESC LIMIT 3;
-- a merge join with a materialized inner index scan over text keys
CREATE TABLE tl (t text);
CREATE TABLE tr (t text);
INSERT INTO tl SELECT 'k' || (g % 300) FROM generate_series(1, 3000) g;
INSERT INTO tr SELECT 'k' || (g % 400) FROM generate_series(1, 2000) g;
CREATE INDEX tl_t ON tl USING forein (t);
CREATE INDEX tr_t ON tr USING forein (t);
VACUUM ANALYZE tl;
VACUUM ANALYZE tr;
EXPLAIN (COSTS OFF) SELECT count(*) FROM tl JOIN tr USING (t);
SELECT count(*) FROM tl JOIN tr USING (t);

-- mark/restore on the inner index scan itself (no Materialize): runs of
-- 2000 duplicates span several leaf pages, and the inner scan goes back to
-- its mark for each of the outer side's 3 duplicates
SET enable_material = off;
CREATE TABLE mo (k int4, v int4);
CREATE TABLE mi (k int8, w int4);
INSERT INTO mo SELECT g % 7, g FROM generate_series(1, 21) g;
INSERT INTO mi SELECT g % 5, g FROM generate_series(1, 10000) g;
CREATE INDEX mo_k ON mo USING forein (k);
CREATE INDEX mi_k ON mi USING forein (k);
VACUUM ANALYZE mo;
VACUUM ANALYZE mi;
EXPLAIN (COSTS OFF)
SELECT count(*), sum(o.v), sum(i.w) FROM mo o JOIN mi i ON o.k = i.k;
SELECT count(*), sum(o.v), sum(i.w) FROM mo o JOIN mi i ON o.k = i.k;
SELECT o.k, count(*), sum(i.w) FROM mo o JOIN mi i ON o.k = i.k GROUP BY o.k ORDER BY o.k;
EXPLAIN (COSTS OFF)
SELECT o.k, i.w FROM mo o JOIN mi i ON o.k = i.k ORDER BY o.k DESC, i.w DESC LIMIT 4;
SELECT o.k, i.w FROM mo o JOIN mi i ON o.k = i.k ORDER BY o.k DESC, i.w DESC LIMIT 4;
SELECT count(*), count(o.k), count(i.k) FROM mo o FULL JOIN mi i ON o.k = i.k;
RESET enable_material;
RESET enable_nestloop;

-- nested loop probing the inner index (parameterized index scans)
SET enable_mergejoin = off;
EXPLAIN (COSTS OFF)
SELECT count(*), sum(r.w) FROM (SELECT * FROM lhs WHERE v <= 100) l JOIN rhs r ON r.k = l.k;
SELECT count(*), sum(r.w) FROM (SELECT * FROM lhs WHERE v <= 100) l JOIN rhs r ON r.k = l.k;
SELECT count(*) FROM generate_series(-5, 800) s(x) JOIN rhs r ON r.k = s.x;
SELECT count(*) FROM generate_series(-5, 800) s(x) JOIN rhs r ON r.k < s.x - 695;
SELECT s.x, (SELECT max(w) FROM rhs r WHERE r.k = s.x) FROM generate_series(697, 702) s(x);
RESET enable_mergejoin;

RESET enable_seqscan;
RESET enable_bitmapscan;
RESET enable_hashjoin;
RESET enable_sort;

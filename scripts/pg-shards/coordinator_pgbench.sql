-- coordinator_pgbench.sql: pgbench's other tables, local on the coordinator
-- (the recipe of docs/postgresql.md, "Sharding"), so that pgbench runs its
-- scripts through the coordinator unchanged: pgbench_branches (scale rows:
-- pgbench reads the scale from it), pgbench_tellers (10 a branch) and
-- pgbench_history, as pgbench -i makes them. Run once on the coordinator by
-- scripts/pg-shards.sh and regress/t/025_sharding.pl:
--
--   psql -v scale=10 -f coordinator_pgbench.sql
CREATE TABLE pgbench_branches (bid int NOT NULL PRIMARY KEY, bbalance int, filler char(88))
	WITH (fillfactor = 100);
CREATE TABLE pgbench_tellers (tid int NOT NULL PRIMARY KEY, bid int, tbalance int, filler char(84))
	WITH (fillfactor = 100);
CREATE TABLE pgbench_history (tid int, bid int, aid int, delta int, mtime timestamp, filler char(22));
INSERT INTO pgbench_branches (bid, bbalance) SELECT bid, 0 FROM generate_series(1, :scale) bid;
INSERT INTO pgbench_tellers (tid, bid, tbalance)
	SELECT tid, (tid - 1) / 10 + 1, 0 FROM generate_series(1, :scale * 10) tid;
VACUUM ANALYZE pgbench_branches, pgbench_tellers, pgbench_history;

-- coordinator_partition.sql: one shard's partition of a sharded table on
-- the coordinator (the recipe of docs/postgresql.md, "Sharding"). Run on
-- the coordinator once per shard and copy, after coordinator_server.sql, by
-- scripts/pg-shards.sh and regress/t/025_sharding.pl:
--
--   psql -v tbl=pgbench_accounts -v srv=shard1 -v lo=MINVALUE -v hi=33334 \
--        -f coordinator_partition.sql
--
-- tbl      the partitioned table (created here if missing: pgbench_accounts'
--          columns, PARTITION BY RANGE (aid)) and the shard's table name
-- srv      the shard's postgres_fdw server
-- lo, hi   the partition's bounds, FROM (lo) TO (hi): hi exclusive;
--          MINVALUE / MAXVALUE for the first and last shard
--
-- The partition is a foreign table <tbl>_<srv> on the shard's table of the
-- same name: the coordinator stores no rows of it. Partition pruning picks
-- the shard of a lookup (at plan time, or at executor start for a generic
-- plan) and postgres_fdw ships the WHERE clause as the remote SQL.
CREATE TABLE IF NOT EXISTS :"tbl" (
	aid int NOT NULL,
	bid int,
	abalance int,
	filler char(84)
) PARTITION BY RANGE (aid);
SELECT :'tbl' || '_' || :'srv' AS part \gset
CREATE FOREIGN TABLE :"part" PARTITION OF :"tbl"
	FOR VALUES FROM (:lo) TO (:hi)
	SERVER :"srv" OPTIONS (schema_name 'public', table_name :'tbl');

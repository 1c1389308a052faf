-- shard.sql: one shard's part of a sharded pgbench_accounts (the recipe of
-- docs/postgresql.md, "Sharding"). Run on every shard, once per copy, by
-- scripts/pg-shards.sh and regress/t/025_sharding.pl:
--
--   psql -v tbl=pgbench_accounts -v am=forein -v data_lo=1 -v data_hi=33333 \
--        -v min_aid=-2147483648 -v max_aid=33333 -f shard.sql
--
-- tbl      the table (the same name on every shard; the coordinator's
--          foreign partitions name it)
-- am       the index's access method: forein or btree
-- data_lo, data_hi   the rows generated here, aid data_lo..data_hi, as
--          pgbench -i generates them (bid = (aid - 1) / 100000 + 1,
--          abalance 0, blank filler); data_hi < data_lo: none
-- min_aid, max_aid   the aids this shard may hold (a CHECK constraint: the
--          coordinator's partition bounds, so a row routed to the wrong
--          shard is refused instead of stored)
--
-- The table has a unique index on aid with the access method am, named
-- <tbl>_aid; a forein index gets its hint image installed at once
-- (forein_refresh), so the first lookups already start from hints.
SELECT :'tbl' || '_aid' AS idx, :'am' = 'forein' AS is_forein \gset
\if :is_forein
CREATE EXTENSION IF NOT EXISTS forein;
\endif
CREATE TABLE :"tbl" (
	aid int NOT NULL CHECK (aid BETWEEN :min_aid AND :max_aid),
	bid int,
	abalance int,
	filler char(84)
) WITH (fillfactor = 100);
INSERT INTO :"tbl" (aid, bid, abalance, filler)
	SELECT aid, (aid - 1) / 100000 + 1, 0, ''
	FROM generate_series(:data_lo, :data_hi) aid;
CREATE UNIQUE INDEX :"idx" ON :"tbl" USING :am (aid);
VACUUM ANALYZE :"tbl";
\if :is_forein
SELECT forein_refresh(:'idx') >= 0 AS refreshed;
\endif

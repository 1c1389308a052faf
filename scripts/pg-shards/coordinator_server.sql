-- coordinator_server.sql: one shard as a postgres_fdw server on the
-- coordinator (the recipe of docs/postgresql.md, "Sharding"). Run on the
-- coordinator once per shard, by scripts/pg-shards.sh and
-- regress/t/025_sharding.pl:
--
--   psql -v srv=shard1 -v host=/tmp/sockets -v port=5433 -f coordinator_server.sql
--
-- srv      the server's name (partitions name it)
-- host     the shard's host: a name, an address or a Unix socket directory
-- port     the shard's port
--
-- The shard's database is "postgres" and its user the coordinator's
-- current user (a superuser: postgres_fdw asks other users for a password).
-- fetch_size 1000: a range fetches its rows in batches of 1000 (postgres_fdw's
-- default is 100); use_remote_estimate off: planning a lookup asks the
-- shard nothing (with it on, every plan on the coordinator costs an EXPLAIN
-- round trip to each shard it keeps).
CREATE EXTENSION IF NOT EXISTS postgres_fdw;
CREATE SERVER :"srv" FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host :'host', port :'port', dbname 'postgres',
	         fetch_size '1000', use_remote_estimate 'false');
CREATE USER MAPPING FOR CURRENT_USER SERVER :"srv";

/* sql/forein--0.1--0.2.sql: forein 0.1 -> 0.2 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION forein UPDATE TO '0.2'" to load this file. \quit

-- The privilege model of contrib/amcheck: functions that read an index or
-- its table, or change what is offloaded, are not for PUBLIC.  Superusers
-- keep them; GRANT EXECUTE to roles that should have them.  Each function
-- also checks the caller's privileges on the index's table (SELECT to read,
-- ownership to change) before it takes any lock.  forein_stats stays
-- public: it reports counters and sizes only, like pg_stat_user_indexes.
REVOKE ALL ON FUNCTION forein_check(regclass, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION forein_refresh(regclass) FROM PUBLIC;
REVOKE ALL ON FUNCTION forein_offload_entries(regclass) FROM PUBLIC;

/* sql/forein--0.1--0.2.sql: forein 0.1 -> 0.2 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION forein UPDATE TO '0.2'" to load this file. \quit

-- forein_stats gains a status column: why an index gets no hints (no free
-- slot, offload off, ...), or 'active'.
DROP FUNCTION forein_stats(regclass);
CREATE FUNCTION forein_stats(index regclass,
	OUT backend text,
	OUT lookups bigint,
	OUT hint_hits bigint,
	OUT move_rights bigint,
	OUT fallbacks bigint,
	OUT installed_entries bigint,
	OUT capacity_entries bigint,
	OUT installed_nodes bigint,
	OUT status text)
RETURNS record
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

-- The privilege model of contrib/amcheck: functions that read an index or
-- its table, or change what is offloaded, are not for PUBLIC.  Superusers
-- keep them; GRANT EXECUTE to roles that should have them.  Each function
-- also checks the caller's privileges on the index's table (SELECT to read,
-- ownership to change) before it takes any lock.  forein_stats stays
-- public: it reports counters and sizes only, like pg_stat_user_indexes.
REVOKE ALL ON FUNCTION forein_check(regclass, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION forein_refresh(regclass) FROM PUBLIC;
REVOKE ALL ON FUNCTION forein_offload_entries(regclass) FROM PUBLIC;

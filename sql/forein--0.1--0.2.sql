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

-- BEGIN word debug functions (pg_extension/forein_sqlfuncs.c)
-- For tests (regress/t/010_words.pl compares them with the engine's words):
-- superuser only.  Carry this block, REVOKEs included, into later versions'
-- install and upgrade scripts.

-- The offload word of a value of a type forein indexes, under the value's
-- collation (text); NULL when that collation has no order-preserving word
-- (nondeterministic).  Words are the unsigned 64-bit numbers of forein/word.h.
CREATE FUNCTION forein_debug_word(value anyelement)
RETURNS numeric
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT IMMUTABLE PARALLEL SAFE;
REVOKE ALL ON FUNCTION forein_debug_word(anyelement) FROM PUBLIC;

-- Every live node of the index: its bounds (has_lo false: leftmost; has_hi
-- false: rightmost; key NULL: a NULL key; owns: the bound's heap TID is
-- minimal, so it owns its key's word) and its word interval [lo, hi)
-- (hi_inf: through 2^64 - 1) as the offload refresh computes it.
CREATE FUNCTION forein_debug_page_intervals(index regclass,
	OUT blkno bigint,
	OUT level integer,
	OUT has_lo boolean,
	OUT lo_key text,
	OUT lo_owns boolean,
	OUT has_hi boolean,
	OUT hi_key text,
	OUT hi_owns boolean,
	OUT lo numeric,
	OUT hi numeric,
	OUT hi_inf boolean)
RETURNS SETOF record
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;
REVOKE ALL ON FUNCTION forein_debug_page_intervals(regclass) FROM PUBLIC;

-- END word debug functions

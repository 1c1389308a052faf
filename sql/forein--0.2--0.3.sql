/* sql/forein--0.2--0.3.sql: forein 0.2 -> 0.3 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION forein UPDATE TO '0.3'" to load this file. \quit

-- The published image's usage by part, read off its bytes by its backend:
-- one row per device and resource (switch_lpm: one row, its LPM entries;
-- fattree: per switch and table), used of capacity in unit, against the
-- capacity the image was computed for.  No rows when the index has no
-- image of a device (offload = 'none', no image yet).
CREATE FUNCTION forein_offload_usage(index regclass)
RETURNS TABLE (device text, resource text, unit text, used bigint, capacity bigint)
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

-- contrib/amcheck's privilege model, as for forein_offload_entries: it reads
-- the same image, so not for PUBLIC, and SELECT on the table is checked
-- before any lock.
REVOKE ALL ON FUNCTION forein_offload_usage(regclass) FROM PUBLIC;

-- The word debug functions (forein--0.2.sql) are unchanged.

/* sql/forein--0.4--0.5.sql: forein 0.4 -> 0.5 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION forein UPDATE TO '0.5'" to load this file. \quit

-- forein_offload_entries gets a column, prefix_hex (after the four it had,
-- so queries naming them keep working).  A function's result columns cannot
-- be changed in place: it is dropped and created again (GRANTs made on the
-- 0.4 function are lost; a view using it blocks the update), then its
-- REVOKE (contrib/amcheck's model, forein--0.1--0.2.sql) is applied again.
DROP FUNCTION forein_offload_entries(regclass);

-- BEGIN 0.5 forein_offload_entries (the same in forein--0.5.sql and
-- forein--0.4--0.5.sql)
-- The installed entries of the published image, one row per entry: a key
-- whose 64-bit offload word starts with the entry's prefix starts its
-- descent at node.  prefix: the 64-bit word whose high prefix_len bits are
-- the prefix, as an unsigned number; prefix_len: 0..64; node: the block
-- number of the index node the hint names; level: that node's level (0 =
-- a leaf, 1 = the leaves' parents, ...); prefix_hex (0.5): the prefix as
-- 16 hex digits and its length, CIDR style, e.g. 0x3fa0000000000000/12.
CREATE FUNCTION forein_offload_entries(index regclass,
	OUT prefix numeric,
	OUT prefix_len integer,
	OUT node bigint,
	OUT level integer,
	OUT prefix_hex text)
RETURNS SETOF record
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;
-- END 0.5 forein_offload_entries

REVOKE ALL ON FUNCTION forein_offload_entries(regclass) FROM PUBLIC;

-- Everything else (operator classes, the other functions, the word debug
-- functions) is unchanged from 0.4.

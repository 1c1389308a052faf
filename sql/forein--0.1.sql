/* sql/forein--0.1.sql: the forein index access method */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION forein" to load this file. \quit

CREATE FUNCTION forein_handler(internal)
RETURNS index_am_handler
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT;

CREATE ACCESS METHOD forein TYPE INDEX HANDLER forein_handler;
COMMENT ON ACCESS METHOD forein IS 'offload-aware B+tree with hardware-hinted scans';

-- Operator classes.  Strategies are btree's (1 <, 2 <=, 3 =, 4 >=, 5 >) and
-- support function 1 is btree's 3-way comparison, so every forein opclass
-- orders exactly like the btree one of the same type.

-- The integer family: int2, int4 and int8 with every cross-type operator,
-- so WHERE aid = $1 uses the index whether $1 is int4 or int8.
CREATE OPERATOR FAMILY integer_ops USING forein;

CREATE OPERATOR CLASS int2_ops DEFAULT FOR TYPE int2 USING forein FAMILY integer_ops AS
	OPERATOR 1 <,
	OPERATOR 2 <=,
	OPERATOR 3 =,
	OPERATOR 4 >=,
	OPERATOR 5 >,
	FUNCTION 1 btint2cmp(int2, int2);

CREATE OPERATOR CLASS int4_ops DEFAULT FOR TYPE int4 USING forein FAMILY integer_ops AS
	OPERATOR 1 <,
	OPERATOR 2 <=,
	OPERATOR 3 =,
	OPERATOR 4 >=,
	OPERATOR 5 >,
	FUNCTION 1 btint4cmp(int4, int4);

CREATE OPERATOR CLASS int8_ops DEFAULT FOR TYPE int8 USING forein FAMILY integer_ops AS
	OPERATOR 1 <,
	OPERATOR 2 <=,
	OPERATOR 3 =,
	OPERATOR 4 >=,
	OPERATOR 5 >,
	FUNCTION 1 btint8cmp(int8, int8);

ALTER OPERATOR FAMILY integer_ops USING forein ADD
	OPERATOR 1 < (int2, int4),
	OPERATOR 2 <= (int2, int4),
	OPERATOR 3 = (int2, int4),
	OPERATOR 4 >= (int2, int4),
	OPERATOR 5 > (int2, int4),
	FUNCTION 1 (int2, int4) btint24cmp(int2, int4),
	OPERATOR 1 < (int2, int8),
	OPERATOR 2 <= (int2, int8),
	OPERATOR 3 = (int2, int8),
	OPERATOR 4 >= (int2, int8),
	OPERATOR 5 > (int2, int8),
	FUNCTION 1 (int2, int8) btint28cmp(int2, int8),
	OPERATOR 1 < (int4, int2),
	OPERATOR 2 <= (int4, int2),
	OPERATOR 3 = (int4, int2),
	OPERATOR 4 >= (int4, int2),
	OPERATOR 5 > (int4, int2),
	FUNCTION 1 (int4, int2) btint42cmp(int4, int2),
	OPERATOR 1 < (int4, int8),
	OPERATOR 2 <= (int4, int8),
	OPERATOR 3 = (int4, int8),
	OPERATOR 4 >= (int4, int8),
	OPERATOR 5 > (int4, int8),
	FUNCTION 1 (int4, int8) btint48cmp(int4, int8),
	OPERATOR 1 < (int8, int2),
	OPERATOR 2 <= (int8, int2),
	OPERATOR 3 = (int8, int2),
	OPERATOR 4 >= (int8, int2),
	OPERATOR 5 > (int8, int2),
	FUNCTION 1 (int8, int2) btint82cmp(int8, int2),
	OPERATOR 1 < (int8, int4),
	OPERATOR 2 <= (int8, int4),
	OPERATOR 3 = (int8, int4),
	OPERATOR 4 >= (int8, int4),
	OPERATOR 5 > (int8, int4),
	FUNCTION 1 (int8, int4) btint84cmp(int8, int4);

CREATE OPERATOR CLASS text_ops DEFAULT FOR TYPE text USING forein AS
	OPERATOR 1 <,
	OPERATOR 2 <=,
	OPERATOR 3 =,
	OPERATOR 4 >=,
	OPERATOR 5 >,
	FUNCTION 1 bttextcmp(text, text);

CREATE OPERATOR CLASS date_ops DEFAULT FOR TYPE date USING forein AS
	OPERATOR 1 <,
	OPERATOR 2 <=,
	OPERATOR 3 =,
	OPERATOR 4 >=,
	OPERATOR 5 >,
	FUNCTION 1 date_cmp(date, date);

CREATE OPERATOR CLASS timestamp_ops DEFAULT FOR TYPE timestamp USING forein AS
	OPERATOR 1 <,
	OPERATOR 2 <=,
	OPERATOR 3 =,
	OPERATOR 4 >=,
	OPERATOR 5 >,
	FUNCTION 1 timestamp_cmp(timestamp, timestamp);

CREATE OPERATOR CLASS timestamptz_ops DEFAULT FOR TYPE timestamptz USING forein AS
	OPERATOR 1 <,
	OPERATOR 2 <=,
	OPERATOR 3 =,
	OPERATOR 4 >=,
	OPERATOR 5 >,
	FUNCTION 1 timestamptz_cmp(timestamptz, timestamptz);

CREATE OPERATOR CLASS uuid_ops DEFAULT FOR TYPE uuid USING forein AS
	OPERATOR 1 <,
	OPERATOR 2 <=,
	OPERATOR 3 =,
	OPERATOR 4 >=,
	OPERATOR 5 >,
	FUNCTION 1 uuid_cmp(uuid, uuid);

-- Verification (like contrib/amcheck's bt_index_check): ERROR with
-- ERRCODE_INDEX_CORRUPTED naming the index and block on any violation.
CREATE FUNCTION forein_check(index regclass, heapallindexed boolean DEFAULT false)
RETURNS void
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT PARALLEL RESTRICTED;

-- BEGIN offload functions (pg_extension/forein_sqlfuncs.c)

-- Offload statistics of one index.  backend: 'switch_lpm'; 'none' when the
-- index has offload = 'none', forein.offload is off, the index is temporary
-- or its keys have no order-preserving word (text under a non-C collation);
-- 'inactive' when forein is not in shared_preload_libraries.  Counters:
-- descents to a leaf, those that started at a validated hint, sibling steps
-- after a hint, and those whose hints all failed.
CREATE FUNCTION forein_stats(index regclass,
	OUT backend text,
	OUT lookups bigint,
	OUT hint_hits bigint,
	OUT move_rights bigint,
	OUT fallbacks bigint,
	OUT installed_entries bigint,
	OUT capacity_entries bigint,
	OUT installed_nodes bigint)
RETURNS record
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

-- Recomputes the index's offload table now, in this session, and installs
-- it (after forein.install_delay_ms); returns the installed entries.
CREATE FUNCTION forein_refresh(index regclass)
RETURNS bigint
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;

-- The installed LPM entries: prefix (the high prefix_len bits of a 64-bit
-- key word, as an unsigned number) -> node (block) at level (0 = leaf).
CREATE FUNCTION forein_offload_entries(index regclass,
	OUT prefix numeric,
	OUT prefix_len integer,
	OUT node bigint,
	OUT level integer)
RETURNS SETOF record
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

-- END offload functions

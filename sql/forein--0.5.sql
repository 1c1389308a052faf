/* sql/forein--0.5.sql: the forein index access method */

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

-- BEGIN 0.4 operator classes (the same in forein--0.5.sql and
-- forein--0.3--0.4.sql, so that an updated and a fresh install agree)

-- date, timestamp and timestamptz compare with each other like btree's
-- datetime_ops.  Their forein opclasses are separate families (0.1), and an
-- update cannot move an opclass to another family, so each family gets the
-- cross-type members whose left type is its own.
ALTER OPERATOR FAMILY date_ops USING forein ADD
	OPERATOR 1 < (date, timestamp),
	OPERATOR 2 <= (date, timestamp),
	OPERATOR 3 = (date, timestamp),
	OPERATOR 4 >= (date, timestamp),
	OPERATOR 5 > (date, timestamp),
	FUNCTION 1 (date, timestamp) date_cmp_timestamp(date, timestamp),
	OPERATOR 1 < (date, timestamptz),
	OPERATOR 2 <= (date, timestamptz),
	OPERATOR 3 = (date, timestamptz),
	OPERATOR 4 >= (date, timestamptz),
	OPERATOR 5 > (date, timestamptz),
	FUNCTION 1 (date, timestamptz) date_cmp_timestamptz(date, timestamptz);

ALTER OPERATOR FAMILY timestamp_ops USING forein ADD
	OPERATOR 1 < (timestamp, date),
	OPERATOR 2 <= (timestamp, date),
	OPERATOR 3 = (timestamp, date),
	OPERATOR 4 >= (timestamp, date),
	OPERATOR 5 > (timestamp, date),
	FUNCTION 1 (timestamp, date) timestamp_cmp_date(timestamp, date),
	OPERATOR 1 < (timestamp, timestamptz),
	OPERATOR 2 <= (timestamp, timestamptz),
	OPERATOR 3 = (timestamp, timestamptz),
	OPERATOR 4 >= (timestamp, timestamptz),
	OPERATOR 5 > (timestamp, timestamptz),
	FUNCTION 1 (timestamp, timestamptz) timestamp_cmp_timestamptz(timestamp, timestamptz);

ALTER OPERATOR FAMILY timestamptz_ops USING forein ADD
	OPERATOR 1 < (timestamptz, date),
	OPERATOR 2 <= (timestamptz, date),
	OPERATOR 3 = (timestamptz, date),
	OPERATOR 4 >= (timestamptz, date),
	OPERATOR 5 > (timestamptz, date),
	FUNCTION 1 (timestamptz, date) timestamptz_cmp_date(timestamptz, date),
	OPERATOR 1 < (timestamptz, timestamp),
	OPERATOR 2 <= (timestamptz, timestamp),
	OPERATOR 3 = (timestamptz, timestamp),
	OPERATOR 4 >= (timestamptz, timestamp),
	OPERATOR 5 > (timestamptz, timestamp),
	FUNCTION 1 (timestamptz, timestamp) timestamptz_cmp_timestamp(timestamptz, timestamp);

-- name: its own family (btree keeps it in text_ops), with name vs text;
-- text_ops gets text vs name.
CREATE OPERATOR CLASS name_ops DEFAULT FOR TYPE name USING forein AS
	OPERATOR 1 <,
	OPERATOR 2 <=,
	OPERATOR 3 =,
	OPERATOR 4 >=,
	OPERATOR 5 >,
	FUNCTION 1 btnamecmp(name, name);

ALTER OPERATOR FAMILY name_ops USING forein ADD
	OPERATOR 1 < (name, text),
	OPERATOR 2 <= (name, text),
	OPERATOR 3 = (name, text),
	OPERATOR 4 >= (name, text),
	OPERATOR 5 > (name, text),
	FUNCTION 1 (name, text) btnametextcmp(name, text);

ALTER OPERATOR FAMILY text_ops USING forein ADD
	OPERATOR 1 < (text, name),
	OPERATOR 2 <= (text, name),
	OPERATOR 3 = (text, name),
	OPERATOR 4 >= (text, name),
	OPERATOR 5 > (text, name),
	FUNCTION 1 (text, name) bttextnamecmp(text, name);

-- float4 and float8: one family with the cross-type members, like btree's.
CREATE OPERATOR FAMILY float_ops USING forein;

CREATE OPERATOR CLASS float4_ops DEFAULT FOR TYPE float4 USING forein FAMILY float_ops AS
	OPERATOR 1 <,
	OPERATOR 2 <=,
	OPERATOR 3 =,
	OPERATOR 4 >=,
	OPERATOR 5 >,
	FUNCTION 1 btfloat4cmp(float4, float4);

CREATE OPERATOR CLASS float8_ops DEFAULT FOR TYPE float8 USING forein FAMILY float_ops AS
	OPERATOR 1 <,
	OPERATOR 2 <=,
	OPERATOR 3 =,
	OPERATOR 4 >=,
	OPERATOR 5 >,
	FUNCTION 1 btfloat8cmp(float8, float8);

ALTER OPERATOR FAMILY float_ops USING forein ADD
	OPERATOR 1 < (float4, float8),
	OPERATOR 2 <= (float4, float8),
	OPERATOR 3 = (float4, float8),
	OPERATOR 4 >= (float4, float8),
	OPERATOR 5 > (float4, float8),
	FUNCTION 1 (float4, float8) btfloat48cmp(float4, float8),
	OPERATOR 1 < (float8, float4),
	OPERATOR 2 <= (float8, float4),
	OPERATOR 3 = (float8, float4),
	OPERATOR 4 >= (float8, float4),
	OPERATOR 5 > (float8, float4),
	FUNCTION 1 (float8, float4) btfloat84cmp(float8, float4);

CREATE OPERATOR CLASS numeric_ops DEFAULT FOR TYPE numeric USING forein AS
	OPERATOR 1 <,
	OPERATOR 2 <=,
	OPERATOR 3 =,
	OPERATOR 4 >=,
	OPERATOR 5 >,
	FUNCTION 1 numeric_cmp(numeric, numeric);

CREATE OPERATOR CLASS bool_ops DEFAULT FOR TYPE bool USING forein AS
	OPERATOR 1 <,
	OPERATOR 2 <=,
	OPERATOR 3 =,
	OPERATOR 4 >=,
	OPERATOR 5 >,
	FUNCTION 1 btboolcmp(bool, bool);

CREATE OPERATOR CLASS bpchar_ops DEFAULT FOR TYPE bpchar USING forein AS
	OPERATOR 1 <,
	OPERATOR 2 <=,
	OPERATOR 3 =,
	OPERATOR 4 >=,
	OPERATOR 5 >,
	FUNCTION 1 bpcharcmp(bpchar, bpchar);

CREATE OPERATOR CLASS interval_ops DEFAULT FOR TYPE interval USING forein AS
	OPERATOR 1 <,
	OPERATOR 2 <=,
	OPERATOR 3 =,
	OPERATOR 4 >=,
	OPERATOR 5 >,
	FUNCTION 1 interval_cmp(interval, interval);

-- inet, and cidr (binary-coercible to inet), like btree's network_ops.
CREATE OPERATOR FAMILY network_ops USING forein;

CREATE OPERATOR CLASS inet_ops DEFAULT FOR TYPE inet USING forein FAMILY network_ops AS
	OPERATOR 1 <,
	OPERATOR 2 <=,
	OPERATOR 3 =,
	OPERATOR 4 >=,
	OPERATOR 5 >,
	FUNCTION 1 network_cmp(inet, inet);

-- btree's cidr_ops: the same members (its input type is inet too); a class
-- must list something, and STORAGE of the input type itself adds nothing.
CREATE OPERATOR CLASS cidr_ops FOR TYPE inet USING forein FAMILY network_ops AS
	STORAGE inet;

CREATE OPERATOR CLASS bytea_ops DEFAULT FOR TYPE bytea USING forein AS
	OPERATOR 1 <,
	OPERATOR 2 <=,
	OPERATOR 3 =,
	OPERATOR 4 >=,
	OPERATOR 5 >,
	FUNCTION 1 byteacmp(bytea, bytea);

CREATE OPERATOR CLASS oid_ops DEFAULT FOR TYPE oid USING forein AS
	OPERATOR 1 <,
	OPERATOR 2 <=,
	OPERATOR 3 =,
	OPERATOR 4 >=,
	OPERATOR 5 >,
	FUNCTION 1 btoidcmp(oid, oid);

-- Byte-wise (memcmp) order whatever the collation, for LIKE 'abc%' under a
-- non-C collation: btree's text_pattern_ops, varchar_pattern_ops (input
-- type text, the same members) and bpchar_pattern_ops.
CREATE OPERATOR CLASS text_pattern_ops FOR TYPE text USING forein AS
	OPERATOR 1 ~<~,
	OPERATOR 2 ~<=~,
	OPERATOR 3 =,
	OPERATOR 4 ~>=~,
	OPERATOR 5 ~>~,
	FUNCTION 1 bttext_pattern_cmp(text, text);

CREATE OPERATOR CLASS varchar_pattern_ops FOR TYPE text USING forein FAMILY text_pattern_ops AS
	STORAGE text;

CREATE OPERATOR CLASS bpchar_pattern_ops FOR TYPE bpchar USING forein AS
	OPERATOR 1 ~<~,
	OPERATOR 2 ~<=~,
	OPERATOR 3 =,
	OPERATOR 4 ~>=~,
	OPERATOR 5 ~>~,
	FUNCTION 1 btbpchar_pattern_cmp(bpchar, bpchar);

-- END 0.4 operator classes

-- Verification (like contrib/amcheck's bt_index_check): ERROR with
-- ERRCODE_INDEX_CORRUPTED naming the index and block on any violation.
CREATE FUNCTION forein_check(index regclass, heapallindexed boolean DEFAULT false)
RETURNS void
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT PARALLEL RESTRICTED;

-- BEGIN offload functions (pg_extension/forein_offload.c)

-- Offload statistics of one index.  backend: the index's offload backend
-- (reloption offload, a registered name such as 'switch_lpm'); 'none' when
-- it gets no hints (offload = 'none', forein.offload off, a temporary index,
-- keys without an order-preserving word); 'inactive' when forein is not in
-- shared_preload_libraries.  Counters: descents to a leaf, those that
-- started at a validated hint, sibling steps after a hint, and those whose
-- hints all failed.  Entries are the backend's records in its unit (LPM
-- entries for switch_lpm).  status: 'active', or why there are no hints.
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

-- Recomputes the index's offload image now, in this session, and installs
-- it (after forein.install_delay_ms); returns the installed entries (0 with
-- a NOTICE saying why when the index gets no hints).
CREATE FUNCTION forein_refresh(index regclass)
RETURNS bigint
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;

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

-- The published image's usage by part, read off its bytes by its backend:
-- one row per device and resource (switch_lpm: one row, its LPM entries;
-- fattree: per switch and table), used of capacity in unit, against the
-- capacity the image was computed for.  No rows when the index has no
-- image of a device (offload = 'none', no image yet).
CREATE FUNCTION forein_offload_usage(index regclass)
RETURNS TABLE (device text, resource text, unit text, used bigint, capacity bigint)
AS 'MODULE_PATHNAME'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;

-- END offload functions

-- Privileges: contrib/amcheck's model.  Functions that read an index or its
-- table, or change what is offloaded, are not for PUBLIC; superusers keep
-- them and GRANT EXECUTE gives them to other roles.  Each also checks the
-- caller's privileges on the index's table (SELECT to read, ownership to
-- change) before taking any lock.  forein_stats stays public: counters and
-- sizes only, like pg_stat_user_indexes.
REVOKE ALL ON FUNCTION forein_check(regclass, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION forein_refresh(regclass) FROM PUBLIC;
REVOKE ALL ON FUNCTION forein_offload_entries(regclass) FROM PUBLIC;
REVOKE ALL ON FUNCTION forein_offload_usage(regclass) FROM PUBLIC;

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

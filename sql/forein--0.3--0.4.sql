/* sql/forein--0.3--0.4.sql: forein 0.3 -> 0.4 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION forein UPDATE TO '0.4'" to load this file. \quit

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

-- The functions, and the word debug functions (forein--0.2.sql), are
-- unchanged; forein_debug_word accepts the new key types (a C change).

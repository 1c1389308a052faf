--
-- reloptions: fillfactor, offload, offload_capacity, offload_settings and
-- lpm_entries (deprecated); bad values are errors.  The errors that list the
-- registered backends are shown terse: the list comes from the offload
-- layer's registry, and a new backend must not change this output.
--
CREATE TABLE ro (a int4);
INSERT INTO ro SELECT generate_series(1, 10000);

CREATE INDEX ro_ff ON ro USING forein (a) WITH (fillfactor = 50);
CREATE INDEX ro_ff100 ON ro USING forein (a) WITH (fillfactor = 100);
SELECT relname, reloptions FROM pg_class WHERE relname IN ('ro_ff', 'ro_ff100') ORDER BY 1;
-- a lower fillfactor leaves the index larger
SELECT pg_relation_size('ro_ff') > pg_relation_size('ro_ff100') AS ff50_larger;
SELECT forein_check('ro_ff', true);
SELECT forein_check('ro_ff100', true);
ALTER INDEX ro_ff SET (fillfactor = 70);
SELECT reloptions FROM pg_class WHERE relname = 'ro_ff';
ALTER INDEX ro_ff RESET (fillfactor);
SELECT reloptions FROM pg_class WHERE relname = 'ro_ff';

CREATE INDEX ro_none ON ro USING forein (a) WITH (offload = 'none');
CREATE INDEX ro_lpm ON ro USING forein (a) WITH (offload = 'switch_lpm', lpm_entries = 1000);
SELECT relname, reloptions FROM pg_class WHERE relname IN ('ro_none', 'ro_lpm') ORDER BY 1;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT count(*) FROM ro WHERE a > 9000;
RESET enable_seqscan;
RESET enable_bitmapscan;

-- bad values
CREATE INDEX ro_bad ON ro USING forein (a) WITH (fillfactor = 5);
CREATE INDEX ro_bad ON ro USING forein (a) WITH (fillfactor = 101);
CREATE INDEX ro_bad ON ro USING forein (a) WITH (fillfactor = 'x');
\set VERBOSITY terse
CREATE INDEX ro_bad ON ro USING forein (a) WITH (offload = 'bogus');
CREATE INDEX ro_bad ON ro USING forein (a) WITH (offload = '');
-- a registered backend that gives no start hints (write visibility on the network path)
CREATE INDEX ro_bad ON ro USING forein (a) WITH (offload = 'switch_visibility');
\set VERBOSITY default
CREATE INDEX ro_bad ON ro USING forein (a) WITH (lpm_entries = -1);
CREATE INDEX ro_bad ON ro USING forein (a) WITH (lpm_entries = 'many');
CREATE INDEX ro_bad ON ro USING forein (a) WITH (nonexistent = 1);
ALTER INDEX ro_ff SET (fillfactor = 0);
\set VERBOSITY terse
ALTER INDEX ro_none SET (offload = 'bogus');
\set VERBOSITY default
SELECT count(*) FROM pg_class WHERE relname = 'ro_bad';

-- offload_capacity: the device capacity in the backend's unit (fattree:
-- in-switch nodes), for every backend; offload_settings: the backend's own
-- settings, name=value, checked by the backend when set
-- (a tree of three levels, so that the fat root cannot hold every leaf)
CREATE TABLE ro_ft (a int4);
INSERT INTO ro_ft SELECT generate_series(1, 200000);
CREATE INDEX ro_cap ON ro_ft USING forein (a)
  WITH (offload = 'fattree', offload_capacity = 500,
        offload_settings = 'cached_layers = 0, fat_root_ranges = 50');
CREATE INDEX ro_cap_all ON ro_ft USING forein (a) WITH (offload = 'fattree');
SELECT relname, reloptions FROM pg_class WHERE relname IN ('ro_cap', 'ro_cap_all') ORDER BY 1;
SELECT forein_refresh('ro_cap') > 0 AS installed, forein_refresh('ro_cap_all') > 0 AS installed_all;
SELECT capacity_entries FROM forein_stats('ro_cap');
-- the settings reach the device: at most 50 fat-root ranges, where the
-- default (the paper's 600) uses more
SELECT i.relname, u.used <= 50 AS ranges_within_50
FROM pg_class i, forein_offload_usage(i.oid) u
WHERE i.relname IN ('ro_cap', 'ro_cap_all') AND u.resource = 'fat root'
ORDER BY 1;
-- switch_lpm's own settings
CREATE INDEX ro_lpm_set ON ro USING forein (a)
  WITH (offload = 'switch_lpm', offload_settings = 'hot_leaves=0,bottom_line_level=1');
SELECT forein_refresh('ro_lpm_set') > 0 AS installed;
-- bad settings: unknown to the backend, out of range, not name=value
CREATE INDEX ro_bad ON ro USING forein (a) WITH (offload = 'fattree', offload_settings = 'hot_leaves=3');
CREATE INDEX ro_bad ON ro USING forein (a) WITH (offload_settings = 'hot_leaves=many');
CREATE INDEX ro_bad ON ro USING forein (a) WITH (offload_settings = 'hot_leaves=-1');
CREATE INDEX ro_bad ON ro USING forein (a) WITH (offload_settings = 'hot_leaves');
CREATE INDEX ro_bad ON ro USING forein (a) WITH (offload_settings = 'hot_leaves=1,hot_leaves=2');
CREATE INDEX ro_bad ON ro USING forein (a) WITH (offload = 'none', offload_settings = 'hot_leaves=1');
-- a new backend must take the settings it is given
ALTER INDEX ro_cap SET (offload = 'switch_lpm');
ALTER INDEX ro_cap SET (offload = 'switch_lpm', offload_settings = 'hot_leaves=8');
SELECT reloptions FROM pg_class WHERE relname = 'ro_cap';
CREATE INDEX ro_bad ON ro USING forein (a) WITH (offload_capacity = -1);
CREATE INDEX ro_bad ON ro USING forein (a) WITH (offload_capacity = 'many');
-- more than the server's capacity of the backend
CREATE INDEX ro_bad ON ro USING forein (a) WITH (offload = 'fattree', offload_capacity = 2000000000);
CREATE INDEX ro_bad ON ro USING forein (a) WITH (offload_capacity = 100000);
-- the deprecated lpm_entries sizes switch_lpm only; offload_capacity wins
CREATE INDEX ro_alias ON ro USING forein (a) WITH (offload = 'switch_lpm', lpm_entries = 1000);
CREATE INDEX ro_alias_ft ON ro USING forein (a) WITH (offload = 'fattree', lpm_entries = 10);
CREATE INDEX ro_both ON ro USING forein (a)
  WITH (offload = 'switch_lpm', lpm_entries = 1000, offload_capacity = 2000);
SELECT (SELECT capacity_entries FROM forein_stats('ro_alias')) AS alias_lpm,
       (SELECT capacity_entries FROM forein_stats('ro_alias_ft')) =
       (SELECT capacity_entries FROM forein_stats('ro_cap_all')) AS alias_ignored_by_fattree,
       (SELECT capacity_entries FROM forein_stats('ro_both')) AS both_set;
DROP INDEX ro_lpm_set, ro_alias, ro_alias_ft, ro_both;
DROP TABLE ro_ft;
SELECT count(*) FROM pg_class WHERE relname = 'ro_bad';

-- btree's vacuum_cleanup_index_scale_factor: accepted (no effect), range-checked
CREATE INDEX ro_vc ON ro USING forein (a) WITH (vacuum_cleanup_index_scale_factor = 40.0);
SELECT reloptions FROM pg_class WHERE oid = 'ro_vc'::regclass;
CREATE INDEX ro_bad ON ro USING forein (a) WITH (vacuum_cleanup_index_scale_factor = -10.0);
CREATE INDEX ro_bad ON ro USING forein (a) WITH (vacuum_cleanup_index_scale_factor = 'string');
ALTER INDEX ro_vc SET (vacuum_cleanup_index_scale_factor = 70.0);
SELECT reloptions FROM pg_class WHERE oid = 'ro_vc'::regclass;
DROP INDEX ro_vc;
DROP TABLE ro;

--
-- reloptions: fillfactor, offload, lpm_entries; bad values are errors.
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
CREATE INDEX ro_bad ON ro USING forein (a) WITH (offload = 'bogus');
CREATE INDEX ro_bad ON ro USING forein (a) WITH (offload = '');
-- a registered backend that gives no start hints (write visibility on the network path)
CREATE INDEX ro_bad ON ro USING forein (a) WITH (offload = 'switch_visibility');
CREATE INDEX ro_bad ON ro USING forein (a) WITH (lpm_entries = -1);
CREATE INDEX ro_bad ON ro USING forein (a) WITH (lpm_entries = 'many');
CREATE INDEX ro_bad ON ro USING forein (a) WITH (nonexistent = 1);
ALTER INDEX ro_ff SET (fillfactor = 0);
ALTER INDEX ro_none SET (offload = 'bogus');
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

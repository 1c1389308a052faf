--
-- offload_usage: forein_offload_usage, the published image's usage by part
-- as its backend reads it off the bytes (the C ABI's
-- forein_offload_image_usage over the slot's image).  switch_lpm gives one
-- row: its LPM entries against the index's capacity.
--
CREATE TABLE use_t (a int4);
INSERT INTO use_t SELECT generate_series(1, 50000);
CREATE INDEX use_lpm ON use_t USING forein (a) WITH (offload = 'switch_lpm');
CREATE INDEX use_small ON use_t USING forein (a)
  WITH (offload = 'switch_lpm', lpm_entries = 1000);
CREATE INDEX use_none ON use_t USING forein (a) WITH (offload = 'none');
VACUUM ANALYZE use_t;

-- forein_refresh installs synchronously: no waiting for the worker
SELECT forein_refresh('use_lpm') > 0 AS installed;
SELECT forein_refresh('use_small') > 0 AS installed;
SELECT forein_refresh('use_none');

-- one row in the backend's unit; used = the listed entries, capacity = the
-- backend's default (forein.lpm_entries is left at the paper's 73,000)
SELECT device, resource, unit, used > 0 AS used_some, capacity
FROM forein_offload_usage('use_lpm');
SELECT u.used = (SELECT count(*) FROM forein_offload_entries('use_lpm')) AS used_is_entries,
       u.used = s.installed_entries AS used_is_installed,
       u.capacity = s.capacity_entries AS capacity_is_stats,
       u.capacity = 73000 AS default_capacity
FROM forein_offload_usage('use_lpm') u, forein_stats('use_lpm') s;

-- the capacity the index is configured with (reloption lpm_entries)
SELECT resource, capacity,
       used = (SELECT count(*) FROM forein_offload_entries('use_small')) AS used_is_entries,
       used <= capacity AS fits
FROM forein_offload_usage('use_small');

-- offload = 'none': no device, no rows (and no entries)
SELECT count(*) FROM forein_offload_usage('use_none');
SELECT count(*) FROM forein_offload_entries('use_none');

-- forein.offload off stops hints, not the diagnostics: the published image
-- is still listed, as forein_offload_entries lists it
SET forein.offload = off;
SELECT count(*) AS nrows,
       sum(used) = (SELECT count(*) FROM forein_offload_entries('use_lpm')) AS used_is_entries
FROM forein_offload_usage('use_lpm');
RESET forein.offload;

-- errors: not a forein index
CREATE INDEX use_btree ON use_t USING btree (a);
SELECT * FROM forein_offload_usage('use_btree');
SELECT * FROM forein_offload_usage('use_t');

DROP TABLE use_t;

--
-- datetime: date, timestamp and timestamptz keys, including infinities.
--
SET enable_seqscan = off;
SET enable_bitmapscan = off;

CREATE TABLE events (d date, ts timestamp, tz timestamptz);
INSERT INTO events
SELECT date '2000-01-01' + g,
       timestamp '2000-01-01 00:00:00' + g * interval '1 hour 1 second',
       timestamptz '2000-01-01 00:00:00+00' + g * interval '37 minutes'
FROM generate_series(-5000, 15000) g;
INSERT INTO events VALUES
  ('infinity', 'infinity', 'infinity'),
  ('-infinity', '-infinity', '-infinity'),
  ('4713-01-01 BC', '4713-01-01 00:00:00 BC', '4713-01-01 00:00:00+00 BC'),
  ('5874897-12-31', '294276-12-31 23:59:59', '294276-12-31 23:59:59+00'),
  (NULL, NULL, NULL);
CREATE INDEX events_d ON events USING forein (d);
CREATE INDEX events_ts ON events USING forein (ts);
CREATE INDEX events_tz ON events USING forein (tz);
VACUUM ANALYZE events;

-- date
EXPLAIN (COSTS OFF) SELECT d FROM events WHERE d = '2000-01-01';
SELECT d FROM events WHERE d = '2000-01-01';
SELECT d FROM events WHERE d < '1986-04-24' ORDER BY d;
SELECT d FROM events WHERE d <= '1986-04-24' ORDER BY d DESC LIMIT 2;
SELECT d FROM events WHERE d > '2041-01-25' ORDER BY d;
SELECT d FROM events WHERE d >= '2041-01-25' ORDER BY d DESC;
SELECT count(*) FROM events WHERE d BETWEEN '1999-12-01' AND '1999-12-31';
SELECT d FROM events WHERE d IN ('infinity', '-infinity', '2000-02-29', '2001-02-28') ORDER BY d;
SELECT d FROM events ORDER BY d LIMIT 3;
SELECT d FROM events ORDER BY d DESC LIMIT 3;
SELECT min(d), max(d) FROM events;
SELECT count(*) FROM events WHERE d IS NULL;
-- date vs timestamp: a cross-type member of date_ops (0.4), an index condition
SELECT d FROM events WHERE d = timestamp '2000-01-02 00:00:00';

-- timestamp
EXPLAIN (COSTS OFF) SELECT ts FROM events WHERE ts = '2000-01-01 01:00:01';
SELECT ts FROM events WHERE ts = '2000-01-01 01:00:01';
SELECT ts FROM events WHERE ts = '2000-01-01 01:00:00';
SELECT ts FROM events WHERE ts < '1999-06-06 17:00:00' ORDER BY ts;
SELECT ts FROM events WHERE ts > '2001-09-18' ORDER BY ts DESC LIMIT 3;
SELECT count(*) FROM events WHERE ts >= '2000-01-01' AND ts < '2000-01-02';
SELECT count(*) FROM events WHERE ts <= '2000-01-01';
SELECT ts FROM events ORDER BY ts LIMIT 3;
SELECT ts FROM events ORDER BY ts DESC LIMIT 3;
SELECT ts FROM events WHERE ts = ANY (ARRAY['infinity', '-infinity']::timestamp[]) ORDER BY ts DESC;

-- timestamptz, shown in UTC (far-past values in zones with LMT depend on
-- the tzdata version)
SET TimeZone = 'UTC';
EXPLAIN (COSTS OFF) SELECT tz FROM events WHERE tz = '2000-01-01 00:37:00+00';
SELECT tz FROM events WHERE tz = '2000-01-01 00:37:00+00';
SELECT tz FROM events WHERE tz = '2000-01-01 01:37:00+01';
SELECT tz FROM events WHERE tz BETWEEN '1999-12-31 23:00:00+00' AND '2000-01-01 01:00:00+00' ORDER BY tz DESC;
SELECT count(*) FROM events WHERE tz > '2001-01-20 00:00:00+00';
SELECT count(*) FROM events WHERE tz < '1999-08-26 00:00:00+00';
SELECT tz FROM events ORDER BY tz LIMIT 3;
SELECT tz FROM events ORDER BY tz DESC LIMIT 3;
SET TimeZone = 'Asia/Kolkata';
SELECT tz FROM events WHERE tz = '2000-01-01 05:30:00';
SELECT tz FROM events WHERE tz >= '2000-01-01 05:30:00' ORDER BY tz LIMIT 2;
RESET TimeZone;

SELECT forein_check('events_d', true);
SELECT forein_check('events_ts', true);
SELECT forein_check('events_tz', true);

RESET enable_seqscan;
RESET enable_bitmapscan;

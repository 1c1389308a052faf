--
-- costs: forein's estimates are btree's (btcostestimate), including the CPU
-- charge per level descended, computed from forein's real tree height; the
-- planner therefore chooses plans with a forein index as with a btree.
-- Costs are compared in SQL, so the output holds no machine-dependent
-- numbers.
--

-- The top plan node of a query, from EXPLAIN (FORMAT JSON).
CREATE FUNCTION costs_plan(q text) RETURNS json LANGUAGE plpgsql AS $$
DECLARE
	p json;
BEGIN
	EXECUTE 'EXPLAIN (FORMAT JSON) ' || q INTO p;
	RETURN p -> 0 -> 'Plan';
END $$;
-- A plan's node types, depth first, without index or relation names.
CREATE FUNCTION costs_shape(p json) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	RETURN (p ->> 'Node Type') ||
		coalesce(' (' || (SELECT string_agg(costs_shape(c), ', ')
						  FROM json_array_elements(p -> 'Plans') c) || ')', '');
END $$;
-- The indexes a plan uses.
CREATE FUNCTION costs_indexes(p json) RETURNS text[] LANGUAGE plpgsql AS $$
BEGIN
	RETURN array_remove(ARRAY[p ->> 'Index Name'], NULL) ||
		coalesce((SELECT array_agg(i ORDER BY i)
				  FROM json_array_elements(p -> 'Plans') c,
					   unnest(costs_indexes(c)) i), '{}');
END $$;
-- The query on the forein table (cost_f) against the same query on its
-- btree twin (cost_b): same plan shape, same startup and total cost.
CREATE FUNCTION costs_vs_btree(q text,
	OUT same_shape boolean, OUT same_startup boolean, OUT same_total boolean,
	OUT uses_forein boolean)
LANGUAGE plpgsql AS $$
DECLARE
	f json := costs_plan(format(q, 'cost_f'));
	b json := costs_plan(format(q, 'cost_b'));
BEGIN
	same_shape := costs_shape(f) = costs_shape(b);
	same_startup := (f ->> 'Startup Cost')::float8 = (b ->> 'Startup Cost')::float8;
	same_total := (f ->> 'Total Cost')::float8 = (b ->> 'Total Cost')::float8;
	uses_forein := costs_indexes(f) && ARRAY['cost_f_id'];
END $$;

-- Twins: the same rows (fewer than ANALYZE's sample, so equal statistics),
-- one indexed by forein, one by btree.  forein cuts leaves as btree does
-- (align_leaves = off), so that both have the same pages.
CREATE TABLE cost_f (id int4, v int4, pad text);
INSERT INTO cost_f SELECT g, g % 100, repeat('x', 40) FROM generate_series(1, 20000) g;
CREATE TABLE cost_b (LIKE cost_f);
INSERT INTO cost_b SELECT * FROM cost_f;
CREATE INDEX cost_f_id ON cost_f USING forein (id) WITH (align_leaves = off);
CREATE INDEX cost_b_id ON cost_b USING btree (id);
CREATE TABLE cost_o (x int4);
INSERT INTO cost_o SELECT g * 7 FROM generate_series(1, 500) g;
VACUUM ANALYZE cost_f;
VACUUM ANALYZE cost_b;
VACUUM ANALYZE cost_o;

-- A descent's startup cost is btree's formula with forein's height (the
-- root's level, 0 for a lone leaf): log2(tuples) comparisons plus 50
-- operator costs per page descended, (height + 1) pages.
CREATE FUNCTION costs_descent(idx regclass) RETURNS float8 LANGUAGE sql AS $$
	SELECT round((ceil(log(2, c.reltuples::numeric)) *
				  current_setting('cpu_operator_cost')::numeric +
				  ((SELECT max(level) FROM forein_debug_page_intervals(idx)) + 1) *
				  50 * current_setting('cpu_operator_cost')::numeric), 2)::float8
	FROM pg_class c WHERE c.oid = idx
$$;
SELECT max(level) AS root_level FROM forein_debug_page_intervals('cost_f_id');
SELECT (costs_plan('SELECT * FROM cost_f WHERE id = 4242') ->> 'Startup Cost')::float8
	= costs_descent('cost_f_id') AS startup_is_descent;

-- Point, range, IN list, ORDER BY ... LIMIT, index-only, nested loops:
-- the same plans at the same costs.
SELECT * FROM costs_vs_btree('SELECT * FROM %I WHERE id = 4242');
SELECT * FROM costs_vs_btree('SELECT * FROM %I WHERE id BETWEEN 100 AND 300');
SELECT * FROM costs_vs_btree('SELECT * FROM %I WHERE id IN (5, 500, 5000)');
SELECT * FROM costs_vs_btree('SELECT * FROM %I WHERE v = 3 ORDER BY id LIMIT 5');
SELECT * FROM costs_vs_btree('SELECT id FROM %I WHERE id < 1000');
SELECT * FROM costs_vs_btree('SELECT * FROM %I WHERE id > 100');
SELECT * FROM costs_vs_btree('SELECT * FROM cost_o o JOIN %I t ON t.id = o.x WHERE o.x < 100');
SELECT * FROM costs_vs_btree('SELECT count(*) FROM cost_o o JOIN %I t ON t.id = o.x');

-- A taller tree (fillfactor 10: three levels) is charged one level more,
-- as btree's is.
ALTER INDEX cost_f_id SET (fillfactor = 10);
ALTER INDEX cost_b_id SET (fillfactor = 10);
REINDEX INDEX cost_f_id;
REINDEX INDEX cost_b_id;
SELECT max(level) AS root_level FROM forein_debug_page_intervals('cost_f_id');
SELECT (costs_plan('SELECT * FROM cost_f WHERE id = 4242') ->> 'Startup Cost')::float8
	= costs_descent('cost_f_id') AS startup_is_descent;
SELECT * FROM costs_vs_btree('SELECT * FROM %I WHERE id = 4242');
SELECT * FROM costs_vs_btree('SELECT * FROM cost_o o JOIN %I t ON t.id = o.x WHERE o.x < 100');

-- Plan choice: a forein index on a, a btree index on b.  The planner uses
-- the index of the selective condition, and a sequential scan where the
-- condition selects most of the table.
CREATE TABLE cost_m (a int4, b int4, pad text);
INSERT INTO cost_m SELECT g, g % 1000, repeat('x', 40) FROM generate_series(1, 20000) g;
CREATE INDEX cost_m_a ON cost_m USING forein (a);
CREATE INDEX cost_m_b ON cost_m USING btree (b);
VACUUM ANALYZE cost_m;
SELECT costs_shape(p) AS plan, costs_indexes(p) AS indexes
FROM (VALUES ('SELECT * FROM cost_m WHERE a = 42'),
			 ('SELECT * FROM cost_m WHERE a < 50'),
			 ('SELECT * FROM cost_m WHERE b = 42'),
			 ('SELECT * FROM cost_m WHERE a = 42 AND b > 5'),
			 ('SELECT * FROM cost_m WHERE a > 100 AND b = 42'),
			 ('SELECT * FROM cost_m WHERE a > 100'),
			 ('SELECT * FROM cost_m WHERE a IS NOT NULL'),
			 ('SELECT * FROM cost_m ORDER BY a LIMIT 10')) q(sql),
	 LATERAL costs_plan(q.sql) p;

DROP TABLE cost_f, cost_b, cost_o, cost_m;
DROP FUNCTION costs_vs_btree(text), costs_descent(regclass), costs_indexes(json),
	costs_shape(json), costs_plan(text);

--
-- setup: the extension, its access method and its operator classes
--
CREATE EXTENSION forein;

SELECT amname, amtype FROM pg_am WHERE amname = 'forein';

-- Every operator class, its input type and whether it is the default.
SELECT opf.opfname, opc.opcname, opc.opcintype::regtype, opc.opcdefault
FROM pg_opclass opc JOIN pg_opfamily opf ON opf.oid = opc.opcfamily
WHERE opc.opcmethod = (SELECT oid FROM pg_am WHERE amname = 'forein')
ORDER BY opc.opcname;

-- The integer family carries every cross-type operator (3 types squared,
-- 5 strategies each) and a comparison function per type pair.
SELECT amoplefttype::regtype, amoprighttype::regtype, count(*) AS operators
FROM pg_amop
WHERE amopfamily = (SELECT oid FROM pg_opfamily WHERE opfname = 'integer_ops'
                    AND opfmethod = (SELECT oid FROM pg_am WHERE amname = 'forein'))
GROUP BY 1, 2 ORDER BY 1, 2;
SELECT amproclefttype::regtype, amprocrighttype::regtype, amproc
FROM pg_amproc
WHERE amprocfamily = (SELECT oid FROM pg_opfamily WHERE opfname = 'integer_ops'
                      AND opfmethod = (SELECT oid FROM pg_am WHERE amname = 'forein'))
ORDER BY 1, 2;

-- The other families' cross-type members (0.4): date, timestamp and
-- timestamptz with each other, text with name, float4 with float8.
SELECT opf.opfname, p.amproclefttype::regtype, p.amprocrighttype::regtype, p.amproc,
       (SELECT count(*) FROM pg_amop o
        WHERE o.amopfamily = opf.oid AND o.amoplefttype = p.amproclefttype
          AND o.amoprighttype = p.amprocrighttype) AS operators
FROM pg_amproc p JOIN pg_opfamily opf ON opf.oid = p.amprocfamily
WHERE opf.opfmethod = (SELECT oid FROM pg_am WHERE amname = 'forein')
  AND opf.opfname <> 'integer_ops' AND p.amproclefttype <> p.amprocrighttype
ORDER BY 1, 2, 3;

-- What the access method says it can do.
SELECT p.name, pg_indexam_has_property(a.oid, p.name)
FROM pg_am a,
     unnest(array['can_order', 'can_unique', 'can_multi_col', 'can_exclude',
                  'can_include']) WITH ORDINALITY p(name, ord)
WHERE a.amname = 'forein'
ORDER BY p.ord;

CREATE TABLE props (a int4);
CREATE INDEX props_a ON props USING forein (a);
SELECT p.name, pg_index_has_property('props_a'::regclass, p.name)
FROM unnest(array['clusterable', 'index_scan', 'bitmap_scan',
                  'backward_scan']) WITH ORDINALITY p(name, ord)
ORDER BY p.ord;
SELECT p.name, pg_index_column_has_property('props_a'::regclass, 1, p.name)
FROM unnest(array['asc', 'desc', 'nulls_first', 'nulls_last', 'orderable',
                  'distance_orderable', 'returnable', 'search_array',
                  'search_nulls']) WITH ORDINALITY p(name, ord)
ORDER BY p.ord;
DROP TABLE props;

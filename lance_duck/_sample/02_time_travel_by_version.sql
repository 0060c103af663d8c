-- Row counts of every version, read by version number (time travel).
SELECT 1 AS version, count(*) AS n FROM 'sql_examples/data/sample.lance' AT (VERSION => 1)
UNION ALL SELECT 2, count(*) FROM 'sql_examples/data/sample.lance' AT (VERSION => 2)
UNION ALL SELECT 3, count(*) FROM 'sql_examples/data/sample.lance' VERSION AS OF 3
UNION ALL SELECT 4, count(*) FROM 'sql_examples/data/sample.lance' AT (VERSION => 4)
UNION ALL SELECT 6, count(*) FROM lance_scan('sql_examples/data/sample.lance', version => 6)
ORDER BY version;

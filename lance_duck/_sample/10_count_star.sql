-- count(*) of a whole table is answered from metadata (no data read).
SELECT count(*) FROM 'sql_examples/data/sample.lance' AT (VERSION => 3);

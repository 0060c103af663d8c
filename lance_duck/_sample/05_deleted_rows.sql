-- Rows deleted between version 2 and version 4 (compare two versions of one table).
SELECT status, count(*) AS deleted
FROM (
  SELECT order_id, status FROM 'sql_examples/data/sample.lance' AT (VERSION => 2)
  EXCEPT
  SELECT order_id, status FROM 'sql_examples/data/sample.lance' AT (VERSION => 4)
)
GROUP BY status
ORDER BY status;

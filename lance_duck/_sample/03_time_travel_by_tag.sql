-- The table as tagged before the deletes: cancelled orders were still there.
SELECT status, count(*) AS orders
FROM 'sql_examples/data/sample.lance' AT (VERSION => 'before_deletes')
WHERE status = 'cancelled'
GROUP BY status;

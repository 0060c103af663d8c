-- Orders per status in the latest version (aggregation).
SELECT status, count(*) AS orders, sum(amount) AS revenue
FROM 'sql_examples/data/sample.lance'
GROUP BY status
ORDER BY status;

-- Orders whose status changed between version 4 and version 5 (the update), joined by key.
SELECT old.status AS before, new.status AS after, count(*) AS orders
FROM 'sql_examples/data/sample.lance' AT (VERSION => 4) AS old
JOIN 'sql_examples/data/sample.lance' AT (VERSION => 5) AS new USING (order_id)
WHERE old.status <> new.status
GROUP BY ALL
ORDER BY orders DESC;

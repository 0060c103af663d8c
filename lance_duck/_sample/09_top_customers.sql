-- Top customers by revenue in the latest version, with their first and last order time.
SELECT customer, count(*) AS orders, sum(amount) AS revenue,
       min(ordered_at) AS first_order, max(ordered_at) AS last_order
FROM 'sql_examples/data/sample.lance'
WHERE amount > 100
GROUP BY customer
ORDER BY revenue DESC, customer
LIMIT 5;

-- Filters on a nested struct field.
SELECT shipping.city AS city, count(*) AS orders, round(avg(quantity), 2) AS avg_quantity
FROM 'sql_examples/data/sample.lance'
WHERE shipping.country IN ('FR', 'DE')
GROUP BY ALL
ORDER BY city;

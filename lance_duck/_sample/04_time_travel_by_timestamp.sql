-- The version that was current at a point in time: this instant lies between the commits of
-- versions 2 and 3 of the committed sample table (see data/README.md), so it reads version 2.
SELECT count(*) AS orders, max(order_id) AS last_order
FROM 'sql_examples/data/sample.lance' AT (TIMESTAMP => '2026-11-21 19:56:17.758')

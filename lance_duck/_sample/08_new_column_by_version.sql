-- A column added in version 6: present there, absent from the tagged initial load.
SELECT priority, count(*) AS orders
FROM 'sql_examples/data/sample.lance' AT (VERSION => 'with_priority')
GROUP BY priority
ORDER BY priority;

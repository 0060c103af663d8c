"""Run one long filter in this process and print its answers as JSON (for test_long_filters.py).

``python long_filter_probe.py <table> <engine> <kind> <n>``: engine ``lance_duck``, ``pylance``,
``duckdb`` (``lance_duck.sql``), ``expression`` (a left-deep pyarrow Expression given to
lance_duck), ``expression_again`` (the same, built twice: the second an equal object) or ``spark`` (the Spark source's pushdown reader, one pushed filter per term); kind ``and`` (``i != k``), ``ranges`` (``i != k`` and ``i > -k``), ``or`` (``i = k``), ``mixed`` (an AND of ORs). A crash
(SIGSEGV) shows as the process's return code; the test compares the printed answers.
"""
from __future__ import annotations

import hashlib
import json
import sys


def sql_filter(kind: str, n: int) -> str:
    if kind == "and":
        return " AND ".join(f"i != {3 * k}" for k in range(n))
    if kind == "ranges":      # half inequalities (one NOT IN), half range terms (thousands of conjuncts)
        return " AND ".join(f"i != {3 * k}" if k % 2 else f"i > {-k}" for k in range(n))
    if kind == "or":
        return " OR ".join(f"i = {3 * k}" for k in range(n))
    if kind == "mixed":       # ORs of 10 terms, ANDed; strings too
        groups = [" OR ".join(f"i = {10 * g + j}" for j in range(10)) for g in range(n // 10)]
        return "s != 'c3' AND NOT (" + ") AND NOT (".join(groups) + ")"
    raise ValueError(kind)


def expression(kind: str, n: int):
    import pyarrow.compute as pc
    e = None
    for k in range(n):
        t = pc.field("i") != 3 * k if kind == "and" else pc.field("i") == 3 * k
        e = t if e is None else (e & t if kind == "and" else e | t)
    return e


def main(path: str, engine: str, kind: str, n: int) -> None:
    if engine == "pylance":
        import lance
        ds = lance.dataset(path)
        f = sql_filter(kind, n)
        count, table = ds.count_rows(filter=f), ds.to_table(columns=["i", "s"], filter=f)
    elif engine == "duckdb":
        import lance_duck
        f = sql_filter(kind, n)
        count = lance_duck.sql(f"SELECT count(*) FROM '{path}' WHERE {f}").fetchall()[0][0]
        table = lance_duck.sql(f"SELECT i, s FROM '{path}' WHERE {f}").arrow()
        table = table.read_all() if hasattr(table, "read_all") else table
        table = table.sort_by("i")
    elif engine == "spark":   # the Spark source's pushdown reader, given one pushed filter per term
        from pyspark.sql import datasource as sds
        from pyspark.sql.types import LongType, StringType, StructField, StructType

        from lance_duck.integrations.spark import PushdownLanceReader, parse_options
        assert kind == "and"
        reader = PushdownLanceReader(parse_options({"path": path}),
                                     StructType([StructField("i", LongType()), StructField("s", StringType())]))
        assert list(reader.pushFilters([sds.Not(sds.EqualTo(("i",), 3 * k)) for k in range(n)])) == []
        import pyarrow as pa
        table = pa.Table.from_batches([b for part in reader.partitions() for b in reader.read(part)])
        count = table.num_rows
    else:
        import lance_duck
        ds = lance_duck.dataset(path)
        f = expression(kind, n) if engine.startswith("expression") else sql_filter(kind, n)
        again = expression(kind, n) if engine == "expression_again" else f   # equal, another object
        count, table = ds.count_rows(filter=f), ds.to_table(columns=["i", "s"], filter=again)
    digest = hashlib.sha1(repr((table["i"].to_pylist(), table["s"].to_pylist())).encode()).hexdigest()
    print(json.dumps({"count": count, "rows": table.num_rows, "digest": digest}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]))

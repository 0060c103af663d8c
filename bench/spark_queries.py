"""Spark (local[2]) over lance_duck vs Spark's own Parquet reader on the same rows.

    PYTHONPATH=. python bench/spark_queries.py [--rows 4000000] [--runs 3] [--dir /tmp/ld_bench]
                                               [--batch-sizes 8192,65536,262144,1048576]
                                               [--only 'id range;cat'] [--filter] [--pushdown]
                                               [--conf spark.some.setting=value ...]

The table is bench/duckdb_queries.py's (4 fragments, a delete applied; the same live rows in a
Parquet file). Six queries, each run as users write the read (all columns cross into the JVM:
Spark 4.x pushes no column pruning to Python sources) and with the ``columns`` option; sources
interleaved, medians printed with the ratio to Parquet. Every answer is checked against
Parquet's. A second table gives the CPU seconds each query cost the whole Spark process tree (the
JVM and every Python worker, from /proc; steadier than wall time on a loaded machine). ``--batch-sizes`` instead times the all-columns read at several ``batch_size`` values.
``--filter`` also times the selective queries with their WHERE given as the ``filter`` option
(plus ``columns``); ``--conf`` sets a Spark setting for the session (repeat it for several).

The *floor* is Spark's own cost for a Python data source: ``floor`` below is a trivial source that
yields pre-built Arrow batches (lance_duck's, already in Spark's Arrow types, memory-mapped from
Arrow IPC files written before timing) with the same partitions and batches as ours, so it does no
decoding at all. The gap between lance_duck and the floor is what lance_duck can still win.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

# query -> (SQL over view T, the columns it needs)
QUERIES = {
    "count(*)": ("select count(*) from T", ""),   # `columns` '': no column, row counts only
    "sum(i)": ("select sum(i) from T", "i"),
    "id range, 1000 rows": ("select count(*), sum(f) from T where id between 1000000 and 1000999", "id, f"),
    "cat = 'cat_7'": ("select count(*) from T where cat = 'cat_7'", "cat"),
    "group by cat": ("select cat, count(*), avg(f) from T group by cat order by cat", "cat, f"),
    "full aggregate": ("select count(*), sum(i), avg(f), avg(fn), count(cat), max(txt), "
                       "sum(cast(b as int)), max(ts) from T", "i, f, fn, cat, txt, b, ts"),
}
# the same WHERE as the `filter` option (pylance's dialect): timed with --filter, not in the main table
# (users write the WHERE in Spark SQL; Spark 4.x pushes none to Python sources without opt-in pushdown)
FILTERS = {
    "id range, 1000 rows": "id between 1000000 and 1000999",
    "cat = 'cat_7'": "cat = 'cat_7'",
}


FLOOR_NAME = "ld_floor"


def floor_source():
    """A Python data source that only hands pre-built Arrow batches to Spark (defined here so that
    cloudpickle ships it to the workers by value)."""
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    class FloorReader(DataSourceReader):
        def __init__(self, files, columns):
            self.files, self.columns = files, columns

        def partitions(self):
            return [InputPartition(f) for f in self.files]

        def read(self, partition):
            import pyarrow as pa

            with pa.memory_map(partition.value) as src:
                f = pa.ipc.open_file(src)
                for i in range(f.num_record_batches):
                    yield f.get_batch(i).select(self.columns)

    class Floor(DataSource):
        @classmethod
        def name(cls):
            return FLOOR_NAME

        def _files(self):
            d = self.options["path"]
            return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".arrow"))

        def schema(self):
            import pyarrow as pa
            from pyspark.sql.pandas.types import from_arrow_schema

            with pa.memory_map(self._files()[0]) as src:
                schema = pa.ipc.open_file(src).schema
            cols = self.options.get("columns")
            if cols is not None:
                schema = pa.schema([schema.field(c.strip()) for c in cols.split(",") if c.strip()])
            return from_arrow_schema(schema)

        def reader(self, schema):
            return FloorReader(self._files(), schema.fieldNames())

    return Floor


def build_floor(lance_path: str, out_dir: str, cores: int) -> None:
    """lance_duck's batches for each of its default partitions, in Spark's Arrow types, as IPC files."""
    import pyarrow as pa

    from lance_duck.integrations.spark import parse_options
    from lance_duck.integrations.spark.options import DEFAULT_BATCH_ROWS
    from lance_duck.integrations.spark.partitions import plan_partitions
    from lance_duck.integrations.spark.reader import open_dataset
    from lance_duck.integrations.spark.types import conform, spark_arrow_schema
    from lance_duck.scan.ranges import scan_row_ranges

    os.makedirs(out_dir, exist_ok=True)
    for f in os.listdir(out_dir):
        os.remove(os.path.join(out_dir, f))
    ds = open_dataset(parse_options({"path": lance_path}))
    target = spark_arrow_schema(ds.schema)
    for i, part in enumerate(plan_partitions(ds._snapshot.fragments, cores=cores)):
        with pa.OSFile(os.path.join(out_dir, f"part{i:04d}.arrow"), "wb") as sink, \
                pa.ipc.new_file(sink, target) as w:
            for b in scan_row_ranges(ds, part.pieces, batch_size=DEFAULT_BATCH_ROWS):
                w.write_batch(conform(b, target))


def session(pushdown: bool = False, confs: dict[str, str] | None = None):
    from pyspark.sql import SparkSession

    from lance_duck.integrations.spark import register

    os.environ["PYSPARK_PYTHON"] = sys.executable
    builder = (SparkSession.builder.master("local[2]").appName("lance_duck-bench")
               .config("spark.sql.session.timeZone", "UTC").config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "2").config("spark.driver.memory", "3g")
               .config("spark.sql.python.filterPushdown.enabled", str(pushdown).lower()))
    for k, v in (confs or {}).items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    spark.dataSource.register(floor_source())
    return spark


def tree_cpu() -> float:
    """CPU seconds (user + system, reaped children included) of every process under this one."""
    tick = os.sysconf("SC_CLK_TCK")
    kids: dict[int, list[int]] = {}
    cpu: dict[int, float] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        kids.setdefault(int(fields[1]), []).append(int(d))
        cpu[int(d)] = sum(int(x) for x in fields[11:15]) / tick
    total, stack = 0.0, [os.getpid()]
    while stack:
        for c in kids.get(stack.pop(), ()):
            total += cpu[c]
            stack.append(c)
    return total


def _norm(rows) -> list:
    out = []
    for r in rows:
        out.append(tuple(round(v, 6) if isinstance(v, float) else (str(v) if v is not None else None) for v in r))
    return out


def timed(spark, df, sql: str, cpu: list | None = None) -> tuple[float, list]:
    """Wall seconds of ``sql`` over ``df`` (and, into ``cpu``, the process tree's CPU seconds)."""
    df.createOrReplaceTempView("T")
    c0 = tree_cpu() if cpu is not None else 0.0
    t0 = time.perf_counter()
    rows = spark.sql(sql).collect()
    wall = time.perf_counter() - t0
    if cpu is not None:
        cpu.append(tree_cpu() - c0)
    return wall, _norm(rows)


def main() -> None:
    from duckdb_queries import prepare

    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=4_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", default="/tmp/ld_bench")
    ap.add_argument("--batch-sizes", default=None)
    ap.add_argument("--queries", "--only", default=None,
                    help="';'-separated parts of the names of the queries to run")
    ap.add_argument("--filter", action="store_true",
                    help="also time the selective queries with their WHERE as the `filter` option")
    ap.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                    help="a Spark setting for the session (repeatable)")
    ap.add_argument("--no-floor", action="store_true", help="leave out the floor source")
    ap.add_argument("--pushdown", action="store_true",
                    help="also time lance_duck with Spark's filter pushdown on (pushFilters=true)")
    args = ap.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    lp, pp = prepare(args.dir, args.rows, "2.2")
    load0 = os.getloadavg()
    confs = dict(c.split("=", 1) for c in args.conf)
    spark = session(args.pushdown, confs)
    queries = {k: v for k, v in QUERIES.items()
               if args.queries is None or any(part in k for part in args.queries.split(";"))}

    def lance_df(**opts):
        r = spark.read.format("lance_duck")
        for k, v in opts.items():
            if v is not None:
                r = r.option(k, str(v))
        return r.load(lp)

    if args.batch_sizes:
        sizes = [int(s) for s in args.batch_sizes.split(",")]
        times = {(q, b): [] for q in queries for b in sizes}
        for _ in range(args.runs):
            for q, (sql, _) in queries.items():
                for b in sizes:
                    times[(q, b)].append(timed(spark, lance_df(batch_size=b), sql)[0])
        print(f"{'query':24}" + "".join(f"{b:>12}" for b in sizes))
        for q in queries:
            print(f"{q:24}" + "".join(f"{statistics.median(times[(q, b)]):11.2f}s" for b in sizes))
        return

    sources = {
        "parquet": lambda cols: spark.read.parquet(pp),
        "lance_duck": lambda cols: lance_df(),
        "lance_duck columns": lambda cols: lance_df(columns=cols),
    }
    if args.pushdown:
        sources["pushed"] = lambda cols: lance_df(pushFilters="true")
        sources["pushed columns"] = lambda cols: lance_df(pushFilters="true", columns=cols)
    if args.filter:
        sources["filter"] = lambda cols, q=None: lance_df(columns=cols, filter=FILTERS.get(q))
    if not args.no_floor:
        floor_dir = os.path.join(args.dir, "spark_floor")
        build_floor(lp, floor_dir, spark.sparkContext.defaultParallelism)
        sources["floor"] = lambda cols: spark.read.format(FLOOR_NAME).load(floor_dir)
        sources["floor columns"] = \
            lambda cols: spark.read.format(FLOOR_NAME).option("columns", cols).load(floor_dir)
    # warm-up: one pass of each source (JIT, Python workers)
    for src, make in sources.items():
        timed(spark, make("id"), "select count(*) from T")
        timed(spark, make("id"), "select count(*) from T")
    times = {(q, s): [] for q in queries for s in sources}
    cpus: dict[tuple[str, str], list] = {(q, s): [] for q in queries for s in sources}
    answers = {}
    wrong = []
    for _ in range(args.runs):
        for q, (sql, cols) in queries.items():
            for s, make in sources.items():
                if s == "filter" and q not in FILTERS:
                    continue
                t, rows = timed(spark, make(cols, q) if s == "filter" else make(cols), sql, cpus[(q, s)])
                times[(q, s)].append(t)
                if s == "parquet":
                    answers[q] = rows
                elif rows != answers.get(q):
                    wrong.append((q, s, rows, answers.get(q)))
    print(f"Spark local[2], {args.rows:,} rows, 4 fragments, medians of {args.runs}; "
          f"load average at start {load0[0]:.1f}, at end {os.getloadavg()[0]:.1f} ({os.cpu_count()} cores)"
          + "".join(f"; {k}={v}" for k, v in confs.items()))
    groups = [("lance_duck", "all columns"), ("lance_duck columns", "`columns`")]
    if not args.no_floor:
        groups = [("floor", "floor, all columns"), groups[0], ("floor columns", "floor, `columns`"), groups[1]]
    if args.pushdown:
        groups += [("pushed", "pushed, all columns"), ("pushed columns", "pushed, `columns`")]
    if args.filter:
        groups += [("filter", "`columns` + `filter`")]
    print("| query | Spark + Parquet | " + " | ".join(f"{title} | ratio" for _, title in groups) + " |")
    print("|---" * (2 + 2 * len(groups)) + "|")
    for q in queries:
        p = statistics.median(times[(q, "parquet")])
        cells = []
        for s, _ in groups:
            if not times[(q, s)]:
                cells.append("- | -")
                continue
            t = statistics.median(times[(q, s)])
            cells.append(f"{t:.2f} s | {t / p:.1f}x")
        print(f"| `{q}` | {p:.2f} s | " + " | ".join(cells) + " |")
    print("\nCPU seconds of the Spark process tree (JVM + Python workers) per query, medians:")
    print("| query | Spark + Parquet | " + " | ".join(title for _, title in groups) + " |")
    print("|---" * (2 + len(groups)) + "|")
    for q in queries:
        cells = [f"{statistics.median(cpus[(q, s)]):.2f} s" if cpus[(q, s)] else "-" for s, _ in groups]
        print(f"| `{q}` | {statistics.median(cpus[(q, 'parquet')]):.2f} s | " + " | ".join(cells) + " |")
    for w in wrong:
        print("WRONG ANSWER:", w)
    spark.stop()


if __name__ == "__main__":
    main()

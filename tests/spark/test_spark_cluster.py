"""A standalone Spark cluster on this machine: a master and two workers started with PySpark's own
``spark-class`` (bound to 127.0.0.1), a driver in another process submitting to ``spark://127.0.0.1:<port>``.
Tasks run in the workers' JVMs and Python workers, so plans, options, partitions and errors cross processes
as on a real cluster. Started and stopped by the test itself, bounded in time."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

import lance

ROOT = Path(__file__).resolve().parents[2]

DRIVER = r'''
import json, sys
from pyspark.sql import SparkSession
from lance_duck.integrations.spark import register

master, path = sys.argv[1], sys.argv[2]
spark = (SparkSession.builder.master(master).appName("lance_duck-cluster-test")
         .config("spark.executor.memory", "512m").config("spark.executor.cores", "1")
         .config("spark.cores.max", "2").config("spark.ui.enabled", "false")
         .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
         .config("spark.sql.session.timeZone", "UTC").config("spark.sql.python.filterPushdown.enabled", "true")
         .getOrCreate())
register(spark)
out = {}
df = spark.read.format("lance_duck").option("partition_rows", "40").load(path)
out["partitions"] = df.rdd.getNumPartitions()
out["rows"] = sorted(r.id for r in df.select("id").collect())
out["v2_count"] = spark.read.format("lance").option("version", "2").load(path).count()
out["filtered"] = sorted(r.id for r in spark.read.format("lance_duck").option("pushFilters", "true")
                         .load(path).where("id % 3 = 1 and id < 120").select("id").collect())
try:
    spark.read.format("lance_duck").option("version", "99").load(path).count()
    out["error"] = None
except Exception as e:
    out["error"] = str(e)
print("RESULT " + json.dumps(out))
spark.stop()
'''


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _spark_class() -> str:
    import pyspark
    return str(Path(pyspark.__file__).parent / "bin" / "spark-class")


def _wait_for(proc: subprocess.Popen, log: Path, needle: str, deadline: float) -> None:
    while time.monotonic() < deadline:
        if needle in log.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            raise AssertionError(f"{log.name} exited: {log.read_text(errors='replace')[-2000:]}")
        time.sleep(0.5)
    raise AssertionError(f"{needle!r} not seen in {log.name} in time: {log.read_text(errors='replace')[-2000:]}")


@pytest.fixture
def cluster(tmp_path):
    """spark://127.0.0.1:<port> with two workers of one core each; every process stopped afterwards."""
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", SPARK_LOG_DIR=str(tmp_path), PYSPARK_PYTHON=sys.executable,
               SPARK_WORKER_DIR=str(tmp_path / "work"), PYTHONPATH=str(ROOT),
               SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false")   # no REST server on the fixed port 6066
    port, procs = _free_port(), []
    deadline = time.monotonic() + 300
    try:
        log = tmp_path / "master.log"
        procs.append(subprocess.Popen(
            [_spark_class(), "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
             "--webui-port", str(_free_port())], stdout=log.open("w"), stderr=subprocess.STDOUT, env=env))
        _wait_for(procs[0], log, "I have been elected leader", deadline)
        for i in range(2):
            wlog = tmp_path / f"worker{i}.log"
            procs.append(subprocess.Popen(
                [_spark_class(), "org.apache.spark.deploy.worker.Worker", f"spark://127.0.0.1:{port}",
                 "--host", "127.0.0.1", "--cores", "1", "--memory", "1g", "--webui-port", str(_free_port()),
                 "--work-dir", str(tmp_path / f"work{i}")], stdout=wlog.open("w"), stderr=subprocess.STDOUT, env=env))
        for i in range(2):
            _wait_for(procs[1 + i], tmp_path / f"worker{i}.log", "Successfully registered with master", deadline)
        yield f"spark://127.0.0.1:{port}", env, tmp_path
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()


def test_a_standalone_cluster_reads_what_pylance_reads(cluster, history_table):
    master, env, logs = cluster
    r = subprocess.run([sys.executable, "-c", DRIVER, master, history_table], capture_output=True, text=True,
                       env=env, timeout=900)   # minutes on a loaded 2-core machine; ~1 on a quiet one
    line = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
    assert line, r.stderr[-4000:]
    out = json.loads(line[0][len("RESULT "):])
    ds = lance.dataset(history_table)
    assert out["rows"] == sorted(ds.to_table(columns=["id"])["id"].to_pylist())
    assert out["partitions"] > 1
    assert out["v2_count"] == lance.dataset(history_table, version=2).count_rows()
    assert out["filtered"] == sorted(ds.to_table(columns=["id"], filter="id % 3 = 1 and id < 120")["id"].to_pylist())
    assert out["error"] is not None and "99" in out["error"]
    # both workers ran an executor for the application (its directory and logs under the worker's work dir)
    for i in range(2):
        apps = list((logs / f"work{i}").glob("app-*/*/stderr"))
        assert apps and any(p.stat().st_size for p in apps), f"worker {i} ran no executor"

"""A local S3 endpoint (moto's server) that pylance writes to and lance_duck reads from via s3fs."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import lance_duck

try:
    import lance
    import moto.server as moto_server
    import s3fs  # noqa: F401
except ImportError as exc:  # a missing test dependency must fail, not skip every S3 comparison
    raise RuntimeError(f"the S3 tests need pylance, moto[server] and s3fs ({exc}): pip install -e '.[test]'") from exc

BUCKET = "lance-duck-tests"
REGION = "us-east-1"


@pytest.fixture(scope="session")
def s3_endpoint() -> str:
    import boto3
    srv = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0)
    srv.start()
    host, port = srv.get_host_and_port()
    url = f"http://{host}:{port}"
    boto3.client("s3", endpoint_url=url, aws_access_key_id="test", aws_secret_access_key="test",
                 region_name=REGION).create_bucket(Bucket=BUCKET)
    yield url
    srv.stop()


@pytest.fixture(scope="session")
def pylance_options(s3_endpoint) -> dict[str, str]:
    """Storage options as a pylance user writes them (object_store keys)."""
    return {"aws_access_key_id": "test", "aws_secret_access_key": "test", "aws_region": REGION,
            "aws_endpoint": s3_endpoint, "allow_http": "true"}


@pytest.fixture(scope="session")
def fsspec_style_options(s3_endpoint) -> dict:
    """The same credentials as s3fs arguments."""
    return {"key": "test", "secret": "test", "endpoint_url": s3_endpoint, "client_kwargs": {"region_name": REGION}}


def table(n: int, start: int = 0) -> pa.Table:
    i = np.arange(start, start + n)
    return pa.table({
        "id": pa.array(i, pa.int64()),
        "x": pa.array([None if k % 9 == 0 else k * 0.25 for k in i], pa.float64()),
        "name": pa.array([None if k % 11 == 0 else f"name-{k % 37}" for k in i]),
        "tags": pa.array([[f"t{k % 3}"] * int(k % 4) for k in i], pa.list_(pa.string())),
        "s": pa.array([{"a": int(k), "b": float(k) / 3} for k in i]),
    })


@pytest.fixture(scope="session")
def s3_table(pylance_options) -> str:
    """Four versions on S3: write (3 fragments), delete, append, add a column; tag 'v2'."""
    uri = f"s3://{BUCKET}/history.lance"
    lance.write_dataset(table(3000), uri, storage_options=pylance_options, max_rows_per_file=1000)
    ds = lance.dataset(uri, storage_options=pylance_options)
    ds.delete("id % 7 = 3 or (id >= 1200 and id < 1300)")
    lance.write_dataset(table(500, 3000), uri, mode="append", storage_options=pylance_options)
    ds = lance.dataset(uri, storage_options=pylance_options)
    ds.add_columns({"y": "id * 2"})
    ds.tags.create("v2", 2)
    return uri


@pytest.fixture(scope="session")
def counting_proxy(s3_endpoint):
    """A counting proxy (no added latency) in front of the endpoint; ``reset()`` it before measuring."""
    from .latency_proxy import LatencyProxy
    host, port = s3_endpoint.rsplit("/", 1)[1].split(":")
    with LatencyProxy(host, int(port), latency=0.0) as proxy:
        yield proxy


@pytest.fixture
def proxied_options(pylance_options, counting_proxy) -> dict[str, str]:
    """Options that reach the endpoint through the counting proxy; footer cache emptied."""
    lance_duck.clear_caches()
    counting_proxy.reset()
    return dict(pylance_options, aws_endpoint=counting_proxy.url)


@pytest.fixture
def s3fs_proxied_options(proxied_options, counting_proxy) -> dict:
    """The same store through the counting proxy as s3fs arguments: these options read through s3fs
    (pylance-style keys alone read through pyarrow's S3 client, io/arrow_s3.py)."""
    return {"key": "test", "secret": "test", "endpoint_url": counting_proxy.url, "client_kwargs": {"region_name": REGION}}

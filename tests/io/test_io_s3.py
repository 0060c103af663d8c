"""Tables on S3 (a local endpoint) read through s3fs equal pylance's reads of the same URIs."""
from __future__ import annotations

import duckdb
import pytest

import lance_duck
from lance_duck.errors import InvalidArgumentError
from lance_duck.io.storage_options import fsspec_options

from ..scan.conftest import assert_tables_equal
from .conftest import lance


def test_every_version_equals_pylance_with_pylance_style_options(s3_table, pylance_options):
    ref = lance.dataset(s3_table, storage_options=pylance_options)
    assert [v["version"] for v in ref.versions()] == [1, 2, 3, 4]
    for v in (1, 2, 3, 4, "v2"):
        theirs = lance.dataset(s3_table, version=v, storage_options=pylance_options)
        ours = lance_duck.dataset(s3_table, version=v, storage_options=pylance_options)
        assert ours.version == theirs.version
        assert ours.count_rows() == theirs.count_rows()
        assert_tables_equal(ours.to_table(with_row_id=True), theirs.to_table(with_row_id=True))


def test_fsspec_style_options_read_the_same_table(s3_table, pylance_options, fsspec_style_options):
    ours = lance_duck.dataset(s3_table, storage_options=fsspec_style_options)
    ref = lance.dataset(s3_table, storage_options=pylance_options)
    assert_tables_equal(ours.to_table(), ref.to_table())


def test_filter_projection_and_take_over_s3_equal_pylance(s3_table, pylance_options):
    ours = lance_duck.dataset(s3_table, storage_options=pylance_options)
    ref = lance.dataset(s3_table, storage_options=pylance_options)
    for flt in ["id between 900 and 1500 and name is not null", "s.a % 5 = 0", "y > 6000"]:
        assert_tables_equal(ours.to_table(columns=["name", "s", "id"], filter=flt),
                            ref.to_table(columns=["name", "s", "id"], filter=flt))
    idx = [0, 5, 999, 1000, 2500, 2980]
    assert_tables_equal(ours.take(idx, columns=["id", "tags"]), ref.take(idx, columns=["id", "tags"]))


def test_duckdb_time_travel_on_s3_equals_pylance(s3_table, pylance_options):
    ref = lance.dataset(s3_table, version=2, storage_options=pylance_options).to_table()
    opts = ", ".join(f"'{k}': '{v}'" for k, v in pylance_options.items())
    got = lance_duck.sql(f"select count(*), sum(id), max(name) from lance_scan('{s3_table}', version => 2, "
                         f"storage_options => {{{opts}}})").fetchall()
    con = duckdb.connect()
    want = con.sql("select count(*), sum(id), max(name) from ref").fetchall()
    assert got == want
    assert want[0][0] == ref.num_rows


def test_one_column_scan_fetches_a_fraction_of_the_table_bytes(pylance_options, proxied_options, counting_proxy):
    import numpy as np
    import pyarrow as pa
    uri = "s3://lance-duck-tests/wide.lance"
    n = 100_000
    rng = np.random.default_rng(3)
    lance.write_dataset(pa.table({"id": np.arange(n), "v": rng.random(n),
                                  "blob": pa.array([rng.bytes(40) for _ in range(n)])}),
                        uri, storage_options=pylance_options)
    ds = lance_duck.dataset(uri, storage_options=proxied_options)
    fs = ds._snapshot.io.fs
    total = sum(f["size"] for f in fs.find(uri.split("://", 1)[1] + "/data", detail=True).values())
    counting_proxy.reset()
    got = ds.to_table(columns=["v"])
    fetched = counting_proxy.reset().bytes_out
    assert got.equals(lance.dataset(uri, storage_options=pylance_options).to_table(columns=["v"]))
    assert type(fs).__name__ == "ArrowS3"      # pylance-style options: pyarrow's S3 client
    assert 0 < fetched < total / 3, (fetched, total)


def test_missing_table_on_s3_is_file_not_found_naming_it(pylance_options):
    with pytest.raises(FileNotFoundError, match="nothing-here.lance"):
        lance_duck.dataset("s3://lance-duck-tests/nothing-here.lance", storage_options=pylance_options)


def test_object_store_keys_translate_to_fsspec_arguments():
    got = fsspec_options("s3://b/t.lance", {"aws_access_key_id": "k", "aws_secret_access_key": "s",
                                            "aws_region": "eu-west-1", "aws_endpoint": "http://h:1",
                                            "allow_http": "true", "aws_skip_signature": "true",
                                            "aws_virtual_hosted_style_request": "true", "anon": False})
    assert got == {"key": "k", "secret": "s", "client_kwargs": {"region_name": "eu-west-1"},
                   "endpoint_url": "http://h:1", "anon": False,
                   "config_kwargs": {"s3": {"addressing_style": "virtual"}}}
    assert fsspec_options("gs://b/t", {"google_service_account": "/k.json"}) == {"token": "/k.json"}
    assert fsspec_options("az://c/t", {"azure_storage_account_name": "a", "azure_storage_account_key": "k"}) \
        == {"account_name": "a", "account_key": "k"}
    assert fsspec_options("memory://t", {"x": 1}) == {"x": 1}


def test_unknown_object_store_key_is_refused_by_name():
    with pytest.raises(InvalidArgumentError, match="aws_made_up_option"):
        fsspec_options("s3://b/t.lance", {"aws_made_up_option": "1"})
    with pytest.raises(InvalidArgumentError, match="aws_made_up_option"):
        lance_duck.dataset("s3://b/t.lance", storage_options={"aws_made_up_option": "1"})

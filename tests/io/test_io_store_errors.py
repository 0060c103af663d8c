"""Object stores without credentials or without their fsspec package: our errors, naming the URI and the fix."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import lance_duck
from lance_duck.errors import CredentialsError, ObjectStoreError, UnsupportedFeatureError

from .conftest import BUCKET, REGION

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def no_aws_credentials(monkeypatch, tmp_path):
    """An environment in which botocore finds no credentials (and never asks an instance metadata service)."""
    for key in list(os.environ):
        if key.startswith("AWS_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))


def test_s3_without_credentials_names_the_uri_and_the_options(s3_table, s3_endpoint, no_aws_credentials):
    opts = {"aws_endpoint": s3_endpoint, "allow_http": "true", "aws_region": REGION}
    with pytest.raises(CredentialsError) as err:
        lance_duck.dataset(s3_table, storage_options=opts)
    msg = str(err.value)
    assert f"s3://{BUCKET}/history.lance" in msg and "aws_access_key_id" in msg and "AWS_ACCESS_KEY_ID" in msg
    assert isinstance(err.value, PermissionError) and isinstance(err.value, ObjectStoreError)


def test_s3_with_credentials_still_reads(s3_table, pylance_options):
    import lance
    assert lance_duck.dataset(s3_table, storage_options=pylance_options).count_rows() == \
        lance.dataset(s3_table, storage_options=pylance_options).count_rows()


def test_cli_without_credentials_is_one_line(s3_table, s3_endpoint, no_aws_credentials):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-m", "lance_duck", "describe", s3_table, "-s", f"aws_endpoint={s3_endpoint}",
                        "-s", "allow_http=true", "-s", f"aws_region={REGION}"], capture_output=True, text=True,
                       env=env, timeout=120)
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "no credentials" in r.stderr, r.stderr


@pytest.mark.parametrize("uri,extra", [("s3://b/t.lance", "s3"), ("gs://b/t.lance", "gcs"),
                                       ("az://c/t.lance", "azure"), ("abfs://c/t.lance", "azure")])
def test_a_missing_filesystem_package_names_the_extra(uri, extra):
    """The store's fsspec package made unimportable in a child process: our error, naming the extra."""
    module = {"s3": "s3fs", "gcs": "gcsfs", "azure": "adlfs"}[extra]
    code = (f"import sys; sys.modules[{module!r}] = None\n"
            "import lance_duck\n"
            f"try:\n    lance_duck.dataset({uri!r})\n"
            "except lance_duck.UnsupportedFeatureError as e:\n    print('REFUSED', e)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert r.stdout.startswith("REFUSED"), r.stderr
    assert uri in r.stdout and f"pip install 'lance-duck[{extra}]'" in r.stdout


def test_missing_filesystem_error_is_ours():
    from lance_duck.io.fs import missing_filesystem
    err = missing_filesystem("s3://b/t", ImportError("Install s3fs to access S3"))
    assert isinstance(err, UnsupportedFeatureError) and "lance-duck[s3]" in str(err)

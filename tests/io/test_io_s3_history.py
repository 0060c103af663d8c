"""History on S3: ``versions()`` and ``asof`` fetch manifests concurrently through s3fs, equal to pylance."""
from __future__ import annotations

from datetime import timedelta

import pytest

import lance_duck
from lance_duck.errors import VersionNotFoundError

from .conftest import lance


def test_versions_over_s3_equal_pylance(s3_table, pylance_options):
    ours = lance_duck.dataset(s3_table, storage_options=pylance_options).versions()
    theirs = lance.dataset(s3_table, storage_options=pylance_options).versions()
    assert len(ours) == 4
    assert ours == theirs


def test_asof_over_s3_equals_pylance(s3_table, pylance_options):
    versions = lance.dataset(s3_table, storage_options=pylance_options).versions()
    for v in versions:
        for cutoff in (v["timestamp"], v["timestamp"] + timedelta(microseconds=1)):
            try:
                want = lance.dataset(s3_table, asof=cutoff, storage_options=pylance_options).version
            except ValueError:
                with pytest.raises(VersionNotFoundError):
                    lance_duck.dataset(s3_table, asof=cutoff, storage_options=pylance_options)
                continue
            assert lance_duck.dataset(s3_table, asof=cutoff, storage_options=pylance_options).version == want

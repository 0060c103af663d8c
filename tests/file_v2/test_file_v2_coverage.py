"""Every layout and compression the reader supports occurs in the fixtures (and decodes)."""
from __future__ import annotations

from .conftest import SPECS, refused

from lance_duck.trace import decode_trace

REQUIRED = {
    # layouts
    "layout:miniblock", "layout:miniblock:large", "layout:constant:allnull", "layout:constant:inline",
    "layout:constant:valuebuf", "layout:fullzip:var", "layout:fullzip:var:def", "layout:fullzip:fixed",
    "layout:fullzip:fixed:def", "layout:fullzip:var:rep:def", "layout:fullzip:fixed:rep:def",
    "constant:compressed-levels", "layout:blob",
    # mini-block value encodings
    "mb:flat", "mb:inline_bitpacking", "mb:variable", "mb:fsst", "mb:rle", "mb:byte_stream_split",
    "mb:general", "mb:fixed_size_list", "mb:fixed_size_list+validity", "mb:packed_struct", "dictionary",
    # levels and whole buffers
    "levels:out_of_line_bitpacking", "levels:rle", "block:variable", "block:inline_bitpacking",
    "block:general", "block:flat", "block:out_of_line_bitpacking", "block:rle",
    # full-zip per value
    "fz:variable", "fz:fsst", "fz:general", "fz:flat", "fz:fixed_size_list",
    "fz:fixed_size_list+validity", "fz:variable_packed_struct",
    # general compression schemes: 1 = lz4, 2 = zstd
    "general:1", "general:2",
    # file format 2.3: sparse structures (one layer, nested), their integer codecs
    "layout:sparse23", "layout:sparse23:nested", "sparse23:delta", "sparse23:dictionary",
}


def test_fixtures_exercise_every_supported_layout_and_compression(v2_datasets):
    with decode_trace() as trace:
        for name, (_, versions) in SPECS.items():
            for v in versions:
                fx = v2_datasets(name, v)
                fx.reader().read_fields([f for f in fx.fields() if f.name not in refused(name, v)])
    seen = trace.names()
    missing = REQUIRED - seen
    assert not missing, f"never exercised: {sorted(missing)}; seen: {sorted(seen)}"

"""Regenerate tests/data/pylance14_flags/ with pylance 14.0.2 (the test oracle): one tiny table per
reader feature flag lance_duck learnt for pylance 14 (see README.md there).

    python tests/data/make_flag_goldens.py

``flag_16384.lance`` is pylance's own output (managed blobs set the flag). No pylance 14.0.2 API
sets 128, 1024 or 2048 on a table of its own, so those three are a pylance table whose newest
manifest gets the bit (and, for 1024, its writer bit, without which pylance calls it corrupt).
"""
import os
import shutil
import struct
import sys

import lance
import pyarrow as pa

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(os.path.dirname(HERE)), os.path.join(os.path.dirname(HERE), "table")]

from lance_duck.table.manifest import decode_manifest, encode_manifest  # noqa: E402
import lance_pylance14 as P14  # noqa: E402

OUT = os.path.join(HERE, "pylance14_flags")


def base(path: str) -> None:
    t = pa.table({"id": pa.array(range(48), pa.int64()), "name": [None if i % 5 == 0 else f"n{i % 7}" for i in range(48)]})
    ds = lance.write_dataset(t, path, max_rows_per_file=24)
    ds.create_scalar_index("id", "BTREE")
    ds.delete("id % 9 = 4")


def set_bits(path: str, reader: int, writer: int) -> None:
    name = sorted(os.listdir(os.path.join(path, "_versions")))[0]   # V2 names: newest first
    mpath = os.path.join(path, "_versions", name)
    raw = open(mpath, "rb").read()
    m = decode_manifest(raw, mpath)
    (pos,) = struct.unpack_from("<q", raw, len(raw) - 16)
    m.reader_feature_flags |= reader
    m.writer_feature_flags |= writer
    open(mpath, "wb").write(encode_manifest(m, raw[:pos]))


def main() -> None:
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT)
    for bit, writer in ((128, 128), (1024, 1024), (2048, 0)):
        path = os.path.join(OUT, f"flag_{bit}.lance")
        base(path)
        set_bits(path, bit, writer)
        lance.dataset(path).to_table()      # pylance 14.0.2 opens it
    P14.make_managed_blob_table(os.path.join(OUT, "flag_16384.lance"))


if __name__ == "__main__":
    main()

"""Regenerate lance_duck/_proto/*_pb2.py and their type stubs *_pb2.pyi from protos/*.proto (needs grpcio-tools).

Usage: python scripts/gen_protos.py [--out DIR]
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTOS = ROOT / "protos"


def generate(out: Path) -> list[Path]:
    from grpc_tools import protoc
    import grpc_tools

    include = Path(grpc_tools.__file__).parent / "_proto"
    out.mkdir(parents=True, exist_ok=True)
    files = sorted(PROTOS.glob("*.proto"))
    args = ["protoc", f"-I{PROTOS}", f"-I{include}", f"--python_out={out}", f"--pyi_out={out}"] + [str(f) for f in files]
    if protoc.main(args) != 0:
        raise SystemExit("protoc failed")
    generated = sorted(out.glob("*_pb2.py")) + sorted(out.glob("*_pb2.pyi"))
    # protoc emits `import file_pb2`; make the imports package-relative.
    names = {p.stem for p in generated}
    for path in generated:
        text = path.read_text()
        text = re.sub(r"^import (\w+_pb2) as", lambda m: f"from . import {m.group(1)} as"
                      if m.group(1) in names else m.group(0), text, flags=re.M)
        path.write_text(text)
    init = out / "__init__.py"
    init.write_text('"""Generated protobuf modules (scripts/gen_protos.py). Do not edit."""\n')
    return generated


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=ROOT / "lance_duck" / "_proto")
    ns = parser.parse_args()
    for p in generate(ns.out):
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())

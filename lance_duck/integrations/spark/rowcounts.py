"""Row-count-only batches that cost Spark no per-row Python work.

A read with no column (``columns=''``, the exact ``count(*)``) yields batches of rows and no
column. PySpark 4.3's worker wraps every batch a Python source yields into one struct column
(``pyspark.sql.conversion.ArrowBatchTransformer.wrap_struct``) and builds the zero-field case
row by row, ``pa.array([{}] * num_rows)``: about 0.5 s of CPU per million rows (measured), most
of a count's cost. :func:`install` makes that one case vectorised: the struct array of
``num_rows`` valid empty rows is made from its type and length (the same array, equal by
``Array.equals``); batches with columns still go to PySpark's own code, unchanged.
"""
from __future__ import annotations

from typing import Any

import pyarrow as pa

_EMPTY = pa.struct([])


def empty_structs(n: int) -> pa.Array:
    """``pa.array([{}] * n)`` without a Python loop: ``n`` valid rows of a struct with no field."""
    return pa.Array.from_buffers(_EMPTY, n, [None], null_count=0)


def install() -> None:
    """Route PySpark's zero-column ``wrap_struct`` through :func:`empty_structs` (once per process).

    Does nothing when this PySpark has no such method (another version: its own code runs).
    """
    try:
        from pyspark.sql.conversion import ArrowBatchTransformer
    except ImportError:
        return
    original: Any = ArrowBatchTransformer.__dict__.get("wrap_struct")
    if not isinstance(original, staticmethod) or getattr(original.__func__, "_lance_duck", False):
        return
    wrapped = original.__func__

    def wrap_struct(batch: pa.RecordBatch) -> pa.RecordBatch:
        if batch.num_columns == 0 and batch.num_rows > 0:   # (PySpark types 0 rows as null)
            return pa.RecordBatch.from_arrays([empty_structs(batch.num_rows)], ["_0"])
        return wrapped(batch)

    wrap_struct._lance_duck = True  # type: ignore[attr-defined]
    wrap_struct.__doc__ = wrapped.__doc__
    ArrowBatchTransformer.wrap_struct = staticmethod(wrap_struct)  # type: ignore[method-assign]

"""The ``lance-duck`` command (``main.py``; ``python -m lance_duck``), its output writers (``output.py``:
CSV / JSON / Parquet / table) and terminal tables (``render.py``)."""
from .main import example_queries, main

__all__ = ["example_queries", "main"]

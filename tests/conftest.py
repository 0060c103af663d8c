"""Project-wide test settings. Fixtures live in the conftest.py of each test folder."""
import os

# pylance and pyarrow use all cores by default; keep CI predictable on a 2-core machine.
os.environ.setdefault("LANCE_CPU_THREADS", "2")

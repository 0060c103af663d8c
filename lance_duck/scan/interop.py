"""How the scan objects meet pyarrow's own machinery without crashing it.

Three mechanisms:

* **Arrow C stream export** (``__arrow_c_stream__``): a dataset, scanner or fragment hands
  its scan over as an Arrow stream, so ``pa.table(ds)``, ``pa.RecordBatchReader.from_stream(ds)``,
  ``pyarrow.dataset.write_dataset(ds, ...)`` (which prefers the stream protocol to its Dataset
  path), polars and pandas read it through lance_duck.
* **A placeholder native state**: pyarrow's C++ functions (``Scanner.from_dataset``, Acero's
  scan node, ``UnionDataset``) dereference a Dataset's native object, which a Python subclass
  cannot provide for Lance data. ``LanceDataset`` therefore initialises its
  ``FileSystemDataset`` base with one fragment on a filesystem that refuses every access with
  :data:`NATIVE_SCAN_MESSAGE` -- pyarrow raises that error instead of dereferencing a null
  pointer, and never sees rows it could get wrong. DuckDB is unaffected: it calls the
  dataset's Python ``scanner()`` and keeps its projection and filter pushdown.
* **Batches an engine holds stay referenced by the stream** (:func:`engine_reader`). A batch's
  buffers wrap numpy memory, and releasing the last reference to one takes the GIL. DuckDB's worker
  threads release the batches they scanned as their work ends -- possibly while the main thread,
  holding the GIL, destroys the connection and waits for those very threads (DuckDB 1.5 before its
  2.0 release: a connection dropped right after ``execute(...).fetchone()`` hung for good, seen in
  the test suite and reproduced in a loop under load). The stream keeps the last batches it handed
  over referenced until shortly after it ended, so the engine's threads only drop a count.
"""
from __future__ import annotations

import atexit
import os
import threading
import time
from collections import deque
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, NoReturn

import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.fs as pafs

from .. import _state
from ..errors import InvalidArgumentError

if TYPE_CHECKING:
    from .scanner import LanceScanner


class ScansItself:
    """Marks a dataset whose ``scanner()`` makes a :class:`~lance_duck.scan.scanner.LanceScanner`
    (LanceDataset): what ``LanceScanner.from_dataset`` routes to it, pyarrow's constructors taking
    the others. (Here, not in the scanner module: a dataset is opened without loading the scans.)"""

    scanner: Callable[..., LanceScanner]

NATIVE_SCAN_MESSAGE = (
    "pyarrow's own scan engine cannot read the Lance table {uri} (it is reached by "
    "pyarrow.dataset.Scanner.from_dataset/from_fragment, acero.ScanNodeOptions, UnionDataset, and "
    "join/join_asof with a Lance dataset on the right). Scan with lance_duck instead: "
    "ds.scanner(columns=..., filter=...) (a pyarrow Scanner: to_table, to_reader, to_batches), "
    "ds.to_table(...); or pass ds, a scanner or a fragment wherever an Arrow stream is accepted: "
    "pa.table(ds), pa.RecordBatchReader.from_stream(ds), pyarrow.dataset.write_dataset(ds, ...), "
    "acero.RecordBatchReaderSourceNodeOptions(ds.scanner().to_reader()); to join or union with "
    "pyarrow datasets, materialise first: pyarrow.dataset.dataset(ds.to_table(...))"
)


class _RefusingHandler(pafs.FileSystemHandler):
    """A filesystem whose every operation raises :class:`InvalidArgumentError`."""

    def __init__(self, uri: str) -> None:
        self._uri = uri

    def _refuse(self, *args: Any, **kwargs: Any) -> NoReturn:
        _refused_now()
        raise InvalidArgumentError(NATIVE_SCAN_MESSAGE.format(uri=self._uri))

    def __eq__(self, other: object) -> bool:
        return self is other

    def __ne__(self, other: object) -> bool:
        return self is not other

    __hash__ = object.__hash__

    def get_type_name(self) -> str:
        return "lance_duck"

    def normalize_path(self, path: str) -> str:
        return path

    get_file_info = get_file_info_selector = _refuse
    create_dir = delete_dir = delete_dir_contents = delete_root_dir_contents = delete_file = _refuse
    move = copy_file = _refuse
    open_input_stream = open_input_file = open_output_stream = open_append_stream = _refuse


#: After a refusal, how long the interpreter's exit waits for pyarrow's threads to leave the handler.
EXIT_GRACE_SECONDS = 0.25
_last_refusal: float | None = None
_exit_lock = threading.Lock()


def _refused_now() -> None:
    """Note a refusal. pyarrow's scan calls the handler from its own threads, and one may still be
    about to call it (or drop it) after the error reached the caller; a C++ thread taking the GIL
    while the interpreter finalises aborts the process ("terminate called without an active
    exception"). So the first refusal registers an exit hook that lets such calls finish."""
    global _last_refusal
    with _exit_lock:
        if _last_refusal is None:
            atexit.register(_let_native_threads_finish)
        _last_refusal = time.monotonic()


def _let_native_threads_finish() -> None:
    while _last_refusal is not None:
        left = _last_refusal + EXIT_GRACE_SECONDS - time.monotonic()
        if left <= 0:
            return
        time.sleep(left)


def placeholder_native_state(schema: pa.Schema, uri: str) -> tuple[list[Any], pa.Schema, Any, Any]:
    """Arguments for ``pyarrow.dataset.FileSystemDataset.__init__``: ``schema``, one fragment,
    and a filesystem that refuses to be read (building them performs no I/O)."""
    fs = pafs.PyFileSystem(_RefusingHandler(uri))
    fmt = pads.IpcFileFormat()
    return [fmt.make_fragment("lance_duck/not-readable-by-pyarrow", fs)], schema, fmt, fs


def refuse_native_scan(uri: str) -> InvalidArgumentError:
    """The error raised where pyarrow would start its own scan of a Lance dataset."""
    return InvalidArgumentError(NATIVE_SCAN_MESSAGE.format(uri=uri))


def export_stream(reader: pa.RecordBatchReader, requested_schema: object | None = None) -> object:
    """``reader`` as an Arrow C stream PyCapsule (``requested_schema`` as the protocol defines)."""
    return reader.__arrow_c_stream__(requested_schema)


#: batches a stream keeps referenced after handing them over: one per engine thread (DuckDB runs
#: one per core, each holding the batch it scans) and two more
HELD_BATCHES = (os.cpu_count() or 1) + 2
#: seconds the last batches of an ended stream stay referenced at least (DuckDB's threads release
#: theirs within milliseconds of the query's end). They are dropped by a later stream's end: in a
#: program querying one query at a time, the connection of the earlier one is gone by then.
#: Longer, or more streams kept, costs throughput: a loop of 4M-row one-column scans through a
#: reader took 30-38 ms (median) with 2 s and 64 streams, 10-11 ms with 0.1 s and 4 streams as
#: with none (memory kept is memory the allocator cannot hand out again)
RELEASE_AFTER = 0.1
#: ended streams whose batches are kept at most (the oldest go first beyond it)
KEPT_STREAMS = 4


class HandedOver:
    """The last batches of ended streams, each set kept :data:`RELEASE_AFTER` seconds, dropped by
    a later stream's end on the thread running it (a thread running Python holds the GIL)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: deque[tuple[float, list[pa.RecordBatch]]] = deque()

    def keep(self, batches: list[pa.RecordBatch]) -> None:
        """Keep ``batches`` for a while; drop the sets kept longer than that."""
        now = time.monotonic()
        expired = []
        with self._lock:
            while self._kept and (self._kept[0][0] <= now or len(self._kept) >= KEPT_STREAMS):
                expired.append(self._kept.popleft())
            if batches:
                self._kept.append((now + RELEASE_AFTER, batches))
        del expired                     # (freed here, outside the lock)

    def latest(self) -> list[pa.RecordBatch]:
        """The batches kept last (none: an empty list)."""
        with self._lock:
            return list(self._kept[-1][1]) if self._kept else []


def held_for_engine(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``batches``, the last :data:`HELD_BATCHES` handed over kept referenced while the stream
    runs and :data:`RELEASE_AFTER` seconds after it ends (pyarrow drops a stream's iterator at its
    end, while the engine's threads still hold batches): an engine thread releasing its last
    batch then never frees Python-owned memory (see the module)."""
    held: deque[pa.RecordBatch] = deque(maxlen=HELD_BATCHES)
    try:
        for b in batches:
            held.append(b)
            yield b
    finally:
        _state.slot("handed-over", HandedOver).keep(list(held))


def engine_reader(schema: pa.Schema, batches: Iterable[pa.RecordBatch]) -> pa.RecordBatchReader:
    """A reader of ``batches`` for an engine to pull, their last ones held (:func:`held_for_engine`)."""
    return pa.RecordBatchReader.from_batches(schema, held_for_engine(batches))

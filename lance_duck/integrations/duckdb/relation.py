"""What :func:`lance_duck.sql` returns: :class:`LanceRelation`, a DuckDB relation whose results raise
lance_duck's own error (recorded by :mod:`.scan_errors`) in place of DuckDB's wrapping of it.

DuckDB and pyarrow are imported here on first use: a count answered from a manifest
(:mod:`.entry`) returns a relation whose rows are known, made on DuckDB only when something
other than ``fetchall()`` asks for it; a reading statement DuckDB bound on that connection before
returns one whose ``fetchall()`` executes the statement directly (:mod:`.cache`, bound statements).
"""
from __future__ import annotations

import contextlib
import functools
import sys
from typing import TYPE_CHECKING, Any, Callable, Iterator

from .error_ring import fresh, last_seq, recorded_since

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa


def _wrapped_errors() -> tuple[type[BaseException], ...]:
    """The exceptions that may wrap a Lance scan error: DuckDB's, Arrow's (once imported), OSError."""
    import duckdb
    arrow = sys.modules.get("pyarrow")      # an ArrowException is raised only once pyarrow is loaded
    return (duckdb.Error, OSError) if arrow is None else (duckdb.Error, arrow.ArrowException, OSError)


@contextlib.contextmanager
def _lance_errors(seq: int | None = None) -> Iterator[None]:
    """Turn DuckDB's wrapping of a Lance scan error (recorded after ``seq``) back into ours."""
    seq = last_seq() if seq is None else seq
    try:
        yield
    except Exception as e:
        if not isinstance(e, _wrapped_errors()):
            raise
        err = recorded_since(seq, str(e))
        if err is None:
            raise
        raise fresh(err) from None


def _map_reader(reader: pa.RecordBatchReader, seq: int | None = None) -> pa.RecordBatchReader:
    import pyarrow as pa
    seq = last_seq() if seq is None else seq

    def batches() -> Iterator[pa.RecordBatch]:
        it = iter(reader)
        while True:
            with _lance_errors(seq):
                try:
                    b = next(it)
                except StopIteration:
                    return
            yield b
    return pa.RecordBatchReader.from_batches(reader.schema, batches())


def _wrap(value: Any, seq: int | None = None) -> Any:
    import duckdb
    if isinstance(value, duckdb.DuckDBPyRelation):
        return LanceRelation(value)
    arrow = sys.modules.get("pyarrow")      # a reader DuckDB returns is pyarrow's: loaded by then
    if arrow is not None and isinstance(value, arrow.RecordBatchReader):
        return _map_reader(value, seq)
    return value


class LanceRelation:
    """What :func:`sql` returns: a DuckDB relation (every method and attribute of
    ``duckdb.DuckDBPyRelation``) whose results raise lance_duck's errors.

    The relation is lazy, like DuckDB's: the query runs when a result is asked for
    (``fetchall()``, ``df()``, ``arrow()``, ``fetch_record_batch()``, ``show()``...).  If a
    Lance scan fails then, the error raised is lance_duck's (e.g. ``CorruptFileError`` naming
    the file), not ``duckdb.InvalidInputException``.  Relations derived from it
    (``.filter()``, ``.project()``...) and readers it returns behave the same.  ``.relation``
    is the plain DuckDB relation.
    """

    __slots__ = ("_relation", "_make", "_rows", "_run")

    def __init__(self, relation: duckdb.DuckDBPyRelation):
        self._relation: duckdb.DuckDBPyRelation | None = relation
        self._make: Callable[[], duckdb.DuckDBPyRelation] | None = None
        self._rows: list[tuple[Any, ...]] | None = None
        self._run: Callable[[], list[tuple[Any, ...]]] | None = None

    @classmethod
    def _known(cls, make: Callable[[], duckdb.DuckDBPyRelation], rows: list[tuple[Any, ...]]) -> LanceRelation:
        """A relation whose result rows are known already: ``make()`` makes it on DuckDB when first
        needed; until then ``fetchall()`` returns ``rows`` (what a fresh relation's would)."""
        self = cls.__new__(cls)
        self._relation, self._make, self._rows, self._run = None, make, rows, None
        return self

    @classmethod
    def _deferred(cls, make: Callable[[], duckdb.DuckDBPyRelation],
                  run: Callable[[], list[tuple[Any, ...]]]) -> LanceRelation:
        """A relation made on DuckDB (``make()``) only when first needed; until then ``fetchall()``
        returns ``run()``: the statement executed directly, which skips binding a relation (for a
        statement known to bind, see :mod:`.cache`)."""
        self = cls.__new__(cls)
        self._relation, self._make, self._rows, self._run = None, make, None, run
        return self

    @property
    def relation(self) -> duckdb.DuckDBPyRelation:
        """The plain DuckDB relation."""
        if self._relation is None:
            assert self._make is not None
            self._relation, self._make, self._rows, self._run = self._make(), None, None, None
        return self._relation

    def fetchall(self) -> list[tuple[Any, ...]]:
        """Every row of the result (DuckDB's ``fetchall``)."""
        if self._relation is None:
            if self._rows is not None:
                return list(self._rows)
            if self._run is not None:
                with _lance_errors():
                    return self._run()
        return self.__getattr__("fetchall")()      # type: ignore[no-any-return]

    def __getattr__(self, name: str) -> Any:
        import duckdb
        attr = getattr(self.relation, name)
        if not callable(attr) or isinstance(attr, duckdb.DuckDBPyRelation):
            return _wrap(attr)

        @functools.wraps(attr)
        def call(*args: Any, **kwargs: Any) -> Any:
            args = tuple(a.relation if isinstance(a, LanceRelation) else a for a in args)
            seq = last_seq()
            with _lance_errors(seq):
                return _wrap(attr(*args, **kwargs), seq)
        return call

    def __dir__(self) -> list[str]:
        return sorted(set(dir(self.relation)) | {"relation"})

    def __getitem__(self, key: Any) -> Any:
        return _wrap(self.relation[key])

    def __contains__(self, key: Any) -> bool:
        return key in self.relation

    def __len__(self) -> int:
        with _lance_errors():
            return len(self.relation)

    def __repr__(self) -> str:
        with _lance_errors():
            return repr(self.relation)

    def __str__(self) -> str:
        with _lance_errors():
            return str(self.relation)

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        seq = last_seq()
        with _lance_errors(seq):
            reader = self.relation.to_arrow_reader() if hasattr(self.relation, "to_arrow_reader") \
                else self.relation.arrow()
        return _map_reader(reader, seq).__arrow_c_stream__(requested_schema)

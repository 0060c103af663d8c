"""LanceFragment: one fragment of a pinned version, with ``pyarrow.dataset.Fragment``'s API.

Not a ``pyarrow.dataset.Fragment`` subclass: pyarrow's C++ code dereferences a Fragment's native
object (``Scanner.from_fragment(frag).to_table()``), which no Python subclass can provide, and
a crash must never be the answer. pyarrow now rejects a LanceFragment with a TypeError instead;
``frag.scanner(...)`` scans it, and it exports itself as an Arrow C stream.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InvalidArgumentError
from .compat import fragment_metadata, table_to_pandas
from .interop import export_stream
from .params import Columns, Filter, Indices

if TYPE_CHECKING:
    from ..table.fragment import FragmentInfo
    from .compat import FragmentMetadata
    from .dataset import LanceDataset
    from .scanner import LanceScanner


class LanceFragment:
    """One fragment of a pinned version, with pylance's fragment API.

    ``fragment_id``, ``physical_rows`` (rows in the data files), ``num_deletions``,
    ``count_rows(filter=None)`` and the reads ``to_table`` / ``to_batches`` / ``scanner`` / ``head``
    (same arguments as :class:`LanceDataset`'s, limited to this fragment, deleted rows left out).

    Examples:
        >>> import lance_duck
        >>> frags = lance_duck.dataset(lance_duck.sample_path()).get_fragments()
        >>> [(f.fragment_id, f.physical_rows, f.num_deletions) for f in frags]
        [(0, 1000, 562), (1, 1000, 91), (2, 500, 48), (3, 103, 0)]
    """

    def __init__(self, dataset: LanceDataset, info: FragmentInfo) -> None:
        self._dataset = dataset
        self._info = info

    @property
    def fragment_id(self) -> int:
        """The fragment's id in the manifest."""
        return self._info.id

    @property
    def physical_rows(self) -> int:
        """Rows in the fragment's data files, deleted ones included."""
        return self._info.physical_rows

    def data_files(self) -> list[str]:
        """Paths of the fragment's data files (one per group of columns)."""
        return [f.path for f in self._info.files]

    @property
    def num_deletions(self) -> int:
        """Rows deleted from this fragment (its deletion file's count)."""
        return self._info.num_deletions()

    @property
    def schema(self) -> pa.Schema:
        """The dataset's schema (every fragment of a version has it; also ``physical_schema``)."""
        return self._dataset.schema

    physical_schema = schema

    @property
    def partition_expression(self) -> pc.Expression:
        """Always true: a Lance table has no partitions."""
        return pc.scalar(True)

    def count_rows(self, filter: Filter = None, **kwargs: Any) -> int:
        """The fragment's live rows (after deletions and the filter); exact, from metadata alone
        without a filter. Arguments and errors as :meth:`LanceDataset.count_rows`.

        Examples:
            >>> import lance_duck
            >>> frag = lance_duck.dataset(lance_duck.sample_path()).get_fragments()[1]
            >>> frag.count_rows(), frag.count_rows("amount > 400")
            (909, 176)
        """
        if filter is None and not kwargs:
            return self._info.count_rows()
        return self.scanner(filter=filter, **kwargs).count_rows()

    def scanner(self, **kwargs: Any) -> LanceScanner:
        """A :class:`LanceScanner` over this fragment only (arguments as :meth:`LanceDataset.scanner`).

        pyarrow's ``schema=`` is accepted only as the dataset's own schema (a Lance scan cannot cast).

        Raises:
            InvalidArgumentError: a ``schema=`` other than the dataset's, and as :meth:`LanceDataset.scanner`.
        """
        schema = kwargs.pop("schema", None)
        if schema is not None and not schema.equals(self._dataset.schema):
            raise InvalidArgumentError(
                f"fragment {self.fragment_id} of {self._dataset.uri}: scanner(schema=...) must be the dataset's "
                "schema; cast the result instead, scanner().to_table().cast(schema)")
        return self._dataset.scanner(fragments=[self], **kwargs)

    def to_table(self, **kwargs: Any) -> pa.Table:
        """This fragment's rows as one ``pa.Table`` (arguments as :meth:`LanceDataset.scanner`)."""
        return self.scanner(**kwargs).to_table()

    def to_batches(self, **kwargs: Any) -> Iterator[pa.RecordBatch]:
        """This fragment's rows as lazily read batches (arguments as :meth:`LanceDataset.scanner`)."""
        return self.scanner(**kwargs).to_batches()

    def head(self, num_rows: int, **kwargs: Any) -> pa.Table:
        """The fragment's first ``num_rows`` rows (arguments as :meth:`LanceDataset.scanner`).

        Examples:
            >>> import lance_duck
            >>> frag = lance_duck.dataset(lance_duck.sample_path()).get_fragments()[1]
            >>> frag.head(2, columns=["order_id"]).to_pylist()
            [{'order_id': 1000}, {'order_id': 1001}]
        """
        return self.scanner(**kwargs).head(num_rows)

    def take(self, indices: Indices, columns: Columns = None) -> pa.Table:
        """Rows at logical positions (after deletions) of this fragment, in the order given.

        Arguments and errors as :meth:`LanceDataset.take`; nested columns keep the order named.

        Examples:
            >>> import lance_duck
            >>> frag = lance_duck.dataset(lance_duck.sample_path()).get_fragments()[1]
            >>> frag.take([1, 0], columns=["order_id"]).to_pylist()
            [{'order_id': 1001}, {'order_id': 1000}]
        """
        from .take import take_rows     # the scan machinery loads on the first read
        return take_rows(self._dataset._snapshot, [self._info], indices, columns, self._dataset._base_filter,
                          child_order="named")

    def to_pandas(self, **kwargs: Any) -> Any:
        """This fragment's rows as a pandas DataFrame (arguments as :meth:`LanceDataset.scanner`;
        needs ``pip install 'lance-duck[pandas]'``)."""
        return table_to_pandas(self.to_table(**kwargs))

    def deletion_file(self) -> str | None:
        """The deletion file's path relative to its base (``_deletions/...``), or ``None``.

        Examples:
            >>> import lance_duck
            >>> frag = lance_duck.dataset(lance_duck.sample_path()).get_fragments()[3]
            >>> frag.deletion_file() is None
            True
        """
        pb = self._info.pb
        if not pb.HasField("deletion_file"):
            return None
        from ..table.deletions import deletion_file_name
        d = pb.deletion_file
        return deletion_file_name(pb.id, d.read_version, d.id, d.file_type)

    @property
    def metadata(self) -> FragmentMetadata:
        """The fragment as the manifest describes it (pylance's ``FragmentMetadata`` fields)."""
        return fragment_metadata(self._info.pb)

    def validate(self) -> None:
        """Check that the fragment's data and deletion files are there and agree with the manifest.

        Raises:
            FileNotFoundError: a file is missing.
            CorruptFileError: a file disagrees with the manifest.
        """
        for ref in self._info.files:
            self._dataset._snapshot.open_data_file(ref)
        self._info.deleted_offsets()

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        """This fragment's rows as an Arrow C stream (``pa.table(fragment)``)."""
        return export_stream(self.scanner().to_reader(), requested_schema)

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return (_restore_fragment, (self._dataset, self.fragment_id))

    def __repr__(self) -> str:
        return f"LanceFragment(id={self.fragment_id}, physical_rows={self.physical_rows})"


def _restore_fragment(dataset: LanceDataset, fragment_id: int) -> LanceFragment:
    frag = dataset.get_fragment(fragment_id)
    if frag is None:
        raise InvalidArgumentError(f"fragment {fragment_id} is not in version {dataset.version} of {dataset.uri}")
    return frag

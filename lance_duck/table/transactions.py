"""What one commit did: its transaction (``transaction.proto``), read from the file the manifest names.

A manifest names its transaction in ``transaction_file`` (``_transactions/<read_version>-<uuid>.txn``
beside ``_versions/``); writers that keep it inline record its position in the manifest file
(``transaction_section``: a little-endian u32 length, then the protobuf). Versions written without
one (very old writers, or the "no transaction file" flag) have none: :func:`read_transaction`
returns None. The change feed uses the operation to tell rewrites (compaction, index builds,
reserved ids) from changes; ``delta().list_transactions()`` returns them as :class:`Transaction`.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from google.protobuf.message import DecodeError

from .._proto import transaction_pb2
from ..errors import CorruptFileError
from .fragment import vanished

if TYPE_CHECKING:
    from .snapshot import Snapshot

TRANSACTIONS_DIR = "_transactions"

# Operations that move or re-encode rows, or touch metadata only: no row changes value, appears or
# disappears. (Restore, Overwrite, Merge, DataReplacement, Update, Delete, Append change rows.)
NO_ROW_CHANGES = frozenset({"create_index", "rewrite", "reserve_fragments", "project", "update_config",
                            "update_mem_wal_state", "update_bases", "append_fri_transitions"})


def parse_transaction(raw: bytes, path: str) -> transaction_pb2.Transaction:
    """A Transaction protobuf from its bytes (CorruptFileError naming ``path`` when malformed)."""
    try:
        return transaction_pb2.Transaction.FromString(bytes(raw))
    except (DecodeError, ValueError, RuntimeError) as exc:
        raise CorruptFileError(f"{path}: transaction protobuf is corrupt ({exc})") from exc


def read_transaction(snapshot: Snapshot) -> transaction_pb2.Transaction | None:
    """The transaction that made ``snapshot``'s version, or None when the version records none.

    A named file that is missing raises FileNotFoundError naming the version (cleaned up).
    """
    m = snapshot.manifest
    if m.transaction_file:
        path = snapshot.resolver.dataset_file(f"{TRANSACTIONS_DIR}/{m.transaction_file}", "transaction file")
        try:
            raw = snapshot.io.read_immutable(path)
        except FileNotFoundError as exc:
            raise vanished(path, "transaction file", snapshot.version) from exc
        return parse_transaction(raw, path)
    pos = 0
    for name in ("transaction_section_v14", "transaction_section"):
        if m.HasField(name) and getattr(m, name):
            pos = getattr(m, name)
            break
    if not pos:
        return None
    raw = snapshot.manifest_file.raw
    where = f"{snapshot.manifest_file.path} (inline transaction at {pos})"
    if pos + 4 > len(raw):
        raise CorruptFileError(f"{where}: position is outside the manifest file ({len(raw)} bytes)")
    (n,) = struct.unpack_from("<I", raw, pos)
    if pos + 4 + n > len(raw):
        raise CorruptFileError(f"{where}: length {n} runs past the end of the manifest file")
    return parse_transaction(raw[pos + 4:pos + 4 + n], where)


def operation_kind(txn: transaction_pb2.Transaction | None) -> str | None:
    """The operation's field name (``"append"``, ``"rewrite"``, ...); None without a transaction
    or for an operation this reader does not know."""
    return None if txn is None else txn.WhichOneof("operation")


# -- the objects delta().list_transactions() returns ----------------------------------------------
@dataclass
class Operation:
    """A commit's operation; ``type(op).__name__`` is pylance's name for it (``Append``, ``Delete``,
    ``Update``, ...). Subclasses carry the fields below that the operation has."""


@dataclass
class Append(Operation):
    fragments: list[Any] = field(default_factory=list)


@dataclass
class Delete(Operation):
    updated_fragments: list[Any] = field(default_factory=list)
    deleted_fragment_ids: list[int] = field(default_factory=list)
    predicate: str = ""


@dataclass
class Overwrite(Operation):
    fragments: list[Any] = field(default_factory=list)


@dataclass
class CreateIndex(Operation):
    pass


@dataclass
class Rewrite(Operation):
    pass


@dataclass
class Merge(Operation):
    fragments: list[Any] = field(default_factory=list)


@dataclass
class Restore(Operation):
    version: int = 0


@dataclass
class ReserveFragments(Operation):
    num_fragments: int = 0


@dataclass
class Update(Operation):
    removed_fragment_ids: list[int] = field(default_factory=list)
    updated_fragments: list[Any] = field(default_factory=list)
    new_fragments: list[Any] = field(default_factory=list)
    fields_modified: list[int] = field(default_factory=list)
    update_mode: str = "rewrite_rows"


@dataclass
class Project(Operation):
    pass


@dataclass
class UpdateConfig(Operation):
    pass


@dataclass
class DataReplacement(Operation):
    pass


@dataclass
class Clone(Operation):
    is_shallow: bool = False
    ref_name: str | None = None
    ref_version: int = 0
    ref_path: str = ""
    branch_name: str | None = None


@dataclass
class Other(Operation):
    """An operation without a class here; ``kind`` is its field name in ``transaction.proto``."""
    kind: str = ""


@dataclass
class Transaction:
    """One commit's transaction, like pylance's ``lance.Transaction`` (``fragments`` are the
    manifest's ``DataFragment`` protobufs)."""
    read_version: int
    operation: Operation
    uuid: str
    transaction_properties: dict[str, str] = field(default_factory=dict)


def to_transaction(txn: transaction_pb2.Transaction) -> Transaction:
    """The public :class:`Transaction` of a Transaction protobuf."""
    kind = txn.WhichOneof("operation")
    op: Operation
    if kind is None:
        op = Other(kind="")
    else:
        pb = getattr(txn, kind)
        if kind == "append":
            op = Append(list(pb.fragments))
        elif kind == "delete":
            op = Delete(list(pb.updated_fragments), list(pb.deleted_fragment_ids), pb.predicate)
        elif kind == "overwrite":
            op = Overwrite(list(pb.fragments))
        elif kind == "merge":
            op = Merge(list(pb.fragments))
        elif kind == "restore":
            op = Restore(pb.version)
        elif kind == "reserve_fragments":
            op = ReserveFragments(pb.num_fragments)
        elif kind == "update":
            mode = "rewrite_columns" if pb.update_mode == transaction_pb2.Transaction.REWRITE_COLUMNS \
                else "rewrite_rows"
            op = Update(list(pb.removed_fragment_ids), list(pb.updated_fragments), list(pb.new_fragments),
                        list(pb.fields_modified), mode)
        elif kind == "clone":
            op = Clone(pb.is_shallow, pb.ref_name if pb.HasField("ref_name") else None, pb.ref_version,
                       pb.ref_path, pb.branch_name if pb.HasField("branch_name") else None)
        else:
            simple = {"create_index": CreateIndex, "rewrite": Rewrite, "project": Project,
                      "update_config": UpdateConfig, "data_replacement": DataReplacement}
            op = simple[kind]() if kind in simple else Other(kind=kind)
    return Transaction(txn.read_version, op, txn.uuid, dict(txn.transaction_properties))

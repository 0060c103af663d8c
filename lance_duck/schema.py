"""Lance schema (manifest ``fields``) -> a field tree with Arrow types.

A leaf module: the file readers (``file/``), the table layer and the index layer all use this model.

The manifest stores a flat list of fields; ``parent_id == -1`` marks a top-level field and
children follow their parent's ``id``. Structure comes from ``logical_type`` only (``Field.type``
is not reliable). Field ids are stable across renames and never positions.
"""
from __future__ import annotations

from dataclasses import dataclass, field as dc_field
from typing import Any, Iterable, Iterator

import pyarrow as pa

from .errors import CorruptFileError, UnsupportedFeatureError

_SIMPLE: dict[str, pa.DataType] = {
    "null": pa.null(), "bool": pa.bool_(),
    "int8": pa.int8(), "uint8": pa.uint8(), "int16": pa.int16(), "uint16": pa.uint16(),
    "int32": pa.int32(), "uint32": pa.uint32(), "int64": pa.int64(), "uint64": pa.uint64(),
    "halffloat": pa.float16(), "float": pa.float32(), "double": pa.float64(),
    "string": pa.string(), "large_string": pa.large_string(),
    "binary": pa.binary(), "large_binary": pa.large_binary(),
    "json": pa.large_binary(),
    "date32:day": pa.date32(), "date64:ms": pa.date64(),
}

NESTED_TYPES = ("struct", "list", "large_list", "list.struct", "large_list.struct", "map")


@dataclass
class LanceField:
    """One field of a Lance schema, with its children and its Arrow type."""

    id: int
    parent_id: int
    name: str
    logical_type: str
    nullable: bool = True
    metadata: dict[str, str] = dc_field(default_factory=dict)
    extension_name: str = ""
    dictionary_offset: int = 0
    dictionary_length: int = 0
    children: list["LanceField"] = dc_field(default_factory=list)
    # Legacy (0.1/0.2) tables keep dictionary values in the manifest file; the table layer
    # loads them here so the legacy file reader can build dictionary arrays.
    dictionary_values: pa.Array | None = dc_field(default=None, repr=False)

    # -- derived -------------------------------------------------------------------------
    @property
    def arrow_type(self) -> pa.DataType:
        return self.to_arrow().type

    def to_arrow(self) -> pa.Field:
        """The Arrow field pylance reports (registered extension types resolved like pylance's FFI)."""
        cached = self.__dict__.get("_arrow_cache")
        if cached is None:
            cached = resolve_extensions(self.raw_arrow())
            self.__dict__["_arrow_cache"] = cached
        return cached

    def raw_arrow(self) -> pa.Field:
        """The Arrow field with extension types left as storage type + ``ARROW:extension:*`` metadata."""
        md = dict(self.metadata)
        if self.extension_name:
            md.setdefault(EXT_NAME, self.extension_name)
        if self.logical_type == "json" or md.get(EXT_NAME) == "lance.json":
            # pylance presents Lance's JSONB columns as the canonical arrow.json over utf8.
            md[EXT_NAME], md[EXT_META] = "arrow.json", ""
            typ = pa.utf8()
        elif self.logical_type == "lance.bfloat16":
            md.setdefault(EXT_NAME, "lance.bfloat16")
            md.setdefault(EXT_META, "")
            typ = pa.binary(2)
        else:
            typ = _raw_arrow_type(self)
        return pa.field(self.name, typ, nullable=self.nullable, metadata=md or None)

    @property
    def is_struct(self) -> bool:
        return self.logical_type == "struct"

    @property
    def is_list(self) -> bool:
        return self.logical_type in ("list", "list.struct", "large_list", "large_list.struct")

    @property
    def is_packed_struct(self) -> bool:
        return self.is_struct and ("lance-encoding:packed" in self.metadata or "packed" in self.metadata)

    @property
    def is_blob(self) -> bool:
        v = self.metadata.get("lance-encoding:blob", "")
        return v.lower() in ("true", "1", "yes")

    def walk(self) -> Iterator["LanceField"]:
        """This field and all descendants, pre-order."""
        yield self
        for c in self.children:
            yield from c.walk()


@dataclass
class LanceSchema:
    """The top-level fields of a version, plus schema metadata."""

    fields: list[LanceField]
    metadata: dict[str, str] = dc_field(default_factory=dict)

    def __post_init__(self) -> None:
        self.by_id: dict[int, LanceField] = {f.id: f for top in self.fields for f in top.walk()}

    def to_arrow(self) -> pa.Schema:
        """The Arrow schema pylance's ``ds.schema`` reports (field and schema metadata included)."""
        return pa.schema([f.to_arrow() for f in self.fields], metadata=self.metadata or None)

    def field(self, name: str) -> LanceField:
        """Top-level field by name, or a nested one by dotted path (``"s.a"``)."""
        for f in self.fields:
            if f.name == name:
                return f
        parts = name.split(".")
        cur: Iterable[LanceField] = self.fields
        found: LanceField | None = None
        for p in parts:
            found = next((f for f in cur if f.name == p), None)
            if found is None:
                raise KeyError(name)
            cur = found.children
        assert found is not None
        return found

    def walk(self) -> Iterator[LanceField]:
        for f in self.fields:
            yield from f.walk()


def schema_from_protos(pb_fields: Iterable[Any], metadata: dict[str, bytes] | None = None) -> LanceSchema:
    """Build the field tree from ``lance.file.Field`` messages (flat, parent-before-child)."""
    nodes: list[LanceField] = []
    by_id: dict[int, LanceField] = {}
    for pf in pb_fields:
        f = LanceField(
            id=pf.id, parent_id=pf.parent_id, name=pf.name, logical_type=pf.logical_type,
            nullable=pf.nullable,
            metadata={k: _utf8(v) for k, v in pf.metadata.items()},
            extension_name=pf.extension_name,
            dictionary_offset=pf.dictionary.offset, dictionary_length=pf.dictionary.length,
        )
        nodes.append(f)
    roots: list[LanceField] = []
    path: list[LanceField] = []  # ancestors of the next field: the manifest lists fields depth-first
    for f in nodes:
        if f.id < 0:
            raise CorruptFileError(f"field {f.name!r} has a negative id {f.id}")
        if f.id in by_id:
            raise CorruptFileError(f"field {f.name!r} and field {by_id[f.id].name!r} share the id {f.id}")
        if f.parent_id == -1:
            roots.append(f)
            path = [f]
        else:
            parent = by_id.get(f.parent_id)
            if parent is None:
                raise CorruptFileError(f"field {f.name!r} (id {f.id}) has unknown parent id {f.parent_id}")
            if not _can_have_children(parent.logical_type):
                raise CorruptFileError(f"field {f.name!r} (id {f.id}) has parent id {f.parent_id}, which is "
                                       f"field {parent.name!r} of type {parent.logical_type!r} (not nested)")
            while path and path[-1] is not parent:
                path.pop()
            if not path:
                raise CorruptFileError(f"field {f.name!r} (id {f.id}) is listed away from its parent "
                                       f"{parent.name!r} (id {parent.id}); the schema is damaged")
            parent.children.append(f)
            path.append(f)
        by_id[f.id] = f
    _check_names(roots, None)
    md = {k: _utf8(v) for k, v in (metadata or {}).items()}
    return LanceSchema(roots, md)


def _check_names(fields: list[LanceField], parent: LanceField | None) -> None:
    """pylance's rules: no empty top-level name, no ``.`` in one (a nested path's separator), no two
    fields of one struct (or of the table) with the same name -- which a damaged or hand-edited
    manifest (a rename onto another field's name) can state."""
    stack = [(fields, parent)]
    while stack:
        group, owner = stack.pop()
        seen: dict[str, LanceField] = {}
        where = "the table" if owner is None else f"field {owner.name!r} (id {owner.id})"
        for f in group:
            if owner is None and not f.name:        # a list's item may be unnamed (pylance writes that)
                raise CorruptFileError(f"top-level field id {f.id} has an empty name")
            if owner is None and "." in f.name:
                raise CorruptFileError(f"top-level field {f.name!r} (id {f.id}) has a '.' in its name, which "
                                       "Lance does not allow (it separates a nested field's path)")
            other = seen.get(f.name)
            if other is not None and (owner is None or owner.is_struct):
                raise CorruptFileError(f"{where} has two fields named {f.name!r} (ids {other.id} and {f.id}); "
                                       "the schema is damaged (a field renamed onto another's name?)")
            seen[f.name] = f
            if f.children:
                stack.append((f.children, f))


def _can_have_children(logical_type: str) -> bool:
    return logical_type in NESTED_TYPES or logical_type.startswith("fixed_size_list:")


def _utf8(v: bytes | str) -> str:
    return v.decode("utf-8", errors="surrogateescape") if isinstance(v, (bytes, bytearray)) else v


EXT_NAME = "ARROW:extension:name"
EXT_META = "ARROW:extension:metadata"


def resolve_extensions(field: pa.Field) -> pa.Field:
    """Pass a field through the Arrow C data interface, as pylance's schema does.

    pyarrow then turns ``ARROW:extension:name`` metadata into whatever extension type is
    registered in this process (canonical ones such as ``arrow.json``, or pylance's
    ``lance.blob.v2`` / ``lance.bfloat16`` once pylance is imported); unregistered ones stay
    storage type + metadata. lance_duck registers nothing itself, so it never conflicts with
    pylance in the same process and always agrees with what pylance would report here.
    """
    if not _has_extension_metadata(field):
        return field
    try:
        return pa.Field._import_from_c_capsule(field.__arrow_c_schema__())
    except (pa.ArrowException, TypeError, ValueError):
        return field  # a registered class rejected the storage type: keep it raw


def _has_extension_metadata(field: pa.Field) -> bool:
    if field.metadata and EXT_NAME.encode() in field.metadata:
        return True
    t = field.type
    if pa.types.is_struct(t):
        return any(_has_extension_metadata(t.field(i)) for i in range(t.num_fields))
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return _has_extension_metadata(t.value_field)
    if pa.types.is_map(t):
        return _has_extension_metadata(t.key_field) or _has_extension_metadata(t.item_field)
    return False


def _raw_arrow_type(f: LanceField) -> pa.DataType:
    lt = f.logical_type
    if lt == "struct":
        return pa.struct([c.raw_arrow() for c in f.children])
    if lt in ("list", "list.struct", "large_list", "large_list.struct"):
        if len(f.children) != 1:
            raise CorruptFileError(f"list field {f.name!r} must have exactly one child")
        child = f.children[0].raw_arrow()
        return pa.large_list(child) if lt.startswith("large_") else pa.list_(child)
    if lt == "map":
        if len(f.children) != 1 or len(f.children[0].children) != 2:
            raise CorruptFileError(f"map field {f.name!r} must have one entries child with key and value")
        entries = f.children[0]
        key, value = entries.children
        return pa.map_(key.raw_arrow(), value.raw_arrow())
    if lt.startswith("fixed_size_list:") and len(f.children) == 1:  # fixed-size list of structs (2.2)
        return pa.list_(f.children[0].raw_arrow(), int(lt.rsplit(":", 1)[1]))
    return parse_logical_type(lt, f.name)


def parse_logical_type(lt: str, name: str = "?") -> pa.DataType:
    """Arrow type of a non-nested logical type string."""
    if lt in _SIMPLE:
        return _SIMPLE[lt]
    head, _, rest = lt.partition(":")
    try:
        if head == "timestamp":
            unit, _, tz = rest.partition(":")
            return pa.timestamp(unit, None if tz in ("-", "") else tz)
        if head == "time32":
            return pa.time32(rest)
        if head == "time64":
            return pa.time64(rest)
        if head == "duration":
            return pa.duration(rest)
        if head == "decimal":
            bits, p, s = rest.split(":")
            return (pa.decimal128 if bits == "128" else pa.decimal256)(int(p), int(s))
        if head == "fixed_size_binary":
            return pa.binary(int(rest))
        if head == "fixed_size_list":
            inner, _, n = rest.rpartition(":")
            if inner == "lance.bfloat16":
                item = pa.field("item", pa.binary(2), True,
                                metadata={EXT_NAME: "lance.bfloat16", EXT_META: ""})
                return pa.list_(item, int(n))
            return pa.list_(pa.field("item", parse_logical_type(inner, name), True), int(n))
        if head == "dict":
            value_t, key_t, ordered = rest.rsplit(":", 2)
            return pa.dictionary(parse_logical_type(key_t, name), parse_logical_type(value_t, name),
                                 ordered=ordered == "true")
    except (ValueError, KeyError) as exc:
        raise CorruptFileError(f"field {name!r}: malformed logical type {lt!r}") from exc
    raise UnsupportedFeatureError(f"field {name!r}: unsupported logical type {lt!r}")

"""Arrow extension types Lance uses, and lance_duck's registration policy.

lance_duck registers **no** extension type on import. Schemas are built as storage type +
``ARROW:extension:*`` field metadata and passed through the Arrow C data interface
(:func:`lance_duck.schema.resolve_extensions`), exactly as pylance's schemas reach Python.
So lance_duck reports whatever pylance would in the same process (``lance.blob.v2`` and
``lance.bfloat16`` become pylance's classes once pylance registered them; otherwise they stay
storage + metadata), and importing pylance later never hits "type already registered".

:class:`BFloat16Type` is offered for users who want a typed bfloat16 without pylance; call
:func:`register_bfloat16` explicitly (never together with pylance's ``lance.arrow``).
"""
from __future__ import annotations

import pyarrow as pa


class BFloat16Type(pa.ExtensionType):  # type: ignore[misc]  # pyarrow ships no type information
    """``lance.bfloat16``: 2-byte brain floats stored as fixed_size_binary(2)."""

    def __init__(self) -> None:
        super().__init__(pa.binary(2), "lance.bfloat16")

    def __arrow_ext_serialize__(self) -> bytes:
        return b""

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type: pa.DataType, serialized: bytes) -> BFloat16Type:  # noqa: D401
        return cls()


def register_bfloat16() -> bool:
    """Register :class:`BFloat16Type` unless some library already did; True if we did."""
    try:
        pa.register_extension_type(BFloat16Type())
    except pa.ArrowKeyError:
        return False
    return True

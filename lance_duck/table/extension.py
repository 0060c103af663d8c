"""Arrow extension types Lance uses (bfloat16 and blob descriptors)."""
from __future__ import annotations

import pyarrow as pa


class BFloat16Type(pa.ExtensionType):
    """``lance.bfloat16``: 2-byte brain floats stored as fixed_size_binary(2)."""

    def __init__(self) -> None:
        super().__init__(pa.binary(2), "lance.bfloat16")

    def __arrow_ext_serialize__(self) -> bytes:
        return b""

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type, serialized):  # noqa: D401
        return cls()


def bfloat16_type() -> pa.DataType:
    """The registered ``lance.bfloat16`` type (reusing one another library registered)."""
    try:
        pa.register_extension_type(BFloat16Type())
    except pa.ArrowKeyError:
        pass  # already registered (by us or by another library)
    return BFloat16Type()

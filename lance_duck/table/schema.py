"""Re-export of :mod:`lance_duck.schema` (the field model moved to a leaf module below ``file/``).

Kept so that code written against the old path keeps importing; new code imports ``lance_duck.schema``.
"""
from __future__ import annotations

from ..schema import (EXT_META, EXT_NAME, NESTED_TYPES, LanceField, LanceSchema,  # noqa: F401
                      parse_logical_type, resolve_extensions, schema_from_protos)

__all__ = ["EXT_META", "EXT_NAME", "NESTED_TYPES", "LanceField", "LanceSchema", "parse_logical_type",
           "resolve_extensions", "schema_from_protos"]

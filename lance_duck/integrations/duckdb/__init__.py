"""DuckDB front-end: Lance table references and time travel inside SQL text (:func:`sql`), and
:func:`register` for a table under a name of your choice.

The package, top to bottom: ``entry.py`` (:func:`sql` itself, the default connection, and the plain
``count(*)`` answered from a manifest before anything heavy is imported), ``api.py`` (the rest of
:func:`sql`, :func:`register`: registration, execution), ``relation.py`` (:class:`LanceRelation` and its error mapping; ``scan_errors.py`` records the
errors scans raise in ``error_ring.py``), ``rewrite.py`` (pure sqlglot: a statement -> a :class:`Rewritten` one;
:class:`LanceRef`), ``pushdown.py`` (a query's substring / comparison conjuncts -> a filtered view),
``count.py`` (a count's WHERE -> an Arrow filter), ``cache.py`` (kept tables, statements, views), and
one module per table function: ``catalog.py`` (``lance_versions`` / ``lance_tags`` / ``lance_indices``),
``changes.py`` (``lance_changes``), ``search.py`` (``lance_vector_search``), ``fts.py`` (``lance_fts``,
``lance_hybrid_search``), ``namespaces.py`` (``ATTACH ... (TYPE LANCE)``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..._lazy import lazy_attributes
from .entry import sql
from .relation import LanceRelation

if TYPE_CHECKING:
    from .api import register
    from .rewrite import LANCE_NAME_RULE, LanceRef, Rewritten

# imported on first use: sqlglot and the scan layer stay out of a process that only counts rows
# (the function ``rewrite`` is ``lance_duck.integrations.duckdb.rewrite.rewrite``: a lazy name would be
# shadowed by its module once imported)
__getattr__ = lazy_attributes(__name__, {
    "register": ".api", "LANCE_NAME_RULE": ".rewrite", "LanceRef": ".rewrite", "Rewritten": ".rewrite"})


__all__ = ["LanceRef", "LanceRelation", "Rewritten", "register", "sql", "LANCE_NAME_RULE"]

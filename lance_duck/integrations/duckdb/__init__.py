"""DuckDB front-end: Lance table references and time travel inside SQL text (:func:`sql`), and
:func:`register` for a table under a name of your choice.

The package, top to bottom: ``api.py`` (:func:`sql`, :func:`register`: connections, registration,
execution), ``relation.py`` (:class:`LanceRelation` and its error mapping; ``scan_errors.py`` records the
errors scans raise), ``rewrite.py`` (pure sqlglot: a statement -> a :class:`Rewritten` one;
:class:`LanceRef`), ``pushdown.py`` (a query's substring / comparison conjuncts -> a filtered view),
``count.py`` (a count's WHERE -> an Arrow filter), ``cache.py`` (kept tables, statements, views), and
one module per table function: ``catalog.py`` (``lance_versions`` / ``lance_tags`` / ``lance_indices``),
``changes.py`` (``lance_changes``), ``search.py`` (``lance_vector_search``), ``fts.py`` (``lance_fts``,
``lance_hybrid_search``), ``namespaces.py`` (``ATTACH ... (TYPE LANCE)``).
"""
from .api import register, sql
from .relation import LanceRelation
from .rewrite import LANCE_NAME_RULE, LanceRef, Rewritten, rewrite

__all__ = ["LanceRef", "LanceRelation", "Rewritten", "register", "rewrite", "sql", "LANCE_NAME_RULE"]

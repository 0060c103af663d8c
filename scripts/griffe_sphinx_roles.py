"""A griffe extension for the API reference (mkdocs.yml): docstrings written for ``help()`` use Sphinx
roles (``:class:`LanceDataset```); render them as code, as ``help()`` readers read them."""
from __future__ import annotations

import re
from typing import Any

from griffe import Extension

ROLE = re.compile(r":(?:py:)?(?:class|func|meth|attr|mod|exc|data|obj):`~?([^`]+)`")


class SphinxRoles(Extension):
    def on_instance(self, *, obj: Any, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = ROLE.sub(r"`\1`", obj.docstring.value)

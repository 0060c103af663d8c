"""The page object for a page's layout, sparse 2.3 pages aside: each kind of 2.1 ``PageLayout``
(mini-block, constant, full-zip, blob) and 2.3's indexed zipped values.

``column.make_page`` makes every page but a sparse one here, and a 2.3 sparse page
(``sparse23.SparsePage``) makes the page of its valid values here too, so neither imports the other.
"""
from __future__ import annotations

from typing import Any, Union

from ...._proto import encodings_v2_1_pb2 as pb
from ....errors import UnsupportedFeatureError
from ..page import PageContext
from ..planar23 import IndexedLayout
from .blob import BlobPage
from .constant import ConstantPage
from .fullzip import FullZipPage
from .indexed23 import IndexedPage
from .miniblock import MiniBlockPage

#: a page object of one of these layouts
LayoutPage = Union[MiniBlockPage, ConstantPage, FullZipPage, BlobPage, IndexedPage]

_LAYOUTS: dict[str, type[MiniBlockPage | ConstantPage | FullZipPage | BlobPage]] = {
    "mini_block_layout": MiniBlockPage,
    "constant_layout": ConstantPage,
    "full_zip_layout": FullZipPage,
    "blob_layout": BlobPage,
}


def layout_page(ctx: PageContext, page: Any, layout: pb.PageLayout | IndexedLayout) -> LayoutPage:
    """The page object reading ``page`` (a ``ColumnMetadata.Page``, or what stands for one:
    buffer offsets, sizes and length) laid out as ``layout``."""
    if isinstance(layout, IndexedLayout):
        return IndexedPage(ctx, page, layout)
    kind = layout.WhichOneof("layout")
    cls = _LAYOUTS.get(kind) if kind is not None else None
    if cls is None or kind is None:
        raise UnsupportedFeatureError(f"{ctx.what}: page layout {kind!r} is not supported")
    return cls(ctx, page, getattr(layout, kind))

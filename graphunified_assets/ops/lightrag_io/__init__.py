"""LightRAG compatibility: export a home as a LightRAG working folder, import one."""

from graphunified_assets.ops.lightrag_io.export import export_lightrag
from graphunified_assets.ops.lightrag_io.folder import LightRAGFormatError
from graphunified_assets.ops.lightrag_io.import_ import import_lightrag

__all__ = ["LightRAGFormatError", "export_lightrag", "import_lightrag"]

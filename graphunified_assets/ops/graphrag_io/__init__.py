"""Microsoft GraphRAG compatibility: export a home as a GraphRAG output folder, import one."""

from graphunified_assets.ops.graphrag_io.export import ExportReport, export_graphrag
from graphunified_assets.ops.graphrag_io.import_ import ImportReport, import_graphrag
from graphunified_assets.ops.graphrag_io.read import GraphRAGFormatError

__all__ = ["ExportReport", "GraphRAGFormatError", "ImportReport", "export_graphrag", "import_graphrag"]

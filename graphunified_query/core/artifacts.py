"""Every name a data home's artifacts go by, declared once: tables, LanceDB tables, index files,
manifests. The pipeline writes under these names and the query side reads them, so a rename here
is a rename everywhere (the schemas of the tables are in `tables.py`; the folders in `layout.py`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

# Parquet tables (`tables/<name>.parquet`, or `tables/<name>/` per document for the first five).
DOCUMENTS = "documents"
CHUNKS = "text_units"  # the `chunks` asset; GraphRAG calls the table text_units
CHUNK_EMBEDDINGS = "chunk_embeddings"
FAILURES = "failures"
EXTRACTIONS = "extractions"
ENTITIES = "entities"
RELATIONSHIPS = "relationships"
FACTS = "facts"
GRAPH_EDGES = "graph_edges"
SYNONYMS = "synonyms"
COMMUNITIES = "communities"
COMMUNITY_REPORTS = "community_reports"

# LanceDB tables (`lancedb/<name>.lance`): the chunks' vectors, and one per graph table a strategy
# searches by vector (the table whose rows the vectors belong to -> its vector table).
CHUNK_VECTORS = "chunk_vectors"
ENTITY_VECTORS = "entity_vectors"
RELATIONSHIP_VECTORS = "relationship_vectors"
FACT_VECTORS = "fact_vectors"
REPORT_VECTORS = "report_vectors"
REPORT_POINT_VECTORS = "report_point_vectors"  # global search's precomputed map points
VECTOR_TABLES = {
    ENTITIES: ENTITY_VECTORS,
    RELATIONSHIPS: RELATIONSHIP_VECTORS,
    FACTS: FACT_VECTORS,
    COMMUNITY_REPORTS: REPORT_VECTORS,
}
LANCE_TABLES = (CHUNK_VECTORS, *VECTOR_TABLES.values(), REPORT_POINT_VECTORS)

# Strategy index files, relative to the home's (or a generation's) `indexes/` folder.
BM25_FOLDER = "bm25"
PPR_FILE = "ppr_graph.npz"
CHUNK_SIMILARITY_FILE = "chunk_similarity.parquet"
INDEX_MANIFEST_SUFFIX = ".manifest.json"  # `<index file>.manifest.json`: what an index was built from
GRAPH_VECTORS_MANIFEST = "graph_vectors"  # `graph_vectors.manifest.json`: the graph vector tables' inputs


# Not a file: the offline thematic keywords of relationships (`relationships.keywords`, spaCy
# phrases), named so a strategy can declare it reads them.
RELATIONSHIP_KEYWORDS = "relationship_keywords"

# The artifacts only some strategies read, by strategy: what the pipeline builds for
# `strategies.enabled` (`needed_artifacts`; the rest is written empty) and what the registry's
# `Strategy.reads` says. Chunks, entities, relationships, the graph's edges and their vectors
# are shared by every strategy: always built.
READS: dict[str, frozenset[str]] = {
    "hybrid": frozenset({BM25_FOLDER}),
    "graphrag_global": frozenset({COMMUNITIES, COMMUNITY_REPORTS}),  # and so report vectors, points
    "lightrag": frozenset({RELATIONSHIP_KEYWORDS}),  # its global mode's thematic layer
    "hipporag": frozenset({PPR_FILE, FACTS}),  # and so the fact vectors
}
# In the index folder: the strategies the build served (`strategies.enabled` then).
BUILT_FOR_FILE = "strategies.json"


def needed_artifacts(
    enabled: Iterable[str] | None, parts: Mapping[str, Sequence[str]] | None = None
) -> frozenset[str]:
    """The optional artifacts (`READS`) the strategies ``enabled`` read (None: every strategy);
    ``parts`` names the strategies of each composition settings.yaml defines, which read theirs."""
    if enabled is None:
        return frozenset().union(*READS.values())
    names = [part for name in enabled for part in (name, *(parts or {}).get(name, ()))]
    return frozenset().union(*(READS.get(name, frozenset()) for name in names))


def ann_file(vector_table: str) -> str:
    """Where a vector table's faiss index lives, relative to the index folder (`indexes/ann.py`)."""
    return f"ann/{vector_table}.faiss"


# Publication: `published/CURRENT` names the generation readers load; each generation (local, or
# remote under `generations/<n>/`) lists its files in its manifest.
POINTER = "CURRENT"
MANIFEST = "manifest.json"
ALIASES_FILE = "document_aliases.json"  # in `tables/`: other names of a document (`aliases.py`)

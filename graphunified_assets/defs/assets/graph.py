"""`graph`: every edge the graph retrievers walk — relationships, entity–chunk mentions, synonyms."""

import dagster as dg
import pyarrow as pa
import pyarrow.compute as pc

from graphunified_assets.defs.catalog import logic_version
from graphunified_assets.defs.observability import markdown_table, numeric, stage_timing
from graphunified_assets.defs.partitions import after_documents_change
from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.lib.graph import edges, synonyms
from graphunified_assets.lib.graph.edges import graph_edges
from graphunified_assets.lib.graph.synonyms import synonym_edges
from graphunified_assets.lib.vectors.text_vectors import TextVectors, load_vectors, save_vectors
from graphunified_query.core.artifacts import ENTITIES, GRAPH_EDGES, RELATIONSHIPS, SYNONYMS
from graphunified_query.core.providers.fused_embedder import calibrated_embedder
from graphunified_query.core.stores.parquet import read_table, write_table_atomic

UNNAMED_TYPES = ("DATE",)
SYNONYM_VECTORS = "synonym_vectors"  # a folder in the home's cache: deleting it costs one read of every name


@dg.asset(
    group_name="graph",
    code_version=logic_version(edges, synonyms),
    kinds={"parquet"},
    deps=[ENTITIES, RELATIONSHIPS],
    automation_condition=after_documents_change,
    pool="models",  # embeds entity names
)
def graph(context: dg.AssetExecutionContext, graphunified: GraphUnifiedResource) -> dg.MaterializeResult:
    """Edges of the entity–passage graph with synonym edges; only new entity names are compared."""
    layout = graphunified.layout
    settings = graphunified.settings.graph
    # Ids, names and links only: descriptions would be read for nothing (~0.3 GB at 12.6K passages).
    entities = read_table(layout.table_path(ENTITIES), columns=["id", "title", "type", "text_unit_ids"])
    relationships = read_table(
        layout.table_path(RELATIONSHIPS), columns=["source_id", "target_id", "text_unit_ids"]
    )
    embedder = graphunified.embedder()
    # The threshold is a cosine of the first model's, in the variant it was set on.
    names_embedder = calibrated_embedder(embedder)
    # What the carried-over edges were computed under: another model or threshold compares every
    # name again (the edges of a model change would otherwise stay the old model's).
    key = {
        b"model": names_embedder.model_name.encode(),
        b"synonyms": f"{settings.synonym_threshold}:{settings.synonym_neighbours}".encode(),
    }
    synonyms_path = layout.table_path(SYNONYMS)
    covered_path = layout.table_path(f"{SYNONYMS}_covered")
    covered = read_table(covered_path) if covered_path.exists() else None
    same = covered is not None and synonyms_path.exists() and covered.schema.metadata == key
    previous = read_table(synonyms_path) if same else None
    previous_ids = set(covered.column("id").to_pylist()) if same and covered is not None else None
    # Dates and numbers embed close to their neighbours ("1894" ~ "1895") without being synonyms.
    named = entities.filter(pc.invert(pc.is_in(entities.column("type"), pa.array(list(UNNAMED_TYPES)))))
    ids, titles = named.column("id").to_pylist(), named.column("title").to_pylist()
    # The names' vectors of the last run: only new names are embedded (or read from the cache).
    vectors_path = layout.cache / SYNONYM_VECTORS
    vectors = load_vectors(vectors_path, names_embedder.model_name).get(SYNONYMS, TextVectors())
    synonyms = synonym_edges(
        ids,
        titles,
        embed=lambda texts: vectors.lookup(texts, names_embedder.embed),
        threshold=settings.synonym_threshold,
        neighbours=settings.synonym_neighbours,
        previous=previous,
        previous_ids=previous_ids,
    )
    edges = graph_edges(entities, relationships, synonyms)
    write_table_atomic(synonyms_path, synonyms)
    write_table_atomic(covered_path, named.select(["id"]).replace_schema_metadata(key))
    write_table_atomic(layout.table_path(GRAPH_EDGES), edges)
    vectors.keep(titles)
    save_vectors(vectors_path, names_embedder.model_name, {SYNONYMS: vectors})
    kinds = edges.group_by("kind").aggregate([("kind", "count")]).to_pylist()
    new_names = len(ids) - len((previous_ids or set()) & set(ids))
    context.log.info(f"graph: {edges.num_rows} edges, {new_names} new entity names compared")
    return dg.MaterializeResult(
        metadata={
            **numeric(
                {
                    "nodes_entities": len(ids),
                    "edges": edges.num_rows,
                    **{f"edges_{k['kind']}": k["kind_count"] for k in kinds},
                    "new_entity_names": new_names,
                    "names_embedded": names_embedder.texts_embedded,
                    # Names whose vectors the last run did not keep (new ones): read from the
                    # embedding cache, or embedded.
                    "names_looked_up": vectors.asked,
                }
            ),
            "edge_kinds": markdown_table(["kind", "edges"], [(k["kind"], k["kind_count"]) for k in kinds]),
            **stage_timing(),
        }
    )

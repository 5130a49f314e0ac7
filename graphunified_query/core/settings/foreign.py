"""Keys of other settings files, above all the seed's `settings.yaml` (seed 003, "Configuration
Schema"), and what each means here: declared once in `FOREIGN_KEYS`, from which `prepare` (file.py)
moves, converts, checks or drops them, and `markdown_table` writes docs/seed-settings.md's table.

Four kinds, said by the fields of `ForeignKey`:

- renamed (``ours`` set, no ``fixed``): the value moves onto our key, converted by ``convert``;
  silent, since it means the same thing. A value ``convert`` cannot honour is a `SettingsError`.
- fixed (``fixed`` set): the project does one thing here; a value saying that thing is dropped
  silently, any other value is dropped with one `SettingsWarning` saying ``why``.
- ignored (neither): dropped with one `SettingsWarning` saying ``why``.
- checked: ``convert`` may also check the value against the rest of the file and return `DROP`
  (``embedding.dimension`` against the embedding model).

A key ending in ``.*`` stands for its whole section. The project's own key wins when a file gives
both spellings.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

DROP = object()  # what `convert` returns when the value, once checked, sets nothing


class ForeignValueError(ValueError):
    """A foreign key's value this project cannot honour; `prepare` names the key and the file."""


Convert = Callable[[Any, Mapping[str, Any]], Any]  # (value, the whole file's values) -> ours or DROP


@dataclass(frozen=True)
class ForeignKey:
    key: str  # dotted, as the other file spells it; a trailing ".*" stands for the whole section
    ours: str | None  # the setting it sets; None: dropped
    why: str  # shown in the docs table, and in the warning when the key is dropped
    convert: Convert | None = None
    fixed: tuple[Any, ...] = ()  # what the project does; these values are dropped silently


def _provider(value: Any, _: Mapping[str, Any]) -> Any:
    aliases = {"voyageai": "voyage", "voyage": "voyage", "local": "local", "auto": "auto"}
    if value not in aliases:
        raise ForeignValueError(
            f"{value!r} is not an embedding provider here; use voyage (voyageai), local or auto "
            "(OpenAI and Cohere embeddings are not supported)"
        )
    return aliases[value]


def _dimension(value: Any, values: Mapping[str, Any]) -> Any:
    """The file's `embedding.dimension` must be the model's: vectors of another size cannot be read."""
    from graphunified_query.core.providers.voyage_embedder import KNOWN_DIMENSIONS

    embedding = values.get("embedding") or {}
    provider = _provider(embedding.get("provider", "auto"), values)
    model = embedding.get("voyage_model", embedding.get("model", "voyage-3.5"))
    if provider == "local":
        return DROP  # the packaged models' size is fixed by the models themselves (384 each)
    known = KNOWN_DIMENSIONS.get(model)
    if known is not None and value != known:
        raise ForeignValueError(
            f"{value} does not match {model}, whose vectors have {known} dimensions; "
            f"write {known} or leave embedding.dimension out"
        )
    return DROP


def _share(value: Any, _: Mapping[str, Any]) -> float:
    """``hybrid_weights: [entity, relation]`` as the entity side's share."""
    if not (isinstance(value, list) and len(value) == 2 and all(isinstance(w, int | float) for w in value)):
        raise ForeignValueError(f"{value!r} must be two numbers, [entity, relation]")
    if min(value) < 0 or sum(value) <= 0:
        raise ForeignValueError(f"{value!r} must be two non-negative weights, not both 0")
    return value[0] / (value[0] + value[1])


def _number(value: Any, _: Mapping[str, Any]) -> Any:
    # YAML 1.1 reads `1e-6` (no dot) as a string; the seed writes tolerance so.
    try:
        return float(value) if isinstance(value, str) else value
    except ValueError:
        raise ForeignValueError(f"{value!r} is not a number") from None


def _sparse(value: Any, values: Mapping[str, Any]) -> Any:
    dense = ((values.get("strategies") or {}).get("hybrid") or {}).get("dense_weight")
    if dense is not None and isinstance(value, int | float) and abs(dense + value - 1.0) > 1e-9:
        raise ForeignValueError(
            f"{value} + dense_weight {dense} must be 1: the fusion takes one weight, alpha = dense_weight "
            "and 1 - alpha for BM25"
        )
    return DROP


def _same_top_k(value: Any, values: Mapping[str, Any]) -> Any:
    modes = (((values.get("strategies") or {}).get("lightrag") or {}).get("search_modes")) or {}
    local = modes.get("local_top_k")
    if local is not None and local != value:
        raise ForeignValueError(
            f"{value} differs from local_top_k {local}: both sides match top_k_elements elements; "
            "give them one value"
        )
    return value


_GRAPHRAG = "strategies.graphrag"
_LIGHTRAG = "strategies.lightrag"
_HIPPORAG = "strategies.hipporag"

FOREIGN_KEYS: tuple[ForeignKey, ...] = (
    ForeignKey(
        "version", None, "settings files carry no version; an unknown key fails naming the closest one"
    ),
    # llm
    *(
        ForeignKey(f"llm.rate_limit.{k}", f"llm.{k}", "the rate limits sit in llm itself")
        for k in ("requests_per_minute", "tokens_per_minute", "max_retries", "concurrency")
    ),
    # embedding
    ForeignKey("embedding.provider", "embedding.provider", "voyageai is called voyage here", _provider),
    ForeignKey(
        "embedding.model", "embedding.voyage_model", "the Voyage model; local models are embedding.models"
    ),
    ForeignKey(
        "embedding.dimension",
        None,
        "checked against the model's own size (an error if it differs), then dropped",
        _dimension,
    ),
    # chunking
    ForeignKey(
        "chunking.strategy",
        None,
        "chunks are token windows with overlap whose ends snap back to a sentence or line end; "
        "no other chunker",
        fixed=("token_overlap",),
    ),
    ForeignKey("chunking.chunk_size", "chunking.size", "same meaning: tokens of the embedding model"),
    ForeignKey("chunking.chunk_overlap", "chunking.overlap", "same meaning"),
    ForeignKey("chunking.min_chunk_size", "chunking.min_size", "a smaller trailing chunk merges backwards"),
    # extraction
    ForeignKey("extraction.max_gleanings", "llm.max_gleanings", "gleaning turns are LLM calls"),
    *(
        ForeignKey(
            f"extraction.{k}",
            None,
            "extraction is a JSON tool call validated against a schema, not delimited text",
        )
        for k in ("tuple_delimiter", "record_delimiter", "completion_delimiter")
    ),
    # strategies: the seed's per-strategy sections onto strategies.<name>.<param> and index settings
    ForeignKey(
        f"{_GRAPHRAG}.community_detection.algorithm",
        None,
        "communities are Leiden's (graspologic's hierarchical Leiden)",
        fixed=("leiden",),
    ),
    ForeignKey(f"{_GRAPHRAG}.community_detection.max_level", "graph.max_level", "an index-time setting"),
    ForeignKey(f"{_GRAPHRAG}.community_detection.resolution", "graph.resolution", "an index-time setting"),
    ForeignKey(
        f"{_GRAPHRAG}.summarization.max_tokens",
        None,
        "a community report's reply is capped at 2000 tokens",
        fixed=(2000,),
    ),
    ForeignKey(
        f"{_GRAPHRAG}.summarization.temperature",
        None,
        "community reports are written at temperature 0, so a rebuild reproduces them from the LLM cache",
        fixed=(0,),
    ),
    ForeignKey(f"{_GRAPHRAG}.local_search.max_hops", "strategies.graphrag_local.max_hops", "query parameter"),
    ForeignKey(
        f"{_GRAPHRAG}.local_search.top_k_entities",
        "strategies.graphrag_local.top_k_entities",
        "query parameter",
    ),
    ForeignKey(
        f"{_GRAPHRAG}.local_search.top_k_relationships",
        None,
        "relationships fill their share of the context (strategies.graphrag_local.relationship_prop), "
        "as in GraphRAG's local search, not a count",
    ),
    ForeignKey(
        f"{_GRAPHRAG}.global_search.map_max_tokens",
        None,
        "a map reply is capped at 1000 tokens",
        fixed=(1000,),
    ),
    ForeignKey(
        f"{_GRAPHRAG}.global_search.reduce_max_tokens",
        None,
        "the reduce step is the answer call, whose length is query.generation.max_tokens for every strategy",
    ),
    ForeignKey(
        f"{_GRAPHRAG}.global_search.top_k_communities",
        "strategies.graphrag_global.top_k_communities",
        "query parameter",
    ),
    ForeignKey(
        f"{_LIGHTRAG}.relationship_description.*",
        None,
        "relationship descriptions come from extraction (llm.max_tokens, llm.temperature) and are "
        "summarized past extraction.summarize_above_fragments fragments",
    ),
    ForeignKey(
        f"{_LIGHTRAG}.search_modes.local_top_k",
        "strategies.lightrag.top_k_elements",
        "entities (local) and relationships (global) matched",
        _number,
    ),
    ForeignKey(
        f"{_LIGHTRAG}.search_modes.global_top_k",
        "strategies.lightrag.top_k_elements",
        "one value for both sides: must equal local_top_k",
        _same_top_k,
    ),
    ForeignKey(
        f"{_LIGHTRAG}.search_modes.hybrid_weights",
        "strategies.lightrag.entity_weight",
        "[entity, relation] becomes entity / (entity + relation), the entities' share of the graph contexts",
        _share,
    ),
    ForeignKey(
        f"{_HIPPORAG}.fact_extraction.max_facts_per_chunk",
        None,
        "facts are the relationships extraction finds; a chunk keeps all of them",
    ),
    ForeignKey(f"{_HIPPORAG}.ppr_config.damping", "strategies.hipporag.ppr_alpha", "the PPR damping"),
    ForeignKey(
        f"{_HIPPORAG}.ppr_config.max_iterations",
        None,
        "the walk stops once a step moves less than ppr_tolerance (at most 50 steps)",
    ),
    ForeignKey(
        f"{_HIPPORAG}.ppr_config.tolerance",
        "strategies.hipporag.ppr_tolerance",
        "L1 change per step",
        _number,
    ),
    ForeignKey(
        f"{_HIPPORAG}.retrieval.top_k_entities",
        "strategies.hipporag.top_k_entities",
        "entities seeding the walk",
    ),
    ForeignKey(f"{_HIPPORAG}.retrieval.top_k_passages", None, "the passages returned are the query's top_k"),
    ForeignKey("strategies.hybrid.dense_weight", "strategies.hybrid.alpha", "weight of the dense ranking"),
    ForeignKey(
        "strategies.hybrid.sparse_weight",
        None,
        "always 1 - dense_weight (an error if it is not)",
        _sparse,
    ),
    ForeignKey("strategies.hybrid.bm25_config.k1", "graph.bm25_k1", "BM25 is built at index time"),
    ForeignKey("strategies.hybrid.bm25_config.b", "graph.bm25_b", "BM25 is built at index time"),
    # storage
    ForeignKey(
        "storage.root_dir",
        None,
        "the home folder is --home (or GRAPHUNIFIED_HOME), the folder this settings.yaml lives in",
    ),
    ForeignKey(
        "storage.parquet.*",
        None,
        "tables are LZ4-compressed Parquet, written one partition per file",
    ),
    ForeignKey(
        "storage.vector_store",
        None,
        "vectors are stored in LanceDB under the home folder (lancedb/), cosine; no other backend",
    ),
    ForeignKey(
        "vector_store.*",
        None,
        "vectors are stored in LanceDB under the home folder (lancedb/); no other backend (faiss, chroma)",
    ),
    ForeignKey(
        "storage.graph_store",
        None,
        "the graph is Parquet tables read into memory (scipy) from the home folder",
    ),
    ForeignKey(
        "storage.backend",
        None,
        "the index is Parquet + LanceDB files in the home folder (or storage.publish_uri)",
    ),
    ForeignKey("graph.backend", None, "the graph is Parquet tables read into memory, not a graph database"),
    ForeignKey(
        "cache.*", None, "LLM and embedding caches live in the home folder (.cache/) with no settings"
    ),
    # query
    ForeignKey("query.max_tokens", "query.generation.max_tokens", "the answer's length"),
    # performance
    ForeignKey(
        "performance.indexing.*",
        None,
        "parallelism is Dagster's runs and llm.concurrency parallel LLM calls; indexing is incremental, "
        "so a re-run of `index` redoes only what is not yet indexed (no checkpoint interval)",
    ),
    ForeignKey("performance.query.cache_enabled", "query.cache.enabled", "the query path's result cache"),
    ForeignKey("performance.query.cache_ttl", "query.cache.ttl_seconds", "seconds a cached result lives"),
    # logging
    ForeignKey(
        "logging.output",
        None,
        "logs go to standard error (and Dagster's run logs); redirect it to keep a file",
        fixed=("stderr",),
    ),
)


def markdown_table() -> str:
    """docs/seed-settings.md's table, one row per `FOREIGN_KEYS` entry."""
    rows = ["| Seed key | Here | Why |", "| --- | --- | --- |"]
    rows += [f"| `{entry.key}` | {_here(entry)} | {entry.why} |" for entry in FOREIGN_KEYS]
    return "\n".join(rows) + "\n"


def _here(entry: ForeignKey) -> str:
    if entry.ours is not None:
        return f"`{entry.ours}`"
    if entry.fixed:
        return f"fixed: {', '.join(map(str, entry.fixed))} (another value: warning)"
    return "checked, then dropped" if entry.convert else "ignored (warning)"


START, END = "<!-- seed-keys:start -->", "<!-- seed-keys:end -->"


def with_table(page: str) -> str:
    """``page`` with its table between the START and END markers rewritten from `FOREIGN_KEYS`."""
    head, rest = page.split(START, 1)
    return f"{head}{START}\n{markdown_table()}{END}{rest.split(END, 1)[1]}"


if __name__ == "__main__":  # python -m graphunified_query.core.settings.foreign: rewrite the docs table
    from pathlib import Path

    doc = Path("docs/seed-settings.md")
    doc.write_text(with_table(doc.read_text(encoding="utf-8")), encoding="utf-8")

"""Every materialization of the sample corpus reports numeric metadata the UI can plot."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from graphunified_assets.defs.build import build_definitions
from graphunified_assets.defs.jobs import INDEX_DOCUMENTS, REFRESH_INDEXES
from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.defs.sensors import partition_range_tags
from graphunified_assets.lib.graph.graph_elements import texts_to_embed
from graphunified_query.core.providers.embedding_cache import EmbeddingCache, text_hash
from graphunified_query.core.providers.fused_embedder import calibrated_embedder
from graphunified_query.core.providers.local_embedder import BATCH_COST_TOKENS
from graphunified_query.core.stores.parquet import read_partitions
from tests.conftest import SAMPLE_DOCS

FRESHNESS = dg.AssetCheckKey(dg.AssetKey("published_snapshot"), "covers_newest_document")
NUMBER = (dg.IntMetadataValue, dg.FloatMetadataValue)
# What a step's local model batches computed (graphunified_assets/defs/observability.py).
EMBED = ("embed_texts", "embed_tokens", "embed_padded_tokens", "embed_batches")
# Key entries per asset, beyond the `seconds` every asset reports.
EXPECTED = {
    "documents": {"parsed", "new_documents", "changed_documents", "failed", "characters"},
    "chunks": {"chunks", "tokens"},
    "chunk_embeddings": {"chunks", "texts_embedded", "cache_hits", "provider_calls", *EMBED},
    "extractions": {
        "entities",
        "relationships",
        "facts",
        "keyword_texts_parsed",
        "llm_calls",
        "input_tokens",
        "cost_usd",
    },
    "entities": {
        "rows",
        "documents",
        "mentions_merged",
        "fuzzy_comparisons",
        "embedding_rows",
        "keyword_texts_parsed",
        "llm_calls",
        "cost_usd",
    },
    "relationships": {"rows"},
    "facts": {"rows"},
    "graph": {"edges", "new_entity_names"},
    "communities": {"rows", "unchanged", "changed"},
    "community_reports": {"rows", "generated", "reused", "llm_calls", "output_tokens", "cost_usd"},
    "chunk_vectors": {"rows", "documents", "pruned_documents"},
    "graph_vectors": {"texts_requested", "texts_distinct", "texts_embedded", "provider_calls", *EMBED},
    "bm25_index": {"chunks"},
    "ppr_graph": {"nodes", "edges"},
    "report_vectors": {"rows", *EMBED},
    "chunk_similarity": {"chunks", "edges"},
}
MARKDOWN = {"entities": "merges", "graph": "edge_kinds", "communities": "levels", "chunk_vectors": "corpus"}


def _latest_metadata(instance: dg.DagsterInstance, key: str) -> dict[str, dg.MetadataValue]:
    event = instance.get_latest_materialization_event(dg.AssetKey(key))
    assert event is not None and event.asset_materialization is not None, f"{key} was not materialized"
    return dict(event.asset_materialization.metadata)


@pytest.mark.slow
def test_sample_corpus_materializations_carry_numeric_metadata(input_dir: Path, home: Path) -> None:
    resource = GraphUnifiedResource(home=str(home), input_dir=str(input_dir))
    defs = build_definitions(resource)
    keys = sorted(SAMPLE_DOCS)
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("documents", keys)
        index_job, refresh_job = defs.resolve_job_def(INDEX_DOCUMENTS), defs.resolve_job_def(REFRESH_INDEXES)
        assert index_job.execute_in_process(
            instance=instance, tags=partition_range_tags(keys[0], keys[-1])
        ).success
        refresh = refresh_job.execute_in_process(instance=instance)
        assert refresh.success
        # No storage.publish_uri: remote_snapshot is skipped, not shown as a copy that never happened.
        assert instance.get_latest_materialization_event(dg.AssetKey("remote_snapshot")) is None
        assert instance.get_latest_materialization_event(dg.AssetKey("published_snapshot")) is not None

        for asset, names in EXPECTED.items():
            metadata = _latest_metadata(instance, asset)
            missing = (names | {"seconds"}) - set(metadata)
            assert not missing, f"{asset} lacks {sorted(missing)}"
            for name in names | {"seconds"}:
                assert isinstance(metadata[name], NUMBER), (
                    f"{asset}.{name} is {type(metadata[name]).__name__}"
                )
            assert metadata["seconds"].value >= 0
        for asset in ("graph_vectors", "report_vectors"):  # one call per shard: sorted across it
            metadata = _latest_metadata(instance, asset)
            padded, real = metadata["embed_padded_tokens"].value, metadata["embed_tokens"].value
            # A few hundred tokens: a batch more costs about as much as the padding it would save.
            allowed = 1.05 * real + BATCH_COST_TOKENS * metadata["embed_batches"].value
            assert 0 < real <= padded <= allowed, (asset, padded, real)
        # The cold build's graph vectors: one model call per shard with texts to embed (sorted across
        # the shard), the slices then all served by the cache; per table its distinct texts. The
        # relationship shard composes its vectors from description sentences, which the document
        # run embedded: it calls the model for none.
        graph_vectors = _latest_metadata(instance, "graph_vectors")
        assert graph_vectors["shards"].value == 3  # a table each
        assert graph_vectors["provider_calls"].value == 2, graph_vectors["relationship_vectors_texts"]
        assert all(graph_vectors[f"{t}_texts"].value > 0 for t in ("entity_vectors", "fact_vectors"))
        for asset, name in MARKDOWN.items():
            table = _latest_metadata(instance, asset)[name]
            assert isinstance(table, dg.MarkdownMetadataValue) and table.value.startswith("|"), asset

        documents = _latest_metadata(instance, "documents")
        assert (documents["new_documents"].value, documents["changed_documents"].value) == (3, 0)
        # A ranged run's numbers are the batch's, and each partition's page says so.
        assert documents["batch_documents"].value == 3
        assert (
            "3 documents" in documents["batch"].value
            and "not this document's own" in documents["batch"].value
        )
        assert "batch" not in _latest_metadata(instance, "chunk_vectors")  # global: not a batch
        assert _latest_metadata(instance, "chunk_vectors")["documents"].value == 3
        assert _latest_metadata(instance, "extractions")["llm_calls"].value == 0  # offline: zeros, not gaps
        # The document run parsed its relationship sentences for keywords: the global step parses none.
        assert _latest_metadata(instance, "extractions")["keyword_texts_parsed"].value > 0
        assert _latest_metadata(instance, "entities")["keyword_texts_parsed"].value == 0
        # It embedded its entity names and description sentences too: graph_elements' model ran no batch.
        assert _latest_metadata(instance, "extractions")["embed_texts"].value > 0
        assert "embed_texts" not in _latest_metadata(instance, "entities")
        # The graph's asset checks run with the refresh and show their result in the UI.
        checks = refresh.get_asset_check_evaluations()
        assert {c.check_name for c in checks} >= {
            "entities_have_live_sources",
            "relationships_are_anchored",
            "community_hierarchy_is_consistent",
            "covers_newest_document",
        }
        assert all(c.passed for c in checks), [c.check_name for c in checks if not c.passed]

        # An edit shows up as one changed document, not a new one.
        (input_dir / "flood.txt").write_text("The Great Flood\nIn 1894 the River Harrow rose.\n")
        assert index_job.execute_in_process(instance=instance, partition_key="flood.txt").success
        documents = _latest_metadata(instance, "documents")
        assert (documents["new_documents"].value, documents["changed_documents"].value) == (0, 1)
        assert "batch" not in documents  # one document's run: its numbers are its own

        # The edit is indexed but not yet published: the snapshot's freshness check says so.
        freshness = dg.define_asset_job("freshness", selection=dg.AssetSelection.checks(FRESHNESS))
        check_run = dg.Definitions.merge(defs, dg.Definitions(jobs=[freshness]))
        evaluations = check_run.resolve_job_def("freshness").execute_in_process(instance=instance)
        (evaluation,) = evaluations.get_asset_check_evaluations()
        assert not evaluation.passed and evaluation.metadata["newest_document_partition"].value == "flood.txt"
        assert evaluation.metadata["seconds_behind"].value > 0


def _index_sample_documents(resource: GraphUnifiedResource, instance: dg.DagsterInstance) -> list[dict]:
    """The document runs over the sample documents, in one run; their extraction rows."""
    keys = sorted(SAMPLE_DOCS)
    instance.add_dynamic_partitions("documents", keys)
    index_job = build_definitions(resource).resolve_job_def(INDEX_DOCUMENTS)
    tags = partition_range_tags(keys[0], keys[-1])
    assert index_job.execute_in_process(instance=instance, tags=tags).success
    files = sorted(resource.layout.partition_dir("extractions").glob("*.parquet"))
    return read_partitions(files).to_pylist()


@pytest.mark.slow
def test_with_relationships_embedded_whole_the_document_run_embeds_the_names_alone(
    input_dir: Path, home: Path
) -> None:
    # A relationship vector is then its whole text: the sentences of short descriptions would be
    # embedded for nothing (with a provider, paid for); graph_elements embeds those its summaries rank.
    (home / "settings.yaml").write_text("embedding:\n  composed_vectors: [reports, report_points]\n")
    resource = GraphUnifiedResource(home=str(home), input_dir=str(input_dir))
    with dg.instance_for_test() as instance:
        rows = _index_sample_documents(resource, instance)
        names, none = texts_to_embed(rows, sentences_too=False)
        assert names and not none
        assert texts_to_embed(rows, sentences_too=True)[1]
        assert _latest_metadata(instance, "extractions")["embed_texts"].value == len(names)


@pytest.mark.slow
def test_the_document_run_embeds_the_graphs_names_with_every_model_the_global_steps_use(
    input_dir: Path, home: Path
) -> None:
    # Names: the calibrated MiniLM for resolution, and each fused model (the optimized MiniLM, e5)
    # for the relationship vectors; sentences: each fused model. The global steps then find them
    # cached instead of embedding them one step at a time.
    (home / "settings.yaml").write_text(
        "embedding:\n  models:\n    - name: all-MiniLM-L6-v2\n      variant: optimized\n"
        "    - name: multilingual-e5-small-q4\n"
    )
    resource = GraphUnifiedResource(home=str(home), input_dir=str(input_dir))
    with dg.instance_for_test() as instance:
        names, sentences = texts_to_embed(_index_sample_documents(resource, instance), sentences_too=True)
    embedder = resource.embedder()
    models = [part.model_name for part in embedder.provider.parts]  # type: ignore[attr-defined]
    assert models == ["all-MiniLM-L6-v2+opt-int8pc", "multilingual-e5-small-q4"]
    cached = EmbeddingCache(resource.layout.embedding_cache)

    def held(model: str, texts: list[str]) -> int:
        return len(cached.get_many(model, "document", [text_hash(t) for t in texts]))

    assert names and sentences
    assert held(calibrated_embedder(embedder).model_name, names) == len(names)
    assert calibrated_embedder(embedder).model_name == "all-MiniLM-L6-v2"
    for model in models:
        assert held(model, names) == len(names)
        assert held(model, sentences) == len(set(sentences))

"""The offline extractor's results are cached by content: unchanged text is extracted once."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import dagster as dg
import pytest

from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.lib.extraction.extraction_cache import CachedExtractor
from graphunified_assets.lib.extraction.offline_extractor import OfflineExtractor
from graphunified_assets.lib.extraction.records import ChunkExtraction, ChunkText
from graphunified_assets.lib.extraction.selection import make_extractor
from graphunified_assets.ops.indexing import index
from graphunified_query.core.providers.llm_cache import LLMCache
from graphunified_query.core.settings.model import Settings
from tests.lib.counting_cache import CountingCache

TYPES = ("PERSON", "ORGANIZATION", "LOCATION", "EVENT", "DATE")
MILL = ChunkText("mill#0", "Thomas Hale founded the Hale Mill in Millbrook in 1862.", title="Hale Mill")
DAM = ChunkText("dam#0", "Arthur Penrose built the Kestrel Dam above Eastfold in 1931.", title="Kestrel Dam")


class CountingExtractor(OfflineExtractor):
    """The real offline extractor, remembering which chunks it was asked to extract."""

    def __init__(self) -> None:
        super().__init__(entity_types=TYPES)
        self.asked: list[str] = []

    def extract(self, chunks: Sequence[ChunkText]) -> list[ChunkExtraction]:
        self.asked += [c.chunk_id for c in chunks]
        return super().extract(chunks)


def _records(result: ChunkExtraction) -> tuple[object, ...]:
    return (result.entities, result.relationships, result.facts)


def test_the_same_text_under_another_id_is_served_from_the_cache(tmp_path: Path) -> None:
    inner = CountingExtractor()
    cache = LLMCache(tmp_path / "extractions.sqlite")
    first = CachedExtractor(inner, cache, fingerprint={"code": "v1"}).extract([MILL])
    copy = ChunkText("copy-of-mill#0", MILL.text, title=MILL.title)

    cached = CachedExtractor(inner, cache, fingerprint={"code": "v1"})
    again = cached.extract([copy, DAM])

    assert inner.asked == ["mill#0", "dam#0"]  # the copy was never extracted
    assert (cached.hits, cached.misses) == (1, 1)
    assert again[0].chunk_id == "copy-of-mill#0" and _records(again[0]) == _records(first[0])
    assert any(e.name == "Thomas Hale" for e in again[0].entities)
    assert again[1].chunk_id == "dam#0" and any(e.name == "Arthur Penrose" for e in again[1].entities)


def test_a_call_reads_the_cache_once_and_saves_what_it_extracted_in_one_transaction(tmp_path: Path) -> None:
    cache = CountingCache(tmp_path / "extractions.sqlite")
    CachedExtractor(CountingExtractor(), cache, fingerprint={"code": "v1"}).extract([MILL])
    cached = CachedExtractor(CountingExtractor(), cache, fingerprint={"code": "v1"})
    cache.reads, cache.writes = 0, []
    results = cached.extract([MILL, DAM, ChunkText("copy#0", DAM.text, title=DAM.title)])
    assert (cache.reads, cache.writes) == (1, [1])  # one lookup; the one new text saved once
    assert [r.chunk_id for r in results] == ["mill#0", "dam#0", "copy#0"]
    cache.reads, cache.writes = 0, []
    cached.extract([MILL, DAM])
    assert (cache.reads, cache.writes) == (1, [])  # all cached: nothing written


def test_other_settings_or_code_miss_the_cache(tmp_path: Path) -> None:
    inner = CountingExtractor()
    cache = LLMCache(tmp_path / "extractions.sqlite")
    CachedExtractor(inner, cache, fingerprint={"code": "v1", "entity_types": TYPES}).extract([MILL])
    CachedExtractor(inner, cache, fingerprint={"code": "v2", "entity_types": TYPES}).extract([MILL])
    CachedExtractor(inner, cache, fingerprint={"code": "v1", "entity_types": ("PERSON",)}).extract([MILL])
    retitled = ChunkText(MILL.chunk_id, MILL.text, title="Mills of the Harrow")
    CachedExtractor(inner, cache, fingerprint={"code": "v1", "entity_types": TYPES}).extract([retitled])
    assert inner.asked == ["mill#0"] * 4


def test_the_key_follows_the_extraction_settings(tmp_path: Path) -> None:
    def key(settings: Settings) -> str:
        extractor = make_extractor(settings, llm_cache=tmp_path / "llm", extraction_cache=tmp_path / "x")
        assert isinstance(extractor, CachedExtractor)
        return extractor.key(MILL)

    base = Settings.model_validate({"llm": {"provider": "offline"}})
    tuned = Settings.model_validate(
        {"llm": {"provider": "offline"}, "extraction": {"concept_heads": ["mill"]}}
    )
    assert key(base) == key(base) != key(tuned)
    uncached = make_extractor(base, llm_cache=tmp_path / "llm")
    assert isinstance(uncached, OfflineExtractor)  # evaluation extracts afresh


@pytest.mark.slow
def test_editing_one_paragraph_re_extracts_only_its_chunk(home: Path, tmp_path: Path) -> None:
    (home / "settings.yaml").write_text(
        "embedding:\n  provider: local\nllm:\n  provider: offline\n"
        "chunking:\n  size: 40\n  overlap: 0\n  min_size: 10\n"
    )
    paragraphs = [
        "Thomas Hale founded the Hale Mill in Millbrook in 1862. The mill wove wool cloth for the railway.",
        "Eleanor Hale ran the Hale Mill after Thomas Hale died. She sold cloth to merchants in York.",
        "Arthur Penrose built the Kestrel Dam above Eastfold in 1931 to stop the River Harrow flooding.",
    ]
    folder = tmp_path / "input"
    folder.mkdir()
    document = folder / "harrow.md"
    document.write_text("# Harrow Valley\n\n" + "\n\n".join(paragraphs) + "\n")
    resource = GraphUnifiedResource(home=str(home), input_dir=str(folder))
    index(resource, echo=lambda _: None)
    first = _extraction_metadata()
    assert first["chunks"] >= 2 and first["extraction_cache_hits"] == 0

    paragraphs[2] = (
        "Arthur Penrose built the Kestrel Dam in 1931; the Great Flood of 1894 had ruined Millbrook."
    )
    document.write_text("# Harrow Valley\n\n" + "\n\n".join(paragraphs) + "\n")
    index(resource, echo=lambda _: None)
    edited = _extraction_metadata()
    assert edited["extraction_cache_hits"] >= 1  # the chunk(s) of the unchanged paragraphs
    assert edited["extraction_cache_hits"] < edited["chunks"]  # the edited one was extracted


def _extraction_metadata() -> dict[str, int]:
    event = dg.DagsterInstance.get().get_latest_materialization_event(dg.AssetKey("extractions"))
    assert event is not None and event.asset_materialization is not None
    metadata = event.asset_materialization.metadata
    return {name: int(metadata[name].value) for name in ("chunks", "extraction_cache_hits")}  # type: ignore[arg-type]

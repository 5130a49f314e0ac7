"""The seed's settings.yaml (seed 003, "Configuration Schema"), pasted verbatim, works: every key
sets its setting or warns once saying why, its `strategies:` block sets strategies.<name>.<param>,
and the whole file, strategies included, is validated on load, so `index` fails fast on a typo."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest

from graphunified_assets.cli.main import main as pipeline_main
from graphunified_assets.lib.extraction.records import ChunkText
from graphunified_assets.lib.extraction.selection import make_extractor
from graphunified_assets.lib.extraction.tool_turns import TOOL_NAME
from graphunified_query.core.providers.claude import ClaudeClient
from graphunified_query.core.providers.llm_cache import LLMCache
from graphunified_query.core.settings.file import SettingsWarning
from graphunified_query.core.settings.foreign import FOREIGN_KEYS, markdown_table, with_table
from graphunified_query.core.settings.model import Settings, SettingsError, load_settings
from tests.fakes.anthropic_server import FakeAnthropicServer, tool_use

ROOT = Path(__file__).resolve().parents[2]
SEED = ROOT / "tests" / "fixtures" / "seed_settings.yaml"
KEYS = {"ANTHROPIC_API_KEY": "sk-ant-test", "VOYAGE_API_KEY": "pa-test"}


def _load(file: Path, environ: dict[str, str] = KEYS) -> tuple[Settings, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        settings = load_settings(file=file, environ=environ)
    return settings, [str(w.message) for w in caught if issubclass(w.category, SettingsWarning)]


def _seed_with(tmp_path: Path, old: str, new: str) -> Path:
    text = SEED.read_text(encoding="utf-8")
    assert old in text, old
    (tmp_path / "settings.yaml").write_text(text.replace(old, new, 1), encoding="utf-8")
    return tmp_path / "settings.yaml"


def test_the_seeds_settings_file_loads_as_written() -> None:
    settings, said = _load(SEED)
    assert settings.llm.model == "claude-3-5-sonnet-20241022" and settings.llm.max_tokens == 4096
    assert (settings.llm.requests_per_minute, settings.llm.tokens_per_minute) == (50, 40000)
    assert settings.llm.temperature == 0.0 and settings.llm.max_gleanings == 1
    # llm.temperature is extraction's; the answer keeps query.generation's.
    assert settings.query.generation.temperature == 0.3 and settings.query.generation.max_tokens == 2048
    assert settings.embedding.provider == "voyage" and settings.embedding.voyage_model == "voyage-3"
    assert settings.embedding.batch_size == 128
    assert (settings.chunking.size, settings.chunking.overlap, settings.chunking.min_size) == (512, 128, 100)
    assert (
        "CONCEPT" in settings.extraction.entity_types
        and "WORKS_FOR" in settings.extraction.relationship_types
    )
    assert (settings.graph.max_level, settings.graph.resolution) == (3, 1.0)
    assert (settings.graph.bm25_k1, settings.graph.bm25_b) == (1.5, 0.75)
    assert settings.strategies == {
        "graphrag_local": {"max_hops": 2, "top_k_entities": 10},
        "graphrag_global": {"top_k_communities": 10},
        "lightrag": {"top_k_elements": 20, "entity_weight": 0.5},
        "hipporag": {"ppr_alpha": 0.85, "ppr_tolerance": 1e-6, "top_k_entities": 10},
        "hybrid": {"alpha": 0.7},
    }
    assert (settings.query.default_strategy, settings.query.top_k, settings.query.context_window) == (
        "hybrid",
        10,
        8000,
    )
    assert settings.query.cache.ttl_seconds == 3600 and settings.query.cache.enabled
    assert (settings.logging.level, settings.logging.format) == ("INFO", "json")
    warned = sorted(s.split(": ", 1)[1].split(" is ignored")[0].split(":")[0] for s in said)
    assert warned == [
        "extraction.record_delimiter",
        "extraction.tuple_delimiter",
        "logging.output",
        "performance.indexing",
        "storage.graph_store",
        "storage.parquet",
        "storage.root_dir",
        "storage.vector_store",
        "strategies.graphrag.global_search.reduce_max_tokens",
        "strategies.graphrag.local_search.top_k_relationships",
        "strategies.graphrag.summarization.temperature",
        "strategies.hipporag.fact_extraction.max_facts_per_chunk",
        "strategies.hipporag.ppr_config.max_iterations",
        "strategies.hipporag.retrieval.top_k_passages",
        "strategies.lightrag.relationship_description",
        "version",
    ]
    assert all(" is ignored: " in s and s.startswith(str(SEED)) for s in said)  # each says why


@pytest.mark.parametrize(
    ("old", "new", "named"),
    [
        (
            "    dense_weight: 0.7",
            "    dense_wieght: 0.7",
            r"strategies\.hybrid\.dense_wieght: .*'dense_weight'",
        ),
        ("    local_search:", "    local_serch:", r"strategies\.graphrag\.local_serch: .*'local_search'"),
        ("      local_top_k: 20", "      local_topk: 20", r"search_modes\.local_topk: .*'local_top_k'"),
        (
            "  hipporag:",
            "  hipporag:\n    top_k_fatcs: 3",
            r"strategies\.hipporag\.top_k_fatcs: .*'top_k_facts'",
        ),
        ("  hybrid:", "  hybrid:\n    alpah: 0.2", r"strategies\.hybrid\.alpah: .*'alpha'"),
        ("  hybrid:", "  graphrag_locl:\n    max_hops: 1\n  hybrid:", r"graphrag_locl: .*'graphrag_local'"),
    ],
)
def test_a_typo_in_strategies_fails_on_load_naming_the_closest_key(
    tmp_path: Path, old: str, new: str, named: str
) -> None:
    with pytest.raises(SettingsError, match=named):
        _load(_seed_with(tmp_path, old, new))


@pytest.mark.parametrize(
    ("old", "new", "named"),
    [
        (
            "  dimension: 1024",
            "  dimension: 768",
            r"embedding\.dimension: 768 does not match voyage-3, .*1024",
        ),
        (
            '  provider: "voyageai"',
            '  provider: "cohere"',
            r"embedding\.provider: 'cohere' is not an embedding",
        ),
        (
            "    sparse_weight: 0.3",
            "    sparse_weight: 0.5",
            r"sparse_weight: 0\.5 \+ dense_weight 0\.7 must be 1",
        ),
        ("      global_top_k: 20", "      global_top_k: 30", r"global_top_k: 30 differs from local_top_k 20"),
        ("    ppr_config:\n      damping: 0.85", "    ppr_config:\n      damping: 1.5", r"ppr_alpha"),
    ],
)
def test_a_value_the_project_cannot_honour_is_an_error(
    tmp_path: Path, old: str, new: str, named: str
) -> None:
    with pytest.raises(SettingsError, match=named):
        _load(_seed_with(tmp_path, old, new))


def test_converted_values(tmp_path: Path) -> None:
    weights = _seed_with(tmp_path, "hybrid_weights: [0.5, 0.5]", "hybrid_weights: [3, 1]")
    assert _load(weights)[0].strategies["lightrag"]["entity_weight"] == 0.75
    off = _seed_with(tmp_path, "cache_enabled: true", "cache_enabled: false")
    assert not _load(off)[0].query.cache.enabled
    louvain = _seed_with(tmp_path, 'algorithm: "leiden"', 'algorithm: "louvain"')
    assert any(
        "community_detection.algorithm: 'louvain' is ignored: communities are Leiden" in s
        for s in _load(louvain)[1]
    )


def test_llm_temperature_sets_extraction_not_the_answer(tmp_path: Path) -> None:
    settings = _load(_seed_with(tmp_path, "temperature: 0.0  # Deterministic", "temperature: 0.4  #"))[0]
    assert settings.llm.temperature == 0.4 and settings.query.generation.temperature == 0.3

    def reply(body: dict[str, Any]) -> list[dict[str, Any]]:
        return tool_use(TOOL_NAME, {"entities": [], "relationships": [], "facts": []})

    with FakeAnthropicServer(reply, api_key="k") as fake:
        llm_settings = settings.llm.model_copy(update={"base_url": fake.base_url})
        client = ClaudeClient(
            llm_settings,
            settings.prices,
            api_key="k",
            cache=LLMCache(tmp_path / "llm.sqlite"),
            base_delay=0.001,
        )
        extractor = make_extractor(settings, llm_cache=tmp_path / "llm.sqlite", llm=client)
        extractor.extract([ChunkText("c1", "Thomas Hale founded the Hale Mill.")])
    assert fake.bodies and all(body["temperature"] == 0.4 for body in fake.bodies)


def test_index_fails_fast_on_a_strategies_typo(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    home, documents = tmp_path / "home", tmp_path / "docs"
    documents.mkdir()
    (documents / "a.md").write_text("# A\n\nThomas Hale founded the Hale Mill.\n")
    home.mkdir()
    (home / "settings.yaml").write_text(
        "embedding:\n  provider: local\nllm:\n  provider: offline\nstrategies:\n  hybrid:\n    alpah: 0.2\n"
    )
    code = pipeline_main(["index", "--home", str(home), "--input", str(documents)])
    error = capsys.readouterr().err
    assert code == 2 and "strategies.hybrid.alpah" in error and "did you mean 'alpha'" in error
    assert sorted(p.name for p in home.iterdir()) == ["settings.yaml"]  # nothing ran, nothing written


def test_the_docs_table_is_the_declaration() -> None:
    page = (ROOT / "docs" / "seed-settings.md").read_text(encoding="utf-8")
    assert page == with_table(page), "run `python -m graphunified_query.core.settings.foreign`"
    assert markdown_table() in page
    assert len({entry.key for entry in FOREIGN_KEYS}) == len(FOREIGN_KEYS)  # each key declared once

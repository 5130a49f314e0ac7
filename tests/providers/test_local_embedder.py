"""The local ONNX MiniLM embedder and the vendored, checksum-verified tokenizer."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import numpy as np
import pytest

from graphunified_query.core.providers import (
    LocalMiniLMEmbedder,
    count_tokens,
    load_tokenizer,
    local_embedder,
)
from graphunified_query.core.providers.tokenizer import TOKENIZER_FILE, TokenizerChecksumError


@pytest.fixture(scope="module")
def embedder() -> LocalMiniLMEmbedder:
    return LocalMiniLMEmbedder(batch_size=2)


def test_vectors_have_384_dimensions_and_unit_norm(embedder: LocalMiniLMEmbedder) -> None:
    vectors = embedder.embed(["short", "a much longer sentence about rivers and floods", ""], kind="query")
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    assert embedder.embed([]).shape == (0, 384)


def test_paraphrases_score_higher_than_unrelated_text(embedder: LocalMiniLMEmbedder) -> None:
    pairs = [
        ("The mill was founded in 1862.", "The factory was established in 1862."),
        ("How do I install the package?", "What are the installation steps for this library?"),
        ("The river flooded the town last spring.", "Last spring the town was inundated by the river."),
    ]
    unrelated = "Bananas are rich in potassium."
    for a, b in pairs:
        va, vb, vu = embedder.embed([a, b, unrelated])
        assert float(va @ vb) > float(va @ vu) + 0.3, (a, b)


def test_length_sorted_batching_keeps_input_order(embedder: LocalMiniLMEmbedder) -> None:
    texts = ["a much longer sentence about rivers, mills and floods in the valley", "tiny", "", "medium text"]
    together = embedder.embed(texts)  # batch_size=2 and reversed lengths force reordering
    for text, row in zip(texts, together, strict=True):
        assert np.allclose(row, embedder.embed([text])[0], atol=1e-4), text


def test_long_text_is_truncated_not_rejected() -> None:
    short = LocalMiniLMEmbedder(max_length=16)
    long_text = "word " * 5000
    assert short.embed([long_text]).shape == (1, 384)
    # The shared tokenizer is untouched by the embedder's truncation.
    assert count_tokens(long_text) == 5000
    assert load_tokenizer().truncation is None and load_tokenizer().padding is None


def test_count_tokens_excludes_special_tokens() -> None:
    assert count_tokens("") == 0
    assert count_tokens("hello world") == 2


def test_checksum_mismatch_names_the_file(tmp_path: Path) -> None:
    intact = tmp_path / "intact.json"
    shutil.copyfile(TOKENIZER_FILE, intact)
    assert load_tokenizer(intact).encode("hello").tokens == ["[CLS]", "hello", "[SEP]"]
    damaged = tmp_path / "tokenizer.json"
    damaged.write_bytes(TOKENIZER_FILE.read_bytes().replace(b"[UNK]", b"[UNX]", 1))
    with pytest.raises(TokenizerChecksumError, match="Reinstall") as error:
        load_tokenizer(damaged)
    assert str(damaged) in str(error.value)


def test_batches_run_on_the_embedders_threads_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """``threads`` batches run at once, each on one ONNX thread, and the vectors are bit for bit
    those of one batch at a time."""
    texts = [f"a river in flood, number {i}" for i in range(64)]
    one = LocalMiniLMEmbedder(threads=1, batch_size=4).embed(texts)
    real = local_embedder._get_session
    meet = threading.Barrier(2, timeout=30)  # broken (an error) unless two batches run together
    first_runs: set[int] = set()

    class MeetingSession:
        def __init__(self, session: object) -> None:
            self.session = session

        def run(self, *args: object) -> object:
            if threading.get_ident() not in first_runs:
                first_runs.add(threading.get_ident())
                meet.wait()
            return self.session.run(*args)  # type: ignore[attr-defined]

    monkeypatch.setattr(local_embedder, "_get_session", lambda path: MeetingSession(real(path)))
    two = LocalMiniLMEmbedder(threads=2, batch_size=4).embed(texts)
    assert len(first_runs) == 2 and np.array_equal(one, two)
    assert all(s.get_session_options().intra_op_num_threads == 1 for s in local_embedder._sessions.values())


def test_learning_the_model_name_reads_no_tokenizer(monkeypatch: pytest.MonkeyPatch) -> None:
    """`status` and every sensor tick build the configured embedder for its name alone: that must
    not parse the tokenizer (or load the model) until something is embedded."""
    from graphunified_assets.lib.ingest.update_plan import configured_model
    from graphunified_query.core.settings.embedding import EmbeddingSettings

    def refuse() -> object:
        raise AssertionError("the tokenizer was read to learn a name")

    monkeypatch.setattr(local_embedder, "load_tokenizer", refuse)
    assert configured_model(EmbeddingSettings(), {}) == "all-MiniLM-L6-v2"
    with pytest.raises(AssertionError, match="tokenizer was read"):
        LocalMiniLMEmbedder().embed(["now it is"])

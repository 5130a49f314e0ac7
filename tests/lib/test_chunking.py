"""Chunk spans tile the text exactly; windows respect size, overlap and min_size."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer

from graphunified_assets.lib.chunking import chunk_text

TOKENIZER_FILE = Path(__file__).resolve().parents[2] / "graphunified_query/providers/minilm_tokenizer.json"


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    tok = Tokenizer.from_file(str(TOKENIZER_FILE))
    tok.no_truncation()
    tok.no_padding()
    return tok


_words = st.sampled_from(["river", "mill", "Harrow", "é", "中文", "🙂", "1862", "data", "x", ",", "."])
_seps = st.sampled_from([" ", "  ", "\n", "\n\n", ". ", "\t"])
_texts = st.lists(st.tuples(_words, _seps), min_size=0, max_size=300).map(
    lambda p: "".join(a + b for a, b in p)
)


@settings(max_examples=50, deadline=None)
@given(text=_texts)
def test_spans_tile_the_text(tokenizer: Tokenizer, text: str) -> None:
    chunks = chunk_text(text, tokenizer=tokenizer, size=32, overlap=8, min_size=4)
    if not text.strip():
        assert chunks == []
        return
    assert chunks[0].start_char == 0
    assert chunks[-1].end_char == len(text)
    for chunk in chunks:
        assert chunk.text == text[chunk.start_char : chunk.end_char]
        assert chunk.n_tokens <= 32 + 4
    for previous, current in pairwise(chunks):
        assert current.start_char > previous.start_char
        assert current.start_char <= previous.end_char  # overlap or touch, never a gap
    rebuilt = chunks[0].text + "".join(text[p.end_char : c.end_char] for p, c in pairwise(chunks))
    assert rebuilt == text


def test_overlap_is_the_configured_token_count(tokenizer: Tokenizer) -> None:
    text = " ".join(f"word{i}" for i in range(500))  # no sentence ends: no snapping
    chunks = chunk_text(text, tokenizer=tokenizer, size=64, overlap=16, min_size=8)
    assert len(chunks) > 3
    first, second = chunks[0], chunks[1]
    shared = text[second.start_char : first.end_char].strip()
    assert len(tokenizer.encode(shared, add_special_tokens=False).ids) == 16
    assert all(c.n_tokens == 64 for c in chunks[:-1])


def test_window_ends_snap_to_a_sentence(tokenizer: Tokenizer) -> None:
    text = " ".join(f"Sentence number {i} is here." for i in range(100))
    chunks = chunk_text(text, tokenizer=tokenizer, size=64, overlap=16, min_size=8)
    assert all(c.text.rstrip().endswith(".") for c in chunks)


def test_short_and_empty_texts(tokenizer: Tokenizer) -> None:
    assert chunk_text("   \n", tokenizer=tokenizer, size=512, overlap=128, min_size=100) == []
    (only,) = chunk_text("A short note.", tokenizer=tokenizer, size=512, overlap=128, min_size=100)
    assert (only.start_char, only.end_char, only.text) == (0, 13, "A short note.")


def test_small_remainder_joins_the_previous_chunk(tokenizer: Tokenizer) -> None:
    text = " ".join(f"w{i}" for i in range(70))  # "w0" is 2 tokens: 140 tokens
    tokens = len(tokenizer.encode(text, add_special_tokens=False).ids)
    chunks = chunk_text(text, tokenizer=tokenizer, size=64, overlap=0, min_size=20)
    assert sum(c.n_tokens for c in chunks) == tokens
    assert chunks[-1].n_tokens >= 20
    assert all(c.n_tokens <= 64 + 20 for c in chunks)


def test_sections_name_the_heading_path(tokenizer: Tokenizer) -> None:
    intro = "# Guide\nIntro text.\n"
    body = "## Install\n" + " ".join(f"step{i}" for i in range(200))
    text = intro + body
    sections = [(("Guide",), 0, len(intro)), (("Guide", "Install"), len(intro), len(text))]
    chunks = chunk_text(text, tokenizer=tokenizer, size=64, overlap=8, min_size=8, sections=sections)
    assert chunks[0].section == "Guide"
    assert chunks[-1].section == "Guide > Install"


@pytest.mark.parametrize(("size", "overlap", "min_size"), [(10, 10, 1), (10, 2, 11), (0, 0, 1), (10, -1, 1)])
def test_invalid_parameters_raise(tokenizer: Tokenizer, size: int, overlap: int, min_size: int) -> None:
    with pytest.raises(ValueError, match=r"overlap|size"):
        chunk_text("text", tokenizer=tokenizer, size=size, overlap=overlap, min_size=min_size)

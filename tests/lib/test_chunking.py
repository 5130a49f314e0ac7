"""Chunk spans tile the text exactly; windows respect size, overlap, min_size and sentence ends."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer

from graphunified_assets.lib.ingest.chunking import Chunk, chunk_text

TOKENIZER_FILE = (
    Path(__file__).resolve().parents[2] / "graphunified_query/core/providers/minilm_tokenizer.json"
)
SIZE, OVERLAP, MIN_SIZE = 32, 8, 4


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    tok = Tokenizer.from_file(str(TOKENIZER_FILE))
    tok.no_truncation()  # the file ships with the model's 128-token truncation and padding
    tok.no_padding()
    return tok


def _offsets(tokenizer: Tokenizer, text: str) -> list[tuple[int, int]]:
    return tokenizer.encode(text, add_special_tokens=False).offsets


def _tokens_within(offsets: list[tuple[int, int]], start: int, end: int) -> int:
    return sum(1 for s, e in offsets if s >= start and e <= end)


# Hangul syllables and combining accents make one character yield several tokens, or several
# characters one token; "\x00" and zero-width spaces yield none.
_words = st.sampled_from(
    ["river", "mill", "Harrow", "é", "e\u0301", "中文", "한국어", "🙂", "1862", "3.14", "x", ",", ".", "!"]
)
_seps = st.sampled_from([" ", "  ", "\n", "\n\n", ". ", "\t", "", "\u200b", "\x00", "。"])
_texts = st.lists(st.tuples(_words, _seps), max_size=300).map(lambda p: "".join(a + b for a, b in p))
_plain_texts = st.lists(st.sampled_from(["river", "mill", "中文", "é", "🙂", "1862"]), max_size=300).map(
    " ".join
)


@settings(max_examples=50, deadline=None)
@given(text=_texts)
def test_spans_tile_the_text(tokenizer: Tokenizer, text: str) -> None:
    chunks = chunk_text(text, tokenizer=tokenizer, size=SIZE, overlap=OVERLAP, min_size=MIN_SIZE)
    if not text.strip():
        assert chunks == []
        return
    offsets = _offsets(tokenizer, text)
    assert [c.index for c in chunks] == list(range(len(chunks)))
    assert chunks[0].start_char == 0
    assert chunks[-1].end_char == len(text)
    for chunk in chunks:
        assert chunk.text == text[chunk.start_char : chunk.end_char]
        assert chunk.n_tokens == _tokens_within(offsets, chunk.start_char, chunk.end_char)
        assert chunk.n_tokens < SIZE + MIN_SIZE
    for previous, current in pairwise(chunks):
        assert current.start_char > previous.start_char
        assert current.start_char <= previous.end_char  # overlap or touch, never a gap
        assert previous.n_tokens <= SIZE  # only the last chunk may exceed size
    rebuilt = chunks[0].text + "".join(text[p.end_char : c.end_char] for p, c in pairwise(chunks))
    assert rebuilt == text


@settings(max_examples=50, deadline=None)
@given(text=_plain_texts)
def test_overlap_is_the_configured_token_count_without_sentence_ends(tokenizer: Tokenizer, text: str) -> None:
    chunks = chunk_text(text, tokenizer=tokenizer, size=SIZE, overlap=OVERLAP, min_size=MIN_SIZE)
    offsets = _offsets(tokenizer, text)
    for previous, current in pairwise(chunks):
        assert previous.n_tokens == SIZE
        assert _tokens_within(offsets, current.start_char, previous.end_char) == OVERLAP
    if len(chunks) > 1:
        assert MIN_SIZE <= chunks[-1].n_tokens < SIZE + MIN_SIZE


def test_overlap_shares_exactly_overlap_tokens(tokenizer: Tokenizer) -> None:
    text = " ".join(f"word{i}" for i in range(500))  # no sentence ends: no snapping
    chunks = chunk_text(text, tokenizer=tokenizer, size=64, overlap=16, min_size=8)
    assert len(chunks) > 3
    shared = text[chunks[1].start_char : chunks[0].end_char].strip()
    assert len(tokenizer.encode(shared, add_special_tokens=False).ids) == 16
    assert all(c.n_tokens == 64 for c in chunks[:-1])


def test_window_ends_snap_to_a_sentence(tokenizer: Tokenizer) -> None:
    text = " ".join(f"Sentence number {i} is here." for i in range(100))
    chunks = chunk_text(text, tokenizer=tokenizer, size=64, overlap=16, min_size=8)
    assert len(chunks) > 3
    assert all(c.text.rstrip().endswith(".") for c in chunks)
    assert any(c.n_tokens < 64 for c in chunks[:-1])  # snapped back from the full window


def test_window_ends_snap_to_a_paragraph(tokenizer: Tokenizer) -> None:
    # Paragraphs of 8 tokens: one always ends in a window's last 15% (9 tokens). No punctuation.
    text = "\n\n".join(f"w{p}x1 w{p}x2" for p in range(1, 100))
    chunks = chunk_text(text, tokenizer=tokenizer, size=64, overlap=16, min_size=8)
    assert len(chunks) > 3
    assert all(c.text.endswith("\n\n") for c in chunks[:-1])


def test_decimal_points_are_not_sentence_ends(tokenizer: Tokenizer) -> None:
    text = " ".join(f"value {i}.25 then" for i in range(200))
    chunks = chunk_text(text, tokenizer=tokenizer, size=64, overlap=16, min_size=8)
    assert all(c.n_tokens == 64 for c in chunks[:-1])


def test_chunks_never_split_a_character(tokenizer: Tokenizer) -> None:
    text = "한국어 " * 200  # each syllable is 2-3 word pieces sharing one character's offsets
    offsets = _offsets(tokenizer, text)
    token_starts = {start for start, _ in offsets}
    chunks = chunk_text(text, tokenizer=tokenizer, size=32, overlap=8, min_size=4)
    assert len(chunks) > 3
    assert sum(c.n_tokens for c in chunks) - sum(
        _tokens_within(offsets, c.start_char, p.end_char) for p, c in pairwise(chunks)
    ) == len(offsets)
    assert all(c.start_char in token_starts for c in chunks[1:])


def test_short_and_empty_texts(tokenizer: Tokenizer) -> None:
    assert chunk_text("", tokenizer=tokenizer, size=512, overlap=128, min_size=100) == []
    assert chunk_text("   \n\t", tokenizer=tokenizer, size=512, overlap=128, min_size=100) == []
    chunks = chunk_text("  A short note.\n", tokenizer=tokenizer, size=512, overlap=128, min_size=100)
    assert chunks == [Chunk(0, "  A short note.\n", 0, 16, 4, "")]
    # Fewer tokens than min_size: still a chunk, since it is the only one.
    (only,) = chunk_text("Hi.", tokenizer=tokenizer, size=32, overlap=8, min_size=16)
    assert (only.text, only.n_tokens) == ("Hi.", 2)


def test_small_remainder_joins_the_previous_chunk(tokenizer: Tokenizer) -> None:
    text = " ".join(f"w{i}" for i in range(70))  # no sentence ends: no snapping
    assert len(_offsets(tokenizer, text)) == 146
    chunks = chunk_text(text, tokenizer=tokenizer, size=64, overlap=0, min_size=20)
    assert [c.n_tokens for c in chunks] == [64, 64 + 18]  # 18 left over < min_size 20
    assert chunks[-1].end_char == len(text)
    chunks = chunk_text(text, tokenizer=tokenizer, size=64, overlap=0, min_size=18)
    assert [c.n_tokens for c in chunks] == [64, 64, 18]  # 18 is enough for a chunk of its own


def test_sections_name_the_heading_path(tokenizer: Tokenizer) -> None:
    preamble = "Draft notes.\n"
    intro = "# Guide\nIntro text.\n"
    body = "## Install\n" + " ".join(f"step{i}" for i in range(200))
    text = preamble + intro + body
    a, b = len(preamble), len(preamble) + len(intro)
    sections = [(("Guide", "Install"), b, len(text)), ((), 0, a), (("Guide",), a, b)]  # any order
    chunks = chunk_text(text, tokenizer=tokenizer, size=64, overlap=8, min_size=8, sections=sections)
    assert chunks[0].section == ""
    assert chunks[-1].section == "Guide > Install"
    small = chunk_text(intro + body, tokenizer=tokenizer, size=512, overlap=8, min_size=8, sections=[])
    assert small[0].section == ""
    chunks = chunk_text(text, tokenizer=tokenizer, size=4, overlap=1, min_size=1, sections=sections)
    assert {c.section for c in chunks} == {"", "Guide", "Guide > Install"}
    assert all(c.section == "Guide" for c in chunks if a <= c.start_char < b)


def test_long_single_line(tokenizer: Tokenizer) -> None:
    text = "lorem ipsum, dolor " * 6000  # ~114K characters, no newline
    chunks = chunk_text(text, tokenizer=tokenizer, size=512, overlap=128, min_size=100)
    assert len(chunks) > 40
    assert "".join(text[p.end_char : c.end_char] for p, c in pairwise(chunks)) == text[chunks[0].end_char :]


@pytest.mark.parametrize(
    ("size", "overlap", "min_size", "message"),
    [(10, 10, 1, "overlap"), (10, 2, 11, "min_size"), (0, 0, 1, "positive"), (10, -1, 1, "overlap")],
)
def test_invalid_parameters_raise(
    tokenizer: Tokenizer, size: int, overlap: int, min_size: int, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        chunk_text("text", tokenizer=tokenizer, size=size, overlap=overlap, min_size=min_size)


def test_truncating_tokenizer_is_rejected() -> None:
    truncating = Tokenizer.from_file(str(TOKENIZER_FILE))  # as shipped: truncation 128, padding
    with pytest.raises(ValueError, match="truncation and padding"):
        chunk_text("text", tokenizer=truncating, size=32, overlap=8, min_size=4)

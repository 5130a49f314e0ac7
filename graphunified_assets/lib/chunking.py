"""Token-overlap chunking with exact character offsets.

Tokens are counted with the embedding model's own tokenizer, so a chunk of ``size`` tokens is
what the model actually sees. Chunk spans tile the text: re-joining them (minus overlaps)
reproduces it exactly, which keeps citations and offsets honest.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass

from tokenizers import Tokenizer

# Window ends snap back to a sentence end if one lies in the window's last 15%.
_SNAP_FRACTION = 0.15
_SENTENCE_END = (".", "!", "?", ";", ":", "\n")


@dataclass(frozen=True)
class Chunk:
    index: int
    text: str
    start_char: int
    end_char: int
    n_tokens: int
    section: str  # heading path joined with " > ", "" when the document has none


def chunk_text(
    text: str,
    *,
    tokenizer: Tokenizer,
    size: int,
    overlap: int,
    min_size: int,
    sections: Sequence[tuple[tuple[str, ...], int, int]] = (),
) -> list[Chunk]:
    """Split ``text`` into windows of ``size`` tokens sharing ``overlap`` tokens.

    A trailing window with fewer than ``min_size`` new tokens joins the previous chunk, so the
    last chunk may hold up to ``size + min_size`` tokens.
    """
    _validate(size, overlap, min_size)
    if not text.strip():
        return []
    offsets = tokenizer.encode(text, add_special_tokens=False).offsets
    if not offsets:
        return [_chunk(0, text, 0, len(text), 0, sections)]
    windows = _windows(text, offsets, size, overlap, min_size)
    chunks = []
    for index, (first, last) in enumerate(windows):
        start = 0 if index == 0 else offsets[first][0]
        end = len(text) if index == len(windows) - 1 else _extend_end(text, offsets[last][1], offsets, last)
        chunks.append(_chunk(index, text, start, end, last - first + 1, sections))
    return chunks


def _windows(
    text: str, offsets: list[tuple[int, int]], size: int, overlap: int, min_size: int
) -> list[tuple[int, int]]:
    """Inclusive token index ranges of each window."""
    n = len(offsets)
    windows: list[tuple[int, int]] = []
    first = 0
    while True:
        last = min(first + size, n) - 1
        if last < n - 1:
            last = _snap_to_sentence(text, offsets, first, last, size)
        windows.append((first, last))
        if last >= n - 1:
            break
        next_first = max(last + 1 - overlap, first + 1)
        if n - (last + 1) < min_size:  # too little left for a chunk of its own
            windows[-1] = (first, n - 1)
            break
        first = next_first
    return windows


def _snap_to_sentence(text: str, offsets: list[tuple[int, int]], first: int, last: int, size: int) -> int:
    floor = last - int(size * _SNAP_FRACTION)
    for i in range(last, max(floor, first), -1):
        token_text = text[offsets[i][0] : offsets[i][1]]
        if token_text.endswith(_SENTENCE_END) or "\n" in text[offsets[i][1] : offsets[i + 1][0]]:
            return i
    return last


def _extend_end(text: str, end: int, offsets: list[tuple[int, int]], last: int) -> int:
    # Whitespace up to the next token belongs to the chunk on the left, leaving no gaps.
    return offsets[last + 1][0] if last + 1 < len(offsets) else len(text)


def _chunk(index: int, text: str, start: int, end: int, n_tokens: int, sections: Sequence) -> Chunk:
    return Chunk(index, text[start:end], start, end, n_tokens, _section_at(sections, start))


def _section_at(sections: Sequence[tuple[tuple[str, ...], int, int]], position: int) -> str:
    if not sections:
        return ""
    starts = [start for _, start, _ in sections]
    i = max(bisect.bisect_right(starts, position) - 1, 0)
    return " > ".join(sections[i][0])


def _validate(size: int, overlap: int, min_size: int) -> None:
    if size < 1 or overlap < 0 or min_size < 1:
        raise ValueError(
            f"chunk size ({size}) and min_size ({min_size}) must be positive, overlap ({overlap}) >= 0"
        )
    if overlap >= size:
        raise ValueError(f"chunk overlap ({overlap}) must be smaller than size ({size})")
    if min_size > size:
        raise ValueError(f"chunk min_size ({min_size}) must not exceed size ({size})")

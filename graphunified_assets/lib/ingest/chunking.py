"""Token-overlap chunking with exact character offsets.

Tokens are counted with the embedding model's own tokenizer, so a chunk of ``size`` tokens is
what the model actually sees. Chunk spans tile the text: re-joining them (minus overlaps)
reproduces it exactly, which keeps citations and offsets honest.

Windows of ``size`` tokens advance by ``size - overlap``. A window end snaps back to a sentence or
line end found in its last 15%, and the next window then starts ``overlap`` tokens before that
end. A trailing window with fewer than ``min_size`` new tokens is merged into the previous chunk,
so the last chunk may hold up to ``size + min_size - 1`` tokens.

Memory and time stay linear in the text: it is tokenized in segments cut at whitespace (where the
model's pre-tokenizer splits anyway, so the tokens are the same as in one pass), in parallel, and
the offsets are kept in two compact integer arrays, not one Python tuple per token. A "word" too
long for the vocabulary (a whitespace-free blob the model sees as one ``[UNK]``) counts as one
token per ``_LONG_TOKEN_PIECE`` characters, so even a 100K-character blob splits into bounded chunks.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import re
from array import array
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from tokenizers import Tokenizer

from graphunified_query.core.settings.model import ChunkingSettings

Sections = Sequence[tuple[tuple[str, ...], int, int]]

# Window ends snap back to a sentence end if one lies in the window's last 15%.
_SNAP_FRACTION = 0.15
_WHITESPACE = re.compile(r"[ \t\n]")
_SENTENCE_END = (".", "!", "?", "…")  # a boundary only when whitespace follows: not "3.14"
_CJK_SENTENCE_END = ("。", "！", "？")  # CJK text puts no space after these
# Tokenized in segments of about this many characters (a 50 MB text in one call needs ~8 GB).
_SEGMENT_CHARS = 65_536
_SEGMENTS_PER_CALL = 8
# WordPiece maps a word longer than 100 characters to one [UNK]; count such words in pieces.
_LONG_TOKEN_CHARS = 100
_LONG_TOKEN_PIECE = 8


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
    sections: Sections = (),
) -> list[Chunk]:
    """Split ``text`` into overlapping chunks of at most ``size`` tokens (see the module docstring).

    ``sections`` are (heading path, start, end) character spans; a chunk's section is the one
    holding its first character. The tokenizer must have truncation and padding disabled.
    """
    _validate(tokenizer, size, overlap, min_size)
    if not text.strip():
        return []
    # One tokenization of the whole text; everything else works on these offsets.
    offsets = Offsets.of(text, tokenizer)
    section_of = _SectionLookup(sections)
    if not offsets:  # e.g. only characters the normalizer drops
        return [Chunk(0, text, 0, len(text), 0, section_of(0))]
    windows = _windows(text, offsets, size, overlap, min_size)
    chunks = []
    for index, (first, last) in enumerate(windows):
        start = 0 if index == 0 else offsets[first][0]
        # Whitespace up to the next token belongs to the chunk on the left, leaving no gaps.
        end = len(text) if index == len(windows) - 1 else offsets[last + 1][0]
        chunks.append(Chunk(index, text[start:end], start, end, last - first + 1, section_of(start)))
    return chunks


class Offsets:
    """(start, end) character offsets of every token, in two int64 arrays."""

    def __init__(self, starts: array[int], ends: array[int]) -> None:
        self._starts = starts
        self._ends = ends

    @classmethod
    def of(cls, text: str, tokenizer: Tokenizer) -> Offsets:
        bounds = segment_bounds(text, _SEGMENT_CHARS)
        parts: list[np.ndarray] = []
        # A few segments per call: parallel, yet the Rust encodings (~100 bytes per token) of a
        # 50 MB text never exist all at once.
        for group in range(0, len(bounds), _SEGMENTS_PER_CALL):
            batch = bounds[group : group + _SEGMENTS_PER_CALL]
            encodings = tokenizer.encode_batch([text[a:b] for a, b in batch], add_special_tokens=False)
            parts += [_shifted(e.offsets, shift) for (shift, _), e in zip(batch, encodings, strict=True)]
        both = np.concatenate(parts) if parts else np.zeros((0, 2), np.int64)
        starts, ends = array("q"), array("q")  # plain ints on indexing, 8 bytes per token
        starts.frombytes(np.ascontiguousarray(both[:, 0]).tobytes())
        ends.frombytes(np.ascontiguousarray(both[:, 1]).tobytes())
        return cls(starts, ends)

    def __len__(self) -> int:
        return len(self._starts)

    def __getitem__(self, i: int) -> tuple[int, int]:
        return self._starts[i], self._ends[i]


def _shifted(offsets: list[tuple[int, int]], shift: int) -> np.ndarray:
    """A segment's token offsets as an (n, 2) array in text coordinates, long words in pieces."""
    spans = np.asarray(offsets, dtype=np.int64).reshape(-1, 2) + shift
    lengths = spans[:, 1] - spans[:, 0]
    if not (lengths > _LONG_TOKEN_CHARS).any():
        return spans
    rows: list[tuple[int, int]] = []
    for start, end in spans.tolist():
        if end - start <= _LONG_TOKEN_CHARS:
            rows.append((start, end))
        else:
            rows += [(p, min(p + _LONG_TOKEN_PIECE, end)) for p in range(start, end, _LONG_TOKEN_PIECE)]
    return np.asarray(rows, dtype=np.int64).reshape(-1, 2)


def segment_bounds(text: str, target: int) -> list[tuple[int, int]]:
    """[start, end) spans tiling ``text``, each about ``target`` characters, ending just after a
    whitespace character (a line end when there is one in the second half); a whitespace-free
    stretch stays whole, since cutting it would change its tokens."""
    bounds, start = [], 0
    while len(text) - start > target:
        limit = start + target
        end = text.rfind("\n", start + target // 2, limit) + 1
        if not end:
            end = max(text.rfind(" ", start + 1, limit), text.rfind("\t", start + 1, limit)) + 1
        if not end:
            match = _WHITESPACE.search(text, limit)
            if match is None:
                break
            end = match.end()
        bounds.append((start, end))
        start = end
    bounds.append((start, len(text)))
    return bounds


def _windows(text: str, offsets: Offsets, size: int, overlap: int, min_size: int) -> list[tuple[int, int]]:
    """Inclusive token index ranges of each window; every cut falls between characters."""
    n = len(offsets)
    windows: list[tuple[int, int]] = []
    first = 0
    while True:
        last = min(first + size, n) - 1
        if last < n - 1:
            last = _snap_to_sentence(text, offsets, first, last, size)
            last = _whole_characters_end(offsets, first, last)
        if n - 1 - last < min_size:  # too little left for a chunk of its own (or nothing at all)
            windows.append((first, n - 1))
            return windows
        windows.append((first, last))
        first = _next_first(offsets, first, last, overlap)


def _can_cut(offsets: Offsets, i: int) -> bool:
    """Whether a chunk may start at token ``i``: it shares no character with token ``i - 1``.

    One character can yield several tokens (a Hangul syllable decomposes into jamo); cutting
    between them would split the character and make chunk starts repeat.
    """
    return i <= 0 or i >= len(offsets) or offsets[i][0] >= offsets[i - 1][1]


def _whole_characters_end(offsets: Offsets, first: int, last: int) -> int:
    for i in range(last, first - 1, -1):
        if _can_cut(offsets, i + 1):
            return i
    i = last + 1  # one character wider than the window: only with absurdly small sizes
    while not _can_cut(offsets, i + 1):
        i += 1
    return i


def _next_first(offsets: Offsets, first: int, last: int, overlap: int) -> int:
    candidate = max(last + 1 - overlap, first + 1)
    i = candidate
    while i > first + 1 and not _can_cut(offsets, i):  # widen the overlap to a character boundary
        i -= 1
    if _can_cut(offsets, i):
        return i
    i = candidate
    while not _can_cut(offsets, i):  # terminates: a cut after ``last`` is always allowed
        i += 1
    return i


def _snap_to_sentence(text: str, offsets: Offsets, first: int, last: int, size: int) -> int:
    floor = max(last - int(size * _SNAP_FRACTION), first)
    for i in range(last, floor, -1):
        gap = text[offsets[i][1] : offsets[i + 1][0]]
        if "\n" in gap:  # line or paragraph end
            return i
        token = text[offsets[i][0] : offsets[i][1]]
        if token.endswith(_CJK_SENTENCE_END) or (token.endswith(_SENTENCE_END) and gap[:1].isspace()):
            return i
    return last


class _SectionLookup:
    """Heading path of the section holding a character, by binary search over section starts."""

    def __init__(self, sections: Sections) -> None:
        self._sections = sorted(sections, key=lambda section: section[1])
        self._starts = [start for _, start, _ in self._sections]

    def __call__(self, position: int) -> str:
        i = bisect.bisect_right(self._starts, position) - 1
        if i < 0 or position >= self._sections[i][2]:
            return ""  # not inside any section
        return " > ".join(self._sections[i][0])


def _validate(tokenizer: Tokenizer, size: int, overlap: int, min_size: int) -> None:
    if size < 1 or min_size < 1 or overlap < 0:
        raise ValueError(
            f"chunk size ({size}) and min_size ({min_size}) must be positive and overlap ({overlap}) >= 0"
        )
    if overlap >= size:
        raise ValueError(f"chunk overlap ({overlap}) must be smaller than size ({size})")
    if min_size > size:
        raise ValueError(f"chunk min_size ({min_size}) must not exceed size ({size})")
    # A truncating or padding tokenizer would silently miscount tokens and offsets.
    if tokenizer.truncation is not None or tokenizer.padding is not None:
        raise ValueError(
            "the chunking tokenizer must have truncation and padding disabled "
            "(use graphunified_query.core.providers.load_tokenizer())"
        )


def chunking_key(settings: ChunkingSettings) -> str:
    """The chunker's settings as a staleness key: a document chunked under another key is re-chunked
    by the next `index` (and `status` says so), though its content did not change."""
    return hashlib.sha256(json.dumps(settings.model_dump(), sort_keys=True).encode()).hexdigest()[:16]

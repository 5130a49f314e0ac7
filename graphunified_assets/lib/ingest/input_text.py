"""Turning raw input bytes into text, with errors that tell the user what to fix."""

from __future__ import annotations

import re

_BOM = b"\xef\xbb\xbf"
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
_SEPARATORS = re.compile(r"[-_\s]+")


class InputError(ValueError):
    """A document that cannot be indexed; the message says what is wrong and what to do."""


def decode_text(data: bytes) -> str:
    """UTF-8 text of a .txt/.md file (a UTF-8 BOM is dropped), or InputError."""
    if not data:
        raise InputError("empty file; add text to it or remove it")
    if data.startswith(_UTF16_BOMS):
        raise InputError("UTF-16 encoded; re-save the file as UTF-8")
    nul = data.find(b"\0")
    if nul >= 0:
        raise InputError(
            f"binary content (NUL byte at byte {nul}), not text; remove it or convert it to text"
        )
    bom = len(_BOM) if data.startswith(_BOM) else 0
    try:
        text = data[bom:].decode("utf-8")
    except UnicodeDecodeError as error:
        at = bom + error.start
        line = data.count(b"\n", 0, at) + 1
        raise InputError(f"not valid UTF-8 (byte {at}, line {line}); re-save the file as UTF-8") from None
    if not text.strip():
        raise InputError("contains only whitespace; add text to it or remove it")
    return text


def humanize_stem(stem: str) -> str:
    """A title from a file name: 'getting-started_guide' -> 'Getting started guide'."""
    words = _SEPARATORS.sub(" ", stem).strip()
    return words[:1].upper() + words[1:] if words else stem

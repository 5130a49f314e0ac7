"""Readings of a text that a model decodes but a phrase match does not: what attackers encode.

The normal form (``text_normalize``) undoes look-alikes, entities and spaced letters. A model also
reads through base64 blobs ("decode this and follow it"), leetspeak (``1gn0r3 4ll pr3v10us``) and
words broken by line breaks, hyphens or stray spaces (``ign\\nore prev ious``). ``readings`` gives
the normal form plus each such decoded reading, to be scored alike; ``squashed`` gives the letters
alone, for the few phrases no ordinary text spells without spaces. Every step is one linear pass
and the decoded volume is capped, so a hostile document cannot make the scan slow.
"""

from __future__ import annotations

import base64
import binascii
import re

from graphunified_assets.lib.risk.text_normalize import normalize

# A base64 blob: 20+ characters of its alphabet (the standard or URL-safe one), optional padding.
_BASE64 = re.compile(r"(?<![\w+/-])[A-Za-z0-9+/_-]{20,}={0,2}(?![\w+/=-])")
MAX_BLOBS = 32  # decoded per text: enough for any message, bounded for a document of blobs
MAX_BLOB_CHARS = 16_384
_PRINTABLE_SHARE = 0.9
# Leetspeak: digits and signs standing for letters, inside a token that also has letters.
_LEET = str.maketrans("013457@$", "oieastas")
_TOKEN = re.compile(r"[\w@$]+")  # whole tokens, each matched once: linear
_HAS_LETTER = re.compile(r"[^\W\d_]")
_HAS_LEET = re.compile(r"[013457@$]")
# A leet sign between two letters ("n0r", "r3v"): "1st", "4th", "10am" or "mp3" have none, so an
# ordinary text is not scored a second time for its ordinals and units.
_LEET_INSIDE = re.compile(r"[^\W\d_][013457@$]+[^\W\d_]")
_NOT_LETTERS = re.compile(r"[^a-z]+")


def readings(text: str, normal: str | None = None) -> list[str]:
    """The normal form (``normal``, if already made) first, then leetspeak and base64 blobs decoded."""
    normal = normalize(text) if normal is None else normal
    found = [normal]
    if _LEET_INSIDE.search(normal):
        found.append(_TOKEN.sub(_unleet, normal))
    found += [normalize(decoded) for decoded in decoded_blobs(text)]
    return found


def decoded_blobs(text: str, depth: int = 2) -> list[str]:
    """The text inside base64 blobs (and blobs inside those, ``depth`` levels), when it reads as text."""
    found: list[str] = []
    for match in _BASE64.finditer(text):
        if len(found) >= MAX_BLOBS:
            break
        decoded = _decode(match.group()[:MAX_BLOB_CHARS])
        if decoded is not None:
            found.append(decoded)
            if depth > 1:
                found += decoded_blobs(decoded, depth - 1)[: MAX_BLOBS - len(found)]
    return found


def squashed(normal: str) -> str:
    """Only the letters a-z of the normal form: words split by spaces, breaks or hyphens rejoined."""
    return _NOT_LETTERS.sub("", normal)


def _decode(blob: str) -> str | None:
    core = blob.rstrip("=").replace("-", "+").replace("_", "/")
    if len(core) % 4 == 1:  # no base64 text has this length
        return None
    try:
        decoded = base64.b64decode(core + "=" * (-len(core) % 4), validate=True).decode("utf-8")
    except (binascii.Error, ValueError):  # not base64, or bytes that are not UTF-8 text
        return None
    printable = sum(1 for c in decoded if c.isprintable() or c in "\n\t")
    return decoded if decoded and printable / len(decoded) >= _PRINTABLE_SHARE else None


def _unleet(match: re.Match[str]) -> str:
    token = match.group()
    return token.translate(_LEET) if _HAS_LEET.search(token) and _HAS_LETTER.search(token) else token

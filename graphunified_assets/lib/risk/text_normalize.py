"""Text as a model reads it, for the risk detector: the disguises an injection uses are undone.

A model reads through HTML entities (`&#x61;`), full-width or mathematical letters (NFKC),
Cyrillic or Greek look-alikes inside Latin words (`іgnore`), letters spaced or dotted apart
(`i g n o r e`) and invisible characters (`ig\u200bnore`). Matching the raw text misses all of
them, so patterns run on this normal form: lowercase, single spaces, line breaks kept (role
markers are matched at line starts). Every step is a single linear pass.
"""

from __future__ import annotations

import html
import re
import unicodedata

# Zero-width spaces/joiners, word joiner, invisible operators, BOM, bidi controls, Mongolian vowel separator.
INVISIBLE = re.compile("[\u200b-\u200f\u2060-\u2064\u2066-\u2069\u202a-\u202e\ufeff\u180e\u00ad]")
TAG_CHARACTERS = re.compile("[\U000e0000-\U000e007f]")
# Cyrillic and Greek letters that look like Latin ones (Unicode confusables, the common subset).
_CONFUSABLES = str.maketrans(
    "аеорсухіјѕԁɡһӏԛԝаеіоАВЕКМНОРСТХІЈЅԌԚԜοαρτνικεΑΒΕΖΗΙΚΜΝΟΡΤΥΧ",
    "aeopcyxijsdghlqwaeioABEKMHOPCTXIJSGQWoaptvikeABEZHIKMNOPTYX",
)
_LATIN = re.compile(r"[a-zA-Z]")
_WORD = re.compile(r"\w+")
# Single letters joined by one separator, four or more: "i g n o r e", "i.g.n.o.r.e", "i-g-n-o-r-e".
_SPACED = re.compile(r"(?<!\w)(?:\w[ .\-_*|/]){3,}\w(?!\w)")
_SPACES = re.compile(r"[^\S\n]+")


def invisible_count(text: str) -> int:
    return len(INVISIBLE.findall(text)) + len(TAG_CHARACTERS.findall(text))


def normalize(text: str) -> str:
    """Lowercase text with entities decoded, look-alikes mapped, spacing undone, invisibles gone."""
    text = html.unescape(html.unescape(text))  # twice: `&amp;#106;` is also read as `j` by a browser
    text = TAG_CHARACTERS.sub("", INVISIBLE.sub("", text))
    text = unicodedata.normalize("NFKC", text)
    text = _WORD.sub(_unconfuse, text)
    text = _SPACED.sub(lambda m: re.sub(r"[ .\-_*|/]", "", m.group()), text)
    return _SPACES.sub(" ", text.casefold())


def _unconfuse(match: re.Match[str]) -> str:
    """Map look-alikes only inside words that mix them with Latin letters (Russian stays Russian)."""
    word = match.group()
    if word.isascii() or not _LATIN.search(word):
        return word
    return word.translate(_CONFUSABLES)

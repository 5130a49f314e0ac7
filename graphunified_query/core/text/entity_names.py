"""Entity names as the project writes them: spaCy's labels mapped onto the project's types, and a
name's clean surface form.

Kept apart from `spacy_text` so the query path (the router reads them for every routed question)
can use them without importing spaCy, which alone takes most of a second.
"""

from __future__ import annotations

import re

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

_LEADING_THE = re.compile(r"^the\s+", re.IGNORECASE)
_POSSESSIVE = re.compile(r"(?:'s|’s|(?<=s)'|(?<=s)’)$")
_EDGE_JUNK = "\"'“”‘’`()[]{}<>,;:!?*#|/\\-–— \t\n"
_SPACES = re.compile(r"\s+")


def clean_name(text: str) -> str:
    """Surface form of an entity: no leading "the", no possessive, no surrounding punctuation."""
    name = _SPACES.sub(" ", text).strip(_EDGE_JUNK)
    name = _LEADING_THE.sub("", name)
    name = _POSSESSIVE.sub("", name).strip(_EDGE_JUNK)
    # A final period is punctuation unless the name is an abbreviation ("U.S.", "Inc.", "Jr.").
    if name.endswith(".") and "." not in name[:-1] and len(name.rsplit(" ", 1)[-1]) > 4:
        name = name[:-1]
    return name

"""Malformed model replies: the project's truncation-safe repair first, `json-repair` after it.

Ten replies as models write them. The project's repair alone reads 4 (fences, prose, trailing
commas, a cut-off record); with the library as fallback all 10 are read, and a cut-off record is
still dropped rather than kept half-written.
"""

from __future__ import annotations

from typing import Any

import pytest

from graphunified_query.core.providers.json_repair import loads_lenient, loads_own

RECORD = {"name": "Hale Mill", "type": "BUILDING"}
CASES: list[tuple[str, str, Any, bool]] = [  # (case, reply, expected value, the own repair reads it)
    ("trailing commas", '{"name": "Hale Mill", "type": "BUILDING",}', RECORD, True),
    (
        "fenced in prose",
        'Here it is:\n```json\n{"name": "Hale Mill", "type": "BUILDING"}\n```\nDone.',
        RECORD,
        True,
    ),
    ("prose after", '{"name": "Hale Mill", "type": "BUILDING"} I hope this helps!', RECORD, True),
    (
        "cut off mid-record",
        '{"entities": [{"name": "Hale Mill", "type": "BUILDING"}, {"name": "Tho',
        {"entities": [RECORD]},
        True,
    ),
    ("single quotes", "{'name': 'Hale Mill', 'type': 'BUILDING'}", RECORD, False),
    ("unquoted keys", '{name: "Hale Mill", type: "BUILDING"}', RECORD, False),
    ("Python literals", '{"name": "Hale Mill", "founded": True, "closed": None}', None, False),
    ("a comment", '{"name": "Hale Mill", // the mill\n "type": "BUILDING"}', RECORD, False),
    ("a missing comma", '{"name": "Hale Mill" "type": "BUILDING"}', RECORD, False),
    ("quotes inside a string", '{"name": "the "Hale" Mill", "type": "BUILDING"}', None, False),
]
EXPECTED = {
    "Python literals": {"name": "Hale Mill", "founded": True, "closed": None},
    "quotes inside a string": {"name": 'the "Hale" Mill', "type": "BUILDING"},
}


@pytest.mark.parametrize(("case", "reply", "expected", "own"), CASES, ids=[c[0] for c in CASES])
def test_each_malformed_reply_is_read(case: str, reply: str, expected: Any, own: bool) -> None:
    expected = EXPECTED.get(case, expected)
    assert loads_lenient(reply) == expected
    if own:
        assert loads_own(reply) == expected
    else:
        with pytest.raises(ValueError):
            loads_own(reply)


def test_the_counts_alone_and_with_the_fallback() -> None:
    def reads(parse: Any, reply: str) -> bool:
        try:
            parse(reply)
        except ValueError:
            return False
        return True

    assert sum(reads(loads_own, reply) for _, reply, _, _ in CASES) == 4
    assert sum(reads(loads_lenient, reply) for _, reply, _, _ in CASES) == 10


@pytest.mark.parametrize("reply", ["not json at all", "{", "[", "```json\n```"])
def test_nothing_readable_is_still_an_error(reply: str) -> None:
    with pytest.raises(ValueError):
        loads_lenient(reply)

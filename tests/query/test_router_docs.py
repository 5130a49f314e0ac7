"""The routing table in docs/strategies.md is the router's: every example routes by the rule it names."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from graphunified_query.routing.rules import RULES, Router

PAGE = Path(__file__).resolve().parents[2] / "docs" / "strategies.md"
ALL = ("naive", "hybrid", "graphrag_local", "graphrag_global", "lightrag", "hipporag")


def _rows() -> list[tuple[str, str, str]]:
    """(rule, strategy, example) of each row between the router-table markers."""
    text = PAGE.read_text(encoding="utf-8")
    block = re.search(r"<!-- router-table[^>]*-->\n(.*?)<!-- /router-table -->", text, re.DOTALL)
    assert block, "docs/strategies.md has no <!-- router-table --> block"
    rows = []
    for line in block.group(1).splitlines()[2:]:  # after the header and the |---| line
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        rows.append((cells[0], cells[2].strip("`"), cells[3]))
    return rows


def test_the_docs_document_every_rule_in_order() -> None:
    assert [rule for rule, _, _ in _rows()] == [r.name for r in RULES]
    assert {rule: strategy for rule, strategy, _ in _rows()} == {r.name: r.strategy for r in RULES}


@pytest.mark.parametrize(("rule", "strategy", "example"), _rows())
def test_each_documented_example_routes_as_documented(rule: str, strategy: str, example: str) -> None:
    decision = Router().route(example, ALL)
    assert (decision.features["rule"], decision.strategy) == (rule, strategy), decision.reason

"""`compare` ends with one summary table (#32 item 3): it printed 172 lines, one strategy after
another, with nothing side by side."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphunified_query.cli import main
from graphunified_query.engine.comparison import COLUMNS
from graphunified_query.engine.query_engine import QueryEngine


def test_compare_ends_with_one_row_per_strategy(
    built_home: Path, engine: QueryEngine, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["compare", "Who founded the Hale Mill?", "--home", str(built_home)]) == 0
    out = capsys.readouterr().out
    table = out.rsplit("=== summary ===\n", 1)[1].strip().splitlines()
    assert table[0].split() == " ".join(COLUMNS).split()
    core = [n for n, s in engine.registry.items() if s.tier == "core"]
    rows = {line.split()[0]: line.split()[1:] for line in table[2:]}
    assert list(rows) == core
    for contexts, shared, *_ in rows.values():
        assert 0 <= int(shared) <= int(contexts)
    assert any(int(shared) > 0 for _, shared, *_ in rows.values())  # the strategies agree on some passage

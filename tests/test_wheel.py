"""The wheel holds every tracked file of the packages (#32 item 4): built offline, as `make wheel`.

It lacked the report and tuning prompts (`package-data` named only the extraction prompts), so an
installed wheel could not build community reports with an LLM nor tune prompts.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_the_wheel_holds_every_package_file(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import check_wheel
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    wheel = check_wheel.build_wheel(tmp_path)
    assert check_wheel.missing_files(wheel) == []
    assert "graphunified_assets/lib/reports/prompts/community_report.md" in check_wheel.expected_files()

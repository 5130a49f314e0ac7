"""`index` on a new home prints no LanceDB "No existing dataset … will be created" warnings.

A subprocess, because LanceDB reads its log level once, when the Rust core is first imported.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.slow
def test_indexing_a_new_home_prints_no_lancedb_creation_warnings(home: Path, input_dir: Path) -> None:
    environ = {k: v for k, v in os.environ.items() if k not in ("LANCEDB_LOG", "VOYAGE_API_KEY")}
    environ["DAGSTER_HOME"] = str(home / "dagster")
    command = ["index", "--input", str(input_dir), "--home", str(home)]
    result = subprocess.run(
        [sys.executable, "-m", "graphunified_assets", *command],
        capture_output=True,
        text=True,
        env=environ,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert any(home.rglob("*.lance")), "the run created LanceDB tables (the warning's trigger)"
    output = result.stdout + result.stderr
    assert "No existing dataset" not in output
    assert "it will be created" not in output

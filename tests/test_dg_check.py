"""`dg check defs` (dagster-dg-cli) accepts the project: `[tool.dg]` in pyproject.toml marks it a
dg project, and the code location it names loads."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DG = Path(sys.executable).parent / "dg"


def test_dg_check_defs_passes(tmp_path: Path) -> None:
    if not DG.exists():
        pytest.fail(f"{DG} is missing: pip install -e '.[dev]' installs dagster-dg-cli")
    dagster_home = tmp_path / "dagster"
    dagster_home.mkdir()
    shutil.copyfile(ROOT / "dagster.yaml", dagster_home / "dagster.yaml")
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env |= {
        "PATH": f"{DG.parent}{os.pathsep}{env.get('PATH', '')}",
        "DAGSTER_HOME": str(dagster_home),
        "GRAPHUNIFIED_HOME": str(tmp_path / "home"),
        "GRAPHUNIFIED_INPUT": str(tmp_path / "input"),
    }
    done = subprocess.run(
        [str(DG), "check", "defs"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "All definitions loaded successfully" in done.stdout + done.stderr

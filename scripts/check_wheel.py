"""Build the wheel and check it carries every file the packages read at run time; no network.

    python scripts/check_wheel.py [--out dist]     # make wheel

The wheel is built with ``pip wheel --no-deps --no-build-isolation`` (the build backend from this
environment, so nothing is downloaded). What it must hold is derived, not listed: every file
tracked by git under the three packages that is not Python source (the web page and its bundled
Cytoscape, the prompts and tool schemas, the MiniLM tokenizer) must be in the wheel, and every
package's modules too. A data file left out of ``[tool.setuptools.package-data]`` fails here with
its path, before a user's `pip install` finds it missing.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("graphunified", "graphunified_assets", "graphunified_query")


def expected_files() -> set[str]:
    """Every tracked file of the packages (Python and data alike), as paths inside the wheel."""
    listed = subprocess.run(
        ["git", "ls-files", "--", *PACKAGES], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    return {path for path in listed if (ROOT / path).is_file()}


def build_wheel(out: Path) -> Path:
    # pip's own wheel build, not PyPA's `build`: installed, its module name shadows bench/build.py.
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(out)]
    scratch = ROOT / "build"  # setuptools' folder in the tree: ruff would take it for a package
    existed = scratch.exists()
    try:
        subprocess.run([*command, str(ROOT)], check=True, capture_output=True, text=True)
    finally:
        if not existed:
            shutil.rmtree(scratch, ignore_errors=True)
    wheels = sorted(out.glob("graph_unified-*.whl"))
    if not wheels:
        raise SystemExit(f"error: no wheel was written to {out}")
    return wheels[-1]


def missing_files(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        held = set(archive.namelist())
    return sorted(expected_files() - held)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=None, help="where the wheel goes (default: a temp dir)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        wheel = build_wheel(args.out or Path(scratch))
        missing = missing_files(wheel)
        for path in missing:
            print(
                f"error: {wheel.name} lacks {path}; add it to [tool.setuptools.package-data]", file=sys.stderr
            )
        if not missing:
            print(f"{wheel.name}: all {len(expected_files())} package files present")
    return 1 if missing else 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The README's Python examples run as written, in order, against an offline index named `data`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


def _python_blocks() -> list[str]:
    return re.findall(r"^```python\n(.*?)^```$", README.read_text(encoding="utf-8"), re.DOTALL | re.MULTILINE)


def test_the_readme_has_python_examples() -> None:
    assert len(_python_blocks()) >= 2


def test_the_readme_python_examples_run(
    built_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The examples open the home "data", as `make demo` builds it: here the query tests' offline index.
    (tmp_path / "data").symlink_to(built_home, target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("VOYAGE_API_KEY", raising=False)
    namespace: dict[str, object] = {"__name__": "readme"}
    for n, block in enumerate(_python_blocks()):
        exec(compile(block, f"README.md python block {n + 1}", "exec"), namespace)
    printed = capsys.readouterr().out
    assert "Hale" in printed  # the contexts' sources and the documents they cite
    assert " ms" in printed

"""The Python examples of the README and the docs run as written, each file's blocks in order in one
namespace, against an offline index named `data` (the query tests' two-hop corpus)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# Every file with ```python blocks: README.md and the docs pages (a page gaining one joins here).
FILES = ["README.md", *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md"))]


def _python_blocks(name: str) -> list[str]:
    text = (ROOT / name).read_text(encoding="utf-8")
    return re.findall(r"^```python\n(.*?)^```$", text, re.DOTALL | re.MULTILINE)


WITH_EXAMPLES = [name for name in FILES if _python_blocks(name)]


def test_the_readme_and_the_docs_have_python_examples() -> None:
    assert len(_python_blocks("README.md")) >= 2
    assert {"README.md", "docs/querying.md", "docs/strategies.md"} <= set(WITH_EXAMPLES)


@pytest.mark.parametrize("name", WITH_EXAMPLES)
def test_the_python_examples_run(
    name: str,
    built_home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The examples open the home "data", as `make demo` builds it: here the query tests' offline index.
    (tmp_path / "data").symlink_to(built_home, target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("VOYAGE_API_KEY", raising=False)
    namespace: dict[str, object] = {"__name__": "example"}
    for n, block in enumerate(_python_blocks(name)):
        exec(compile(block, f"{name} python block {n + 1}", "exec"), namespace)
    printed = capsys.readouterr().out
    assert ".md" in printed  # contexts were printed with their sources (file > section)

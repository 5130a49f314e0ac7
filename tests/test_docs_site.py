"""The docs site: its generated benchmarks page is current, every page is in the nav, and the
README stays a short guide whose links resolve."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_benchmarks", ROOT / "scripts" / "gen_benchmarks.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_benchmarks_page_is_up_to_date() -> None:
    gen = _generator()
    assert (DOCS / "benchmarks.md").read_text(encoding="utf-8") == gen.render(gen.load_sections()), (
        f"docs/benchmarks.md is out of date: run `{gen.COMMAND}`"
    )


def test_every_record_carries_its_machine_and_load() -> None:
    gen = _generator()
    records = [r for s in gen.load_sections() for r in s["records"]]
    assert len(records) >= 16
    for r in records:
        assert r["machine"]["cores"] >= 1 and "memory_gb" in r["machine"], r["id"]
        assert "load_average" in r and r["source"], r["id"]
    assert len({r["id"] for r in records}) == len(records)


def test_check_detects_a_stale_page_and_a_changed_record(tmp_path: Path) -> None:
    gen = _generator()
    records = tmp_path / "records"
    records.mkdir()
    for path in gen.RECORDS.glob("*.json"):
        (records / path.name).write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    page = tmp_path / "benchmarks.md"
    args = ["--records", str(records), "--out", str(page)]
    assert gen.main([*args, "--check"]) == 1  # missing
    assert gen.main(args) == 0
    assert gen.main([*args, "--check"]) == 0
    data = json.loads((records / "object_store.json").read_text(encoding="utf-8"))
    data["records"][0]["rows"][0][1] = "a new figure"
    (records / "object_store.json").write_text(json.dumps(data), encoding="utf-8")
    assert gen.main([*args, "--check"]) == 1


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda r: r.pop("load_average"), "records[0]: missing field 'load_average'"),
        (lambda r: r["machine"].pop("memory_gb"), "field 'machine.memory_gb'"),
        (lambda r: r["rows"][0].append("x"), "field 'rows[0]' has"),
    ],
)
def test_a_bad_record_is_one_line_naming_file_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change, message: str
) -> None:
    gen = _generator()
    data = json.loads((gen.RECORDS / "object_store.json").read_text(encoding="utf-8"))
    change(data["records"][0])
    (tmp_path / "object_store.json").write_text(json.dumps(data), encoding="utf-8")
    assert gen.main(["--records", str(tmp_path), "--out", str(tmp_path / "out.md")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "object_store.json" in err and message in err, err


def test_every_page_is_in_the_nav_and_every_nav_entry_exists() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    in_nav = {next(iter(entry.values())) for entry in config["nav"]}
    on_disk = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    assert in_nav == on_disk
    assert config["theme"]["font"] is False  # offline: no web fonts fetched at view time


def _anchors(page: Path) -> set[str]:
    """The ids mkdocs gives the page's headings (its toc extension's slugify)."""
    from markdown.extensions.toc import slugify

    text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.DOTALL | re.MULTILINE)
    headings = re.findall(r"^#{1,6} (.+)$", text, re.MULTILINE)
    return {slugify(re.sub(r"[`*]", "", h), "-") for h in headings}


def test_the_readme_is_a_short_guide_whose_links_resolve() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 300
    links = re.findall(r"\]\(([^)#\s]+)(?:#([^)]*))?\)", text)
    assert len(links) > 20
    for target, anchor in links:
        if target.startswith(("http://", "https://")):
            continue
        assert (ROOT / target).exists(), target
        if anchor:
            assert anchor in _anchors(ROOT / target), f"{target}#{anchor}"

"""A removed document leaves none of its text in the home's caches, its state or the tables
readers load: `cache/relationship_keywords.sqlite` used to keep its sentences' phrases for good.

What still holds it, by design (docs/reliability.md): the previous published generation (kept
for readers mid-query until the next publish) with the LanceDB versions it reads, and Dagster's
run history (materialization metadata such as a step's top keywords).
"""

from __future__ import annotations

from pathlib import Path

from graphunified_assets.cli.main import main as index_main
from graphunified_query.core.layout import HomeLayout
from graphunified_query.core.stores.publication import current

# Words only this document holds (its file name is a document id, kept in run history: not text).
REMOVED = (
    "# Quorvex Lab\n\nThe Quorvex Lab was opened by Zelda Vantrim in Millbrook in 1911.\n"
    "Zelda Vantrim studied the marsh herons of the River Harrow.\n"
)
MARKERS = (b"Vantrim", b"vantrim", b"marsh heron")


def _holding(files: list[Path]) -> list[str]:
    return sorted(str(p) for p in files if p.is_file() and any(m in p.read_bytes() for m in MARKERS))


def test_a_removed_document_leaves_no_text_in_caches_state_or_the_published_index(
    input_dir: Path, home: Path
) -> None:
    (input_dir / "quorvex.md").write_text(REMOVED, encoding="utf-8")
    assert index_main(["index", "--input", str(input_dir), "--home", str(home)]) == 0
    assert _holding(list((home / "cache").iterdir()))  # the check can fail: the text was there
    (input_dir / "quorvex.md").unlink()
    assert index_main(["index", "--home", str(home)]) == 0
    published = current(HomeLayout.at(home), rebuild_hint="").root
    assert published is not None
    files = [
        *(home / "cache").iterdir(),
        home / "state.sqlite",
        *published.rglob("*"),
        *home.glob("tables/**/*"),
    ]
    assert _holding(files) == []

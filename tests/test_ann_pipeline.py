"""Through `index`: the large graph vector tables get a faiss index that readers load mapped, an
update adds and removes its rows by id in the delta beside it instead of re-training it or
rewriting its base, and a home indexed with the old hand-written lists is told `index --refresh`
by readers and converted by the next `index`."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from graphunified_assets.defs.assets import graph_vectors
from graphunified_assets.lib.vectors import lance_slices
from graphunified_assets.ops.indexing import index
from graphunified_assets.ops.store_check import check_store
from graphunified_assets.ops.verified_files import VerifiedFiles
from graphunified_query.core.artifacts import ann_file
from graphunified_query.core.indexes import ann, ann_delta, ann_update
from graphunified_query.core.layout import HomeLayout
from graphunified_query.core.stores.errors import StoreDamaged
from graphunified_query.snapshot.loader import load_snapshot
from tests.fakes.anthropic_server import FakeAnthropicServer
from tests.fakes.voyage_server import FakeVoyageServer
from tests.test_graph_pipeline import _resource, servers  # noqa: F401 (the fixture)
from tests.test_vector_slices_pipeline import ADDED

TABLE = "relationship_vectors"


def _trained_rows(home: Path) -> int:
    path = HomeLayout.at(home).index_path(ann_file(TABLE))
    return int(json.loads(path.with_name(f"{TABLE}.json").read_text())["trained_rows"])


def _bases(home: Path) -> dict[str, tuple[int, int, str]]:
    """Each graph vector table's base file: inode, modification time, digest (a table with no rows
    has none)."""
    found = {}
    for table in graph_vectors.GRAPH_VECTOR_TABLES.values():
        path = HomeLayout.at(home).index_path(ann_file(table))
        if path.exists():
            digest = hashlib.sha1(path.read_bytes()).hexdigest()
            found[table] = (path.stat().st_ino, path.stat().st_mtime_ns, digest)
    return found


def test_the_faiss_index_is_built_updated_by_id_and_replaces_the_old_lists(
    home: Path,
    input_dir: Path,
    servers: tuple[FakeAnthropicServer, FakeVoyageServer],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(ann, "MIN_ROWS", 1)  # a tiny corpus: every table gets its index
    monkeypatch.setattr(ann_update, "RETRAIN_SHARE", 100.0)  # never re-trained by growth here
    monkeypatch.setattr(ann_update, "FOLD_SHARE", 100.0)  # the added document is most of the corpus
    monkeypatch.setattr(lance_slices, "REWRITE_SHARE", 1.0)  # most rows change: slices anyway

    def read_back(*_: object) -> None:
        raise AssertionError("the lists were filled by reading the LanceDB table back")

    # A rewrite fills them from its staged rows (LanceDB's reader keeps what it read: 1.1 GB at
    # the 12.6K scale), an update by id from the rows it computed.
    stored_batches = graph_vectors._stored_batches
    monkeypatch.setattr(graph_vectors, "_stored_batches", read_back)
    resource = _resource(home, input_dir)
    index(resource, echo=lambda _: None)
    layout = HomeLayout.at(home)
    snapshot = load_snapshot(home)
    dense = snapshot.relationship_vectors
    assert dense.ann is not None and len(dense.ann) == len(dense) > 0
    built_rows = _trained_rows(home)
    assert built_rows == len(dense)

    bases = _bases(home)
    assert TABLE in bases
    (input_dir / "observatory.md").write_text(ADDED)
    index(resource, echo=lambda _: None)
    grown = load_snapshot(home).relationship_vectors
    assert grown.ann is not None and len(grown.ann) == len(grown) > len(dense)
    assert _trained_rows(home) == built_rows  # rows added by id, not re-trained
    assert _bases(home) == bases  # not rewritten: the update wrote the deltas
    assert ann_delta.path_of(layout.index_path(ann_file(TABLE))).exists()
    new_rows = [row for row, i in enumerate(grown.ids) if i not in set(dense.ids)]
    assert new_rows and set(ann.row_keys([grown.ids[r] for r in new_rows])) <= set(grown.ann.delta.keys)
    for row in new_rows:  # the readers' index finds the added rows
        keys, _ = grown.ann.search(grown.matrix[row], 1)
        assert keys.tolist() == ann.row_keys([grown.ids[row]]).tolist()
    grown.ann.index.nprobe = grown.ann.lists  # every list of the base probed: the search is exact
    query = grown.matrix[-1]
    found, exact = grown.search(query, 3), grown.search(query, 3, exact=True)
    assert [r for r, _ in found] == [r for r, _ in exact]
    assert [s for _, s in found] == pytest.approx([s for _, s in exact], abs=1e-5)

    # A home indexed before faiss: its lists in the old format (published so), no faiss index.
    # Nothing changed, so no rows are staged: its lists are trained from the stored vectors.
    monkeypatch.setattr(graph_vectors, "_stored_batches", stored_batches)
    for generation in (layout.home, *layout.published.glob("[0-9]*")):
        folder = generation / "indexes"
        for path in (folder / "ann").glob("*"):
            path.unlink()
        (folder / "ivf").mkdir(exist_ok=True)
        (folder / "ivf" / f"{TABLE}.npz").write_bytes(b"PK")
        manifest = generation / "manifest.json"
        if manifest.exists():
            recorded = json.loads(manifest.read_text())
            files = [f for f in recorded["files"] if not f.startswith("indexes/ann/")]
            manifest.write_text(json.dumps({**recorded, "files": [*files, f"indexes/ivf/{TABLE}.npz"]}))
    with pytest.raises(StoreDamaged, match=r"old inverted-list format.*index --refresh`"):
        load_snapshot(home)
    messages: list[str] = []
    index(resource, echo=messages.append)  # nothing changed in the folder: the damage is found
    assert any("old inverted-list format" in m for m in messages)
    converted = load_snapshot(home).relationship_vectors
    assert converted.ann is not None and len(converted.ann) == len(converted)
    assert not (layout.index_path("ivf") / f"{TABLE}.npz").exists()


def test_a_staging_copy_left_by_a_crash_is_removed_by_the_store_check(tmp_path: Path) -> None:
    layout = HomeLayout.at(tmp_path)
    kept = layout.index_path(ann_file("relationship_vectors"))
    delta = ann_delta.path_of(kept)
    # Killed inside ann.save: its staging copies of the base and of the delta.
    staged = [kept.with_name(f".{kept.name}.tmp"), delta.with_name(f".{delta.name}.tmp")]
    kept.parent.mkdir(parents=True)
    for path in staged:
        path.write_bytes(b"half")
    kept.write_bytes(b"whole")
    delta.write_bytes(b"whole")
    check_store(layout, (), VerifiedFiles(layout.home, {}))
    assert not any(path.exists() for path in staged) and kept.exists() and delta.exists()

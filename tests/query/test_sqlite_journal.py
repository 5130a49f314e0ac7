"""SQLite files of a home on a network filesystem (the shared home of a cluster) use the rollback
journal, not WAL, which SQLite documents as unsafe there; on a local disk they keep WAL."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from graphunified_assets.lib.ingest.index_state import IndexState
from graphunified_query.core.providers.embedding_cache import EmbeddingCache
from graphunified_query.core.providers.llm_cache import LLMCache
from graphunified_query.core.stores import sqlite_journal
from graphunified_query.core.stores.sqlite_journal import filesystem_type, on_network_filesystem

MOUNTS = """\
overlay / overlay rw 0 0
/dev/sda1 /data ext4 rw 0 0
fs-1.efs.aws:/ /data/shared nfs4 rw 0 0
s3fs /mnt/bucket fuse.s3fs rw 0 0
//srv/share /mnt/my\\040share cifs rw 0 0
"""


def test_the_longest_mount_point_names_the_filesystem() -> None:
    assert filesystem_type(Path("/data/shared/home/cache/llm.sqlite"), MOUNTS) == "nfs4"
    assert filesystem_type(Path("/data/sharedish/x"), MOUNTS) == "ext4"  # a prefix, not a parent
    assert filesystem_type(Path("/tmp/x"), MOUNTS) == "overlay"
    assert on_network_filesystem(Path("/mnt/bucket/home"), MOUNTS)
    assert on_network_filesystem(Path("/mnt/my share/home"), MOUNTS)
    assert not on_network_filesystem(Path("/data/home"), MOUNTS)


def _mode(path: Path) -> str:
    with sqlite3.connect(path) as db:
        return str(db.execute("pragma journal_mode").fetchone()[0])


@pytest.mark.parametrize("network", [False, True])
def test_caches_and_index_state_pick_their_journal_by_filesystem(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, network: bool
) -> None:
    mounts = tmp_path / "mounts"
    kind = "nfs4" if network else "ext4"
    mounts.write_text(f"/dev/x / ext4 rw 0 0\nserver:/ {tmp_path} {kind} rw 0 0\n", encoding="utf-8")
    monkeypatch.setattr(sqlite_journal, "MOUNTS", mounts)
    expected = "delete" if network else "wal"
    EmbeddingCache(tmp_path / "embeddings.sqlite")
    LLMCache(tmp_path / "llm.sqlite")
    IndexState(tmp_path / "state.sqlite").indexed_hashes()
    for name in ("embeddings.sqlite", "llm.sqlite", "state.sqlite"):
        assert _mode(tmp_path / name) == expected, name

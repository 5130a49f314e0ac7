"""Where everything lives inside a data home (``--home DIR``, default ``./data``).

Several corpora can sit side by side, each in its own home. Per-document tables are one
Parquet file per document partition; global tables are one Parquet file each.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote


@dataclass(frozen=True)
class HomeLayout:
    home: Path

    @classmethod
    def at(cls, home: str | os.PathLike[str]) -> HomeLayout:
        return cls(Path(home).resolve())

    @property
    def tables(self) -> Path:
        return self.home / "tables"

    def partition_dir(self, table: str) -> Path:
        """Folder holding one Parquet file per document for a per-document table."""
        return self.tables / table

    def partition_path(self, table: str, document_id: str) -> Path:
        return self.partition_dir(table) / f"{partition_file_stem(document_id)}.parquet"

    def partition_stats(self, table: str) -> dict[str, os.stat_result]:
        """File name -> stat of every file in a per-document table's folder, from one scan of it:
        a path and a stat per document took seconds of every update at 12.6K documents."""
        stats = {}
        try:
            with os.scandir(self.partition_dir(table)) as entries:
                for entry in entries:
                    try:
                        stats[entry.name] = entry.stat()
                    except FileNotFoundError:  # removed since the listing
                        continue
        except FileNotFoundError:
            pass
        return stats

    def table_path(self, table: str) -> Path:
        """Parquet file of a global (unpartitioned) table."""
        return self.tables / f"{table}.parquet"

    @property
    def indexes(self) -> Path:
        """Strategy indexes that are not tables (BM25, the PPR matrix) and their manifests."""
        return self.home / "indexes"

    def index_path(self, name: str) -> Path:
        return self.indexes / name

    @property
    def lancedb(self) -> Path:
        return self.home / "lancedb"

    @property
    def cache(self) -> Path:
        return self.home / "cache"

    @property
    def embedding_cache(self) -> Path:
        return self.cache / "embeddings.sqlite"

    @property
    def llm_cache(self) -> Path:
        return self.cache / "llm.sqlite"

    @property
    def extraction_cache(self) -> Path:
        """The offline extractor's results by content (LLM extractors use ``llm_cache``)."""
        return self.cache / "extractions.sqlite"

    @property
    def relationship_keywords_cache(self) -> Path:
        """Theme phrases of relationship sentences by content (offline relationship keywords)."""
        return self.cache / "relationship_keywords.sqlite"

    @property
    def sqlite_files(self) -> tuple[Path, ...]:
        """Every SQLite file of the home: all derived (caches refill, the state is rebuilt)."""
        return (
            self.extraction_cache,
            self.embedding_cache,
            self.llm_cache,
            self.relationship_keywords_cache,
            self.index_state,
        )

    @property
    def input_scan(self) -> Path:
        """What the last scan found in each input file (lib/ingest/scan_memory.py)."""
        return self.cache / "input_scan.json"

    @property
    def verified_files(self) -> Path:
        """Each derived file's size and time when the last `index` finished (ops/verified_files.py)."""
        return self.cache / "verified.json.gz"

    @property
    def shards(self) -> Path:
        """What the shard steps of a sharded global asset wrote, per asset and run, until its
        commit step applies it (in the home, which every worker shares; never published)."""
        return self.home / "shards"

    @property
    def index_state(self) -> Path:
        return self.home / "state.sqlite"

    @property
    def dagster_home(self) -> Path:
        return self.home / "dagster"

    @property
    def published(self) -> Path:
        """Immutable generations of the global tables and indexes that readers load."""
        return self.home / "published"

    @property
    def refresh_pending(self) -> Path:
        """Exists from the first change of an `index` until its global refresh succeeded."""
        return self.home / "refresh.pending"

    @property
    def input_record(self) -> Path:
        """The input folder this home indexes, recorded by its first `index` (core/home_input.py)."""
        return self.home / "input.json"

    @property
    def index_lock(self) -> Path:
        """Held (flock) by the process rebuilding this home; its text says who that is."""
        return self.home / "index.lock"


_STEM = re.compile(r"[0-9a-f]{32}")


def partition_file_stem(document_id: str) -> str:
    """A fixed-length file name for a document id: any legal path or JSONL id fits a file system.

    Ids may contain '/', '#' and hundreds of bytes (a deep folder, a long Chinese file name), so the
    name is a digest; the id itself is the `document_id` column inside the file.
    """
    return hashlib.sha256(document_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def is_partition_file_stem(stem: str) -> bool:
    return _STEM.fullmatch(stem) is not None


def legacy_document_id(stem: str) -> str:
    """The id of a file written before digest names (its name was the percent-encoded id)."""
    return unquote(stem)


def build_command(home: Path) -> str:
    """The `index` that builds this home: its recorded input is used; without one, name the folder."""
    from graphunified_query.core.home_input import InputRecordError, recorded_input  # imports this module

    try:
        folder = "" if recorded_input(HomeLayout.at(home)) else " --input YOUR_FOLDER"
    except InputRecordError:  # a hint in another error's message: `index` names the damaged file
        folder = " --input YOUR_FOLDER"
    return f"{_INDEX} --home {home}{folder}"


def refresh_command(home: Path) -> str:
    """Rebuilds every global table and index from the per-document files and the caches."""
    return f"{_INDEX} --home {home} --refresh"


_INDEX = "python -m graphunified_assets index"

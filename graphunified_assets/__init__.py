"""The indexing pipeline (Dagster assets, CLI, builds).

LanceDB's Rust core logs through env_logger, read once when `lancedb` is first imported: every new
table it creates printed "No existing dataset at …, it will be created" (a WARN) on a new user's
console during `index`. Errors still show; ``LANCEDB_LOG`` set by the user wins.

glibc's malloc arenas are capped at one per core before any thread allocates (`lib/malloc_arenas.py`).
"""

import os

from graphunified_assets.lib.malloc_arenas import limit_malloc_arenas

os.environ.setdefault("LANCEDB_LOG", "error")
limit_malloc_arenas()

"""This machine's cache folder for derived files (``GRAPHUNIFIED_CACHE_DIR``, default
``~/.cache/graph-unified``): remote generations' downloads, optimized model files. Everything in
it can be made again, so deleting it only costs time."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

CACHE_ENV = "GRAPHUNIFIED_CACHE_DIR"


def cache_base(environ: Mapping[str, str] = os.environ) -> Path:
    return Path(environ.get(CACHE_ENV) or Path.home() / ".cache" / "graph-unified")

"""`CopyRows`: a per-document table's rows as its consolidated copy and the files changed since hold them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa


@dataclass(frozen=True, eq=False)
class CopyRows:
    """Documents' rows as the consolidated copy (a Parquet file) and the few files changed since it
    was written hold them, nothing rewritten: row i is row ``order[i]`` of the copy's rows followed
    by ``fresh``'s (``order`` None: the copy's rows, then ``fresh``'s, as they are)."""

    copy: Path
    fresh: pa.Table | None = None
    order: np.ndarray | None = None

"""Where the shared evaluation sets live: ``shared/eval`` beside the checkout, or beside the folder
of worktrees that holds it, so every bench finds them from a clone and from a worktree alike."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EVAL_ROOT = next(
    (p / "shared/eval" for p in ROOT.parents if (p / "shared/eval").is_dir()),
    ROOT.parent / "shared/eval",
)

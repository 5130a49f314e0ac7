"""Risk levels: the vocabulary shared by the index (which flags chunks) and the query side (which filters).

A chunk carries ``risk_flags``, each stored as ``"name:level"`` (``"prompt_injection:high"``), and a
``risk_level``: the highest level among its flags, ``"low"`` when it has none. Chunks indexed before
flags existed have neither and read as ``"low"`` with no flags. The detector and its patterns live in
``graphunified_assets.lib.risk.detector``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal, get_args

RiskLevel = Literal["low", "medium", "high"]
LEVELS: tuple[RiskLevel, ...] = get_args(RiskLevel)
LOW: RiskLevel = "low"
HIGH: RiskLevel = "high"

# The flag names the detector emits (a flag outside this list is still read: it is just a name).
PROMPT_INJECTION = "prompt_injection"
SUSPICIOUS_LINKS = "suspicious_links"
OVERSIZED_PARAGRAPH = "oversized_paragraph"
OVERSIZED_CODE_BLOCK = "oversized_code_block"
DOCUMENT_BLOCKED = "document_blocked"
HIDDEN_TEXT = "hidden_text"  # text the model reads but a reader does not see (styles, comments, invisibles)


def rank(level: str | None) -> int:
    """Position of a level in LEVELS; a missing level is low, an unknown one high (fail closed)."""
    if level is None or level == "":
        return 0
    return LEVELS.index(level) if level in LEVELS else len(LEVELS) - 1


def highest(levels: Iterable[str | None]) -> RiskLevel:
    return LEVELS[max((rank(level) for level in levels), default=0)]


def within(level: str | None, maximum: str) -> bool:
    """Whether a chunk at ``level`` may be shown when at most ``maximum`` is allowed."""
    return rank(level) <= rank(maximum)


def encode_flag(name: str, level: RiskLevel) -> str:
    return f"{name}:{level}"


def decode_flag(flag: str) -> tuple[str, RiskLevel]:
    """``"name:level"`` → (name, level); a flag without a known level counts as high."""
    name, _, level = flag.rpartition(":")
    if not name:
        return flag, HIGH
    return name, LEVELS[rank(level)]


def flags_level(flags: Iterable[str]) -> RiskLevel:
    return highest(decode_flag(flag)[1] for flag in flags)

"""Markdown markup removed before extraction, so link targets and emphasis never become entities.

Chunks keep their verbatim text (offsets and citations depend on it); only the extractor sees this
plain view.
"""

from __future__ import annotations

import re
from collections.abc import Callable


def _table_row(match: re.Match[str]) -> str:
    return ", ".join(cell.strip() for cell in match.group(1).split("|")) + "."


_RULES: tuple[tuple[re.Pattern[str], str | Callable[[re.Match[str]], str]], ...] = (
    (re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.S | re.M), " "),  # fenced code blocks
    (re.compile(r"!?\[([^\]]*)\]\([^)]*\)"), r"\1"),  # [label](target) -> label
    (re.compile(r"^#{1,6}\s+(.*)$", re.M), r"\1."),  # headings read as sentences
    (re.compile(r"^[ \t]*\|?[-:| ]+\|[-:| ]*$", re.M), ""),  # table separator rows
    (re.compile(r"^[ \t]*\|(.*)\|[ \t]*$", re.M), _table_row),  # table rows read as sentences
    (re.compile(r"(\*\*|__|\*|`)"), ""),  # emphasis and inline code markers
    (re.compile(r"^\s*[-*+]\s+", re.M), ""),  # bullets
)


def plain_text(markdown: str) -> str:
    text = markdown
    for pattern, replacement in _RULES:
        text = pattern.sub(replacement, text)
    return text

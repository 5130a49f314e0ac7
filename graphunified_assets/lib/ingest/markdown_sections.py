"""Heading structure of a Markdown text, read without altering it so offsets stay exact.

Only ATX headings (``#`` .. ``######``) count; ``#`` lines inside fenced code blocks and in a
leading ``---`` front matter block do not. Setext (underlined) headings are not recognised.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

_FENCE_OPEN = re.compile(r" {0,3}(`{3,}|~{3,})(.*)$")
_FRONT_MATTER_FENCE = re.compile(r"---[ \t]*$")
_FRONT_MATTER_END = re.compile(r"(?:---|\.\.\.)[ \t]*$")
_TITLE_FIELD = re.compile(r"title[ \t]*:")
# A title or heading name is cut to this many characters: every chunk of a section carries its
# heading path, so a 2 MB heading line made each chunk 2 MB (a build peaked at about 7 GB).
MAX_NAME = 300


@dataclass(frozen=True)
class MarkdownOutline:
    title: str | None  # the first H1, else the front matter title; None when neither exists
    sections: tuple[tuple[tuple[str, ...], int, int], ...]  # (heading path, start, end), tiling the text


def outline(text: str) -> MarkdownOutline:
    lines = list(_lines(text))
    front_end, front_title = _front_matter(lines)
    headings = list(_headings(lines[front_end:]))
    h1 = next((heading for level, heading, _ in headings if level == 1), None)
    title = h1 or front_title
    return MarkdownOutline(_name(title) if title else title, _sections(headings, len(text)))


def _name(text: str) -> str:
    return text if len(text) <= MAX_NAME else text[: MAX_NAME - 1].rstrip() + "…"


def _lines(text: str) -> Iterator[tuple[int, str]]:
    """(start offset, line without its line ending) for every line."""
    start = 0
    while start < len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end + 1
        yield start, text[start:end].rstrip("\r\n")
        start = end


def _front_matter(lines: list[tuple[int, str]]) -> tuple[int, str | None]:
    """Number of lines the front matter takes (0 when there is none) and its title."""
    if not lines or not _FRONT_MATTER_FENCE.match(lines[0][1]):
        return 0, None
    for index in range(1, len(lines)):
        if _FRONT_MATTER_END.match(lines[index][1]):
            titles = ((_TITLE_FIELD.match(line), line) for _, line in lines[1:index])
            title = next((_unquote(line[m.end() :].strip(" \t")) for m, line in titles if m), None)
            return index + 1, title or None
    return 0, None  # no closing fence: an ordinary horizontal rule


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def _headings(lines: list[tuple[int, str]]) -> Iterator[tuple[int, str, int]]:
    """(level, heading text, start offset) of each ATX heading outside fenced code."""
    fence: str | None = None
    for start, line in lines:
        if fence is not None:
            stripped = line.strip()
            if (
                len(line) - len(line.lstrip(" ")) < 4
                and stripped.startswith(fence)
                and not stripped.strip(fence[0])
            ):
                fence = None
            continue
        opening = _FENCE_OPEN.match(line)
        if opening and not (opening.group(1)[0] == "`" and "`" in opening.group(2)):
            fence = opening.group(1)  # a closing fence needs at least as many of the same char
            continue
        heading = _heading(line)
        if heading:
            yield heading[0], heading[1], start


def _heading(line: str) -> tuple[int, str] | None:
    """(level, text) of an ATX heading line, else None.

    Plain string scans, each linear: the regular expressions they replace backtracked
    quadratically on a long heading line (a 600 KB one took four minutes).
    """
    rest = line.lstrip(" ")
    if len(line) - len(rest) > 3:
        return None
    body = rest.lstrip("#")
    level = len(rest) - len(body)
    if not 1 <= level <= 6 or (body and body[0] not in " \t"):
        return None
    text = body.strip(" \t")
    unclosed = text.rstrip("#")  # closing hashes count only after a space or as the whole text
    if len(unclosed) < len(text) and (not unclosed or unclosed[-1] in " \t"):
        text = unclosed
    return level, text.strip()


def _sections(
    headings: list[tuple[int, str, int]], length: int
) -> tuple[tuple[tuple[str, ...], int, int], ...]:
    starts = [start for _, _, start in headings]
    sections: list[tuple[tuple[str, ...], int, int]] = []
    if not headings or starts[0] > 0:
        sections.append(((), 0, starts[0] if headings else length))  # text before the first heading
    stack: list[tuple[int, str]] = []
    for index, (level, content, start) in enumerate(headings):
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, _name(content)))
        end = starts[index + 1] if index + 1 < len(starts) else length
        sections.append((tuple(name for _, name in stack), start, end))
    return tuple(sections)

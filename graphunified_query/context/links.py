"""The link graph between chunks that context expansion follows.

Edges, in the order a hit's neighbours are tried:
1. the next and the previous chunk of the same document *and* section (a passage's continuation);
2. links written in the chunk, in text order: Markdown ``[text](other.md#heading)`` (relative to
   the linking document, ``.md`` optional, ``#heading`` alone for the same document) and wiki-style
   ``[[Other]]`` / ``[[Other#Heading|label]]`` (matched to a document by file stem, ignoring case,
   spaces, ``-`` and ``_``). A link lands on the first chunk of the heading it names, else on the
   document's first chunk. Links are directed: a hit pulls in what it links to, not its backlinks.

Built at query-load time from the chunk texts and ids the snapshot already holds (once per
snapshot, on first use), not at index time: it needs no new table, works on homes indexed before
it existed, and a linked document added later is found without re-indexing the one linking to it.
"""

from __future__ import annotations

import posixpath
import re
from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from urllib.parse import unquote

from graphunified_query.snapshot.model import Chunks, Snapshot

Neighbour = tuple[int, str]  # (chunk row, how it was reached: "next" | "previous" | "link")

_EXTRAS_KEY = "context.link_graph"
_MARKDOWN_LINK = re.compile(r"(?<!!)\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+[\"'][^)]*)?\)")
_WIKI_LINK = re.compile(r"\[\[([^\]|#\n]*)(?:#([^\]|\n]*))?(?:\|[^\]\n]*)?\]\]")
_SCHEME = re.compile(r"^(?:[a-z][a-z0-9+.-]*:|//)", re.IGNORECASE)
_DOCUMENT_SUFFIX = re.compile(r"\.(?:md|markdown|txt|pdf)$", re.IGNORECASE)


@dataclass(frozen=True)
class LinkGraph:
    neighbours: Mapping[int, tuple[Neighbour, ...]]

    def of(self, row: int) -> tuple[Neighbour, ...]:
        return self.neighbours.get(row, ())

    @property
    def edges(self) -> int:
        return sum(len(n) for n in self.neighbours.values())


def link_graph(snapshot: Snapshot) -> LinkGraph:
    """The snapshot's link graph, built on first use and kept with it (its data never changes)."""
    # Kept with the chunks it was built from: a `dataclasses.replace` copy shares `extras`.
    cached = snapshot.extras.get(_EXTRAS_KEY)
    if cached is None or cached[0] is not snapshot.chunks:
        cached = (snapshot.chunks, build_link_graph(snapshot.chunks))
        snapshot.extras[_EXTRAS_KEY] = cached
    return cached[1]


def build_link_graph(chunks: Chunks) -> LinkGraph:
    documents = _Documents(chunks)
    neighbours: dict[int, tuple[Neighbour, ...]] = {}
    for row in range(len(chunks.ids)):
        chosen: dict[int, str] = {}
        for target, via in (*documents.adjacent(row), *documents.linked(row)):
            if target != row:  # a link to its own chunk adds nothing
                chosen.setdefault(target, via)
        if chosen:
            neighbours[row] = tuple(chosen.items())
    return LinkGraph(neighbours)


class _Documents:
    """Lookups over one snapshot's chunks: rows by document (in order) and documents by name."""

    def __init__(self, chunks: Chunks) -> None:
        self.chunks = chunks
        rows: dict[str, list[int]] = defaultdict(list)
        for row, document_id in enumerate(chunks.document_ids):
            rows[document_id].append(row)
        self.rows = {d: sorted(r, key=lambda row: chunks.indexes[row]) for d, r in rows.items()}
        self.position = {row: i for rows_of in self.rows.values() for i, row in enumerate(rows_of)}
        self.by_stem: dict[str, str] = {}
        for document_id in sorted(self.rows):
            stem = _DOCUMENT_SUFFIX.sub("", posixpath.basename(document_id.split("#", 1)[0]))
            self.by_stem.setdefault(_name_key(stem), document_id)
            self.by_stem.setdefault(_name_key(_DOCUMENT_SUFFIX.sub("", document_id)), document_id)

    def adjacent(self, row: int) -> Iterator[Neighbour]:
        chunks = self.chunks
        siblings = self.rows[chunks.document_ids[row]]
        at = self.position[row]
        for other, via in ((at + 1, "next"), (at - 1, "previous")):
            if 0 <= other < len(siblings):
                candidate = siblings[other]
                same_section = chunks.sections[candidate] == chunks.sections[row]
                if same_section and abs(chunks.indexes[candidate] - chunks.indexes[row]) == 1:
                    yield candidate, via

    def linked(self, row: int) -> Iterator[Neighbour]:
        source = self.chunks.document_ids[row]
        text = self.chunks.texts[row]
        targets: list[tuple[int, tuple[str | None, str]]] = [
            (m.start(), self._markdown_target(source, m.group(1))) for m in _MARKDOWN_LINK.finditer(text)
        ]
        targets += [
            (m.start(), self._wiki_target(source, m.group(1), m.group(2) or ""))
            for m in _WIKI_LINK.finditer(text)
        ]
        for _, (document_id, anchor) in sorted(targets, key=lambda t: t[0]):
            target = self._chunk_of(document_id, anchor) if document_id else None
            if target is not None:
                yield target, "link"

    def _markdown_target(self, source: str, href: str) -> tuple[str | None, str]:
        if _SCHEME.match(href):
            return None, ""  # a web or mail link, not another document of the collection
        path, _, anchor = href.partition("#")
        if not path:
            return source, anchor
        path = unquote(path)
        base = posixpath.dirname(source.split("#", 1)[0])
        resolved = posixpath.normpath(
            path.lstrip("/") if path.startswith("/") else posixpath.join(base, path)
        )
        for candidate in (resolved, f"{resolved}.md"):
            if candidate in self.rows:
                return candidate, anchor
        return None, ""

    def _wiki_target(self, source: str, name: str, anchor: str) -> tuple[str | None, str]:
        if not name.strip():
            return source, anchor
        return self.by_stem.get(_name_key(_DOCUMENT_SUFFIX.sub("", name.strip()))), anchor

    def _chunk_of(self, document_id: str, anchor: str) -> int | None:
        rows = self.rows.get(document_id)
        if not rows:
            return None
        wanted = _slug(unquote(anchor))
        if wanted:
            for row in rows:
                heading = self.chunks.sections[row].rsplit(" > ", 1)[-1]
                if _slug(heading) == wanted:
                    return row
        return rows[0]


def _name_key(name: str) -> str:
    return re.sub(r"[\s_-]+", "-", name.strip().casefold())


def _slug(heading: str) -> str:
    """GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"\s", "-", re.sub(r"[^\w\s-]", "", heading.strip().casefold()))

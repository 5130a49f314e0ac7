"""Entity, relationship and report vectors composed from the vectors of their sentences and names.

all-MiniLM-L6-v2 mean-pools its token vectors, so the embedding of a concatenation lies close to
the token-count-weighted mean of its parts' embeddings. The long texts the graph indexes embedded
whole ("title: description" per entity, each report's text and points) are made of pieces the
build embeds anyway: offline, a description is an extractive summary of fragment sentences that
`graph_elements` embeds to rank them, names are embedded for resolution and relationship vectors,
and reports are built from those descriptions, relationship descriptions and names. Here a text
is split into pieces (its name, headline or title and the `sentences` of its prose), each distinct
piece is embedded once (cached by content) and the vector is the unit weighted sum of the unit
piece vectors, a piece weighing ``len(piece) ** exponent`` (characters stand in for
tokens, so the rule is the same for every embedder). An LLM's description is split the same way:
its sentences cost about the tokens of the whole text they replace.

The constants come from a sweep (`bench/composed_vectors.py`, seed 0) on 400 rows of each kind of
the 12.6K-passage scale home, comparing the composed vector with the embedding of the full text:
mean cosine, and the rate at which a composed vector's nearest full-text vector among the 400 is
its own. Entities ("title: description"), name weight 0.5 / 1 / 2 / 4:
exponent 0: cosine 0.949 / 0.903 / 0.822 / 0.736, own 100 / 100 / 100 / 97.5 %;
exponent 0.5: 0.964 / 0.962 / 0.940 / 0.883, own 99.8 / 100 / 100 / 100 %;
exponent 1: 0.959 / 0.962 / 0.962 / 0.951, own 99.8 / 99.8 / 99.8 / 100 %.
Report points ("headline: explanation", summaries), exponent 0 / 0.5 / 1: cosine 0.924 / 0.953 /
0.950, own 100 / 99.8 / 99.3 %. Report texts (title, summary, headlines): 0.791 / 0.855 /
0.887, own 100 % each.
For reports exponent 1 has the best cosine, and it is kept there. For entities cosine ties, and
exponent 1 weighs a name by its few characters while in the full text every token attends to it: an
entity's own name (as a query, 400 of 4,000 sampled entities, `name_retrieval`) ranks it in the top
5 for 91.0 % with the full texts and, name weight 1 / 2 / 4 / 8, exponent 1: 76.2 / 81.0 / 87.7 /
93.0 %, exponent 0.5: 89.5 / 95.8 / 99.3 / 100 %. Entities take exponent 0.5 (cosine 0.962 at name
weight 1, 0.940 at 2, nearest own 100 % at both). On the dev sets exponent 1 for entities had cost
graphrag_local 6 points of Recall@5 on 2WikiMultihopQA, whose questions name their entities;
exponent 0.5 for reports cost global search 2.5 points on MuSiQue.

Which tables are composed is `embedding.composed_vectors` (`EmbeddingSettings.composed`). Offline
every long text of the graph is made of corpus sentences, so composed, each distinct sentence
reaches the model once and the embedding cache serves it to every later text and update. With the
local model relationships, report texts and report points are composed by default; entities are
not: on HotpotQA composed entities cost lightrag 1.5-4 and hipporag 1-3.5 points of Recall@5 at
every weighting, length correction and subset tried. A unit sum of sentence vectors scores an
entity gathered from several passages higher than MiniLM scores its whole text (the mean of k unit
vectors is shorter than 1, and normalizing raises every cosine), but correcting that does not bring
the recall back, a constant offset of the cosines costs nothing, and random noise of the entity
ranking costs those two strategies about as much: `bench/entity_vectors.py` measures it, and
docs/build-throughput.md ("Why entities stay whole") has the figures. With a provider every table
is embedded whole.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from graphunified_assets.lib.graph.description_summary import sentences
from graphunified_assets.lib.vectors.distinct_embedding import Embed, embed_distinct, unit
from graphunified_query.core.indexes.report_points import report_points

ENTITY_EXPONENT = 0.5  # an entity's piece weighs the square root of its length (sweep above)
REPORT_EXPONENT = 1.0  # a report's or point's piece weighs its length, as mean pooling does
NAME_WEIGHT = 1.0  # an entity's name, times its length weight (module docstring)

Pieces = Sequence[tuple[str, float]]  # (text, weight multiplier) per piece of one row


def entity_vectors(rows: Sequence[Mapping[str, Any]], embed: Embed) -> np.ndarray:
    """One unit vector per entity row (title, description), composed from `entity_pieces`."""
    return composed_vectors([entity_pieces(row) for row in rows], embed, exponent=ENTITY_EXPONENT)


def description_vectors(texts: Sequence[str], embed: Embed) -> np.ndarray:
    """One unit vector per text, composed from its sentences (a one-sentence text is its own
    vector), weighted by length as mean pooling weighs them: relationship descriptions."""
    return composed_vectors([_prose(t) or [(t, 1.0)] for t in texts], embed, exponent=REPORT_EXPONENT)


class ReportEmbedding:
    """How report texts (`report_text`) and report points become vectors: each composed from
    `report_pieces` / `point_pieces` when its table is in ``composed``, else embedded whole. Each
    is an `Embed` of the stored texts, so a rewrite can still reuse a stored text's vector."""

    def __init__(
        self,
        reports: Sequence[Mapping[str, Any]],
        texts: Sequence[str],
        points: Sequence[Sequence[str]],
        composed: frozenset[str],
    ) -> None:
        self.text_pieces = (
            dict(zip(texts, map(report_pieces, reports), strict=True)) if "reports" in composed else None
        )
        self.point_pieces: dict[str, Pieces] | None = None
        if "report_points" in composed:
            self.point_pieces = {
                text: pieces
                for report, found in zip(reports, points, strict=True)
                for text, pieces in zip(found, point_pieces(report), strict=True)
            }
        self.texts, self.points = texts, points

    def wanted(self) -> list[str]:
        """Every distinct text the model is asked for: whole texts, or the pieces composed."""
        asked: dict[str, None] = {}
        for whole, pieces in (
            (self.texts, self.text_pieces),
            ([p for f in self.points for p in f], self.point_pieces),
        ):
            if pieces is None:
                asked.update(dict.fromkeys(whole))
            else:
                asked.update(dict.fromkeys(text for text_ in whole for text, _ in pieces[text_]))
        return list(asked)

    def row_pieces(self) -> list[list[str]]:
        """Per report, the pieces its text and its points are composed from (none when whole)."""
        found: list[list[str]] = [[] for _ in range(max(len(self.texts), len(self.points)))]
        if self.text_pieces is not None:
            for row, text in enumerate(self.texts):
                found[row] += [piece for piece, _ in self.text_pieces[text]]
        if self.point_pieces is not None:
            for row, points in enumerate(self.points):
                found[row] += [piece for text in points for piece, _ in self.point_pieces[text]]
        return found

    def reports(self, embed: Embed) -> Embed:
        return _composing(self.text_pieces, embed)

    def report_points(self, embed: Embed) -> Embed:
        return _composing(self.point_pieces, embed)


def _composing(pieces: Mapping[str, Pieces] | None, embed: Embed) -> Embed:
    """``embed`` itself (whole texts), or an `Embed` composing each text from its ``pieces``."""
    if pieces is None:
        return embed
    return lambda texts: composed_vectors([pieces[t] for t in texts], embed, exponent=REPORT_EXPONENT)


def composed_vectors(rows: Sequence[Pieces], embed: Embed, *, exponent: float) -> np.ndarray:
    """One unit vector per row: the weighted sum of its pieces' unit vectors, each distinct piece
    embedded once. A row without pieces gets a zero vector (callers give every row one)."""
    texts = [text for row in rows for text, _ in row]
    vectors, index = embed_distinct(texts, embed)
    if not texts:
        return np.zeros((len(rows), 0), np.float32)
    weights = np.array([len(t) ** exponent * m for row in rows for t, m in row], np.float32)
    # Each row summed in its own pieces' order (reduceat adds left to right), so a row's vector
    # does not depend on which other rows were composed with it, bit for bit: an update's
    # recomposed row equals a rewrite's. (A sparse product summed in the order of the pieces'
    # first appearance in the call.)
    weighted = unit(vectors)[index] * weights[:, None]
    sizes = np.array([len(row) for row in rows], np.int64)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    summed = np.zeros((len(rows), vectors.shape[1]), np.float32)
    filled = sizes > 0
    summed[filled] = np.add.reduceat(weighted, starts[filled], axis=0)
    return unit(summed)


def entity_pieces(row: Mapping[str, Any], *, name_weight: float = NAME_WEIGHT) -> list[tuple[str, float]]:
    """An entity as its title and its description's sentences (just the title without one)."""
    return [(row["title"], name_weight), *((s, 1.0) for s in sentences([row["description"] or ""]))]


def point_pieces(report: Mapping[str, Any]) -> list[list[tuple[str, float]]]:
    """Each of `report_points`' texts as pieces: the summary's sentences, then per finding its
    headline and its explanation's sentences."""
    points = [_prose(report["summary"])] if report["summary"] else []
    for finding in report["findings"] or []:
        headline = [(finding["summary"], 1.0)] if finding["summary"] else []
        points.append([*headline, *_prose(finding["explanation"])])
    # A point of no words (an empty finding) is embedded as the text it is stored as.
    return [pieces or [(text, 1.0)] for pieces, text in zip(points, report_points(report), strict=True)]


def report_pieces(report: Mapping[str, Any]) -> list[tuple[str, float]]:
    """`report_text` as pieces: the title, the summary's sentences and each finding's headline."""
    headlines = [(f["summary"], 1.0) for f in report["findings"] or [] if f["summary"]]
    return [(report["title"], 1.0), *_prose(report["summary"]), *headlines]


def _prose(text: str | None) -> list[tuple[str, float]]:
    return [(s, 1.0) for s in sentences([text or ""])]

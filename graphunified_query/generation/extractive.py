"""The offline answer: the contexts' sentences that best answer the question, quoted with citations.

Each sentence is scored by cosine similarity to the question, plus a small bonus for sharing the
question's content words and for coming from a higher-ranked context. Up to three are picked by
maximal marginal relevance, so the answer does not repeat itself. A question asking several things
("Who founded X, and what happened to it in 1894?") is split into its parts and each part gets its
best-supported sentence, so no part goes unanswered. No LLM is called.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from graphunified_query.core.providers.embedding import Embedder
from graphunified_query.core.providers.tokenizer import count_tokens
from graphunified_query.core.settings.model import QuerySettings
from graphunified_query.generation.packing import TokenCounter, context_budget, framed, pack_contexts
from graphunified_query.generation.prompt import DONT_KNOW, citation
from graphunified_query.generation.themes import compose_themes, lists_themes
from graphunified_query.strategies.results import GeneratedAnswer, RetrievalResult

# all-MiniLM-L6-v2 puts a question and an off-topic sentence at cosine 0.0 ± 0.08, and a sentence
# that answers it at 0.5-0.9; 0.35 is over four spreads above chance. Other models: recalibrate.
MIN_SIMILARITY = 0.35
LEXICAL_WEIGHT = 0.1  # times the share of the question's content words the sentence contains
RANK_WEIGHT = 0.05  # times 1 / (1 + context rank): breaks near-ties in the retriever's favour
MMR_LAMBDA = 0.7  # relevance against novelty when adding a second or third sentence
MAX_SENTENCES = 3
KEEP_WITHIN = 0.15  # extra sentences must score within this of the best one
REDUNDANT_ABOVE = 0.85  # cosine to an already chosen sentence that makes a sentence a repeat
MIN_WORDS = 3  # shorter pieces are fragments, not answers
HEADING_WORDS = 6  # a line this short without end punctuation is a heading or a list label

_SPLIT = re.compile(r"(?<=[.!?])[\"”’)\]]*\s+(?=[\"“‘(\[]?[A-Z0-9])|\n+")
_ABBREVIATION = re.compile(r"(?:\b[A-Z]|\b(?:Mr|Mrs|Ms|Dr|Prof|St|Jr|Sr|Inc|Ltd|Co|vs|etc|e\.g|i\.e|No))\.$")
_MARKUP = re.compile(r"^\s*(?:#+|[-*•>]|\d+[.)])\s+")
_WORD = re.compile(r"[a-z0-9]+")
# Where a question asks a second thing: ", and what ...", "; when ...", "? Who ..." (a comma alone
# opens a relative clause, "the mill, which ...", so it does not split).
_PARTS = re.compile(
    r"(?:,?\s+and|;|\?)\s+(?=(?:who|whom|whose|what|when|where|which|why|how)\b)", re.IGNORECASE
)
# Markdown that reads badly when quoted: [text](target) links and **bold**/__bold__ emphasis.
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_EMPHASIS = re.compile(r"(\*\*|__)(.+?)\1")
# A single line break inside a paragraph is wrapping, not a boundary (unless a heading or item follows).
_WRAP = re.compile(r"[ \t]*\n(?![ \t]*(?:\n|#|[-*•>][ \t]|\d+[.)][ \t]))[ \t]*")
# Sentences opening with these lean on the one before; it is quoted with them.
_ANAPHORA = {"he", "she", "it", "they", "this", "these", "that", "those", "his", "her", "its", "their"}
_STOPWORD_TEXT = (
    "a an and are as at be by did do does for from had has have how i in is it its of on or the to was "
    "were what when where which who whom whose why with about tell me describe there that this"
)
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())


@dataclass(frozen=True)
class _Sentence:
    text: str
    context: int  # index into the packed contexts, i.e. its rank
    previous: str | None  # the sentence before it in the same context


class ExtractiveGenerator:
    def __init__(
        self,
        embedder: Embedder,
        settings: QuerySettings,
        *,
        count: TokenCounter = count_tokens,
        min_similarity: float = MIN_SIMILARITY,
    ) -> None:
        self.embedder = embedder
        self.settings = settings
        self.count = count
        self.min_similarity = min_similarity

    def generate(
        self, question: str, results: Sequence[RetrievalResult], *, budget_tokens: int | None = None
    ) -> GeneratedAnswer:
        budget = context_budget(self.settings) if budget_tokens is None else budget_tokens
        contexts = pack_contexts(results, budget, framed(self.count))
        if lists_themes(contexts):  # a question about the whole collection: its themes, not a sentence
            return GeneratedAnswer(compose_themes(contexts), contexts)
        sentences = [
            s
            for rank, c in enumerate(contexts)
            # A chunk that continues its document opens with the tail of a sentence: skip it.
            for s in _sentences(c.text, rank)[1 if c.metadata.get("continues") else 0 :]
        ]
        if not sentences:
            return GeneratedAnswer(DONT_KNOW, contexts, supported=False)
        # Two calls, not one: asymmetric models (Voyage) embed questions and passages differently.
        query = self.embedder.embed([question], kind="query")[0]
        unique = {text: n for n, text in enumerate(dict.fromkeys(s.text for s in sentences))}
        vectors = self.embedder.embed(list(unique), kind="document")[[unique[s.text] for s in sentences]]
        similarity = vectors @ query
        best = int(np.argmax(similarity))
        if similarity[best] < self.min_similarity:
            return GeneratedAnswer(DONT_KNOW, contexts, supported=False)
        parts = question_parts(question)
        if len(parts) > 1:  # "Who founded X, and what happened to it?": the best sentence for each part
            picked = self._per_part(parts, sentences, vectors)
            return GeneratedAnswer(_compose([sentences[i] for i in picked], contexts), contexts)
        scores = similarity + _bonus(question, sentences)
        chosen = [sentences[i] for i in _maximal_marginal_relevance(scores, vectors)]
        return GeneratedAnswer(_compose(chosen, contexts), contexts)

    def _per_part(self, parts: list[str], sentences: list[_Sentence], vectors: np.ndarray) -> list[int]:
        """For each part in turn, its best-scoring sentence not already quoted (a part no sentence
        supports adds nothing); at least one sentence, the whole question's best, is quoted."""
        queries = self.embedder.embed(parts, kind="query")
        picked: list[int] = []
        for part, query in zip(parts, queries, strict=True):
            similarity = vectors @ query
            scores = similarity + _bonus(part, sentences)
            for i in np.argsort(-scores, kind="stable"):
                if similarity[i] < self.min_similarity:
                    break
                if int(i) not in picked and sentences[i].text not in {sentences[p].text for p in picked}:
                    picked.append(int(i))
                    break
        return picked


def question_parts(question: str) -> list[str]:
    """A question asking several things, split at "and"/";"/"?" before a question word, each part
    with a content word of its own: "Who founded X, and what happened to it?" is two parts."""
    pieces = [p.strip(" ,;") for p in _PARTS.split(question.strip())]
    parts = [p for p in pieces if _terms(p)]
    return parts if len(parts) == len(pieces) else [question]


def _bonus(question: str, sentences: list[_Sentence]) -> np.ndarray:
    terms = _terms(question)
    return np.array(
        [LEXICAL_WEIGHT * _overlap(terms, s.text) + RANK_WEIGHT / (1 + s.context) for s in sentences]
    )


def _sentences(text: str, rank: int) -> list[_Sentence]:
    pieces: list[str] = []
    text = _WRAP.sub(" ", _EMPHASIS.sub(r"\2", _LINK.sub(r"\1", text)))
    for piece in _SPLIT.split(text):
        piece = _MARKUP.sub("", piece).strip()
        if pieces and _ABBREVIATION.search(pieces[-1]) and piece:
            pieces[-1] = f"{pieces[-1]} {piece}"  # "Dr." or "J." ended a word, not the sentence
        elif piece:
            pieces.append(piece)
    kept = [p if _is_sentence(p) else None for p in pieces]
    return [_Sentence(p, rank, kept[n - 1] if n else None) for n, p in enumerate(kept) if p]


def _is_sentence(piece: str) -> bool:
    words = len(piece.split())
    return words >= MIN_WORDS and (words >= HEADING_WORDS or piece.rstrip('"”’)]').endswith((".", "!", "?")))


def _maximal_marginal_relevance(scores: np.ndarray, vectors: np.ndarray) -> list[int]:
    chosen = [int(np.argmax(scores))]
    floor = scores[chosen[0]] - KEEP_WITHIN
    while len(chosen) < MAX_SENTENCES:
        repeat = (vectors @ vectors[chosen].T).max(axis=1)
        candidates = [i for i in range(len(scores)) if i not in chosen and scores[i] >= floor]
        candidates = [i for i in candidates if repeat[i] < REDUNDANT_ABOVE]
        if not candidates:
            break
        chosen.append(max(candidates, key=lambda i: MMR_LAMBDA * scores[i] - (1 - MMR_LAMBDA) * repeat[i]))
    return chosen


def _compose(chosen: list[_Sentence], contexts: Sequence[RetrievalResult]) -> str:
    quoted = {s.text for s in chosen}
    lines = []
    for sentence in chosen:
        text = sentence.text
        first = _WORD.findall(text.lower()[:20])
        # "He founded the mill." needs the sentence saying who "he" is, unless that is quoted too.
        if sentence.previous and sentence.previous not in quoted and first and first[0] in _ANAPHORA:
            text = f"{sentence.previous} {text}"
        lines.append(f"{text} {citation(contexts[sentence.context])}")
    return " ".join(lines)


def _terms(text: str) -> set[str]:
    # Five-letter truncation is a crude but well-tested stemmer: "founded"/"founder" -> "found".
    return {w[:5] for w in _WORD.findall(text.lower()) if w not in _STOPWORDS}


def _overlap(question_terms: set[str], sentence: str) -> float:
    return len(question_terms & _terms(sentence)) / len(question_terms) if question_terms else 0.0

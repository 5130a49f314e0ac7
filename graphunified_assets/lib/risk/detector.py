"""Risk flags of chunks, found at index time so the query side can filter without re-reading text.

Each flag is ``name:level`` (see ``graphunified_query.core.risk``); a chunk's level is its highest flag's.
What is looked for, and at what level:

``prompt_injection`` — text aimed at the model rather than the reader, wherever it hides. The
  text is first brought to the form a model reads (``text_normalize``: HTML entities decoded,
  NFKC, Cyrillic/Greek look-alikes in Latin words mapped, spaced-out letters joined, invisible
  characters dropped), then scored by ``injection_features``: overriding the instructions,
  persona switches, chat-template and fake-turn markers, text addressed to "the AI/assistant/
  model", exfiltration requests (also through markdown-image URLs), the same in other languages.
  Each reading a model decodes is scored too (``text_decode``: base64 blobs, leetspeak, words
  split by line breaks, hyphens or spaces), and the junction of two consecutive chunks is judged
  as one text, so an instruction split between them flags both.
  high:   a score of ``injection_features.THRESHOLD`` or more; Unicode tag characters
          (U+E0000-E007F, invisible ASCII look-alikes used to smuggle instructions).
  medium: zero-width or bidi-control characters inside the text.
  low:    any other HTML comment.
``hidden_text`` — high (so the default query policy leaves it out): an element hidden by its own
  style (``display:none``, ``visibility:hidden``, ``font-size:0``, ``opacity:0``, white text, tiny
  text under 3 px, off screen at -1000 px or more, clipped or scaled to nothing) or ``hidden``
  attribute, an HTML comment speaking to the model, a run of invisible characters.
``suspicious_links`` — links a reader would not expect to follow.
  high:   ``javascript:`` / ``vbscript:`` URLs (also entity-encoded or split by tabs, as browsers read
          them), ``data:text/html`` URLs.
  medium: other ``data:`` URLs (except images: low), IP-literal hosts, URL shorteners
          (bit.ly, tinyurl.com, …), punycode hosts (``xn--``, look-alike domains).
``oversized_paragraph`` / ``oversized_code_block`` — medium: a paragraph or fenced code block
  longer than ``risk.max_paragraph_chars`` / ``risk.max_code_block_chars`` floods the context
  budget (keyword stuffing, minified or encoded blobs). Measured on the whole document: every
  chunk overlapping the block is flagged.
``document_blocked`` — high, on every chunk of a document listed in ``risk.blocked_documents``
  (ids or globs) or whose share of high ``prompt_injection`` chunks reaches
  ``risk.blocked_injection_share``.

Documents *about* prompt injection will be flagged too; ``show_risky`` at query time shows them.
"""

from __future__ import annotations

import bisect
import fnmatch
import ipaddress
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from graphunified_assets.lib.risk.injection_features import THRESHOLD, injection_score, text_score
from graphunified_assets.lib.risk.text_normalize import INVISIBLE, TAG_CHARACTERS, normalize
from graphunified_query.core.risk import (
    DOCUMENT_BLOCKED,
    HIDDEN_TEXT,
    OVERSIZED_CODE_BLOCK,
    OVERSIZED_PARAGRAPH,
    PROMPT_INJECTION,
    SUSPICIOUS_LINKS,
    RiskLevel,
    encode_flag,
    highest,
)
from graphunified_query.core.settings.model import RiskSettings

Hit = tuple[str, RiskLevel]  # (flag name, level)
BOUNDARY_REACH = 300  # characters each side of a chunk junction judged together

# --- prompt injection and hidden text ----------------------------------------------------------

_HIDDEN_RUN = re.compile(
    "[\u200b-\u200f\u2060-\u2064\ufeff\U000e0000-\U000e007f]{8,}"
)  # a message in invisibles
# An element hidden by its own style or `hidden` attribute: its text reaches the model, not the reader.
# Three steps, each linear: a tag's attributes stop at the next "<" or ">" (one nested lazy pattern
# over tag and style took 6 s on 16 KB of "<a style="), then its style values, then what they say.
_TAG = re.compile(r"<[a-z][\w-]*\b([^<>]{0,400})", re.IGNORECASE)
_STYLE = re.compile(r"\bstyle\s*=\s*[\"']?([^\"'<>]{0,300})", re.IGNORECASE)
_HIDING_STYLE = re.compile(
    r"display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*0(?:\.0+)?(?:px|em|rem|pt|%)?\s*(?:[;}]|$)"
    r"|opacity\s*:\s*0(?:\.0+)?\s*(?:[;}]|$)|color\s*:\s*(?:white|#fff\b|#ffffff\b|transparent)"
    # tiny text: under 3 px/pt, or a tenth of the font (0.1em, 5%)
    r"|font-size\s*:\s*(?:[0-2](?:\.\d+)?|\.\d+)\s*(?:px|pt)|font-size\s*:\s*0?\.0*[01]\d*\s*(?:em|rem)"
    r"|font-size\s*:\s*[0-9](?:\.\d+)?\s*%"
    # off screen: pushed a thousand pixels out, clipped to nothing, scaled to nothing
    r"|(?:left|top|right|bottom|text-indent|margin-left|margin-top)\s*:\s*-\s*\d{3,}"
    r"|clip\s*:\s*rect\(\s*0\D{0,8}0\D{0,8}0\D{0,8}0|clip-path\s*:\s*inset\(\s*(?:50|100)\s*%"
    r"|transform\s*:\s*scale\(\s*0(?:\.0+)?\s*\)",
    re.IGNORECASE,
)
_HIDDEN_ATTRIBUTE = re.compile(r"\shidden(?:\s*=\s*[\"']?hidden)?(?:[\s/]|$)", re.IGNORECASE)
_HTML_COMMENT = re.compile(r"<!--(.*?)(?:-->|$)", re.DOTALL)
_MODEL_WORDS = re.compile(
    r"\b(?:ai|llms?|language\s+model|assistant|chatbot|prompt|instructions?|claude|gpt|chatgpt|copilot|gemini|"
    r"llama|system)\b"
)

# --- links --------------------------------------------------------------------------------------

# A scheme directly followed by code ("javascript:alert(1)"), not the heading "JavaScript: basics".
# Browsers drop tabs and line breaks inside a URL scheme and decode entities: so does the match.
_SCHEME_GAP = r"[\t\n\r ]*"  # the normal form turns tabs into spaces
_SCRIPT_URL = re.compile(
    "|".join(r"(?<![\w-])" + _SCHEME_GAP.join(scheme) + r":(?=\S)" for scheme in ("javascript", "vbscript")),
    re.IGNORECASE,
)
_DATA_URL = re.compile(r"(?<![\w-])data:([\w.+-]+/[\w.+-]+)", re.IGNORECASE)
_URL = re.compile(r"\b(?:https?|ftp)://(?:\[[^\]\s]*\])?[^\s<>()\[\]\"'`]*", re.IGNORECASE)
_SHORTENER_LIST = (
    "bit.ly tinyurl.com t.co goo.gl ow.ly is.gd buff.ly rebrand.ly cutt.ly shorturl.at tiny.cc "
    "rb.gy t.ly s.id v.gd bl.ink lnkd.in trib.al soo.gd clck.ru qr.ae"
)
_SHORTENERS = frozenset(_SHORTENER_LIST.split())

# --- structure ----------------------------------------------------------------------------------

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})", re.MULTILINE)
_BLANK_LINES = re.compile(r"\n[ \t]*\n")


def _hidden_element(normal: str) -> bool:
    for tag in _TAG.finditer(normal):
        attributes = tag.group(1)
        if _HIDDEN_ATTRIBUTE.search(attributes) or any(
            _HIDING_STYLE.search(style.group(1)) for style in _STYLE.finditer(attributes)
        ):
            return True
    return False


@dataclass(frozen=True)
class ChunkRisk:
    flags: tuple[str, ...]  # "name:level", sorted by name
    level: RiskLevel


def assess_document(
    document_id: str, text: str, spans: Sequence[tuple[int, int]], settings: RiskSettings
) -> list[ChunkRisk]:
    """The risk of each chunk of one document; ``spans`` are the chunks' (start, end) offsets."""
    oversized = list(_oversized_blocks(text, settings))  # in text order, not overlapping
    ends = [b_end for _, _, b_end in oversized]
    hits: list[list[Hit]] = []
    for index, (start, end) in enumerate(spans):
        found = scan_text(text[start:end])
        if index:  # the text around the junction with the previous chunk (and their overlap)
            previous_start, previous_end = spans[index - 1]
            low = max(previous_start, min(start, previous_end) - BOUNDARY_REACH)
            _join_boundary(hits[-1], found, text[low : min(end, max(start, previous_end) + BOUNDARY_REACH)])
        # Blocks overlapping the span: from the first ending after its start (no scan of them all,
        # which made a document of many long paragraphs quadratic).
        for hit, b_start, _ in oversized[bisect.bisect_right(ends, start) :]:
            if b_start >= end:
                break
            found.append(hit)
        hits.append(found)
    return _with_document_flags(document_id, hits, settings)


def assess_chunk_texts(document_id: str, texts: Sequence[str], settings: RiskSettings) -> list[ChunkRisk]:
    """The same flags for chunks without offsets (GraphRAG imports): structure is judged per chunk."""
    hits = [scan_text(text) + [hit for hit, _, _ in _oversized_blocks(text, settings)] for text in texts]
    for index in range(1, len(texts)):
        _join_boundary(
            hits[index - 1],
            hits[index],
            f"{texts[index - 1][-BOUNDARY_REACH:]} {texts[index][:BOUNDARY_REACH]}",
        )
    return _with_document_flags(document_id, hits, settings)


def _join_boundary(before: list[Hit], after: list[Hit], junction: str) -> None:
    """Flag both chunks when an instruction split between them reads as one across their junction."""
    injected: Hit = (PROMPT_INJECTION, "high")
    if injected not in before and injected not in after and text_score(junction) >= THRESHOLD:
        before.append(injected)
        after.append(injected)


def scan_text(text: str) -> list[Hit]:
    """Every (flag, level) the text alone shows: prompt injection and suspicious links."""
    return _injection_hits(text) + _link_hits(text)


def _with_document_flags(
    document_id: str, per_chunk: Sequence[list[Hit]], settings: RiskSettings
) -> list[ChunkRisk]:
    injected = sum(1 for hits in per_chunk if (PROMPT_INJECTION, "high") in hits)
    blocked = any(fnmatch.fnmatchcase(document_id, pattern) for pattern in settings.blocked_documents) or (
        bool(per_chunk) and injected / len(per_chunk) >= settings.blocked_injection_share
    )
    return [_chunk_risk(list(hits) + ([(DOCUMENT_BLOCKED, "high")] if blocked else [])) for hits in per_chunk]


def _chunk_risk(hits: list[Hit]) -> ChunkRisk:
    """One flag per name at its highest level."""
    by_name: dict[str, list[RiskLevel]] = {}
    for name, level in hits:
        by_name.setdefault(name, []).append(level)
    flags = tuple(encode_flag(name, highest(levels)) for name, levels in sorted(by_name.items()))
    return ChunkRisk(flags, highest(level for levels in by_name.values() for level in levels))


def _injection_hits(text: str) -> list[Hit]:
    hits: list[Hit] = []
    if TAG_CHARACTERS.search(text):  # invisible ASCII look-alikes: a smuggled instruction
        hits.append((PROMPT_INJECTION, "high"))
    if _HIDDEN_RUN.search(text):
        hits.append((HIDDEN_TEXT, "high"))
    elif INVISIBLE.search(text.lstrip("\ufeff")):
        hits.append((PROMPT_INJECTION, "medium"))
    normal = normalize(text)
    score = text_score(text, normal)  # the best of every reading: normal form, leetspeak, base64, split words
    if score >= THRESHOLD:
        hits.append((PROMPT_INJECTION, "high"))
    if _hidden_element(normal):
        hits.append((HIDDEN_TEXT, "high"))
    for comment in _HTML_COMMENT.finditer(normal):
        body = comment.group(1)
        # a comment speaking to the model; its body scores no more than the whole text, so a text
        # scoring under 2 needs no second scan (an unclosed "<!--" made the body the whole text)
        if _MODEL_WORDS.search(body) or (score >= 2 and injection_score(body) >= 2):
            hits.append((HIDDEN_TEXT, "high"))
        else:
            hits.append((PROMPT_INJECTION, "low"))
    return hits


def _link_hits(text: str) -> list[Hit]:
    hits: list[Hit] = []
    if _SCRIPT_URL.search(normalize(text)):  # entities decoded, look-alike letters mapped
        hits.append((SUSPICIOUS_LINKS, "high"))
    for match in _DATA_URL.finditer(text):
        media = match.group(1).lower()
        if media in ("text/html", "application/xhtml+xml", "image/svg+xml"):  # can run script
            hits.append((SUSPICIOUS_LINKS, "high"))
        else:
            hits.append((SUSPICIOUS_LINKS, "low" if media.startswith("image/") else "medium"))
    for url in _URL.findall(text):
        level = _host_level(url)
        if level is not None:
            hits.append((SUSPICIOUS_LINKS, level))
    return hits


def _host_level(url: str) -> RiskLevel | None:
    try:
        host = (urlsplit(url).hostname or "").rstrip(".").lower()
    except ValueError:  # e.g. an unbalanced IPv6 bracket: malformed on purpose or by accident
        return "medium"
    if not host:
        return None
    if host in _SHORTENERS or host.startswith("xn--") or ".xn--" in host:
        return "medium"
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return None
    return "medium"


def _oversized_blocks(text: str, settings: RiskSettings) -> Iterator[tuple[Hit, int, int]]:
    """(flag, start, end) of every paragraph or fenced code block over its limit."""
    for start, end, is_code in _blocks(text):
        if is_code and end - start > settings.max_code_block_chars:
            yield (OVERSIZED_CODE_BLOCK, "medium"), start, end
        elif not is_code and end - start > settings.max_paragraph_chars:
            yield (OVERSIZED_PARAGRAPH, "medium"), start, end


def _blocks(text: str) -> Iterator[tuple[int, int, bool]]:
    """(start, end, is code) of fenced code blocks and of the blank-line separated paragraphs between."""
    position = 0
    while position < len(text):
        fence = _FENCE.search(text, position)
        prose_end = fence.start() if fence else len(text)
        yield from _paragraphs(text, position, prose_end)
        if fence is None:
            return
        closing = re.compile(
            rf"^ {{0,3}}{re.escape(fence.group(1)[0])}{{{len(fence.group(1))},}}[ \t]*$", re.M
        )
        line_end = text.find("\n", fence.end())
        close = closing.search(text, line_end + 1) if line_end >= 0 else None
        end = close.end() if close else len(text)  # an unclosed fence runs to the end
        yield fence.start(), end, True
        position = end


def _paragraphs(text: str, start: int, end: int) -> Iterator[tuple[int, int, bool]]:
    cursor = start
    for gap in _BLANK_LINES.finditer(text, start, end):
        if gap.start() > cursor:
            yield cursor, gap.start(), False
        cursor = gap.end()
    if end > cursor:
        yield cursor, end, False

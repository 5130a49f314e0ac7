"""Reading JSON as language models write it: fenced, wrapped in prose, trailing commas, cut off."""

from __future__ import annotations

import json
import re
from typing import Any

import json_repair

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")
_CLOSERS = {"{": "}", "[": "]"}


def loads_lenient(text: str) -> Any:
    """The JSON value in ``text``, repairing what a model commonly gets wrong; ValueError if none.

    The project's own repair runs first: it is truncation-safe (a record cut off by max_tokens is
    dropped, never kept half-written). What it cannot read (single quotes, unquoted keys, Python
    literals, comments, missing commas, raw newlines or quotes inside strings) goes to the
    `json-repair` library, whose guesses are kept only when they are an object or array.
    """
    body = _json_body(text)
    try:
        return loads_own(body)
    except ValueError:
        pass
    repaired = json_repair.loads(body)
    if isinstance(repaired, (dict, list)) and repaired:  # `{` alone becomes {}: nothing was read
        return repaired
    raise ValueError(f"unreadable JSON: {text[:120]!r}")


def loads_own(text: str) -> Any:
    """The project's repair alone (fences, prose around the value, trailing commas, truncation)."""
    body = _json_body(text)
    for attempt in (body, _TRAILING_COMMA.sub(r"\1", body)):
        try:
            return json.JSONDecoder().raw_decode(attempt)[0]  # ignores prose after the value
        except json.JSONDecodeError:
            pass
    closed = _close_truncated(_TRAILING_COMMA.sub(r"\1", body))
    if closed is not None:
        try:
            return json.loads(closed)
        except json.JSONDecodeError:
            pass
    raise ValueError(f"unreadable JSON: {text[:120]!r}")


def _json_body(text: str) -> str:
    """From the first bracket of the fenced block (or of the text) on; ValueError if there is none."""
    fenced = _FENCE.search(text)
    body = (fenced.group(1) if fenced else text).strip()
    starts = [i for i in (body.find("{"), body.find("[")) if i >= 0]
    if not starts:
        raise ValueError("no JSON object or array in the reply")
    return body[min(starts) :]


def _close_truncated(text: str) -> str | None:
    """A reply cut off mid-value (max_tokens): keep it up to its last complete element, then close
    every bracket still open. When not even one element is complete (a first record cut in its
    description), keep its complete members instead (a comma outside strings ends one). None when
    nothing complete precedes the cut."""
    stack: list[str] = []
    in_string = escaped = False
    last_complete: tuple[int, list[str]] | None = None
    last_member: tuple[int, list[str]] | None = None
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            continue
        if ch == '"':
            in_string = True
        elif ch in _CLOSERS:
            stack.append(ch)
        elif ch in "}]" and stack:
            stack.pop()
            last_complete = (i + 1, list(stack))
            if not stack:
                return text[: i + 1]  # complete after all: the caller's error was elsewhere
        elif ch == "," and stack:
            last_member = (i, list(stack))  # the member or element before the comma is whole
    cut = last_complete or last_member
    if cut is None:
        return None
    end, still_open = cut
    kept = text[:end].rstrip().rstrip(",")
    return kept + "".join(_CLOSERS[b] for b in reversed(still_open))

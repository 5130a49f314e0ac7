"""The limits on a question and on ``top_k``, checked the same way by the CLI, the engine and HTTP.

A blank question would retrieve nothing and answer "I don't know" as if the index were empty; a
``top_k`` of 0 used to mean "the default" by accident. Both are the caller's mistake, reported
as one, as are a question too long to embed meaningfully and a ``top_k`` no context window holds.
A question of punctuation only is still a question: it gets the (poor) results it asks for.
"""

from __future__ import annotations

# Far above any useful context window, low enough that a typo (100000) is refused, not served slowly.
MAX_TOP_K = 1000
MAX_QUESTION_CHARS = 10_000


class InvalidQuery(ValueError):
    """A question or ``top_k`` the engine refuses; ``field`` names the input."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def check_question(question: object) -> str:
    if not isinstance(question, str):
        raise InvalidQuery("question", f"the question must be text, not {type(question).__name__}")
    if not question.strip():
        raise InvalidQuery("question", 'the question is empty; ask something, e.g. ask "Who founded X?"')
    try:
        question.encode("utf-8")
    except UnicodeEncodeError as error:  # a lone surrogate: non-UTF-8 bytes, or a "\ud800" escape
        raise InvalidQuery(
            "question", f"the question is not valid UTF-8 text (character {error.start + 1}); re-type it"
        ) from None
    if len(question) > MAX_QUESTION_CHARS:
        raise InvalidQuery(
            "question",
            f"the question has {len(question):,} characters, more than {MAX_QUESTION_CHARS:,}; "
            "shorten it to the question itself",
        )
    return question


def check_top_k(top_k: object) -> int | None:
    """``top_k`` itself (None: the settings' default), or InvalidQuery naming the value."""
    if top_k is None:
        return None
    if isinstance(top_k, bool) or not isinstance(top_k, int):
        raise InvalidQuery("top_k", f"top_k must be a whole number, not {top_k!r}")
    if not 1 <= top_k <= MAX_TOP_K:
        raise InvalidQuery(
            "top_k", f"top_k is {top_k}; use a number from 1 to {MAX_TOP_K} (or leave it out for the default)"
        )
    return top_k

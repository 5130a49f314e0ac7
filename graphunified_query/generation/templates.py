"""Answer prompt templates: Markdown files in ``graphunified_query/prompts`` with includes.

A template is one file. ``<!-- INCLUDE: name.md -->`` on a line of its own is replaced by that
file of the same folder (includes may include; a cycle or a missing file is an error naming it).
Everything before ``<!-- USER -->`` is the system prompt: identical on every call, so Claude's
prompt cache reuses it. After it comes the user message, with the injection points
``<!-- CONTEXT -->`` (the delimited contexts) and ``<!-- QUESTION -->``.

Two templates answer: ``answer`` and ``answer_code``, chosen when most contexts contain code.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

from graphunified_query.context.facts import contains_code
from graphunified_query.strategies.results import RetrievalResult

ANSWER = "answer"
CODE_QA = "answer_code"
USER_MARK = "<!-- USER -->"
CONTEXT_MARK = "<!-- CONTEXT -->"
QUESTION_MARK = "<!-- QUESTION -->"
_INCLUDE = re.compile(r"^[ \t]*<!--\s*INCLUDE:\s*(\S+?)\s*-->[ \t]*$", re.MULTILINE)
_SAFE_NAME = re.compile(r"^[\w.-]+\.md$")


class PromptTemplateError(ValueError):
    """A template or one of its includes is missing or malformed; the message names the file."""


@dataclass(frozen=True)
class PromptTemplate:
    name: str
    system: str
    user: str  # holds CONTEXT_MARK and QUESTION_MARK

    def user_message(self, question: str, contexts: str) -> str:
        # One pass, so a question or context that happens to contain a mark is not expanded.
        values = {CONTEXT_MARK: contexts, QUESTION_MARK: question.strip()}
        return re.sub(
            f"{re.escape(CONTEXT_MARK)}|{re.escape(QUESTION_MARK)}", lambda m: values[m[0]], self.user
        )


def prompt_template(name: str) -> PromptTemplate:
    """A packaged template by name (``answer``, ``answer_code``), read once per process."""
    return _packaged(name)


@cache
def _packaged(name: str) -> PromptTemplate:
    return load_template(name, resources.files("graphunified_query") / "prompts")


def load_template(name: str, folder: Path | Traversable) -> PromptTemplate:
    text = resolve_includes(_read(folder, f"{name}.md", f"template {name!r}"), folder, (f"{name}.md",))
    system, mark, user = text.partition(USER_MARK)
    if not mark or CONTEXT_MARK not in user or QUESTION_MARK not in user:
        raise PromptTemplateError(
            f"Prompt template {_where(folder, name + '.md')} must have a {USER_MARK} line followed by "
            f"the injection points {CONTEXT_MARK} and {QUESTION_MARK}."
        )
    return PromptTemplate(name, system.strip() + "\n", user.strip("\n"))


def resolve_includes(text: str, folder: Path | Traversable, chain: tuple[str, ...]) -> str:
    """``text`` with every include replaced by its file (itself resolved); ``chain``: the files
    being resolved, outermost first, to report a cycle and where a missing include is named."""

    def include(match: re.Match[str]) -> str:
        name = match.group(1)
        if not _SAFE_NAME.match(name):  # a name, not a path: includes stay inside the folder
            raise PromptTemplateError(
                f"Prompt include {name!r} in {chain[-1]} must be a .md file name of the same folder."
            )
        if name in chain:
            raise PromptTemplateError(f"Prompt includes form a cycle: {' -> '.join((*chain, name))}.")
        body = _read(folder, name, f"include {name!r} (named in {chain[-1]})")
        return resolve_includes(body, folder, (*chain, name)).rstrip("\n")

    return _INCLUDE.sub(include, text)


def choose_template(contexts: Sequence[RetrievalResult]) -> str:
    """``answer_code`` when most contexts contain code (more than half), else ``answer``."""
    with_code = sum(contains_code(c.text) for c in contexts)
    return CODE_QA if contexts and with_code * 2 > len(contexts) else ANSWER


def _read(folder: Path | Traversable, name: str, what: str) -> str:
    try:
        return (folder / name).read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError):
        raise PromptTemplateError(
            f"Prompt {what} not found: {_where(folder, name)} does not exist."
        ) from None


def _where(folder: Path | Traversable, name: str) -> str:
    return str(folder / name)

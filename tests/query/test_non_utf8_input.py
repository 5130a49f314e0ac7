"""Questions and arguments that are not UTF-8 end in one line naming them, not a traceback.

Before: `ask $'caf\\xe9'` (Latin-1 bytes from a terminal) reached the tokenizer as a lone
surrogate and ended in `TypeError: TextEncodeInput must be ...`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from graphunified_query.cli import main
from graphunified_query.engine.query_input import InvalidQuery, check_question

LATIN1 = b"caf\xe9 question".decode("utf-8", "surrogateescape")  # how Python hands such argv over


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["ask", LATIN1], "question 'caf\\xe9 question'"),
        (["ask", "x", "--strategy", "lo\udcffcal"], "--strategy 'lo\\xffcal'"),
        (["ask", "x", "--param", "a=\udcff"], "--param 'a=\\xff'"),
    ],
)
def test_an_argument_that_is_not_utf8_is_one_line_naming_it(
    argv: list[str], named: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*argv, "--home", str(tmp_path)]) == 2
    error = capsys.readouterr().err
    assert error == f"error: {named} is not valid UTF-8 text; re-type it or set a UTF-8 locale\n"


@pytest.mark.parametrize("question", [LATIN1, "a lone \ud800 escape"])
def test_the_engine_refuses_a_question_that_is_not_utf8(question: str) -> None:
    with pytest.raises(InvalidQuery, match="not valid UTF-8 text"):
        check_question(question)

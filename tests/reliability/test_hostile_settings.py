"""Hostile or careless settings cost bounded time and memory and end in one line naming the source.

Each case was a traceback or worse: a 500-byte "billion laughs" file ran 106 s and died with
MemoryError at 2.3 GB; 5,000-deep nesting hit the recursion limit; a YAML tag in a variable,
or a nested variable under a single value, raised from inside PyYAML or the merge; a secret read
into a non-secret setting was echoed back by the error naming the bad value.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from graphunified_query.core.settings.model import SettingsError, load_settings


def _nested_aliases(levels: int) -> str:
    """Each level a list of nine aliases of the one before: 9**levels strings from a few hundred bytes."""
    lines = ['l0: &l0 ["laugh","laugh","laugh","laugh","laugh","laugh","laugh","laugh","laugh"]']
    for level in range(1, levels + 1):
        lines.append(f"l{level}: &l{level} [" + ",".join([f"*l{level - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


def _load(home: Path, text: str | None = None, environ: dict[str, str] | None = None) -> str:
    if text is not None:
        (home / "settings.yaml").write_text(text, encoding="utf-8")
    with pytest.raises(SettingsError) as raised:
        load_settings(home, environ=environ or {})
    message = str(raised.value)
    assert "\n" not in message, message  # one line
    return message


def test_a_billion_laughs_file_is_refused_at_once(tmp_path: Path) -> None:
    text = _nested_aliases(7)  # 9**7 = 4.8 M strings once expanded (9 levels: MemoryError)
    assert len(text) < 1000
    started = time.perf_counter()
    message = _load(tmp_path, text)
    assert time.perf_counter() - started < 1.0
    assert "settings.yaml" in message and "aliases" in message and "line 2" in message


def test_deep_nesting_is_refused_with_the_line(tmp_path: Path) -> None:
    message = _load(tmp_path, "query: " + "[" * 5000 + "]" * 5000 + "\n")
    assert "settings.yaml" in message and "nested deeper than" in message and "line 1" in message


def test_deep_nesting_in_a_variable_is_refused_naming_it(tmp_path: Path) -> None:
    message = _load(tmp_path, environ={"GRAPHUNIFIED__QUERY__X": "{a: " * 3000 + "}" * 3000})
    assert message.startswith("GRAPHUNIFIED__QUERY__X is not valid YAML") and "nested deeper" in message


@pytest.mark.parametrize("value", ["!!python/object/apply:os.system ['true']", "!custom value"])
def test_a_yaml_tag_in_a_variable_is_one_line_naming_it(tmp_path: Path, value: str) -> None:
    message = _load(tmp_path, environ={"GRAPHUNIFIED__LLM__MODEL": value})
    assert message.startswith("GRAPHUNIFIED__LLM__MODEL is not valid YAML") and "tag" in message


@pytest.mark.parametrize(
    ("text", "environ", "single"),
    [
        ("llm: 5\n", {"GRAPHUNIFIED__LLM__MODEL": "x"}, "llm"),
        (None, {"GRAPHUNIFIED__LLM__MODEL": "x", "GRAPHUNIFIED__LLM__MODEL__NAME": "y"}, "llm.model"),
    ],
)
def test_a_nested_variable_under_a_single_value_names_both(
    tmp_path: Path, text: str | None, environ: dict[str, str], single: str
) -> None:
    message = _load(tmp_path, text, environ)
    assert f"but {single} is a single value" in message and "GRAPHUNIFIED__LLM__MODEL" in message


@pytest.mark.parametrize(
    "variable", ["ANTHROPIC_API_KEY", "VOYAGE_API_KEY", "AWS_SECRET_ACCESS_KEY", "GH_TOKEN"]
)
def test_a_secret_read_into_another_setting_is_refused_without_its_value(
    tmp_path: Path, variable: str
) -> None:
    secret = "sk-ant-api03-VERYSECRET"
    message = _load(tmp_path, f"query:\n  default_strategy: ${{{variable}}}\n", {variable: secret})
    assert secret not in message and "VERYSECRET" not in message
    assert "query.default_strategy" in message and variable in message


def test_a_secret_read_as_api_key_is_still_accepted(tmp_path: Path) -> None:
    (tmp_path / "settings.yaml").write_text("llm:\n  api_key: ${ANTHROPIC_API_KEY}\n", encoding="utf-8")
    load_settings(tmp_path, environ={"ANTHROPIC_API_KEY": "sk-ant-x"})


def test_anchors_without_aliases_and_ordinary_nesting_still_load(tmp_path: Path) -> None:
    (tmp_path / "settings.yaml").write_text(
        "chunking: &c\n  size: 256\n  overlap: 32\nstrategies:\n  hybrid:\n    alpha: 0.6\n", encoding="utf-8"
    )
    settings = load_settings(tmp_path, environ={"GRAPHUNIFIED__GRAPH__SEED": "7"})
    assert settings.chunking.size == 256 and settings.graph.seed == 7


@pytest.mark.parametrize("where", ["variable", "file"])
def test_a_secret_value_expanded_by_the_shell_is_refused_without_echoing_it(
    tmp_path: Path, where: str
) -> None:
    secret = "sk-ant-api03-VERYSECRET"
    environ = {"ANTHROPIC_API_KEY": secret}
    text = None
    if where == "variable":  # GRAPHUNIFIED__QUERY__DEFAULT_STRATEGY=$ANTHROPIC_API_KEY in a shell
        environ["GRAPHUNIFIED__QUERY__DEFAULT_STRATEGY"] = secret
    else:
        text = f"query:\n  default_strategy: {secret}\n"
    message = _load(tmp_path, text, environ)
    assert "VERYSECRET" not in message
    assert "query.default_strategy holds the value of ${ANTHROPIC_API_KEY}" in message

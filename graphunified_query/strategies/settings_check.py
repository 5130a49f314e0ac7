"""The ``strategies:`` section of settings.yaml, checked against the registry.

`load_settings` runs it on every file that has the section, so ``index`` fails fast on a misspelt
``strategies.<name>.<param>`` (naming the closest valid name) instead of every later ``ask``;
`QueryEngine` runs it again on its own registry (compositions added). Compositions
(``combine``/``rerank`` entries) are checked by building their `Strategy`, which validates them.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import ValidationError

from graphunified_query.core.settings.foreign import FOREIGN_KEYS
from graphunified_query.core.settings.model import Settings, SettingsError
from graphunified_query.strategies.registry import STRATEGIES, Strategy


def check_strategy_settings(settings: Settings, strategies: Mapping[str, Strategy] = STRATEGIES) -> None:
    """Every ``strategies.<name>`` entry names a strategy (or defines a composition) and holds only
    parameters it takes, each valid; otherwise a one-line `SettingsError` naming the key."""
    from graphunified_query.strategies.composable.named import composition, is_composition

    entries = settings.strategy_entries
    valid = [*strategies, *(n for n, values in entries.items() if is_composition(n, values, strategies))]
    for name in settings.enabled_strategies or ():
        if name not in valid:
            raise SettingsError(
                f"Invalid settings: strategies.enabled: no such strategy {name!r}{_hint(name, valid)}; "
                f"choose from: {', '.join(valid)}"
            )
    for name, values in entries.items():
        _seed_leftovers(("strategies", name), values)
        if name in strategies and strategies[name].structure:
            continue  # a composition, checked when it was built
        if isinstance(values, Mapping) and is_composition(name, values, strategies):
            composition(name, values, _unbuilt, strategies)  # raises on a bad composition
            continue
        if name not in strategies:
            raise SettingsError(
                f"Invalid settings: strategies.{name}: no such strategy"
                f"{_hint(name, [*strategies, *_foreign(())])}; choose one of: {', '.join(strategies)}"
            )
        try:
            strategies[name].params.model_validate(values)
        except ValidationError as error:
            problem = error.errors(include_url=False)[0]
            key = ".".join(str(p) for p in problem["loc"])
            hint = (
                _hint(key, [*strategies[name].params.model_fields, *_foreign((name,))])
                if problem["type"] == "extra_forbidden"
                else ""
            )
            raise SettingsError(
                f"Invalid settings: strategies.{name}.{key}: {problem['msg']}{hint}; "
                f"{name} takes: {', '.join(strategies[name].params.model_fields) or 'no parameters'}"
            ) from None


def _seed_leftovers(path: tuple[str, ...], values: Any) -> None:
    """A key left inside one of the seed's own sections (``strategies.graphrag.local_serch``) is a
    misspelling of one of the seed's keys: name it and the closest of them."""
    below = _foreign(path[1:])
    if not below or not isinstance(values, Mapping):
        return
    # Directly under one of our strategies (lightrag, hipporag, hybrid) its own parameters belong too.
    ours = STRATEGIES[path[1]].params.model_fields if len(path) == 2 and path[1] in STRATEGIES else {}
    for key, value in values.items():
        if key in below:
            _seed_leftovers((*path, str(key)), value)
        elif key not in ours:
            choices = list(dict.fromkeys([*below, *ours]))
            raise SettingsError(
                f"Invalid settings: {'.'.join((*path, str(key)))}: no such key{_hint(str(key), choices)}; "
                f"{'.'.join(path)} takes: {', '.join(choices)}"
            )


def _foreign(under: tuple[str, ...]) -> list[str]:
    """The seed's own names one level below ``strategies.<under>`` (``local_search`` …), as hints."""
    prefix = ("strategies", *under)
    return [
        parts[len(prefix)]
        for parts in (entry.key.removesuffix(".*").split(".") for entry in FOREIGN_KEYS)
        if tuple(parts[: len(prefix)]) == prefix and len(parts) > len(prefix)
    ]


def _hint(name: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, list(dict.fromkeys(choices)), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _unbuilt(name: str) -> Any:
    raise AssertionError(f"{name}: a composition checked at load time is never built")

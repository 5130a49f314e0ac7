"""What a settings file may say beyond the model's own keys, settled before validation.

- ``${VAR}`` (or ``${VAR:-default}``) in any string value is read from the environment; an unset
  variable without a default is an error naming the key and the variable.
- Secrets are never settings: an ``api_key`` holding a literal value is refused (it would sit in a
  file, in backups, in the Dagster UI); ``api_key: ${ANTHROPIC_API_KEY}`` is accepted and dropped,
  since the provider reads that variable itself.
- Keys of other configurations, the seed's `settings.yaml` above all, are moved onto ours,
  checked, or dropped with one `SettingsWarning` each that names the key and says why, as
  `foreign.FOREIGN_KEYS` declares them (e.g. ``chunking.min_chunk_size`` → ``chunking.min_size``,
  ``extraction.tuple_delimiter``: extraction is a validated JSON tool call, not delimited text).

Anything else unknown still fails validation, with the key's path and the closest valid key.

The YAML itself (the file and each ``GRAPHUNIFIED__*`` value) is read by `parse_yaml`: safe tags
only, no aliases (``*name``: ten nested aliases of ten make a 500-byte file expand to billions of
nodes) and at most `MAX_DEPTH` levels of nesting (deeper blew Python's recursion limit); every
problem is one line naming the source, line and column. A secret variable (``${ANTHROPIC_API_KEY}``,
any ``*_KEY``/``*_SECRET``/``*_TOKEN``/``*_PASSWORD``) is read only as an ``api_key``: anywhere else
its value would end up in an error message, a log or the Dagster UI.
"""

from __future__ import annotations

import copy
import difflib
import os
import re
import warnings
from collections.abc import Mapping
from typing import Any

import yaml
from pydantic import BaseModel

from graphunified_query.core.plugins import EMBEDDERS, LLMS, secret_variables
from graphunified_query.core.settings.foreign import DROP, FOREIGN_KEYS, ForeignKey, ForeignValueError

_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")

# Variables holding secrets besides the providers' own: read only as api_key, never into a setting.
_SECRET_NAME = re.compile(r"(?:^|_)(?:KEY|SECRET|TOKEN|PASSWORD|PASSWD|CREDENTIALS?)$")
# Settings nest three or four levels; a thousand-deep file is an attack, not a configuration.
MAX_DEPTH = 32


class SettingsWarning(UserWarning):
    """A settings key that is accepted but has no effect here, and why."""


def prepare(values: dict[str, Any], environ: Mapping[str, str] | None, source: str) -> dict[str, Any]:
    """``values`` with variables expanded, secrets refused, renamed keys moved, different ones dropped."""
    from graphunified_query.core.settings.model import SettingsError

    environ = os.environ if environ is None else environ
    expanded = _expand(values, environ, (), source, SettingsError)
    _refuse_secrets(expanded, (), values, source, SettingsError)
    as_written = copy.deepcopy(expanded)  # conversions check against the file as written
    for entry in FOREIGN_KEYS:
        _apply(entry, expanded, as_written, source, SettingsError)
    return expanded


def refuse_secret_values(
    values: Any, environ: Mapping[str, str], error: type[Exception], path: tuple[str, ...] = ()
) -> None:
    """A setting holding a secret variable's value (``GRAPHUNIFIED__X=$ANTHROPIC_API_KEY`` expanded
    by the shell) is refused naming the key and the variable, never the value: an error about the
    setting would otherwise print it."""
    secrets = {
        value: name
        for name, value in environ.items()
        if len(value) >= 8 and (name in secret_variables() or _SECRET_NAME.search(name))
    }
    if secrets:
        _refuse_values(values, secrets, error, path)


def _refuse_values(
    values: Any, secrets: Mapping[str, str], error: type[Exception], path: tuple[str, ...]
) -> None:
    items = (
        values.items() if isinstance(values, dict) else enumerate(values) if isinstance(values, list) else ()
    )
    for key, value in items:
        here = (*path, str(key)) if isinstance(values, dict) else path
        if isinstance(value, str) and value.strip() in secrets:
            raise error(
                f"{'.'.join(here)} holds the value of ${{{secrets[value.strip()]}}}, a secret; secrets are "
                "read only by the provider that needs them, never into a setting."
            )
        _refuse_values(value, secrets, error, here)


def parse_yaml(text: str, source: str, error: type[Exception]) -> Any:
    """``text`` as plain data (safe tags, no aliases, bounded depth), or ``error`` in one line."""
    try:
        return yaml.load(text, Loader=_BoundedLoader)  # a SafeLoader subclass: safe tags only
    except yaml.MarkedYAMLError as problem:
        mark = problem.problem_mark or problem.context_mark
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        what = " ".join(str(p) for p in (problem.context, problem.problem) if p)
        raise error(f"{source} is not valid YAML{where}: {what}.") from None
    except yaml.YAMLError as problem:
        raise error(f"{source} is not valid YAML: {' '.join(str(problem).split())}") from None


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader refusing aliases and nesting deeper than `MAX_DEPTH` while composing."""

    _depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(
                None,
                None,
                f"aliases (*{event.anchor}) are not accepted in settings; write the value out",
                event.start_mark,
            )
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise yaml.composer.ComposerError(
                    None, None, f"nested deeper than {MAX_DEPTH} levels", self.peek_event().start_mark
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def closest_key(model: type[BaseModel], loc: tuple[Any, ...]) -> str:
    """`` (did you mean 'chunking.size'?)`` for an unknown key at ``loc``, or ""."""
    owner: Any = model
    for part in loc[:-1]:
        field = getattr(owner, "model_fields", {}).get(part)
        annotation = getattr(field, "annotation", None)
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return ""
        owner = annotation
    names = list(getattr(owner, "model_fields", {}))
    close = difflib.get_close_matches(str(loc[-1]), names, n=1, cutoff=0.6)
    return f" (did you mean {'.'.join([*map(str, loc[:-1]), close[0]])!r}?)" if close else ""


_MISSING = object()


def _apply(
    entry: ForeignKey, values: dict[str, Any], as_written: dict[str, Any], source: str, error: type[Exception]
) -> None:
    """Move, convert, check or drop one foreign key of ``values``, as its entry says."""
    key = entry.key.removesuffix(".*")
    found = _pop(values, key.split("."))
    if found is _MISSING:
        return
    if entry.convert is not None:
        try:
            found = entry.convert(found, as_written)
        except ForeignValueError as problem:
            raise error(f"Invalid settings ({source}): {key}: {problem}.") from None
        if found is DROP:
            return
    if entry.ours is not None:
        _put(values, entry.ours.split("."), found)
    elif entry.convert is None and found not in entry.fixed:
        said = f"{key}: {found!r}" if entry.fixed else key
        warnings.warn(
            SettingsWarning(f"{source}: {said} is ignored: {entry.why}."), stacklevel=5
        )  # the caller of load_settings


def _expand(
    value: Any, environ: Mapping[str, str], path: tuple[str, ...], source: str, error: type[Exception]
) -> Any:
    if isinstance(value, dict):
        return {k: _expand(v, environ, (*path, str(k)), source, error) for k, v in value.items()}
    if isinstance(value, list):
        return [_expand(v, environ, path, source, error) for v in value]
    if not isinstance(value, str) or "${" not in value:
        return value

    def variable(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if path[-1:] != ("api_key",) and (name in secret_variables() or _SECRET_NAME.search(name)):
            raise error(
                f"{source}: {'.'.join(path)} reads ${{{name}}}, a secret; secrets are read only by the "
                "provider that needs them (api_key), never into another setting."
            )
        if name in environ:
            return environ[name]
        if default is not None:
            return default
        raise error(
            f"{source}: {'.'.join(path)} reads ${{{name}}}, which is not set; set it or write a value."
        )

    return _VARIABLE.sub(variable, value)


def _refuse_secrets(
    values: dict[str, Any], path: tuple[str, ...], raw: Any, source: str, error: type[Exception]
) -> None:
    for key in list(values):
        here, given = (*path, str(key)), raw.get(key) if isinstance(raw, dict) else None
        if isinstance(values[key], dict):
            _refuse_secrets(values[key], here, given, source, error)
        elif key == "api_key":
            variable = _secret_variable(path[0] if path else "")
            if not (isinstance(given, str) and _VARIABLE.fullmatch(given.strip())):
                raise error(
                    f"{source}: {'.'.join(here)} holds a literal secret; remove it and set {variable} in "
                    f"the environment (or write api_key: ${{{variable}}}). Keys never go in settings files."
                )
            del values[key]  # the provider reads the variable itself


def _secret_variable(section: str) -> str:
    """Where the provider of ``section`` reads its key (its registry entry declares it); an api_key
    naming another variable would be silently unused."""
    entry = {"llm": "anthropic", "openai": "openai_compatible"}
    if section in entry:
        return LLMS.entry(entry[section]).key_env_var or ""
    if section == "embedding":
        return EMBEDDERS.entry("voyage").key_env_var or ""
    return "the provider's API key variable"


def _pop(values: dict[str, Any], path: list[str]) -> Any:
    node: Any = values
    for part in path[:-1]:
        node = node.get(part) if isinstance(node, dict) else None
    if not isinstance(node, dict) or path[-1] not in node:
        return _MISSING
    found = node.pop(path[-1])
    _prune(values, path[:-1])
    return found


def _prune(values: dict[str, Any], path: list[str]) -> None:
    """Drop sections the moves left empty (``llm.rate_limit: {}``)."""
    for depth in range(len(path), 0, -1):
        node: Any = values
        for part in path[: depth - 1]:
            node = node.get(part, {})
        if isinstance(node, dict) and node.get(path[depth - 1]) == {}:
            del node[path[depth - 1]]


def _put(values: dict[str, Any], path: list[str], value: Any) -> None:
    node = values
    for part in path[:-1]:
        node = node.setdefault(part, {})
    node.setdefault(path[-1], value)  # the project's own key wins when both are given

"""What a settings file may say beyond the model's own keys, settled before validation.

- ``${VAR}`` (or ``${VAR:-default}``) in any string value is read from the environment; an unset
  variable without a default is an error naming the key and the variable.
- Secrets are never settings: an ``api_key`` holding a literal value is refused (it would sit in a
  file, in backups, in the Dagster UI); ``api_key: ${ANTHROPIC_API_KEY}`` is accepted and dropped,
  since the provider reads that variable itself.
- Keys from other GraphRAG-style configurations that mean one of ours are moved onto it
  (`RENAMED`), e.g. ``llm.rate_limit.requests_per_minute`` → ``llm.requests_per_minute``.
- Keys naming something this project deliberately does differently (`DIFFERENT`, e.g.
  ``extraction.tuple_delimiter``: extraction is a validated JSON tool call, not delimited text)
  are dropped with one `SettingsWarning` each that names the key and says why.

Anything else unknown still fails validation, with the key's path and the closest valid key.

The YAML itself (the file and each ``GRAPHUNIFIED__*`` value) is read by `parse_yaml`: safe tags
only, no aliases (``*name``: ten nested aliases of ten make a 500-byte file expand to billions of
nodes) and at most `MAX_DEPTH` levels of nesting (deeper blew Python's recursion limit); every
problem is one line naming the source, line and column. A secret variable (``${ANTHROPIC_API_KEY}``,
any ``*_KEY``/``*_SECRET``/``*_TOKEN``/``*_PASSWORD``) is read only as an ``api_key``: anywhere else
its value would end up in an error message, a log or the Dagster UI.
"""

from __future__ import annotations

import difflib
import os
import re
import warnings
from collections.abc import Mapping
from typing import Any

import yaml
from pydantic import BaseModel

_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
# Where each provider reads its key; an api_key naming another variable would be silently unused.
SECRET_VARIABLES = {"llm": "ANTHROPIC_API_KEY", "embedding": "VOYAGE_API_KEY", "openai": "OPENAI_API_KEY"}

# Variables holding secrets besides the providers' own: read only as api_key, never into a setting.
_SECRET_NAME = re.compile(r"(?:^|_)(?:KEY|SECRET|TOKEN|PASSWORD|PASSWD|CREDENTIALS?)$")
# Settings nest three or four levels; a thousand-deep file is an attack, not a configuration.
MAX_DEPTH = 32

# Another configuration's key (dotted) → ours.
RENAMED: Mapping[str, str] = {
    "llm.rate_limit.requests_per_minute": "llm.requests_per_minute",
    "llm.rate_limit.tokens_per_minute": "llm.tokens_per_minute",
    "llm.rate_limit.max_retries": "llm.max_retries",
    "llm.rate_limit.concurrency": "llm.concurrency",
    "llm.temperature": "query.generation.temperature",
    "embedding.model": "embedding.voyage_model",
    "chunking.chunk_size": "chunking.size",
    "chunking.chunk_overlap": "chunking.overlap",
    "query.max_tokens": "query.generation.max_tokens",
    "extraction.max_gleanings": "llm.max_gleanings",
}
# A key (dotted; a trailing ".*" covers a whole section) → why it is not a setting here.
DIFFERENT: Mapping[str, str] = {
    "extraction.tuple_delimiter": "extraction is a JSON tool call validated against a schema, not "
    "delimited text, so there is no delimiter to set",
    "extraction.record_delimiter": "extraction is a JSON tool call, not delimited records",
    "extraction.completion_delimiter": "extraction is a JSON tool call, not delimited records",
    "vector_store.*": "vectors are stored in LanceDB under the home folder (lancedb/); there is no "
    "other backend (faiss, chroma, ...) to choose",
    "storage.vector_store": "vectors are stored in LanceDB under the home folder; no other backend",
    "storage.backend": "the index is Parquet + LanceDB files in the home folder (or s3:// via "
    "storage.publish_uri)",
    "graph.backend": "the graph is Parquet tables read into memory (networkx/scipy), not a graph database",
    "cache.*": "LLM and embedding caches live in the home folder (.cache/) and need no settings",
}


class SettingsWarning(UserWarning):
    """A settings key that is accepted but has no effect here, and why."""


def prepare(values: dict[str, Any], environ: Mapping[str, str] | None, source: str) -> dict[str, Any]:
    """``values`` with variables expanded, secrets refused, renamed keys moved, different ones dropped."""
    from graphunified_query.core.settings.model import SettingsError

    environ = os.environ if environ is None else environ
    expanded = _expand(values, environ, (), source, SettingsError)
    _refuse_secrets(expanded, (), values, source, SettingsError)
    for old, new in RENAMED.items():
        found = _pop(expanded, old.split("."))
        if found is not _MISSING:
            _put(expanded, new.split("."), found)
    for key, why in DIFFERENT.items():
        path = key.removesuffix(".*").split(".")
        if _pop(expanded, path) is not _MISSING:
            warnings.warn(
                SettingsWarning(f"{source}: {key.removesuffix('.*')} is ignored: {why}."), stacklevel=3
            )
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
        if len(value) >= 8 and (name in SECRET_VARIABLES.values() or _SECRET_NAME.search(name))
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
        if path[-1:] != ("api_key",) and (name in SECRET_VARIABLES.values() or _SECRET_NAME.search(name)):
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
            variable = SECRET_VARIABLES.get(path[0] if path else "", "the provider's API key variable")
            if not (isinstance(given, str) and _VARIABLE.fullmatch(given.strip())):
                raise error(
                    f"{source}: {'.'.join(here)} holds a literal secret; remove it and set {variable} in "
                    f"the environment (or write api_key: ${{{variable}}}). Keys never go in settings files."
                )
            del values[key]  # the provider reads the variable itself


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

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
"""

from __future__ import annotations

import difflib
import os
import re
import warnings
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from graphunified_query.core.plugins import EMBEDDERS, LLMS

_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")

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

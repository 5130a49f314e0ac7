"""One shape for every pluggable kind (LLMs, embedders, rerankers): a name -> its factory.

An entry declares the environment variable of its secret (``key_env_var``, as simonw/llm's models
do) and whether it cannot work without it (``needs_key``); `create` checks the key before the
factory runs, so a missing one is a one-line error naming the variable, and every list of secret
variables (log masking, the settings file's refusal of literal keys, the settings reference) is
derived from the registries (`core/providers/secrets.py`). A factory may be a "module:function"
string, imported on first use: provider SDKs take seconds to import.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class UnknownName(ValueError):
    """A name no entry is registered under; the message lists the registered ones."""


class MissingKey(ValueError):
    """An entry that needs a secret was asked for without its environment variable set."""


@dataclass(frozen=True)
class Entry(Generic[T]):
    name: str
    factory: str | Callable[..., T]  # "module:function", or the function
    key_env_var: str | None = None  # where its secret is read from; passed to the factory as `key`
    needs_key: bool = False  # False: the key is optional (a local server may need none)

    def load(self) -> Callable[..., T]:
        if callable(self.factory):
            return self.factory
        module, _, function = self.factory.partition(":")
        loaded: Callable[..., T] = getattr(importlib.import_module(module), function)
        return loaded


class Registry(Generic[T]):
    """``kind`` names the choice in errors (``embedding.provider``); ``reserved`` names that are
    choices but no entry (``auto``, ``offline``)."""

    def __init__(self, kind: str, *, reserved: tuple[str, ...] = ()) -> None:
        self.kind = kind
        self.reserved = reserved
        self._entries: dict[str, Entry[T]] = {}

    def register(
        self,
        name: str,
        factory: str | Callable[..., T],
        *,
        key_env_var: str | None = None,
        needs_key: bool = False,
    ) -> Entry[T]:
        if name in self.reserved:
            raise UnknownName(f"{name!r} is reserved for {self.kind}; pick another name")
        entry = Entry(name, factory, key_env_var, needs_key)
        self._entries[name] = entry
        return entry

    def unregister(self, name: str) -> None:
        self._entries.pop(name, None)

    def names(self) -> tuple[str, ...]:
        return tuple(self._entries)

    def choices(self) -> tuple[str, ...]:
        """Every valid value: the reserved names, then the registered ones."""
        return (*self.reserved, *self._entries)

    def entry(self, name: str) -> Entry[T]:
        if name not in self._entries:
            raise UnknownName(
                f"{self.kind} {name!r} is not registered; use one of: {', '.join(self.choices())}"
            )
        return self._entries[name]

    def check(self, name: str) -> str:
        """``name`` if it is a valid choice, else UnknownName (a pydantic validator can use it)."""
        if name not in self.reserved:
            self.entry(name)
        return name

    def key_variables(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(e.key_env_var for e in self._entries.values() if e.key_env_var))

    def key(self, name: str, environ: Mapping[str, str] = os.environ) -> str | None:
        """The entry's secret from ``environ`` (None: it declares none, or it is unset)."""
        variable = self.entry(name).key_env_var
        return (environ.get(variable, "").strip() or None) if variable else None

    def create(self, name: str, *args: Any, environ: Mapping[str, str] = os.environ, **kwargs: Any) -> T:
        """The entry's object: its factory called with ``args``, ``kwargs``, ``environ`` and, when
        the entry declares a secret, ``key`` (MissingKey when it needs one that is unset)."""
        entry = self.entry(name)
        if entry.key_env_var:
            key = self.key(name, environ)
            if key is None and entry.needs_key:
                raise MissingKey(
                    f"{self.kind} {name!r} needs the {entry.key_env_var} environment variable; export it"
                )
            kwargs["key"] = key
        return entry.load()(*args, environ=environ, **kwargs)

"""Every first-party import resolves: import statements (lazy, TYPE_CHECKING ones included) and
strings naming a module (`import_module("...")`, `_LAZY` maps, "module:function" registry entries).

A lazy import of a renamed module fails only when its branch runs: `reranker=llm` ended in
`ModuleNotFoundError: graphunified_query.strategies.composable.claude_rerank` because nothing ran
it. This reads every such name from the syntax tree and checks the module (and the attribute a
`from` import or a "module:function" entry names) exists, without importing anything.
"""

from __future__ import annotations

import ast
from functools import cache

from tests.structure.import_graph import import_strings, imports, is_first_party, modules


@cache
def _defined(module: str) -> frozenset[str]:
    """Names a module defines or imports at its top (a `from m import x` target must be one)."""
    tree = ast.parse(modules()[module].read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for target in targets for t in ast.walk(target) if isinstance(t, ast.Name))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    if "__getattr__" in names:  # a lazy package: its `_LAZY`/`__all__` names resolve at run time
        names.update(_lazy_names(tree))
    return frozenset(names)


def _lazy_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            names.update(
                k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)
            )
    return names


def _unresolved(name: str, attribute: str | None) -> str | None:
    if name not in modules():
        return f"no module {name}"
    if attribute is not None and attribute != "*" and attribute not in _defined(name):
        return f"{name} has no {attribute}"
    return None


def test_every_first_party_import_statement_resolves() -> None:
    problems = [
        f"{imp.module}:{imp.line} ({imp.where}): {problem}"
        for imp in imports()
        if is_first_party(imp.target) and (problem := _unresolved(imp.target, imp.attribute))
    ]
    assert problems == []


def test_every_module_string_resolves() -> None:
    problems = []
    for string in import_strings():
        module, _, attribute = string.text.partition(":")
        if problem := _unresolved(module, attribute or None):
            problems.append(f"{string.module}:{string.line} {string.text!r}: {problem}")
    assert problems == []


def test_the_scan_reaches_lazy_names() -> None:
    """Guard the guard: the `_LAZY` map and the LLM registry's entries are among what it checks."""
    texts = {s.text for s in import_strings()}
    assert "graphunified_query.core.providers.voyage_embedder" in texts
    assert any(t.endswith(":build") for t in texts)
    assert _unresolved("graphunified_query.strategies.composable.claude_rerank", None)

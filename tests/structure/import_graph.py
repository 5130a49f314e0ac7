"""The first-party import graph of both packages, read from the syntax tree (nothing is imported).

Shared by the structure tests: the boundary (who may import whom), the no-circle rule and the
resolution of every import string. An import is recorded with where it sits: at module level
(runs when the module is imported), inside a function (lazy), or under ``if TYPE_CHECKING:``.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("graphunified_query", "graphunified_assets")
FIRST_PARTY = (*PACKAGES, "tests", "bench")


@dataclass(frozen=True)
class Import:
    module: str  # the importing module
    target: str  # the module imported (`from a import b` is `a.b` when b is a module, else `a`)
    line: int
    where: str  # "module", "function" or "type_checking"
    attribute: str | None = None  # b of `from a import b` when b is no module: a name a must define


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def modules(root: Path = ROOT) -> dict[str, Path]:
    """Every module of both packages: dotted name -> file."""
    return {module_name(p, root): p for package in PACKAGES for p in sorted((root / package).rglob("*.py"))}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _statements(body: list[ast.stmt], where: str) -> Iterator[tuple[ast.stmt, str]]:
    """Every statement with its place: module level descends into if/try/with/class bodies."""
    for node in body:
        yield node, where
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            yield from _statements(node.body, "function")
        elif isinstance(node, ast.If):
            yield from _statements(node.body, "type_checking" if _is_type_checking(node.test) else where)
            yield from _statements(node.orelse, where)
        elif isinstance(node, ast.Try | ast.TryStar):
            for block in (node.body, *(h.body for h in node.handlers), node.orelse, node.finalbody):
                yield from _statements(block, where)
        elif isinstance(node, ast.For | ast.AsyncFor | ast.While | ast.With | ast.AsyncWith):
            yield from _statements(node.body, where)
            yield from _statements(getattr(node, "orelse", []), where)
        elif isinstance(node, ast.ClassDef):
            yield from _statements(node.body, where)
        elif isinstance(node, ast.Match):
            for case in node.cases:
                yield from _statements(case.body, where)


def _absolute(module: str, node: ast.ImportFrom, is_package: bool) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


@cache
def imports(root: Path = ROOT) -> tuple[Import, ...]:
    """Every import statement of both packages, first-party or not."""
    known = modules(root)
    found: list[Import] = []
    for module, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node, where in _statements(tree.body, "module"):
            if isinstance(node, ast.Import):
                found += [Import(module, alias.name, node.lineno, where) for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _absolute(module, node, path.name == "__init__.py")
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    if sub in known:
                        found.append(Import(module, sub, node.lineno, where))
                    else:
                        found.append(Import(module, base, node.lineno, where, attribute=alias.name))
    return tuple(found)


def is_first_party(name: str) -> bool:
    return name.split(".")[0] in PACKAGES


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each as one cycle
    through them, so a failure prints a path to follow."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:  # recursion depth is bounded by the module count (~400)
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return [_cycle_through(set(c), edges) for c in components]


def _cycle_through(component: set[str], edges: dict[str, set[str]]) -> list[str]:
    """One closed path inside a strongly connected component, start repeated at the end."""
    start = min(component)
    path, seen, node = [start], {start}, start
    while True:
        nxt = min(n for n in edges[node] if n in component)
        if nxt in seen:
            return [*path[path.index(nxt) :], nxt]
        path.append(nxt)
        seen.add(nxt)
        node = nxt


def module_graph(root: Path = ROOT, *, lazy: bool = False) -> dict[str, set[str]]:
    """Module -> the first-party modules it imports when it is imported (``lazy``: also those its
    functions import). Importing ``a.b.c`` runs ``a`` and ``a.b`` first, so those are edges too."""
    known = modules(root)
    edges: dict[str, set[str]] = {m: set() for m in known}
    for imp in imports(root):
        if imp.where == "type_checking" or (imp.where == "function" and not lazy):
            continue
        parts = imp.target.split(".")
        for i in range(1, len(parts) + 1):
            target = ".".join(parts[:i])
            if target in known and target != imp.module and not imp.module.startswith(f"{target}."):
                edges[imp.module].add(target)
    return edges


_DOTTED = re.compile(r"(?:graphunified_query|graphunified_assets)(?:\.\w+)+(?::\w+)?")


@dataclass(frozen=True)
class ImportString:
    module: str  # where the string is written
    line: int
    text: str  # "a.b.c" or "a.b:function"


@cache
def import_strings(root: Path = ROOT) -> tuple[ImportString, ...]:
    """Every string constant of both packages that names a first-party module: the arguments of
    `import_module(...)`, the values of a `_LAZY` map, "module:function" registry entries."""
    found: list[ImportString] = []
    for module, path in modules(root).items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and _DOTTED.fullmatch(node.value)
            ):
                found.append(ImportString(module, node.lineno, node.value))
    return tuple(found)

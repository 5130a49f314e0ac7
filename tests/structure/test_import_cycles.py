"""No import circle: the modules each module imports when it is imported form no cycle.

Function-local and TYPE_CHECKING imports are left out (they run later or never), and so is a
package's own `__init__` seen from inside it. A circle printed here is the path to cut.
"""

from __future__ import annotations

from tests.structure.import_graph import cycles, module_graph


def test_no_import_circle() -> None:
    found = cycles(module_graph())
    assert not found, "import circles:\n" + "\n".join(" -> ".join(cycle) for cycle in found)


def test_a_circle_is_found_and_printed() -> None:
    """Guard the guard on a made-up graph."""
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(edges) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []

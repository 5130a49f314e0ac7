"""The check before any `index` or sensor tick: never remove documents the user did not remove.

An input folder other than the recorded one, or a default folder on a home indexed before homes
recorded their input, would delete every document it lacks. Refused with the count, unless the
user says `--replace-input`.
"""

from __future__ import annotations

from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.lib.ingest.index_state import IndexState
from graphunified_assets.lib.ingest.sources import scan_input
from graphunified_query.core.home_input import record_input


def input_problem(resource: GraphUnifiedResource, *, replace: bool = False) -> str | None:
    """One line saying why this input may not be indexed into the home, or None."""
    layout, choice = resource.layout, resource.input_choice()
    if replace or not choice.path.is_dir():  # a missing folder is refused by the scan, naming it
        return None
    if choice.differs:
        removed, indexed = _removed(resource)
        if not removed:  # the new folder holds every indexed document (moved, or nothing indexed)
            return None
        return (
            f"{layout.home} indexes {choice.recorded} (recorded in {layout.input_record}); indexing "
            f"{choice.path} instead would remove {removed} of its {indexed} documents. Leave out --input "
            "to use the recorded folder, or pass --replace-input to switch the home to this one"
        )
    if choice.recorded is None and choice.requested is None and layout.index_state.exists():
        removed, indexed = _removed(resource)
        if removed:  # a home indexed before input.json: the default folder is not known to be its
            return (
                f"{layout.home} has {indexed} indexed documents and no recorded input folder; the default "
                f"{choice.path} would remove {removed} of them. Pass --input with the folder they came "
                "from (or --replace-input to index the default folder instead)"
            )
    return None


def adopt_input(resource: GraphUnifiedResource) -> None:
    """Record the folder being indexed when the home has none yet, or when it replaces the old one
    (`input_problem` said yes first)."""
    choice = resource.input_choice()
    if choice.recorded is None or choice.differs:
        record_input(resource.layout, choice.path)


def _removed(resource: GraphUnifiedResource) -> tuple[int, int]:
    """How many indexed documents the chosen folder lacks, and how many are indexed."""
    indexed = IndexState(resource.layout.index_state).indexed_hashes()
    present = scan_input(resource.input_path, resource.layout.input_scan).documents
    return sum(1 for key in indexed if key not in present), len(indexed)

"""A document that fails to parse is not retried, nor the global stage rebuilt, until it changes.

It counted as `changed` on every `index`: a run, a global refresh and a new generation each time.
"""

from __future__ import annotations

from pathlib import Path

from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.lib.ingest.index_state import IndexState
from graphunified_assets.ops.indexing import index


def test_an_unparsable_document_waits_for_a_change(input_dir: Path, home: Path) -> None:
    (input_dir / "broken.pdf").write_bytes(b"%PDF-1.4\n not really a PDF\n")
    resource = GraphUnifiedResource(home=str(home), input_dir=str(input_dir))
    first = index(resource, echo=lambda _: None)
    assert first.runs == 2  # the documents, then the global refresh
    assert any(f.source == "broken.pdf" for f in IndexState(resource.layout.index_state).failures())

    again = index(resource, echo=lambda _: None)
    assert again.runs == 0 and again.plan.summary().startswith("0 new, 0 changed")

    (input_dir / "broken.pdf").write_bytes(b"%PDF-1.4\n another attempt\n")  # changed: tried again
    retried = index(resource, echo=lambda _: None)
    assert retried.plan.changed == ("broken.pdf",) and retried.runs >= 1

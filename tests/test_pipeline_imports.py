"""What an `index` imports before it knows there is anything to parse: not spaCy (a second of
every `index` with nothing changed, and of every removal)."""

from __future__ import annotations

import subprocess
import sys


def _loaded(code: str) -> str:
    found = "print(sorted({m.split('.')[0] for m in sys.modules} & {'spacy', 'thinc'}))"
    script = f"import sys; {code}; {found}"
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return run.stdout.strip()


def test_the_code_location_and_index_import_no_spacy_until_a_document_is_parsed() -> None:
    assert _loaded("import graphunified_assets.defs.build, graphunified_assets.ops.indexing") == "[]"
    parsed = (
        "from graphunified_assets.lib.extraction.offline_extractor import OfflineExtractor;"
        "from graphunified_assets.lib.extraction.records import ChunkText;"
        "found = OfflineExtractor(entity_types=['PERSON', 'ORGANIZATION', 'DATE']).extract("
        "[ChunkText('c1', 'Thomas Hale founded the Kendal Philosophical Society in 1887.')]);"
        "assert 'Thomas Hale' in {e.name for e in found[0].entities}, found"
    )
    assert _loaded(parsed) == "['spacy', 'thinc']"

"""What an `index` imports before it knows there is anything to parse: not spaCy (a second of
every `index` with nothing changed, and of every removal), nor pypdf before a PDF."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def _loaded(code: str, watched: tuple[str, ...] = ("spacy", "thinc")) -> str:
    found = f"print(sorted({{m.split('.')[0] for m in sys.modules}} & {set(watched)!r}))"
    script = f"import sys; {code}; {found}"
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return run.stdout.strip()


def test_the_code_location_and_index_import_no_parser_until_one_is_needed() -> None:
    location = "import graphunified_assets.defs.build, graphunified_assets.ops.indexing"
    assert _loaded(location, ("spacy", "thinc", "pypdf")) == "[]"
    parsed = (
        "from graphunified_assets.lib.extraction.offline_extractor import OfflineExtractor;"
        "from graphunified_assets.lib.extraction.records import ChunkText;"
        "found = OfflineExtractor(entity_types=['PERSON', 'ORGANIZATION', 'DATE']).extract("
        "[ChunkText('c1', 'Thomas Hale founded the Kendal Philosophical Society in 1887.')]);"
        "assert 'Thomas Hale' in {e.name for e in found[0].entities}, found"
    )
    assert _loaded(parsed) == "['spacy', 'thinc']"


def test_pypdf_is_imported_by_the_first_pdf(tmp_path: Path) -> None:
    pdf = tmp_path / "empty.pdf"
    pdf.write_bytes(b"%PDF-1.4 not really")
    read = (
        "from pathlib import Path;"
        "from graphunified_assets.lib.ingest.readers import read_documents;"
        "from graphunified_assets.lib.ingest.sources import scan_input;"
        f"folder = Path({str(tmp_path)!r});"
        "docs, problems = read_documents(scan_input(folder).documents.values(), folder);"
        "assert problems and not docs, (docs, problems)"
    )
    assert _loaded(read, ("pypdf",)) == "['pypdf']"

"""Re-extract indexed documents when the extraction settings change (a tuned prompt, new types).

`index` only redoes new or changed documents. Each run records a fingerprint of what shapes
extraction for the current provider (prompt texts and types for an LLM; types and concept heads
offline) in ``<home>/cache/extraction_settings.json``; when it differs from the recorded one, every
indexed document's ``documents`` file is touched, which `plan_update` treats as unfinished
downstream work, so the run re-extracts them (embeddings and unchanged LLM calls come from the
caches). Switching provider alone is not a change: it never re-extracts an existing index.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from graphunified_assets.lib.extraction.tuned_prompts import load_prompts
from graphunified_assets.lib.ingest.index_state import IndexState
from graphunified_query.core.artifacts import DOCUMENTS
from graphunified_query.core.layout import HomeLayout
from graphunified_query.core.settings.model import Settings

STATE_FILE = "extraction_settings.json"


def extraction_fingerprint(settings: Settings, provider: str) -> str:
    extraction = settings.extraction
    shaping: dict[str, object] = {"entity_types": list(extraction.entity_types)}
    if provider == "offline":
        shaping["concept_heads"] = sorted(extraction.concept_heads)
    else:
        prompts = load_prompts(extraction)
        shaping |= {"system": prompts.system, "glean": prompts.glean}
    return hashlib.sha256(json.dumps(shaping, sort_keys=True).encode()).hexdigest()


def _state_path(layout: HomeLayout) -> Path:
    return layout.cache / STATE_FILE


def _read(layout: HomeLayout) -> dict[str, str]:
    try:
        return dict(json.loads(_state_path(layout).read_text(encoding="utf-8")))
    except (FileNotFoundError, ValueError):
        return {}


def record_fingerprint(
    layout: HomeLayout, settings: Settings, provider: str, *, overwrite: bool = True
) -> None:
    state = _read(layout)
    if overwrite or provider not in state:
        state[provider] = extraction_fingerprint(settings, provider)
        path = _state_path(layout)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(state, indent=1), encoding="utf-8")
        os.replace(tmp, path)


def reextract_if_settings_changed(layout: HomeLayout, settings: Settings, provider: str) -> int:
    """Mark every indexed document for re-extraction when the fingerprint changed; returns how many.
    ``provider``: the `llm.provider` the run resolved to (`providers.registry.provider_name`)."""
    recorded = _read(layout).get(provider)
    current = extraction_fingerprint(settings, provider)
    touched = 0
    if recorded is not None and recorded != current:
        for document_id in IndexState(layout.index_state).indexed_hashes():
            path = layout.partition_path(DOCUMENTS, document_id)
            if path.exists():
                os.utime(path)  # newer than its chunks/extractions: unfinished work for plan_update
                touched += 1
    if recorded != current:
        # Recorded after touching: a failed run leaves the documents pending, not forgotten.
        record_fingerprint(layout, settings, provider)
    return touched

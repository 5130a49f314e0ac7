"""Tuning's output: prompt files under ``<home>/prompts/`` and ``<home>/settings.tuned.yaml``.

Nothing is applied by itself: the user reviews the files, edits them if needed and copies the
``extraction:`` section into ``settings.yaml``. The fragment is validated through the Settings
model (merged with the home's current settings) before it is written.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import yaml

from graphunified_assets.lib.extraction.tuned_prompts import EXAMPLES_FILE, GLEAN_FILE, PACKAGED, SYSTEM_FILE
from graphunified_assets.lib.tuning.proposal import Example, Proposal
from graphunified_query.core.settings.model import SETTINGS_FILE_NAME, SettingsError, load_settings
from graphunified_query.core.stores.parquet import write_text_atomic

FRAGMENT_FILE = "settings.tuned.yaml"
PROMPTS_DIR = "prompts"


def render_example(n: int, example: Example) -> str:
    payload: dict[str, Any] = {
        "entities": [e.model_dump() for e in example.entities],
        "relationships": [{**r.model_dump(), "strength": 9} for r in example.relationships],
        "facts": [],
    }
    body = json.dumps(payload, indent=2, ensure_ascii=False)
    return f'# Example {n}\n\nPassage:\n"{example.quote}"\n\nTool input:\n```json\n{body}\n```\n'


def render_system_prompt(proposal: Proposal, examples: list[Example]) -> str:
    """The packaged instructions with the domain, persona, type descriptions and corpus examples."""
    packaged = (PACKAGED / SYSTEM_FILE).read_text(encoding="utf-8")
    instructions = packaged.split("# Example 1", 1)[0].rstrip()
    entity_lines = "\n".join(f"- {t.name}: {t.description}" for t in proposal.entity_types)
    relation_lines = "\n".join(f"- {t.name}: {t.description}" for t in proposal.relationship_types)
    parts = [
        f"# Domain\n\n{proposal.persona} The documents are about {proposal.domain}.\n",
        instructions + "\n",
        f"# Entity types\n\n{entity_lines}\n",
        "# Relationship types\n\nPrefer these relationship types when one fits: {relationship_types}\n"
        + (f"\n{relation_lines}\n" if relation_lines else ""),
        *(render_example(n, e) for n, e in enumerate(examples, start=1)),
        "The examples are quoted from this collection; extract from the user's passage alone.\n",
    ]
    return "\n".join(parts)


def write_llm_outputs(home: Path, proposal: Proposal, examples: list[Example], header: str) -> Path:
    prompts = home / PROMPTS_DIR
    write_text_atomic(prompts / SYSTEM_FILE, render_system_prompt(proposal, examples))
    write_text_atomic(prompts / GLEAN_FILE, (PACKAGED / GLEAN_FILE).read_text(encoding="utf-8"))
    write_text_atomic(
        prompts / EXAMPLES_FILE, "\n".join(render_example(n, e) for n, e in enumerate(examples, 1))
    )
    extraction = {
        "entity_types": [t.name for t in proposal.entity_types],
        "relationship_types": [t.name for t in proposal.relationship_types],
        "prompt_dir": str(prompts.resolve()),
    }
    comment = f"{header}\n# domain: {proposal.domain}\n# persona: {proposal.persona}"
    return write_fragment(home, extraction, comment)


def write_fragment(home: Path, extraction: dict[str, Any], comment: str) -> Path:
    """Validate ``extraction`` merged into the home's settings, then write the reviewed fragment."""
    current = home / SETTINGS_FILE_NAME
    values: dict[str, Any] = {}
    if current.is_file():
        values = yaml.safe_load(current.read_text(encoding="utf-8")) or {}
    values.setdefault("extraction", {}).update(extraction)
    text = yaml.safe_dump({"extraction": extraction}, sort_keys=False, allow_unicode=True)
    fragment = home / FRAGMENT_FILE
    with tempfile.TemporaryDirectory() as tmp:
        merged = Path(tmp) / SETTINGS_FILE_NAME
        merged.write_text(yaml.safe_dump(values), encoding="utf-8")
        try:
            load_settings(tmp, environ={})
        except SettingsError as error:
            raise SettingsError(
                f"the tuned settings would be invalid, so {fragment} was not written: {error}"
            ) from None
    how = (
        f"# Review and edit, then copy the extraction: section into {current} and run `index`:\n"
        "# documents are re-extracted with the tuned settings (unchanged settings re-extract nothing)."
    )
    write_text_atomic(fragment, "\n".join(line for line in (comment, how) if line) + "\n" + text)
    return fragment

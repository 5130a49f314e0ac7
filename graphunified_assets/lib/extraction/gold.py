"""The hand-labelled extraction fixture: ``labels.yaml`` next to a ``docs/`` folder.

A mistake in the labels is an error naming the document and field, never a silently wrong score.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from graphunified_assets.lib.extraction.quality import GoldDocument, GoldEntity, GoldRelationship

LABELS_FILE = "labels.yaml"
DOCS_DIR = "docs"
DEFAULT_GOLD = Path(__file__).resolve().parents[3] / "tests" / "fixtures" / "extraction_gold"


class GoldLabelError(ValueError):
    pass


def load_gold(folder: Path = DEFAULT_GOLD) -> list[GoldDocument]:
    labels_path = folder / LABELS_FILE
    if not labels_path.is_file() or not (folder / DOCS_DIR).is_dir():
        raise GoldLabelError(
            f"{folder} needs {LABELS_FILE} and a {DOCS_DIR}/ folder of the labelled documents"
        )
    try:
        raw = yaml.safe_load(labels_path.read_text(encoding="utf-8"))
    except yaml.YAMLError as error:
        raise GoldLabelError(f"{labels_path} is not valid YAML: {error}") from None
    if not isinstance(raw, dict) or not raw:
        raise GoldLabelError(f"{labels_path} must map document file names to their labels")
    documents = []
    for doc_id, labels in raw.items():
        where = f"{labels_path} > {doc_id}"
        if not (folder / DOCS_DIR / str(doc_id)).is_file():
            raise GoldLabelError(f"{where}: no such document in {folder / DOCS_DIR}")
        if not isinstance(labels, dict):
            raise GoldLabelError(f"{where}: expected a mapping with 'entities' and 'relationships'")
        entities = tuple(
            _entity(e, f"{where} > entities[{i}]") for i, e in enumerate(labels.get("entities") or [])
        )
        names = {e.name for e in entities}
        relationships = tuple(
            _relationship(r, f"{where} > relationships[{i}]", names)
            for i, r in enumerate(labels.get("relationships") or [])
        )
        documents.append(GoldDocument(str(doc_id), entities, relationships))
    return documents


def _fields(item: Any, where: str, required: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(item, dict) or any(not item.get(k) for k in required):
        raise GoldLabelError(f"{where}: needs {', '.join(required)}; got {item!r}")
    return item


def _entity(item: Any, where: str) -> GoldEntity:
    fields = _fields(item, where, ("name", "type"))
    types = fields["type"] if isinstance(fields["type"], list) else [fields["type"]]
    aliases = fields.get("aliases") or []
    if not isinstance(aliases, list):
        raise GoldLabelError(f"{where}: aliases must be a list")
    return GoldEntity(
        name=str(fields["name"]),
        types=tuple(str(t).upper() for t in types),
        aliases=tuple(str(a) for a in aliases),
        optional=bool(fields.get("optional", False)),
    )


def _relationship(item: Any, where: str, names: set[str]) -> GoldRelationship:
    fields = _fields(item, where, ("source", "target"))
    for end in ("source", "target"):
        if str(fields[end]) not in names:
            raise GoldLabelError(
                f"{where}: {end} '{fields[end]}' is not a labelled entity name of this document"
            )
    return GoldRelationship(
        source=str(fields["source"]),
        target=str(fields["target"]),
        type=str(fields.get("type", "")),
        directed=bool(fields.get("directed", False)),
        optional=bool(fields.get("optional", False)),
    )

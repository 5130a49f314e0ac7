"""A tiny corpus and a deterministic Claude responder for fault scenarios (tests and bench).

One document (``flood.txt``) is the only one naming ``FAILING``; a standing fault aimed at its
chunk (`is_failing_extraction`, `is_failing_embedding`) fails that document alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.fakes.anthropic_server import Content, tool_use

EXTRACTION_TOOL = "record_extraction"
DOCUMENTS = {
    "mill.md": (
        "# Hale Mill\n\nThe Hale Mill was founded by Thomas Hale in 1862 on the River Harrow.\n\n"
        "## Products\n\nIt wove wool cloth for the Harrow Valley Railway uniforms.\n"
    ),
    "people/thomas-hale.md": (
        "# Thomas Hale\n\nThomas Hale was born in Eastfold in 1831. He founded the Hale Mill.\n"
    ),
    "flood.txt": "The Great Flood\nIn 1894 the River Harrow flooded Eastfold and Millbrook.\n",
}
FAILING_DOCUMENT = "flood.txt"
FAILING = "Millbrook"  # an entity only the failing document names
FAILING_CHUNK_MARK = "1894"  # in the failing document's chunk text, in no entity or summary
NAMES = {
    "Thomas Hale": "PERSON",
    "Hale Mill": "ORGANIZATION",
    "River Harrow": "LOCATION",
    "Eastfold": "LOCATION",
    FAILING: "LOCATION",
}


def write_corpus(folder: Path) -> Path:
    for name, text in DOCUMENTS.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return folder


def respond(body: dict[str, Any]) -> Content:
    """Extractions naming the known names found in the chunk, fixed reports, plain-text summaries."""
    tool = body["tools"][0]["name"] if body.get("tools") else None
    content = str(body["messages"][0]["content"])
    if tool == "community_report":
        return tool_use(tool, {"title": "Community", "summary": content[:80], "rating": 5,
                               "rating_explanation": "Fixture.", "findings": []})  # fmt: skip
    if tool is None:
        return [{"type": "text", "text": "A summary."}]
    names = [n for n in NAMES if n in content]
    relationships = [
        {"source": a, "target": b, "type": "RELATED", "description": f"{a} and {b}.", "strength": 5}
        for i, a in enumerate(names)
        for b in names[i + 1 :]
    ]
    entities = [{"name": n, "type": NAMES[n], "description": f"{n} is named."} for n in names]
    return tool_use(tool, {"entities": entities, "relationships": relationships, "facts": []})


def is_extraction(body: dict[str, Any]) -> bool:
    return (body.get("tools") or [{}])[0].get("name") == EXTRACTION_TOOL


def is_failing_extraction(body: dict[str, Any]) -> bool:
    """An extraction request (or its repair turn) for the failing document's chunk."""
    return is_extraction(body) and FAILING in str(body["messages"][0]["content"])


def is_failing_embedding(body: dict[str, Any]) -> bool:
    """A Voyage request embedding the failing document's chunk."""
    return any(FAILING_CHUNK_MARK in text for text in body.get("input", []))


def settings_yaml(claude_url: str, voyage_url: str, *, timeout: float = 2.0) -> str:
    """Short retries and timeouts, so persistent faults end quickly."""
    return (
        f"embedding: {{provider: voyage, voyage_base_url: '{voyage_url}', max_retries: 1,"
        f" timeout_seconds: {timeout}}}\n"
        f"llm: {{base_url: '{claude_url}', max_gleanings: 0, max_retries: 1, retry_base_seconds: 0.01,"
        f" timeout_seconds: {timeout}}}\n"
    )

"""The request's on/off fields, declared once: `QueryRequest`'s boolean fields take their
descriptions from here (a test holds the two to the same names), `ask` gets one flag each
(``--retrieve-only``, ``--evidence``), and HTTP and Python take them as the model's fields.

A module of plain names so the CLI's parser imports nothing heavy to declare its flags.
"""

from __future__ import annotations

SWITCHES: dict[str, str] = {
    "retrieve_only": "return the contexts, generate nothing",
    "evidence": "also return the evidence subgraph: the entities and relationships behind each "
    "context (~10 ms of CPU, so only when asked; the web page asks for it to draw the graph)",
}


def flag(name: str) -> str:
    """The CLI flag of a switch: ``--retrieve-only`` for ``retrieve_only``."""
    return "--" + name.replace("_", "-")

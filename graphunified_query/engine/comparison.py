"""The one summary table that ends `compare`: the strategies side by side on the same question."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

COLUMNS = (
    "strategy",
    "contexts",
    "shared",
    "top score",
    "ms",
    "retrieval ms",
    "LLM calls",
    "tokens",
    "cost $",
)


def summary_table(responses: Sequence[Any]) -> str:
    """One row per response; `shared` counts its contexts that some other strategy returned too."""
    keys = [{_key(c) for c in r.contexts} for r in responses]
    rows = []
    for n, response in enumerate(responses):
        others = set().union(*(k for i, k in enumerate(keys) if i != n))
        meta = response.metadata
        top = max((c.score for c in response.contexts), default=None)
        rows.append(
            (
                response.strategy,
                str(len(response.contexts)),
                str(len(keys[n] & others)),
                "-" if top is None else f"{top:.3f}",
                f"{meta['latency_ms']:.0f}",
                f"{meta['retrieval_latency_ms']:.0f}",
                str(meta["llm_calls"]),
                str(meta["tokens_used"]),
                f"{meta['cost_usd']:.4f}",
            )
        )
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(COLUMNS)]
    lines = [_line(COLUMNS, widths), _line(tuple("-" * w for w in widths), widths)]
    lines += [_line(row, widths) for row in rows]
    return "\n".join(lines)


def _key(context: Any) -> str:
    """A context is the same passage in two strategies when its chunk is (else its source and text)."""
    return context.chunk_id or f"{context.source}\n{context.text}"


def _line(cells: Sequence[str], widths: Sequence[int]) -> str:
    first, *rest = cells
    return "  ".join([first.ljust(widths[0]), *(c.rjust(w) for c, w in zip(rest, widths[1:], strict=True))])

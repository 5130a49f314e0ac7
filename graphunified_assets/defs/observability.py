"""Materialization metadata shared by the assets: stage timing, LLM usage and Markdown tables.

Numbers go out as explicit numeric metadata (the UI plots them over time on the asset's page);
tables as Markdown (the UI renders them).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

import dagster as dg

from graphunified_query.core.providers.embedding_usage import METER, OUTSIDE

# A materialization's metadata: a subset of what dg.MaterializeResult accepts (its alias is private).
Metadata = dict[str, dg.MetadataValue | str | int | float]

LLM_FIELDS = (
    "llm_calls",
    "llm_cached_calls",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
)


def _step_scope() -> str:
    """The embedding meter's scope: the running Dagster step (run id and step key), or none."""
    try:
        context = dg.OpExecutionContext.get()
    except dg.DagsterInvariantViolationError:
        return OUTSIDE
    return f"{context.run_id}:{context.get_step_execution_context().step.key}"


# Set on import, as every asset module imports this one: the embedders then count per step.
METER.set_scope(_step_scope)


def embedding_usage() -> dict[str, dg.MetadataValue]:
    """What the local model computed in this step: ``embed_texts``, ``embed_tokens`` (real) and
    ``embed_padded_tokens`` (batch rows x their longest text); nothing when it ran no batch."""
    scope = _step_scope()
    usage = METER.take(scope) if scope != OUTSIDE else None
    if usage is None or not usage.batches:
        return {}
    return numeric({f"embed_{name}": value for name, value in usage.as_dict().items()})


def stage_timing() -> dict[str, dg.MetadataValue]:
    """``{"seconds": float}``: wall time since the current step started (parse, model calls, writes),
    plus, when the step covers a range of documents, ``batch`` saying so (see `batch_scope`), and
    what the step's embedding batches computed (see `embedding_usage`).

    Read from the step's start event, so an asset needs no timer of its own; outside a Dagster
    step (plain function calls in tests) there is nothing to report.
    """
    try:
        context = dg.OpExecutionContext.get()
    except dg.DagsterInvariantViolationError:
        return {}
    step_key = context.get_step_execution_context().step.key
    records = context.instance.get_records_for_run(
        context.run_id, of_type=dg.DagsterEventType.STEP_START, limit=10_000
    ).records
    starts = [r.event_log_entry.timestamp for r in records if r.event_log_entry.step_key == step_key]
    if not starts:
        return {}
    seconds = dg.MetadataValue.float(round(time.time() - max(starts), 3))
    return {"seconds": seconds, **batch_scope(context), **embedding_usage()}


def batch_scope(context: dg.OpExecutionContext) -> dict[str, dg.MetadataValue]:
    """A ranged run stores one materialization per document, all with the run's metadata (per
    partition metadata made Dagster list every partition per call: quadratic). Each partition's
    page then says the numbers are the batch's, not the document's own."""
    if not context.has_partition_key_range:
        return {}
    first, last = context.partition_key_range.start, context.partition_key_range.end
    if first == last:
        return {}
    count = len(context.partition_keys)
    return {
        "batch": dg.MetadataValue.text(
            f"totals of this run's {count} documents ({first} .. {last}), not this document's own"
        ),
        "batch_documents": dg.MetadataValue.int(count),
    }


def llm_usage(client: object | None) -> dict[str, dg.MetadataValue]:
    """LLM calls, tokens and dollars of a Claude client's ledger; zeros offline, so the plots of an
    offline home show a flat line instead of a gap."""
    ledger = getattr(client, "ledger", None)
    usage: Mapping[str, float | int] = ledger.as_metadata() if ledger is not None else {}
    values: dict[str, dg.MetadataValue] = {
        name: dg.MetadataValue.int(int(usage.get(name, 0))) for name in LLM_FIELDS
    }
    values["cost_usd"] = dg.MetadataValue.float(float(usage.get("cost_usd", 0.0)))
    return values


def numeric(values: Mapping[str, float | int]) -> dict[str, dg.MetadataValue]:
    """Explicit int/float metadata (bools are not numbers here)."""
    out: dict[str, dg.MetadataValue] = {}
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise TypeError(f"metadata {name!r} must be a number, got {type(value).__name__}")
        out[name] = dg.MetadataValue.int(value) if isinstance(value, int) else dg.MetadataValue.float(value)
    return out


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> dg.MetadataValue:
    """A Markdown table for the UI ("none" when there are no rows)."""
    if not rows:
        return dg.MetadataValue.md("none")
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell).replace("|", "\\|") for cell in row) + " |" for row in rows]
    return dg.MetadataValue.md("\n".join(lines))

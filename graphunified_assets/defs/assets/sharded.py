"""A global asset computed in shards: one plan step, parallel shard steps, one commit step.

`graph_vectors` and `report_vectors` took 70-90 % of a global refresh as single steps. Declared
with `ShardedOps`, each becomes a graph-backed asset: the plan step compares the tables with what
is stored and fans out one shard per slice of rows to compute (`DynamicOut`, so the multiprocess,
Celery and Kubernetes executors run them side by side); each shard writes its rows into the
home's staging folder (`lib/vectors/shard_staging.py`) and hands Dagster only a few counts; the
commit reads the shards' rows and applies them to the tables at once. A shard that fails leaves
the tables as they were (only the commit writes them); the next run plans again.
"""

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import dagster as dg

from graphunified_assets.defs.observability import Metadata, embedding_usage, stage_timing
from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.lib.vectors.shard_staging import Shard, Staging

# What a shard reports: counts the commit sums into the asset's metadata, and the table it is of.
ShardCounts = dict[str, int | str]


@dataclass(frozen=True)
class ShardedStep:
    """What one sharded asset does in each step (the Dagster wiring is `ShardedOps`')."""

    plan: Callable[[GraphUnifiedResource, Staging], list[Shard]]  # writes the plan → the shards
    shard: Callable[[GraphUnifiedResource, Staging, Shard], ShardCounts]  # writes its rows
    commit: Callable[[GraphUnifiedResource, Staging, list[ShardCounts]], Metadata]  # applies them


class ShardedOps:
    """The plan, shard and commit ops of the asset ``name``; `compose` wires them in its
    ``@dg.graph_asset``. Shards run in ``pool`` (the instance's limit on model steps)."""

    def __init__(self, name: str, step: ShardedStep, *, pool: str) -> None:
        self.name = name

        def staging(context: dg.OpExecutionContext, graphunified: GraphUnifiedResource) -> Staging:
            return Staging(graphunified.layout.shards / name, context.run_id)

        @dg.op(name=f"{name}_plan", ins={"after": dg.In(dg.Nothing)}, out=dg.DynamicOut(dict))
        def plan(context: dg.OpExecutionContext, graphunified: GraphUnifiedResource) -> Iterator[Any]:
            stage = staging(context, graphunified)
            stage.begin()
            shards = step.plan(graphunified, stage)
            context.log.info(f"{name}: {len(shards)} shard(s)")
            for shard in shards:
                yield dg.DynamicOutput(shard.as_dict(), mapping_key=shard.key)

        @dg.op(name=f"{name}_shard", pool=pool, out=dg.Out(dict), ins={"shard": dg.In(dict)})
        def shard(
            context: dg.OpExecutionContext, graphunified: GraphUnifiedResource, shard: dict
        ) -> ShardCounts:
            counts = step.shard(graphunified, staging(context, graphunified), Shard(**shard))
            usage = {key: value.value for key, value in embedding_usage().items()}
            return {**counts, **{k: v for k, v in usage.items() if isinstance(v, int)}}

        @dg.op(name=f"{name}_commit", out=dg.Out(dg.Nothing), ins={"shards": dg.In(list)})
        def commit(
            context: dg.OpExecutionContext, graphunified: GraphUnifiedResource, shards: list[ShardCounts]
        ) -> Iterator[dg.Output]:
            stage = staging(context, graphunified)
            metadata = step.commit(graphunified, stage, shards)
            stage.finish()
            totals = summed(shards)
            yield dg.Output(None, metadata={**totals, **metadata, "shards": len(shards), **stage_timing()})

        self.plan, self.shard, self.commit = plan, shard, commit

    def compose(self, *deps: Any) -> Any:
        """plan (after ``deps``) → one shard per planned slice → commit: the asset's output."""
        return self.commit(self.plan(after=list(deps)).map(self.shard).collect())


def summed(shards: list[ShardCounts]) -> dict[str, int]:
    """Every count the shards report, summed (their `table` names aside)."""
    totals: dict[str, int] = {}
    for counts in shards:
        for key, value in counts.items():
            if isinstance(value, int):
                totals[key] = totals.get(key, 0) + value
    return totals


def per_table(shards: list[ShardCounts], key: str) -> dict[str, int]:
    """``key`` summed per table over the shards."""
    totals: dict[str, int] = {}
    for counts in shards:
        value = counts.get(key, 0)
        totals[str(counts["table"])] = totals.get(str(counts["table"]), 0) + (
            value if isinstance(value, int) else 0
        )
    return totals

"""`tune` and `extraction-report`: the command-line logic (argument parsing lives in tuning_cli.py).

It lives beside the Dagster resource it reads the home from, not in `lib/`, which stays free of
the Dagster layer.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.lib.extraction.evaluate import evaluate_extractor
from graphunified_assets.lib.extraction.gold import DEFAULT_GOLD
from graphunified_assets.lib.extraction.quality import QualityReport
from graphunified_assets.lib.extraction.records import Extractor
from graphunified_assets.lib.extraction.selection import (
    ExtractorConfigurationError,
    make_extractor,
    make_llm,
)
from graphunified_assets.lib.tuning.corpus import corpus_chunks
from graphunified_assets.lib.tuning.reextract import record_fingerprint
from graphunified_assets.lib.tuning.sampling import diverse_sample
from graphunified_assets.lib.tuning.writing import write_fragment, write_llm_outputs
from graphunified_query.core.settings.model import Settings, load_settings

OFFLINE_SAMPLE = 300  # chunks the NER profile reads; spaCy does ~50 per second


@dataclass(frozen=True)
class TuneResult:
    fragment: Path
    before: QualityReport | None
    after: QualityReport | None
    dropped_examples: list[str]


def _with_provider(settings: Settings, provider: str) -> Settings:
    return settings.model_copy(update={"llm": settings.llm.model_copy(update={"provider": provider})})


def _extractor(settings: Settings, resource: GraphUnifiedResource, provider: str) -> Extractor:
    return make_extractor(
        _with_provider(settings, provider), llm_cache=resource.layout.llm_cache, environ=resource.environ()
    )


def run_tune(
    resource: GraphUnifiedResource,
    *,
    provider: str | None = None,
    sample: int = 12,
    gold: Path | None = DEFAULT_GOLD,
    echo: Callable[[str], None] = print,
) -> TuneResult:
    settings = resource.settings
    provider = provider or resource.llm_provider()
    chunks = corpus_chunks(resource.input_path, settings.chunking)
    if not chunks:
        raise ExtractorConfigurationError(f"no readable documents in {resource.input_path}; pass --input DIR")
    home = resource.layout.home
    home.mkdir(parents=True, exist_ok=True)
    # The untuned fingerprint, so the first `index` after applying the fragment re-extracts.
    record_fingerprint(resource.layout, settings, provider, overwrite=False)
    llm = make_llm(
        _with_provider(settings, provider), llm_cache=resource.layout.llm_cache, environ=resource.environ()
    )
    k = sample if llm is not None else max(sample, OFFLINE_SAMPLE)
    picked = diverse_sample(chunks, resource.embedder(), k)
    echo(f"sampled {len(picked)} of {len(chunks)} chunks from {resource.input_path} (farthest-point)")
    header = (
        f"# Tuned by `tune --provider {provider}` on {len(picked)} chunks of {resource.input_path}, "
        f"{datetime.now(UTC):%Y-%m-%d}"
    )
    dropped: list[str] = []
    if llm is not None:
        from graphunified_assets.lib.tuning.llm_tuner import propose
        from graphunified_assets.lib.tuning.proposal import checked_examples

        texts = [c.chunk.text for c in picked]
        proposal = propose(llm, texts)
        examples, dropped = checked_examples(proposal, texts)
        for line in dropped:
            echo(line)
        fragment = write_llm_outputs(home, proposal, examples, header)
        echo(
            f"domain: {proposal.domain}; {len(proposal.entity_types)} entity types, {len(examples)} examples"
        )
    else:
        from graphunified_assets.lib.tuning.offline_tuner import profile_corpus

        profile = profile_corpus(picked)
        lines = [header, "# NER mentions per type: " + json.dumps(profile.type_counts)]
        lines.append("# noun-phrase heads (chunks): " + json.dumps(profile.head_counts))
        extraction = {
            "entity_types": list(profile.entity_types),
            "concept_heads": list(profile.concept_heads),
        }
        fragment = write_fragment(home, extraction, "\n".join(lines))
        echo(
            f"entity types kept: {', '.join(profile.entity_types)}; "
            f"concept heads: {', '.join(profile.concept_heads) or '(none)'}"
        )
    echo(f"wrote {fragment} (review it, then copy its extraction: section into settings.yaml)")
    before = after = None
    if gold is not None:
        tuned = load_settings(home, file=fragment)
        tuned = settings.model_copy(update={"extraction": tuned.extraction})
        before = evaluate_extractor(_extractor(settings, resource, provider), gold, settings.chunking)
        after = evaluate_extractor(_extractor(tuned, resource, provider), gold, settings.chunking)
        for name, report in (("before", before), ("after", after)):
            echo(
                f"gold F1 {name} tuning: entities {report.entities.f1:.3f} "
                f"(any type {report.entities_any_type.f1:.3f}), relationships {report.relationships.f1:.3f}"
            )
    return TuneResult(fragment, before, after, dropped)


def run_extraction_report(
    resource: GraphUnifiedResource,
    *,
    provider: str | None,
    gold: Path,
    as_json: bool,
    echo: Callable[[str], None] = print,
) -> QualityReport:
    settings = resource.settings
    provider = provider or resource.llm_provider()
    report = evaluate_extractor(_extractor(settings, resource, provider), gold, settings.chunking)
    echo(json.dumps(report.as_dict(), indent=2) if as_json else report.table())
    return report

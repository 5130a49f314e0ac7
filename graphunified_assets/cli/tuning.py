"""The `tune` and `extraction-report` subcommands (wired into main.py), and `index`'s re-extraction check."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

# The providers' names without the providers package (numpy): `providers.registry.provider_names`
# reads the same registry.
from graphunified_query.core.plugins import LLMS

if TYPE_CHECKING:  # the parser is built without Dagster
    from graphunified_assets.defs.resources import GraphUnifiedResource

COMMANDS = ("tune", "extraction-report")
GOLD_SHOWN = "tests/fixtures/extraction_gold of the repository"  # the absolute path differs by machine


def add_parsers(commands: argparse._SubParsersAction) -> tuple[str, ...]:
    tune = commands.add_parser(
        "tune",
        help="propose domain-tuned extraction prompts and types (writes <home>/settings.tuned.yaml)",
        epilog="example:\n  graphunified tune --home data --provider anthropic --sample 12",
    )
    tune.add_argument("--input", help="corpus folder to sample (default: the home's recorded input)")
    tune.add_argument("--home", default="data", help="data home whose settings are tuned")
    tune.add_argument("--provider", choices=LLMS.choices()[1:], help="default: llm.provider of the home")
    tune.add_argument("--sample", type=int, default=12, help="chunks shown to the LLM (offline reads >= 300)")
    tune.add_argument(
        "--gold", type=Path, help=f"labelled fixture for F1 before/after (default: {GOLD_SHOWN})"
    )
    tune.add_argument("--no-eval", action="store_true", help="skip the before/after F1 on the gold fixture")
    report = commands.add_parser(
        "extraction-report",
        help="precision/recall/F1 of extraction on a labelled set",
        epilog="example:\n  graphunified extraction-report --home data --json",
    )
    report.add_argument(
        "--gold", type=Path, help=f"folder with labels.yaml and docs/ (default: {GOLD_SHOWN})"
    )
    report.add_argument("--home", default="data", help="settings (and tuned prompts) of this home are used")
    report.add_argument("--provider", choices=LLMS.choices()[1:], help="default: llm.provider of the home")
    report.add_argument("--json", action="store_true", help="print one JSON object")
    return COMMANDS


def run(args: argparse.Namespace, resource: GraphUnifiedResource) -> int:
    from graphunified_assets.lib.extraction.gold import DEFAULT_GOLD, GoldLabelError
    from graphunified_assets.lib.extraction.selection import ExtractorConfigurationError
    from graphunified_assets.lib.tuning.llm_tuner import TuningError
    from graphunified_assets.ops.tuning import run_extraction_report, run_tune
    from graphunified_query.core.providers.llm_client import LLMError

    try:
        if args.command == "tune":
            if args.sample < 1:
                raise ExtractorConfigurationError("--sample must be at least 1")
            run_tune(
                resource,
                provider=args.provider,
                sample=args.sample,
                gold=None if args.no_eval else args.gold or DEFAULT_GOLD,
            )
        else:
            run_extraction_report(
                resource, provider=args.provider, gold=args.gold or DEFAULT_GOLD, as_json=args.json
            )
    except (ExtractorConfigurationError, GoldLabelError, TuningError, LLMError, FileNotFoundError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


def reextract_changed(resource: GraphUnifiedResource, echo: Callable[[str], None]) -> None:
    """Before `index`: tuned extraction settings mark every indexed document for re-extraction."""
    from graphunified_assets.lib.tuning.reextract import reextract_if_settings_changed

    touched = reextract_if_settings_changed(resource.layout, resource.settings, resource.llm_provider())
    if touched:
        echo(f"extraction settings changed: {touched} indexed documents will be re-extracted")

"""The extraction prompts a run uses: the packaged ones, or the tuned files `tune` wrote.

`extraction.prompt_dir` points at a folder holding `extract_system.md` (and optionally
`glean.md`); `{entity_types}` and `{relationship_types}` in it are filled from the settings.
Untuned settings render exactly the packaged prompt, so existing LLM cache entries stay valid.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from graphunified_assets.lib.extraction.selection import ExtractorConfigurationError
from graphunified_query.core.settings.model import ExtractionSettings

PACKAGED = Path(__file__).with_name("prompts")
SYSTEM_FILE = "extract_system.md"
GLEAN_FILE = "glean.md"
EXAMPLES_FILE = "examples.md"  # tune's few-shot examples, included in the system prompt it writes


class TunedPromptError(ExtractorConfigurationError):
    pass


@dataclass(frozen=True)
class ExtractionPrompts:
    system: str
    glean: str


def load_prompts(settings: ExtractionSettings) -> ExtractionPrompts:
    folder = settings.prompt_dir
    system_path = PACKAGED / SYSTEM_FILE
    glean_path = PACKAGED / GLEAN_FILE
    if folder is not None:
        system_path = folder / SYSTEM_FILE
        if not system_path.is_file():
            raise TunedPromptError(
                f"extraction.prompt_dir: {system_path} does not exist; run `python -m graphunified_assets "
                "tune` to write it, or remove extraction.prompt_dir to use the packaged prompts"
            )
        if (folder / GLEAN_FILE).is_file():
            glean_path = folder / GLEAN_FILE
    return _render(system_path, glean_path, settings.entity_types, settings.relationship_types)


def packaged_prompts(entity_types: Iterable[str]) -> ExtractionPrompts:
    """The packaged prompts for ``entity_types``: an extractor's own default when given none."""
    return _render(PACKAGED / SYSTEM_FILE, PACKAGED / GLEAN_FILE, entity_types, ())


def _render(
    system_path: Path, glean_path: Path, entity_types: Iterable[str], relationship_types: Sequence[str]
) -> ExtractionPrompts:
    template = system_path.read_text(encoding="utf-8")
    if "{entity_types}" not in template:
        raise TunedPromptError(
            f"{system_path} must contain the placeholder {{entity_types}} (where the allowed types go)"
        )
    system = template.replace("{entity_types}", ", ".join(entity_types))
    if "{relationship_types}" in system:
        preferred = ", ".join(relationship_types) or "any short UPPER_SNAKE_CASE verb phrase"
        system = system.replace("{relationship_types}", preferred)
    return ExtractionPrompts(system=system, glean=glean_path.read_text(encoding="utf-8").strip())

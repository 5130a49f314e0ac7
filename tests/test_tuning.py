"""Tuning: a Claude conversation (loopback server) writes prompt files and a valid settings fragment,
offline tuning writes a fragment, and tuned prompts re-extract while unchanged settings do not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.lib.extraction.tool_turns import TOOL_NAME as EXTRACT_TOOL
from graphunified_assets.lib.extraction.tuned_prompts import load_prompts
from graphunified_assets.lib.tuning.llm_tuner import TOOL_NAME
from graphunified_assets.lib.tuning.reextract import reextract_if_settings_changed
from graphunified_assets.lib.tuning.sampling import farthest_point_order
from graphunified_assets.ops.tuning import run_tune
from graphunified_query.core.settings.model import load_settings
from tests.fakes.anthropic_server import FakeAnthropicServer, tool_use

QUOTE = "The Hale Mill was founded by Thomas Hale in 1862 on the River Harrow."
PROPOSAL = {
    "domain": "the industrial history of a river valley",
    "persona": "You are a local historian.",
    "entity_types": [
        {"name": "PERSON", "description": "People."},
        {"name": "MILL", "description": "Mills and factories."},
        {"name": "river", "description": "Rivers (lower case: normalized)."},
        {"name": "DATE", "description": "Years."},
    ],
    "relationship_types": [{"name": "FOUNDED", "description": "Who founded what."}],
    "examples": [
        {
            "quote": QUOTE,
            "entities": [
                {"name": "Hale Mill", "type": "MILL", "description": "A mill."},
                {"name": "Thomas Hale", "type": "PERSON", "description": "Its founder."},
            ],
            "relationships": [{"source": "Thomas Hale", "target": "Hale Mill", "type": "FOUNDED"}],
        },
        {  # invented: not in the corpus, so it must be dropped
            "quote": "Thomas Hale sold the mill to the Harrow Valley Railway in 1901.",
            "entities": [{"name": "Thomas Hale", "type": "PERSON", "description": "x"}],
            "relationships": [],
        },
    ],
}


def _claude_settings(home: Path, base_url: str) -> None:
    (home / "settings.yaml").write_text(
        f"llm:\n  base_url: {base_url}\n  max_gleanings: 0\n  requests_per_minute: 100000\n"
        "embedding:\n  provider: local\n"
    )


def test_farthest_point_sampling_spreads_over_topics() -> None:
    # Three tight clusters of five; the first pick is the most central row, then one per cluster.
    rng = np.random.default_rng(0)
    centres = np.eye(3, 8, dtype=np.float32)
    rows = np.concatenate([c + 0.05 * rng.standard_normal((5, 8)).astype(np.float32) for c in centres])
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    picked = farthest_point_order(rows, 3)
    assert sorted(i // 5 for i in picked) == [0, 1, 2]
    assert farthest_point_order(rows, 0) == [] and len(farthest_point_order(rows, 99)) == 15


def test_claude_tuning_writes_prompts_and_a_valid_fragment(home: Path, input_dir: Path) -> None:
    with FakeAnthropicServer(lambda body: tool_use(TOOL_NAME, PROPOSAL)) as server:
        _claude_settings(home, server.base_url)
        resource = GraphUnifiedResource(
            home=str(home), input_dir=str(input_dir), anthropic_api_key="test-key"
        )
        messages: list[str] = []
        result = run_tune(resource, provider="anthropic", gold=None, echo=messages.append)
    ((_, body),) = server.requests
    assert body["tool_choice"] == {"type": "tool", "name": TOOL_NAME}
    assert "Hale Mill" in body["messages"][0]["content"]  # the sampled passages
    assert result.dropped_examples == ["example 2 dropped: its quote is not in the sampled chunks"]
    tuned = load_settings(home, file=result.fragment)  # the fragment validates as settings
    assert tuned.extraction.entity_types == ("PERSON", "MILL", "RIVER", "DATE")
    assert tuned.extraction.relationship_types == ("FOUNDED",)
    assert tuned.extraction.prompt_dir == home.resolve() / "prompts"
    prompts = load_prompts(tuned.extraction)
    assert "You are a local historian." in prompts.system
    assert "Allowed entity types: PERSON, MILL, RIVER, DATE" in prompts.system
    assert "Prefer these relationship types when one fits: FOUNDED" in prompts.system
    assert QUOTE in prompts.system and "sold the mill" not in prompts.system
    assert "test-key" not in result.fragment.read_text()
    assert any("example 2 dropped" in m for m in messages)


def test_offline_tuning_writes_a_fragment_of_types_to_keep(home: Path, input_dir: Path) -> None:
    (home / "settings.yaml").write_text("embedding:\n  provider: local\n")
    resource = GraphUnifiedResource(home=str(home), input_dir=str(input_dir))
    result = run_tune(resource, provider="offline", gold=None, echo=lambda _: None)
    tuned = load_settings(home, file=result.fragment)
    text = result.fragment.read_text()
    assert "# NER mentions per type:" in text and '"PERSON"' in text
    # The sample corpus names people, places and years, and no product or event.
    assert {"PERSON", "LOCATION", "DATE"} <= set(tuned.extraction.entity_types)
    assert "PRODUCT" not in tuned.extraction.entity_types


def test_tuned_prompts_reextract_and_unchanged_settings_do_not(home: Path, input_dir: Path) -> None:
    from graphunified_assets.ops.indexing import index

    def responder(body: dict[str, Any]) -> list[dict[str, Any]]:
        return tool_use(EXTRACT_TOOL, {"entities": [], "relationships": [], "facts": []})

    with FakeAnthropicServer(responder) as server:
        _claude_settings(home, server.base_url)
        resource = GraphUnifiedResource(
            home=str(home), input_dir=str(input_dir), anthropic_api_key="test-key"
        )

        def reindex() -> int:
            fresh = GraphUnifiedResource(
                home=str(home), input_dir=str(input_dir), anthropic_api_key="test-key"
            )
            touched = reextract_if_settings_changed(fresh.layout, fresh.settings, "anthropic")
            index(fresh, echo=lambda _: None)
            return touched

        assert reindex() == 0
        assert len(server.requests) == 3  # one call per chunk
        assert reindex() == 0 and len(server.requests) == 3  # unchanged: nothing re-extracted
        prompts = home / "prompts"
        prompts.mkdir()
        (prompts / "extract_system.md").write_text("Tuned for mills. Allowed entity types: {entity_types}\n")
        settings = home / "settings.yaml"
        settings.write_text(settings.read_text() + f"extraction:\n  prompt_dir: {prompts}\n")
        assert reindex() == 3  # every indexed document marked
        assert len(server.requests) == 6
        assert all("Tuned for mills" in body["system"][0]["text"] for body in server.bodies[3:])
        assert reindex() == 0 and len(server.requests) == 6
    assert resource.layout.home == home.resolve()


def test_a_missing_tuned_prompt_file_is_a_clear_error(tmp_path: Path) -> None:
    from graphunified_assets.lib.extraction.tuned_prompts import TunedPromptError
    from graphunified_query.core.settings.model import ExtractionSettings

    with pytest.raises(TunedPromptError, match=r"extract_system\.md does not exist; run .*tune"):
        load_prompts(ExtractionSettings(prompt_dir=tmp_path))
    (tmp_path / "extract_system.md").write_text("no placeholder")
    with pytest.raises(TunedPromptError, match="placeholder"):
        load_prompts(ExtractionSettings(prompt_dir=tmp_path))

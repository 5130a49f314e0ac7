"""Presets validate, and `init` writes a commented settings.yaml that loads to exactly the preset."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from graphunified_assets.cli.main import main
from graphunified_assets.ops.init_config import InitError, starter_yaml, write_starter
from graphunified_query.core.settings.model import Settings, SettingsError, load_settings
from graphunified_query.core.settings.presets import PRESETS, preset_settings
from graphunified_query.core.settings.reference import settings_docs


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_each_preset_validates_and_its_file_loads_to_it(name: str, tmp_path: Path) -> None:
    expected = preset_settings(name)
    assert expected != Settings()  # a preset changes something
    path = write_starter(tmp_path / "settings.yaml", name)
    assert load_settings(tmp_path, environ={}) == expected
    active = [line for line in path.read_text().splitlines() if line and not line.lstrip().startswith("#")]
    changed = sum(len(section) if isinstance(section, dict) else 1 for section in PRESETS[name].values())
    assert len(active) == changed + len(PRESETS[name])  # section headers plus the preset's keys only


def test_presets_say_what_the_issue_asks() -> None:
    low, research, production = (preset_settings(n) for n in ("low-cost", "research", "production"))
    assert low.llm.max_gleanings == 0 and not low.llm.llm_reports and "haiku" in low.llm.model
    assert low.embedding.provider == "local"
    assert research.llm.llm_reports and research.llm.max_gleanings >= 1
    assert production.llm.provider == "anthropic" and production.llm.use_batches
    assert production.llm.budget_usd is not None and production.logging.format == "json"


def test_the_default_file_lists_every_setting_with_its_description(tmp_path: Path) -> None:
    text = starter_yaml()
    for doc in settings_docs():
        leaf = doc.name.split(".")[-1]
        if "<key>" not in doc.name:
            assert re.search(rf"^\s*# ?{re.escape(leaf)}:", text, re.MULTILINE), doc.name
        first_words = " ".join(doc.description.split()[:4])
        assert first_words in " ".join(text.replace("#", " ").split()), doc.name
    (tmp_path / "settings.yaml").write_text(text)
    assert load_settings(tmp_path, environ={}) == Settings()


def test_uncommenting_every_line_of_a_section_keeps_it_valid(tmp_path: Path) -> None:
    text = starter_yaml()
    block = text.split("# llm:\n", 1)[1].split("\n\n", 1)[0]
    keys = [line.replace("  # ", "  ", 1) for line in block.splitlines() if re.match(r"  # \w+: ", line)]
    (tmp_path / "settings.yaml").write_text("llm:\n" + "\n".join(keys) + "\n")
    assert load_settings(tmp_path, environ={}).llm == Settings().llm


def test_init_refuses_to_overwrite_without_force(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "settings.yaml"
    assert main(["init", "--path", str(target), "--preset", "low-cost"]) == 0
    target.write_text("chunking: {size: 256}\n")
    assert main(["init", "--path", str(target)]) == 2
    assert "already exists" in capsys.readouterr().err
    assert target.read_text() == "chunking: {size: 256}\n"  # nothing lost
    assert main(["init", "--path", str(target), "--force", "--preset", "research"]) == 0
    assert load_settings(tmp_path, environ={}) == preset_settings("research")


def test_unknown_preset_and_unwritable_path_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="Unknown preset 'cheap'"):
        preset_settings("cheap")
    (tmp_path / "file").write_text("")
    with pytest.raises(InitError, match="Cannot write"):
        write_starter(tmp_path / "file" / "settings.yaml", None)

"""The input folder a data home indexes: recorded by its first `index`, used by every later one.

A home remembers where its documents come from (``<home>/input.json``, `HomeLayout.input_record`),
so `index`, the sensor (`make ui`) and `eval` never take some default folder for it and remove the
home's own documents. A different folder is only taken when the user says so (`--replace-input`).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from graphunified_query.core.layout import HomeLayout
from graphunified_query.core.settings.model import SettingsError

RECORD_VERSION = 1


class InputRecordError(SettingsError):
    """The record exists but cannot be read: said in one line naming the file (as a bad settings.yaml)."""


@dataclass(frozen=True)
class InputChoice:
    """Which folder an `index` of the home reads, and whether it departs from the recorded one."""

    path: Path
    recorded: Path | None
    requested: Path | None  # --input, GRAPHUNIFIED_INPUT, or storage.input_dir set in settings.yaml

    @property
    def differs(self) -> bool:
        """A folder was asked for that is not the one the home indexes."""
        if self.recorded is None or self.requested is None:
            return False
        return not _same(self.requested, self.recorded)


def _same(a: Path, b: Path) -> bool:
    return a.expanduser().resolve() == b.expanduser().resolve()


def recorded_input(layout: HomeLayout) -> Path | None:
    """The folder recorded in the home, absolute; None before its first `index`."""
    path = layout.input_record
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as error:
        raise InputRecordError(f"{path} cannot be read ({error}); delete it and pass --input") from None
    try:
        folder = json.loads(raw)["input"]
        if not isinstance(folder, str) or not folder:
            raise TypeError
    except (json.JSONDecodeError, KeyError, TypeError):
        raise InputRecordError(
            f'{path} is not {{"input": "FOLDER"}}; fix it or delete it and pass --input'
        ) from None
    # Stored relative when inside the home (an eval home's input/), so a moved home keeps it.
    return (layout.home / folder).resolve()


def record_input(layout: HomeLayout, folder: Path) -> Path:
    """Write the record (atomically: a reader never sees half a file); returns the absolute folder."""
    folder = folder.expanduser().resolve()
    try:
        stored = str(folder.relative_to(layout.home))
    except ValueError:
        stored = str(folder)
    layout.home.mkdir(parents=True, exist_ok=True)
    partial = layout.input_record.with_suffix(".json.partial")
    partial.write_text(json.dumps({"version": RECORD_VERSION, "input": stored}, indent=2) + "\n", "utf-8")
    os.replace(partial, layout.input_record)
    return folder


def choose_input(layout: HomeLayout, requested: Path | None, default: Path) -> InputChoice:
    """The requested folder if any, else the recorded one, else ``default`` (storage.input_dir's)."""
    recorded = recorded_input(layout)
    path = requested or recorded or default
    return InputChoice(path=path, recorded=recorded, requested=requested)

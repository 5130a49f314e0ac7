"""The base of every settings section: unknown keys are an error (a typo never silently falls back
to a default) and a loaded section never changes."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

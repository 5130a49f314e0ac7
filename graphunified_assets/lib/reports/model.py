"""The report every generator produces, validated the same way whether Claude or code wrote it."""

from __future__ import annotations

import json

from pydantic import BaseModel, ConfigDict, Field, field_validator


class Finding(BaseModel):
    model_config = ConfigDict(extra="ignore")

    summary: str = Field(min_length=1)
    explanation: str = Field(min_length=1)


class Report(BaseModel):
    model_config = ConfigDict(extra="ignore")

    title: str = Field(min_length=1, max_length=300)
    summary: str = Field(min_length=1)
    rating: float = Field(ge=0, le=10)
    rating_explanation: str = ""
    findings: list[Finding] = Field(min_length=1, max_length=12)

    @field_validator("rating", mode="before")
    @classmethod
    def _rating_from_text(cls, value: object) -> object:
        # Models sometimes write "7/10" or "7.5 out of 10".
        if isinstance(value, str):
            head = value.strip().split("/")[0].split(" ")[0]
            try:
                return float(head)
            except ValueError:
                return value
        return value

    def markdown(self) -> str:
        parts = [f"# {self.title}", "", self.summary, ""]
        parts += [f"## {f.summary}\n\n{f.explanation}\n" for f in self.findings]
        return "\n".join(parts).strip() + "\n"

    def as_json(self) -> str:
        return json.dumps(self.model_dump(), ensure_ascii=False, sort_keys=True)

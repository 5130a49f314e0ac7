"""Benchmark: MiniLM's `optimized` variant against the `shipped` file, same texts; prints JSON.

    python bench/minilm_variants.py [--corpus FILE.jsonl ...] [--passages N] [--sample data/sample]
        [--speed-texts 600]

Texts: the sample folder's files and each corpus's first ``--passages`` passages (default: all;
the corpora: MuSiQue's and HotpotQA's dev sets), whole, plus every distinct sentence of them (the
kinds of text a build embeds: chunks, descriptions, names). Reports the cosine between the two
variants' vectors of each text (min, mean, 1st percentile, per kind) and the throughput of each
(texts/s and real tokens/s on the same ``--speed-texts`` texts, one model after the other, each
after a warm-up), with the load average before and after.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import time
from pathlib import Path
from typing import Any

import numpy as np

from graphunified_query.core.providers.embedding_usage import METER, OUTSIDE
from graphunified_query.core.providers.local_embedder import LocalMiniLMEmbedder

ROOT = Path(__file__).resolve().parents[1]
CORPORA = ("musique", "hotpotqa")  # dev sets under ../shared/eval/: 12.5K texts in all
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")


def _texts(corpora: list[Path], passages: int | None, sample: Path) -> dict[str, list[str]]:
    whole = [p.read_text(encoding="utf-8") for p in sorted(sample.rglob("*")) if p.is_file()]
    for corpus in corpora:
        with corpus.open(encoding="utf-8") as lines:
            for line in itertools.islice(lines, passages):
                row = json.loads(line)
                whole.append(f"{row['title']}\n{row['text']}")
    sentences = sorted({s.strip() for t in whole for s in _SENTENCE.split(t) if len(s.strip()) > 3})
    return {"passages": whole, "sentences": sentences}


def _speed(embedder: LocalMiniLMEmbedder, texts: list[str]) -> dict[str, float]:
    embedder.embed(texts[:32])  # session load, first shapes
    METER.take(OUTSIDE)
    wall, cpu = time.perf_counter(), time.process_time()
    embedder.embed(texts)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    usage = METER.take(OUTSIDE)
    return {
        "seconds": round(wall, 2),
        "cpu_seconds": round(cpu, 2),
        "texts_per_s": round(len(texts) / wall, 1),
        "tokens_per_s": round(usage.tokens / wall, 1),
        "tokens_per_cpu_s": round(usage.tokens / cpu, 1),
        "padded_per_real": round(usage.padded_tokens / usage.tokens, 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    default = ", ".join(CORPORA)
    parser.add_argument("--corpus", type=Path, action="append", help=f"repeatable; default: {default}")
    parser.add_argument("--passages", type=int, default=None, help="of each corpus; default: all")
    parser.add_argument("--sample", type=Path, default=ROOT / "data/sample")
    parser.add_argument("--speed-texts", type=int, default=600)
    args = parser.parse_args()
    corpora = args.corpus or [ROOT.parent / "shared/eval" / name / "corpus.jsonl" for name in CORPORA]
    for path in (*corpora, args.sample):
        if not path.exists():
            parser.error(f"{path} does not exist")
    texts = _texts(corpora, args.passages, args.sample)
    shipped = LocalMiniLMEmbedder(variant="shipped")
    optimized = LocalMiniLMEmbedder(variant="optimized")
    result: dict[str, Any] = {
        "load_before": os.getloadavg(),
        "corpora": [str(path) for path in corpora],
        "texts": {k: len(v) for k, v in texts.items()},
    }
    cosines = {}
    for kind, found in texts.items():
        cos = np.einsum("ij,ij->i", shipped.embed(found), optimized.embed(found))
        cosines[kind] = cos
        result[f"cosine_{kind}"] = _summary(cos)
    result["cosine_all"] = _summary(np.concatenate(list(cosines.values())))
    # Same inputs for both: a mix of sentences and passages, in a fixed order.
    rng = np.random.default_rng(0)
    mixed = [*texts["passages"], *texts["sentences"]]
    speed_texts = [mixed[i] for i in rng.permutation(len(mixed))[: args.speed_texts]]
    result["speed"] = {"shipped": _speed(shipped, speed_texts), "optimized": _speed(optimized, speed_texts)}
    result["speed_ratio"] = round(
        result["speed"]["optimized"]["texts_per_s"] / result["speed"]["shipped"]["texts_per_s"], 3
    )
    # CPU seconds: what a shared machine's load changes least.
    result["cpu_ratio"] = round(
        result["speed"]["shipped"]["cpu_seconds"] / result["speed"]["optimized"]["cpu_seconds"], 3
    )
    result["load_after"] = os.getloadavg()
    print(json.dumps(result, indent=2))


def _summary(cos: np.ndarray) -> dict[str, float]:
    return {
        "n": int(cos.size),
        "min": round(float(cos.min()), 4),
        "p01": round(float(np.percentile(cos, 1)), 4),
        "mean": round(float(cos.mean()), 4),
    }


if __name__ == "__main__":
    main()

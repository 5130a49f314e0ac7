"""Benchmark: the local MiniLM's batches, run one or several at once and capped or not in tokens;
prints JSON.

    python bench/local_batches.py [--corpus ../shared/eval/scale/corpus.jsonl.gz] [--passages 1500]
        [--sentences 6000] [--threads 1,2] [--max-tokens 256,100000] [--rounds 1]

Texts: the corpus's first ``--passages`` passages, whole (about a chunk each), and the first
``--sentences`` sentences of its passages (the length of descriptions and report pieces). Each arm
(threads x max batch tokens x kind) embeds them in a fresh process with `LocalMiniLMEmbedder`, as a
build does, and reports wall and CPU seconds, real tokens per second, padded per real, the
process's peak RSS, and whether its vectors are bit for bit those of the first arm of that kind.
``--max-tokens 100000`` is no cap (batches of `embedding.local_batch_size` only). Quote the load.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CORPUS = ROOT.parent / "shared" / "eval" / "scale" / "corpus.jsonl.gz"
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")


def read_texts(corpus: Path, passages: int, sentences: int) -> dict[str, list[str]]:
    if not corpus.is_file():
        raise SystemExit(
            f"bench/local_batches.py: corpus {corpus} does not exist (--corpus: JSONL or JSONL.gz)"
        )
    opener = gzip.open if corpus.name.endswith(".gz") else open
    whole: list[str] = []
    parts: list[str] = []
    with opener(corpus, "rt", encoding="utf-8") as lines:
        for line in lines:
            text = json.loads(line)["text"]
            if len(whole) < passages:
                whole.append(text)
            parts.extend(s.strip() for s in _SENTENCE.split(text) if len(s.strip()) > 3)
            if len(whole) >= passages and len(parts) >= sentences:
                break
    return {"passages": whole, "sentences": parts[:sentences]}


def arm(texts_file: str, threads: int, max_tokens: int, vectors_file: str) -> dict[str, float]:
    """One arm, in this (fresh) process."""
    import numpy as np

    from graphunified_query.core.providers import local_embedder
    from graphunified_query.core.providers.embedding_usage import METER, OUTSIDE

    texts = json.loads(Path(texts_file).read_text(encoding="utf-8"))
    local_embedder.MAX_BATCH_TOKENS = max_tokens
    embedder = local_embedder.LocalMiniLMEmbedder(threads=threads)
    embedder.embed(texts[:8])  # the session's load
    METER.take(OUTSIDE)
    wall, cpu = time.perf_counter(), time.process_time()
    vectors = embedder.embed(texts)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    usage = METER.take(OUTSIDE)
    np.save(vectors_file, vectors)
    return {
        "seconds": round(wall, 2),
        "cpu_seconds": round(cpu, 2),
        "tokens_per_s": round(usage.tokens / wall),
        "padded_per_real": round(usage.padded_tokens / usage.tokens, 4),
        "batches": usage.batches,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--passages", type=int, default=1500)
    parser.add_argument("--sentences", type=int, default=6000)
    parser.add_argument("--threads", default="1,2", help="comma-separated")
    parser.add_argument("--max-tokens", default="256,100000", help="comma-separated; 100000: no cap")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--arm", nargs=4, help=argparse.SUPPRESS)  # texts threads max_tokens vectors
    args = parser.parse_args()
    if args.arm:
        texts_file, threads, max_tokens, vectors_file = args.arm
        print(json.dumps(arm(texts_file, int(threads), int(max_tokens), vectors_file)))
        return
    import numpy as np

    kinds = read_texts(args.corpus, args.passages, args.sentences)
    results = []
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as scratch:
        for kind, texts in kinds.items():
            texts_file = Path(scratch) / f"{kind}.json"
            texts_file.write_text(json.dumps(texts), encoding="utf-8")
            first: np.ndarray | None = None
            for _ in range(args.rounds):
                for threads in map(int, args.threads.split(",")):
                    for max_tokens in map(int, args.max_tokens.split(",")):
                        vectors_file = str(Path(scratch) / "vectors.npy")
                        command = [sys.executable, __file__, "--arm", str(texts_file), str(threads)]
                        done = subprocess.run(
                            [*command, str(max_tokens), vectors_file],
                            capture_output=True,
                            text=True,
                            check=True,
                        )
                        found = json.loads(done.stdout.splitlines()[-1])
                        vectors = np.load(vectors_file)
                        first = vectors if first is None else first
                        same = bool(np.array_equal(first, vectors))
                        results.append(
                            {"kind": kind, "texts": len(texts), "threads": threads, "max_tokens": max_tokens}
                            | found
                            | {"same_vectors_as_first_arm": same, "load_1min": round(os.getloadavg()[0], 2)}
                        )
    print(json.dumps({"arms": results, "load_before": load_before, "load_after": os.getloadavg()}, indent=2))


if __name__ == "__main__":
    main()

"""Benchmark: LLM calls per chunk of a cold build with an OpenAI-compatible provider, by role; prints JSON.

    python bench/llm_calls.py [--corpus ../shared/eval/musique/corpus.jsonl] [--limit 100]

The corpus's first ``--limit`` passages are indexed into a fresh home by the `index` command a
user runs (a child process), with `llm.provider: openai_compatible` pointed at a loopback server
in this process that answers instantly (`tests/fakes/indexing_llm.py`: entities are each passage's
capitalized phrases, described by their own sentences). Every request is classified by role
(extraction, gleaning, repair, description summary, community report) and counted per chunk.
GraphRAG, LightRAG and nano-graphrag make 2.0 calls per chunk on the same 100 passages; the
target is <= 2. ``wall_seconds`` shows whether a rate limiter waited (a local server has none
by default). Quote the load average (``load``) with the timing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.fakes

from build import DEFAULT_CORPUS, read_corpus

from tests.fakes.indexing_llm import IndexingLLM, calls_by_role
from tests.fakes.openai_server import FakeOpenAIServer

_SECRETS = ("ANTHROPIC_API_KEY", "VOYAGE_API_KEY", "OPENAI_API_KEY")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--limit", type=int, default=100)
    parser.add_argument("--keep", type=Path, help="build the home here and keep it")
    args = parser.parse_args()
    rows = read_corpus(args.corpus, args.limit)
    with tempfile.TemporaryDirectory(prefix="llm-calls-") as tmp, FakeOpenAIServer(IndexingLLM()) as server:
        home, source = args.keep or Path(tmp) / "home", Path(tmp) / "input"
        source.mkdir()
        home.mkdir()
        with (source / "corpus.jsonl").open("w", encoding="utf-8") as out:
            out.writelines(json.dumps(row) + "\n" for row in rows)
        (home / "settings.yaml").write_text(
            f"llm:\n  provider: openai_compatible\n  openai_base_url: {server.base_url}\n  model: local\n"
        )
        environ = {k: v for k, v in os.environ.items() if k not in _SECRETS}
        command = [sys.executable, "-m", "graphunified_assets", "index", "--home", str(home)]
        started = time.perf_counter()
        done = subprocess.run(
            [*command, "--input", str(source)], env=environ, capture_output=True, text=True, check=False
        )
        wall = time.perf_counter() - started
        if done.returncode:
            sys.stderr.write(done.stdout[-3000:] + done.stderr[-3000:])
            raise SystemExit(f"bench/llm_calls.py: the index command failed (exit {done.returncode})")
        counts = calls_by_role(server.bodies)
        chunks = _chunk_count(home)
    total = sum(counts.values())
    print(
        json.dumps(
            {
                "corpus": str(args.corpus),
                "passages": len(rows),
                "chunks": chunks,
                "calls": total,
                "calls_per_chunk": round(total / chunks, 3),
                "per_chunk_by_role": {k: round(v / chunks, 3) for k, v in counts.items() if v},
                "calls_by_role": counts,
                "wall_seconds": round(wall, 1),
                "load": [round(x, 2) for x in os.getloadavg()],
            },
            indent=2,
        )
    )


def _chunk_count(home: Path) -> int:
    import lancedb

    from graphunified_query.core.artifacts import CHUNK_VECTORS
    from graphunified_query.core.layout import HomeLayout

    return lancedb.connect(str(HomeLayout.at(home).lancedb)).open_table(CHUNK_VECTORS).count_rows()


if __name__ == "__main__":
    main()

"""Benchmark: the graph stage's offline relationship keywords (spaCy theme phrases) on a home.

    python bench/keyword_phrases.py --home H

Parses every distinct relationship description of the home's extractions that carries no
keywords, as `graph_elements` does, with a fresh keyword cache (cold) and again (warm), and
prints one JSON object: texts, cold and warm seconds, and a digest of the phrases so runs of two
checkouts can be checked for equal output. The home is only read.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import tempfile
import time
from pathlib import Path

from graphunified_assets.lib.extraction.extraction_rows import ExtractionRows
from graphunified_assets.lib.graph.relationship_keywords import SpacyPhrases
from graphunified_query.core.layout import HomeLayout
from graphunified_query.core.providers.llm_cache import LLMCache
from graphunified_query.core.stores.parquet import read_partitions
from graphunified_query.core.text.spacy_text import load_pipeline


def descriptions(home: Path) -> list[str]:
    """The distinct descriptions `with_keywords` would parse, in its order."""
    paths = sorted(HomeLayout.at(home).partition_dir("extractions").glob("*.parquet"))
    rows = ExtractionRows(read_partitions(paths))
    return list(
        dict.fromkeys(
            rel["description"]
            for row in rows
            for rel in row["relationships"]
            if not rel.get("keywords") and rel["description"]
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, required=True, help="a built home (read only)")
    args = parser.parse_args()
    texts = descriptions(args.home)
    load_pipeline()("warm up")  # loading spaCy is not parsing
    with tempfile.TemporaryDirectory() as scratch:
        cache = LLMCache(Path(scratch) / "keywords.sqlite")
        started = time.perf_counter()
        phrases = SpacyPhrases(cache)(texts)
        cold = time.perf_counter() - started
        started = time.perf_counter()
        again = SpacyPhrases(cache)(texts)
        warm = time.perf_counter() - started
        cache.close()
    digest = hashlib.sha256(json.dumps(phrases).encode()).hexdigest()[:16]
    print(
        json.dumps(
            {
                "texts": len(texts),
                "cold_s": round(cold, 1),
                "warm_s": round(warm, 2),
                "warm_equals_cold": again == phrases,
                "digest": digest,
            }
        )
    )


if __name__ == "__main__":
    main()

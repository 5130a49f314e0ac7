"""`serve` picks up a newly published generation without a restart; requests in flight finish on
the generation they started on. And `ask` imports spaCy only for a strategy that needs it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from graphunified_query.core.layout import HomeLayout
from graphunified_query.core.providers.embedding import Embedder, EmbeddingKind
from graphunified_query.core.settings.model import load_settings
from graphunified_query.core.stores.publication import current, publish
from graphunified_query.engine.query_engine import QueryEngine
from graphunified_query.engine.reload import SnapshotSource
from graphunified_query.server.app import create_app
from graphunified_query.snapshot.loader import load_snapshot
from tests.fakes.recording_embedder import RecordingEmbedder
from tests.serving import loopback_client

ROOT = Path(__file__).resolve().parents[2]


class HeldEmbedder(RecordingEmbedder[Embedder]):
    """Wraps an embedder; the query ``hold`` waits until released (a request held in flight)."""

    def __init__(self, inner: Embedder, hold: str) -> None:
        super().__init__(inner)
        self.hold = hold
        self.entered = threading.Event()
        self.release = threading.Event()

    def embed(self, texts: Sequence[str], *, kind: EmbeddingKind = "document") -> np.ndarray:
        if kind == "query" and self.hold in texts:
            self.entered.set()
            assert self.release.wait(60), "the test never released the held query"
        return super().embed(texts, kind=kind)


@pytest.fixture
def home(built_home: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "home"
    shutil.copytree(built_home, copy, symlinks=True, ignore=shutil.ignore_patterns("snapshot"))
    with (copy / "settings.yaml").open("a", encoding="utf-8") as settings:
        settings.write("server:\n  reload_check_seconds: 0\n")
    return copy


def _publish_again(home: Path) -> int:
    layout = HomeLayout.at(home)
    return publish(layout, current(layout, rebuild_hint="").lance_versions).number


def test_serve_answers_from_a_newly_published_generation_and_finishes_in_flight_requests_on_the_old(
    home: Path,
) -> None:
    opened = QueryEngine.open(home, environ={})
    held = HeldEmbedder(opened.embedder, hold="Which river flows past the old mill?")
    engine = QueryEngine(load_snapshot(home), load_settings(home, environ={}), held)
    engine.source = SnapshotSource(str(home), {})
    client = loopback_client(create_app(engine))
    before = client.get("/health").json()["generation"]
    assert before >= 1

    answers: dict[str, dict] = {}

    def in_flight() -> None:
        answers["held"] = client.post("/retrieve", json={"question": held.hold, "strategy": "naive"}).json()

    request = threading.Thread(target=in_flight)
    request.start()
    assert held.entered.wait(60)
    newer = _publish_again(home)
    assert newer == before + 1
    assert client.get("/health").json()["generation"] == newer  # seen without a restart
    held.release.set()
    request.join(60)
    assert answers["held"]["metadata"]["generation"] == before  # finished on the old one
    after = client.post("/retrieve", json={"question": "When was the museum founded?", "strategy": "naive"})
    assert after.status_code == 200 and after.json()["metadata"]["generation"] == newer
    assert after.json()["contexts"]


def test_a_generation_that_fails_to_load_keeps_the_old_one_serving(home: Path) -> None:
    engine = QueryEngine.open(home, environ={})
    client = loopback_client(create_app(engine))
    before = client.get("/health").json()["generation"]
    newer = _publish_again(home)
    (home / "published" / str(newer) / "indexes" / "ppr_graph.npz").unlink()
    assert client.get("/health").json()["generation"] == before
    answer = client.post(
        "/retrieve", json={"question": "Which river flows past the mill?", "strategy": "naive"}
    )
    assert answer.status_code == 200 and answer.json()["metadata"]["generation"] == before


@pytest.mark.parametrize(
    ("strategy", "params", "imports_spacy"),
    [
        ("naive", [], False),
        ("hipporag", [], False),
        ("auto", [], False),  # the router reads names from the index, not from spaCy
        ("lightrag", ["--param", "dual_keywords=true"], True),  # its offline keyword split parses
    ],
)
def test_ask_imports_spacy_only_for_a_strategy_that_needs_it(
    home: Path, strategy: str, params: list[str], imports_spacy: bool
) -> None:
    script = (
        "import sys\n"
        "from graphunified_query.cli import main\n"
        f"code = main(['ask', 'Which river flows past the mill?', '--home', {str(home)!r}, "
        f"'--strategy', {strategy!r}, '--retrieve-only', *{params!r}])\n"
        "print(code, 'spacy' in sys.modules)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip().splitlines()[-1] == f"0 {imports_spacy}"

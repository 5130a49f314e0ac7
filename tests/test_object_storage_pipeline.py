"""`index` with `storage.publish_uri` set copies every new generation to the bucket (moto, 127.0.0.1)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest

from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_assets.ops.indexing import index
from graphunified_query.core.layout import HomeLayout
from graphunified_query.engine.query_engine import QueryEngine
from tests.fakes.s3_server import SECRET_KEY, FakeS3Server

BUCKET = "pipeline-bucket"


@pytest.fixture
def s3(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeS3Server]:
    with FakeS3Server() as server:
        server.create_bucket(BUCKET)
        for name, value in server.environ().items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("GRAPHUNIFIED_CACHE_DIR", str(tmp_path / "reader-cache"))
        yield server


def _metadata(key: str) -> dict[str, dg.MetadataValue]:
    event = dg.DagsterInstance.get().get_latest_materialization_event(dg.AssetKey(key))
    assert event is not None and event.asset_materialization is not None
    return dict(event.asset_materialization.metadata)


def test_each_refresh_publishes_its_generation_to_the_bucket(
    home: Path, input_dir: Path, s3: FakeS3Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    uri = f"s3://{BUCKET}/corpus"
    (home / "settings.yaml").write_text(
        f"embedding:\n  provider: local\nllm:\n  provider: offline\nstorage:\n  publish_uri: {uri}\n"
    )
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("VOYAGE_API_KEY", raising=False)
    resource = GraphUnifiedResource(home=str(home), input_dir=str(input_dir))
    index(resource, echo=lambda _: None)
    local_current = (HomeLayout.at(home).published / "CURRENT").read_text().strip()
    assert s3.read(BUCKET, "corpus/CURRENT").decode().strip() == local_current
    first = _metadata("remote_snapshot")
    assert first["generation"].value == int(local_current) and first["uploaded_files"].value > 0
    assert SECRET_KEY not in repr(first)

    (input_dir / "dam.md").write_text("# Kestrel Dam\n\nArthur Penrose built the Kestrel Dam in 1931.\n")
    index(resource, echo=lambda _: None)
    second = _metadata("remote_snapshot")
    assert second["generation"].value == int(local_current) + 1
    assert second["copied_files"].value > 0  # e.g. settings.yaml: unchanged, copied in the store
    answer = QueryEngine.open(uri).ask("Who built the Kestrel Dam?", "hybrid")
    assert "Arthur Penrose" in answer.answer

    # An outage during the copy: the refresh fails at remote_snapshot, the local generation is
    # already published, the bucket still serves the previous one, and the next `index` finishes.
    (input_dir / "mine.md").write_text("# Carrow Mine\n\nThe Carrow Mine opened in 1850.\n")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    with pytest.raises(RuntimeError, match="remote_snapshot"):
        index(resource, echo=lambda _: None)
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3.endpoint)
    assert s3.read(BUCKET, "corpus/CURRENT").decode().strip() == str(int(local_current) + 1)
    assert "1850" in QueryEngine.open(home).ask("When did the Carrow Mine open?", "hybrid").answer
    index(resource, echo=lambda _: None)
    recovered = (HomeLayout.at(home).published / "CURRENT").read_text().strip()
    assert s3.read(BUCKET, "corpus/CURRENT").decode().strip() == recovered
    assert "1850" in QueryEngine.open(uri).ask("When did the Carrow Mine open?", "hybrid").answer

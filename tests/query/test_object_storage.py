"""Object storage: a published generation copied to S3 (moto's server on 127.0.0.1) and read back.

pyarrow and LanceDB speak S3 to the server over a socket, as they would to AWS or MinIO.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import lancedb
import pytest

from graphunified_assets.ops.object_mirror import mirror
from graphunified_query.core.layout import HomeLayout
from graphunified_query.core.settings.model import StorageSettings
from graphunified_query.core.stores.errors import IndexNotBuilt
from graphunified_query.core.stores.lance_versions import release_unused_versions
from graphunified_query.core.stores.object_store import (
    CHECKSUM_VARIABLE,
    ObjectFiles,
    ObjectStore,
    ObjectStoreError,
)
from graphunified_query.core.stores.publication import Generation, current, publish, published_lance_versions
from graphunified_query.engine.query_engine import QueryEngine
from graphunified_query.snapshot.loader import load_snapshot
from graphunified_query.strategies.registry import names
from tests.fakes.s3_server import SECRET_KEY, FakeS3Server

BUCKET = "graph-unified"
QUESTIONS = (
    "Which river runs through the town where Ada Whitlock was born?",
    "When was the Kestrel Dam built?",
)
STRATEGIES = names("core")


@pytest.fixture(scope="module")
def s3() -> Iterator[FakeS3Server]:
    with FakeS3Server() as server:
        server.create_bucket(BUCKET)
        yield server


@pytest.fixture
def environ(s3: FakeS3Server, tmp_path: Path) -> dict[str, str]:
    return s3.environ() | {"GRAPHUNIFIED_CACHE_DIR": str(tmp_path / "reader-cache")}


def _files(uri: str, environ: dict[str, str]) -> ObjectFiles:
    return ObjectFiles(ObjectStore.at(uri, StorageSettings(), environ))


def _generation(home: Path) -> Generation:
    layout = HomeLayout.at(home)
    return current(layout, rebuild_hint="rebuild")


def _republish(home: Path) -> Generation:
    """A new local generation of the latest files, as a refresh publishes."""
    layout = HomeLayout.at(home)
    db = lancedb.connect(str(layout.lancedb))
    return publish(layout, {name: db.open_table(name).version for name in _generation(home).lance_versions})


@pytest.fixture
def own_home(built_home: Path, tmp_path: Path) -> Path:
    """A copy of the shared home that a test may publish new generations in."""
    home = tmp_path / "home"
    shutil.copytree(built_home, home, symlinks=True, ignore=shutil.ignore_patterns("dagster", "index.lock"))
    return home


def _ids_and_scores(engine: QueryEngine, question: str, strategy: str) -> list[tuple[str, float]]:
    retrieval, _ = engine.retrieve(question, strategy, 5)
    return [(r.chunk_id or r.text[:40], round(r.score, 6)) for r in retrieval.results]


def test_a_generation_read_from_s3_answers_like_the_local_home(
    built_home: Path, engine: QueryEngine, environ: dict[str, str], s3: FakeS3Server
) -> None:
    uri = f"s3://{BUCKET}/same-answers"
    report = mirror(HomeLayout.at(built_home), _generation(built_home), _files(uri, environ))

    assert report.uploaded_files > 0 and report.copied_files == 0 and report.lance_files > 0
    keys = s3.keys(BUCKET, "same-answers/")
    assert s3.read(BUCKET, "same-answers/CURRENT").decode().strip() == str(report.generation)
    assert any(k.endswith(".parquet") and "/tables/" in k for k in keys)
    assert any(k.startswith("same-answers/lancedb/chunk_vectors.lance/data/") for k in keys)
    remote = QueryEngine.open(uri, environ=environ)
    assert remote.snapshot.generation == engine.snapshot.generation
    assert remote.snapshot.chunks.ids == engine.snapshot.chunks.ids
    for strategy in STRATEGIES:
        for question in QUESTIONS:
            assert _ids_and_scores(remote, question, strategy) == _ids_and_scores(engine, question, strategy)
    answer = remote.ask(QUESTIONS[1], "hybrid", 5)
    assert "1931" in answer.answer and "[Source:" in answer.answer


def test_a_second_generation_copies_unchanged_files_in_the_store_and_prunes_old_ones(
    own_home: Path, environ: dict[str, str], s3: FakeS3Server
) -> None:
    uri = f"s3://{BUCKET}/incremental"
    layout, files = HomeLayout.at(own_home), _files(uri, environ)
    first = mirror(layout, _generation(own_home), files)
    again = mirror(layout, _generation(own_home), files)
    assert again.already_current and again.uploaded_files == again.copied_files == 0

    second = mirror(layout, _republish(own_home), files)
    assert second.generation == first.generation + 1
    assert second.uploaded_files == 0  # every file's sha256 matched: copied server-side
    assert second.copied_files == first.uploaded_files and second.copied_bytes == first.uploaded_bytes
    assert second.lance_bytes < 4096  # only the new generation tags and version hints: no data file

    third = mirror(layout, _republish(own_home), files)
    assert third.pruned_generations == (first.generation,)
    # (pyarrow leaves an empty "generations/" marker object when it deletes a folder's last child)
    numbers = {k.split("/")[2] for k in s3.keys(BUCKET, "incremental/generations/") if k.count("/") > 2}
    assert numbers == {str(second.generation), str(third.generation)}
    assert load_snapshot(uri, environ=environ).generation == third.generation


def test_lance_versions_released_locally_are_deleted_from_the_bucket_once_no_generation_reads_them(
    own_home: Path, environ: dict[str, str], s3: FakeS3Server
) -> None:
    uri, layout = f"s3://{BUCKET}/released", HomeLayout.at(own_home)
    files = _files(uri, environ)
    mirror(layout, _generation(own_home), files)
    db = lancedb.connect(str(layout.lancedb))
    time.sleep(0.6)  # versions apart in time: Lance releases by age
    db.create_table("report_vectors", data=db.open_table("report_vectors").to_arrow(), mode="overwrite")
    second = mirror(layout, _republish(own_home), files)
    assert second.lance_files > 0 and second.lance_files_deleted == 0  # the first generation reads the old
    time.sleep(0.6)
    third_generation = _republish(own_home)  # now both kept generations read the new version only
    released = release_unused_versions(db, published_lance_versions(layout), margin=timedelta(seconds=0.3))
    assert released["report_vectors"] == 1

    third = mirror(layout, third_generation, files)

    assert third.lance_files_deleted > 0
    local = {p.relative_to(layout.lancedb).as_posix() for p in layout.lancedb.rglob("*") if p.is_file()}
    # (keys ending in "/" are the empty folder markers pyarrow writes when it deletes a file)
    remote = {k.removeprefix("released/lancedb/") for k in s3.keys(BUCKET, "released/lancedb/")}
    remote = {k for k in remote if not k.endswith("/")}
    assert remote == {name for name in local if not name.split("/")[-1].startswith(".")}
    engine = QueryEngine.open(uri, environ=environ)
    assert engine.snapshot.generation == third.generation and len(engine.snapshot.reports) > 0


def test_a_failed_mirror_leaves_readers_on_the_previous_generation(
    own_home: Path, environ: dict[str, str], s3: FakeS3Server
) -> None:
    uri = f"s3://{BUCKET}/failed"
    layout, files = HomeLayout.at(own_home), _files(uri, environ)
    first = mirror(layout, _generation(own_home), files)
    second = _republish(own_home)
    assert second.root is not None
    damaged = second.root / "indexes" / "ppr_graph.npz"
    damaged.unlink()

    with pytest.raises(ObjectStoreError, match=r"ppr_graph\.npz is missing .*index --refresh"):
        mirror(layout, second, files)

    assert s3.read(BUCKET, "failed/CURRENT").decode().strip() == str(first.generation)
    assert QueryEngine.open(uri, environ=environ).snapshot.generation == first.generation


def test_the_reader_names_what_is_missing_and_how_to_publish_it(
    own_home: Path, environ: dict[str, str], s3: FakeS3Server
) -> None:
    with pytest.raises(IndexNotBuilt, match=r"Nothing is published at s3://graph-unified/empty.*publish_uri"):
        QueryEngine.open(f"s3://{BUCKET}/empty", environ=environ)

    uri = f"s3://{BUCKET}/damaged"
    mirror(HomeLayout.at(own_home), _generation(own_home), _files(uri, environ))
    table = next(k for k in s3.keys(BUCKET, "damaged/generations/") if k.endswith("/tables/entities.parquet"))
    boto = s3._client()  # the damage a lifecycle rule or a careless `aws s3 rm` would do
    boto.delete_object(Bucket=BUCKET, Key=table)
    with pytest.raises(IndexNotBuilt, match=rf"s3://{BUCKET}/{table} is missing.*publish --home {own_home}"):
        load_snapshot(uri, environ=environ)

    # The hint works: mirroring the current generation again re-uploads what is missing only.
    repaired = mirror(HomeLayout.at(own_home), _generation(own_home), _files(uri, environ))
    assert repaired.already_current and repaired.uploaded_files == 1 and repaired.copied_files == 0
    assert load_snapshot(uri, environ=environ).generation == repaired.generation


def test_a_prefix_belongs_to_one_home_and_never_goes_back_a_generation(
    own_home: Path, tmp_path: Path, environ: dict[str, str], s3: FakeS3Server
) -> None:
    uri, layout = f"s3://{BUCKET}/owned", HomeLayout.at(own_home)
    files = _files(uri, environ)
    first = mirror(layout, _generation(own_home), files)
    other = tmp_path / "other-home"
    shutil.copytree(own_home, other, ignore=shutil.ignore_patterns("home.id"))
    with pytest.raises(ObjectStoreError, match=rf"published by another home \({own_home}"):
        mirror(HomeLayout.at(other), _generation(other), files)

    second = mirror(layout, _republish(own_home), files)
    older = Generation(
        layout,
        first.generation,
        layout.published / str(first.generation),
        dict(_generation(own_home).lance_versions),
        _generation(own_home).files,
    )
    with pytest.raises(ObjectStoreError, match=rf"already serves generation {second.generation}, not older"):
        mirror(layout, older, files)
    assert s3.read(BUCKET, "owned/CURRENT").decode().strip() == str(second.generation)
    assert load_snapshot(uri, environ=environ).generation == second.generation


def test_settings_are_published_as_they_were_when_the_generation_was_built(
    own_home: Path, environ: dict[str, str], s3: FakeS3Server
) -> None:
    generation = _republish(own_home)
    published_settings = (own_home / "settings.yaml").read_text()
    (own_home / "settings.yaml").write_text(published_settings + "query:\n  top_k: 3\n")
    mirror(HomeLayout.at(own_home), generation, _files(f"s3://{BUCKET}/frozen", environ))
    remote = s3.read(BUCKET, f"frozen/generations/{generation.number}/settings.yaml").decode()
    assert remote == published_settings


def test_an_unreachable_endpoint_is_a_clear_error(environ: dict[str, str]) -> None:
    closed = environ | {"AWS_ENDPOINT_URL": "http://127.0.0.1:9"}
    with pytest.raises(
        ObjectStoreError, match=r"Could not read s3://graph-unified/x/CURRENT \(endpoint http://127"
    ):
        load_snapshot(f"s3://{BUCKET}/x", environ=closed)


def test_uploads_reach_a_server_that_wants_a_content_length(
    environ: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ceph radosgw 16 answers HTTP 411 to the AWS SDK's default (checksummed, streamed) uploads;
    the fake server does too."""
    monkeypatch.delenv(CHECKSUM_VARIABLE, raising=False)
    files = _files(f"s3://{BUCKET}/length", environ)
    files.write_text("uploaded", "CURRENT")
    assert files.read_text("CURRENT") == "uploaded"
    # A user's own value is kept; when it is what the server refuses, the error names the fix.
    monkeypatch.setenv(CHECKSUM_VARIABLE, "when_supported")
    with pytest.raises(ObjectStoreError, match=rf"HTTP 411.*set {CHECKSUM_VARIABLE}.* to when_required"):
        _files(f"s3://{BUCKET}/length", environ).write_text("refused", "CURRENT")


def _command(module: str, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )


def test_ask_and_publish_from_the_command_line(
    own_home: Path, environ: dict[str, str], s3: FakeS3Server
) -> None:
    uri = f"s3://{BUCKET}/cli"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")} | environ
    published = _command("graphunified_assets", "publish", "--home", str(own_home), "--to", uri, env=env)
    assert published.returncode == 0, published.stderr
    report = json.loads(published.stdout)
    assert report["uri"] == uri and report["uploaded_files"] > 0
    asked = _command("graphunified_query", "ask", QUESTIONS[1], "--home", uri, "--json", env=env)
    assert asked.returncode == 0, asked.stderr
    assert "1931" in json.loads(asked.stdout)["answer"]
    missing = _command("graphunified_query", "ask", "x", "--home", f"s3://{BUCKET}/none", env=env)
    assert missing.returncode == 2 and "Nothing is published at" in missing.stderr
    assert "Traceback" not in missing.stderr
    outputs = published.stdout + published.stderr + asked.stdout + asked.stderr
    manifests = [s3.read(BUCKET, k) for k in s3.keys(BUCKET, "cli/") if k.endswith((".json", ".yaml"))]
    assert SECRET_KEY not in outputs and all(SECRET_KEY.encode() not in m for m in manifests)


def test_the_region_comes_from_settings_then_the_aws_variables() -> None:
    explicit = StorageSettings(region="eu-west-3")
    assert ObjectStore.at("s3://b/p", explicit, {"AWS_REGION": "us-west-2"}).region == "eu-west-3"
    assert ObjectStore.at("s3://b/p", StorageSettings(), {"AWS_REGION": "us-west-2"}).region == "us-west-2"
    assert (
        ObjectStore.at("s3://b/p", StorageSettings(), {"AWS_DEFAULT_REGION": "ap-south-1"}).region
        == "ap-south-1"
    )
    assert ObjectStore.at("s3://b", StorageSettings(), {}).key("CURRENT") == "b/CURRENT"

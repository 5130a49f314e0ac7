"""Old LanceDB versions are released once no kept generation reads them, locally and on S3."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import lancedb
import pyarrow as pa
import pytest

from graphunified_query.core.stores.lance_versions import (
    release_unused_versions,
    tag_generation,
    untag_generations,
)
from tests.fakes.s3_server import FakeS3Server

BUCKET = "versions"
STEP = 0.6  # seconds between versions; the margin below is half of it


def _rows(count: int) -> pa.Table:
    vectors = pa.array([float(i) for i in range(count * 2)], pa.float32())
    return pa.table(
        {"id": [f"r{i}" for i in range(count)], "vector": pa.FixedSizeListArray.from_arrays(vectors, 2)}
    )


@pytest.fixture(params=["local", "s3"])
def connect(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Any]]:
    if request.param == "local":
        yield lambda: lancedb.connect(str(tmp_path / "lancedb"))
        return
    with FakeS3Server() as s3:
        s3.create_bucket(BUCKET)
        env = s3.environ()
        options = {
            "aws_endpoint": env["AWS_ENDPOINT_URL"],
            "allow_http": "true",
            "aws_access_key_id": env["AWS_ACCESS_KEY_ID"],
            "aws_secret_access_key": env["AWS_SECRET_ACCESS_KEY"],
            "aws_region": "us-east-1",
        }
        yield lambda: lancedb.connect(f"s3://{BUCKET}/lancedb", storage_options=options)


def test_versions_older_than_the_oldest_in_use_are_released(connect: Callable[[], Any]) -> None:
    db = connect()
    for count in range(1, 6):  # versions 1..5, each a full rewrite as a refresh makes
        db.create_table("vectors", data=_rows(count), mode="overwrite")
        time.sleep(STEP)
    table = db.open_table("vectors")
    assert [v["version"] for v in table.list_versions()] == [1, 2, 3, 4, 5]

    released = release_unused_versions(db, {"vectors": {3, 5}}, margin=timedelta(seconds=STEP / 2))

    assert released == {"vectors": 2}
    reopened = connect().open_table("vectors")
    assert [v["version"] for v in reopened.list_versions()] == [3, 4, 5]
    assert connect().open_table("vectors", version=3).count_rows() == 3  # still readable
    assert connect().open_table("vectors", version=5).count_rows() == 5
    with pytest.raises(Exception, match=r"(?i)not found|version"):
        connect().open_table("vectors", version=1).count_rows()


def test_a_table_whose_version_in_use_is_gone_is_left_alone(connect: Callable[[], Any]) -> None:
    db = connect()
    for count in (1, 2):
        db.create_table("vectors", data=_rows(count), mode="overwrite")
        time.sleep(STEP)
    assert release_unused_versions(db, {"vectors": {2, 9}}, margin=timedelta(0)) == {}
    assert [v["version"] for v in connect().open_table("vectors").list_versions()] == [1, 2]


def test_a_tagged_version_survives_a_cutoff_that_a_clock_error_moved_past_it(
    connect: Callable[[], Any],
) -> None:
    db = connect()
    for count in range(1, 4):
        db.create_table("vectors", data=_rows(count), mode="overwrite")
        time.sleep(STEP)
    tag_generation(db, 7, {"vectors": 2})
    tag_generation(db, 8, {"vectors": 3})
    # A negative margin stands for compaction time or a clock step: Lance's cutoff passes version 2.
    released = release_unused_versions(db, {"vectors": {2, 3}}, margin=timedelta(seconds=-STEP / 2))
    assert "vectors" not in released  # Lance refused to remove a tagged version: nothing removed
    assert connect().open_table("vectors", version=2).count_rows() == 2

    untag_generations(db, [7], ["vectors"])  # generation 7 pruned: its version may go now
    assert release_unused_versions(db, {"vectors": {3}}, margin=timedelta(seconds=STEP / 2)) == {"vectors": 2}

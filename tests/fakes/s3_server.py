"""An S3-compatible server on 127.0.0.1: moto's, which speaks the real S3 REST protocol.

pyarrow's S3 filesystem and LanceDB's object-store layer talk to it over a socket exactly as
they would to AWS, MinIO or R2; nothing in the code under test is replaced.
"""

from __future__ import annotations

import urllib.request
from types import TracebackType

import boto3
from moto.server import ThreadedMotoServer

ACCESS_KEY = "graphunified-test"
SECRET_KEY = "planted-aws-secret-7f3c9e"  # tests grep outputs for it


class FakeS3Server:
    def __init__(self) -> None:
        self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)

    def __enter__(self) -> FakeS3Server:
        self._server.start()
        # moto keeps buckets in process-wide state that outlives a server: start each one empty.
        urllib.request.urlopen(urllib.request.Request(f"{self.endpoint}/moto-api/reset", method="POST"))
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self._server.stop()

    @property
    def endpoint(self) -> str:
        host, port = self._server.get_host_and_port()
        return f"http://{host}:{port}"

    def environ(self) -> dict[str, str]:
        """What a reader or writer needs in its environment to reach this server."""
        return {
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_ENDPOINT_URL": self.endpoint,
        }

    def create_bucket(self, name: str) -> None:
        self._client().create_bucket(Bucket=name)

    def keys(self, bucket: str, prefix: str = "") -> dict[str, int]:
        pages = self._client().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        return {item["Key"]: item["Size"] for page in pages for item in page.get("Contents", [])}

    def read(self, bucket: str, key: str) -> bytes:
        return self._client().get_object(Bucket=bucket, Key=key)["Body"].read()

    def _client(self):  # type: ignore[no-untyped-def]  # boto3 clients are built dynamically
        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            region_name="us-east-1",
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
        )

"""An S3-compatible server on 127.0.0.1: moto's, which speaks the real S3 REST protocol.

pyarrow's S3 filesystem and LanceDB's object-store layer talk to it over a socket exactly as
they would to AWS, MinIO or R2; nothing in the code under test is replaced. Like Ceph's radosgw
16 (and unlike AWS and moto), it refuses an upload without a Content-Length, so a client that
streams uploads of unknown length fails here as it would there.
"""

from __future__ import annotations

import urllib.request
from collections.abc import Callable, Iterable
from types import TracebackType
from typing import Any

import boto3
from moto.moto_server.threaded_moto_server import ThreadedMotoServer
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from werkzeug.serving import make_server

ACCESS_KEY = "graphunified-test"
SECRET_KEY = "planted-aws-secret-7f3c9e"  # tests grep outputs for it


_MISSING_LENGTH = (
    b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>MissingContentLength</Code>'
    b"<Message></Message></Error>"
)


class _LengthRequired:
    """WSGI middleware: an upload (PUT, POST) without a Content-Length gets radosgw 16's answer."""

    def __init__(self, app: Any) -> None:
        self.app = app

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ["REQUEST_METHOD"] in ("PUT", "POST") and not environ.get("CONTENT_LENGTH"):
            start_response("411 Length Required", [("Content-Type", "application/xml")])
            return [_MISSING_LENGTH]
        return self.app(environ, start_response)  # type: ignore[no-any-return]


class _LengthCheckingMotoServer(ThreadedMotoServer):
    """moto's threaded server (its `_server_entry`), its app behind `_LengthRequired`."""

    def _server_entry(self) -> None:
        app = _LengthRequired(DomainDispatcherApplication(create_backend_app))
        self._server = make_server(
            self._ip_address, self._port, app, True, request_handler=MotoRequestHandler
        )
        self._server_ready_event.set()
        self._server.serve_forever()


class FakeS3Server:
    def __init__(self) -> None:
        self._server = _LengthCheckingMotoServer(ip_address="127.0.0.1", port=0, verbose=False)

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

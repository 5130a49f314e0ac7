"""An S3-compatible location (``s3://bucket/prefix``) as Parquet and LanceDB see it.

Both libraries speak S3 themselves: pyarrow through its ``S3FileSystem``, LanceDB through the
``storage_options`` of its object-store layer. This module holds the one description of the
location they share. Credentials come only from the standard ``AWS_*`` variables, never from
settings, so they cannot end up in a settings file, a manifest or Dagster metadata.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.fs as pafs

from graphunified_query.core.settings.model import StorageSettings
from graphunified_query.core.stores.parquet import StoreError

SCHEME = "s3://"
_CREDENTIAL_VARIABLES = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")
# The AWS SDK inside pyarrow (1.11.4xx+) checksums every upload by default, streaming it without a
# Content-Length; S3 servers older than that change (Ceph radosgw 16, older MinIO) answer HTTP 411.
# Checksums only where an operation requires them work everywhere. The SDK reads this variable
# when each client is made, from the process environment only; a user's own value is kept.
CHECKSUM_VARIABLE = "AWS_REQUEST_CHECKSUM_CALCULATION"


class ObjectStoreError(StoreError):
    """Object storage is unreachable, refused a request or lacks a file; the message says which."""


def is_object_store_uri(location: object) -> bool:
    return isinstance(location, str) and location.startswith(SCHEME)


@dataclass(frozen=True)
class ObjectStore:
    bucket: str
    prefix: str
    region: str
    endpoint_url: str | None
    credentials: tuple[tuple[str, str], ...]  # (variable, value): kept out of repr below

    @classmethod
    def at(cls, uri: str, storage: StorageSettings, environ: Mapping[str, str]) -> ObjectStore:
        if not is_object_store_uri(uri) or not uri[len(SCHEME) :].strip("/"):
            raise ObjectStoreError(f"{uri!r} is not an object-store location; use s3://bucket/prefix.")
        bucket, _, prefix = uri[len(SCHEME) :].strip("/").partition("/")
        return cls(
            bucket=bucket,
            prefix=prefix.strip("/"),
            # An explicit storage.region wins; else the AWS SDKs' own variables, then the default.
            region=(
                storage.region
                if "region" in storage.model_fields_set
                else environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION") or storage.region
            ),
            endpoint_url=storage.endpoint_url or environ.get("AWS_ENDPOINT_URL") or None,
            credentials=tuple((name, environ[name]) for name in _CREDENTIAL_VARIABLES if environ.get(name)),
        )

    def __repr__(self) -> str:
        return f"ObjectStore({self.uri!r}, endpoint={self.endpoint_url!r})"

    @property
    def uri(self) -> str:
        return f"{SCHEME}{self.key()}"

    def key(self, *parts: str) -> str:
        """``bucket/prefix/parts``: the path pyarrow's S3 filesystem takes."""
        return "/".join(p.strip("/") for p in (self.bucket, self.prefix, *parts) if p.strip("/"))

    def url(self, *parts: str) -> str:
        """``s3://bucket/prefix/parts``: the URI LanceDB takes."""
        return f"{SCHEME}{self.key(*parts)}"

    def filesystem(self) -> pafs.S3FileSystem:
        secrets = dict(self.credentials)
        options: dict[str, Any] = {"region": self.region}
        if "AWS_ACCESS_KEY_ID" in secrets and "AWS_SECRET_ACCESS_KEY" in secrets:
            options["access_key"] = secrets["AWS_ACCESS_KEY_ID"]
            options["secret_key"] = secrets["AWS_SECRET_ACCESS_KEY"]
            if "AWS_SESSION_TOKEN" in secrets:
                options["session_token"] = secrets["AWS_SESSION_TOKEN"]
        if self.endpoint_url:
            scheme, _, host = self.endpoint_url.partition("://")
            options |= {"endpoint_override": host or scheme, "scheme": scheme if host else "https"}
        # Fail fast instead of the SDK's long default retry loop when the endpoint is down.
        options |= {"connect_timeout": 5, "request_timeout": 60}
        os.environ.setdefault(CHECKSUM_VARIABLE, "when_required")
        return pafs.S3FileSystem(**options)

    def lance_options(self) -> dict[str, str]:
        """LanceDB's ``storage_options`` for the same location."""
        secrets = dict(self.credentials)
        options = {"aws_region": self.region}
        if "AWS_ACCESS_KEY_ID" in secrets and "AWS_SECRET_ACCESS_KEY" in secrets:
            options |= {
                "aws_access_key_id": secrets["AWS_ACCESS_KEY_ID"],
                "aws_secret_access_key": secrets["AWS_SECRET_ACCESS_KEY"],
            }
            if "AWS_SESSION_TOKEN" in secrets:
                options["aws_session_token"] = secrets["AWS_SESSION_TOKEN"]
        if self.endpoint_url:
            plain_http = self.endpoint_url.startswith("http:")
            options |= {"aws_endpoint": self.endpoint_url, "allow_http": str(plain_http).lower()}
        return options


class ObjectFiles:
    """Whole-file operations under one store, with errors that name the object and the store."""

    def __init__(self, store: ObjectStore) -> None:
        self.store = store
        self.fs = store.filesystem()

    def read_text(self, *parts: str) -> str | None:
        """The object's text, or None when it does not exist."""
        key = self.store.key(*parts)
        try:
            with self.fs.open_input_stream(key) as stream:
                return stream.read().decode("utf-8")
        except FileNotFoundError:
            return None
        except OSError as error:
            raise self._error("read", key, error) from None

    def read_json(self, *parts: str) -> dict[str, Any] | None:
        text = self.read_text(*parts)
        if text is None:
            return None
        try:
            loaded = json.loads(text)
        except ValueError as error:
            raise ObjectStoreError(f"{SCHEME}{self.store.key(*parts)} is not valid JSON ({error}).") from None
        if not isinstance(loaded, dict):
            raise ObjectStoreError(f"{SCHEME}{self.store.key(*parts)} does not hold a JSON object.")
        return loaded

    def write_text(self, text: str, *parts: str) -> None:
        """One PUT: S3 replaces an object atomically, so readers see the old text or the new."""
        key = self.store.key(*parts)
        try:
            with self.fs.open_output_stream(key) as stream:
                stream.write(text.encode("utf-8"))
        except OSError as error:
            raise self._error("write", key, error) from None

    def upload(self, local: Path, *parts: str) -> None:
        key = self.store.key(*parts)
        try:
            pafs.copy_files(
                str(local), key, source_filesystem=pafs.LocalFileSystem(), destination_filesystem=self.fs
            )
        except FileNotFoundError:
            raise ObjectStoreError(f"{local} vanished before it was uploaded to {SCHEME}{key}.") from None
        except OSError as error:
            raise self._error("upload", key, error) from None

    def copy(self, source: tuple[str, ...], target: tuple[str, ...]) -> None:
        """A server-side copy: the bytes never leave the store."""
        key = self.store.key(*target)
        try:
            self.fs.copy_file(self.store.key(*source), key)
        except OSError as error:
            raise self._error("copy", key, error) from None

    def download(self, local: Path, *parts: str) -> None:
        key = self.store.key(*parts)
        local.parent.mkdir(parents=True, exist_ok=True)
        try:
            pafs.copy_files(
                key, str(local), source_filesystem=self.fs, destination_filesystem=pafs.LocalFileSystem()
            )
        except FileNotFoundError:
            raise ObjectStoreError(f"{SCHEME}{key} is missing.") from None
        except OSError as error:
            raise self._error("download", key, error) from None

    def sizes(self, *parts: str) -> dict[str, int]:
        """Every object below ``parts`` → its size, keyed by the path relative to ``parts``."""
        base = self.store.key(*parts)
        try:
            infos = self.fs.get_file_info(pafs.FileSelector(base, recursive=True, allow_not_found=True))
        except OSError as error:
            raise self._error("list", base, error) from None
        return {
            info.path[len(base) + 1 :]: info.size or 0 for info in infos if info.type == pafs.FileType.File
        }

    def delete(self, *parts: str, tree: bool = False) -> None:
        """Delete one object, or with ``tree`` everything below ``parts``; gone already is fine."""
        key = self.store.key(*parts)
        try:
            self.fs.delete_dir(key) if tree else self.fs.delete_file(key)
        except FileNotFoundError:
            pass
        except OSError as error:
            raise self._error("delete", key, error) from None

    def _error(self, action: str, key: str, error: OSError) -> ObjectStoreError:
        endpoint = self.store.endpoint_url or "AWS"
        if "HTTP status 411" in str(error):  # only a client that streams checksummed uploads meets it
            return ObjectStoreError(
                f"Could not {action} {SCHEME}{key}: the server at {endpoint} wants a Content-Length "
                f"(HTTP 411), which checksummed uploads do not send; unset {CHECKSUM_VARIABLE} or set "
                f"it to when_required (it is {os.environ.get(CHECKSUM_VARIABLE)!r})."
            )
        return ObjectStoreError(
            f"Could not {action} {SCHEME}{key} (endpoint {endpoint}, region {self.store.region}): {error}. "
            "Check the endpoint (storage.endpoint_url or AWS_ENDPOINT_URL), the region (storage.region "
            "or AWS_REGION) and the AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY variables."
        )

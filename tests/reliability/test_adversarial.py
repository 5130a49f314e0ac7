"""The adversarial suite: every case of `cases.py` through its entry point, in process.

One home is built once (`index` of a small corpus beside every hostile input file of the table);
settings cases load settings, CLI cases run `graphunified`'s `main()` on a copy of the home
(damaged first when the case says so), HTTP cases go through the ASGI app on the built home, and
input cases read the build's own status. Whatever the case, nothing ends in a traceback, an error
is one line, the planted secret is never printed, and what the user owns is as it was.
"""

from __future__ import annotations

import hashlib
import io
import shutil
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from graphunified.cli import main
from graphunified_assets.lib.ingest.sources import partition_safe
from graphunified_query.core.settings.model import SettingsError, load_settings
from graphunified_query.engine.query_engine import QueryEngine
from graphunified_query.server.app import create_app
from tests.conftest import SAMPLE_DOCS
from tests.fakes.full_disk import full_disk
from tests.reliability.cases import SECRET, Case, cases

PLANTED = {"ADVERSARIAL_TOKEN": SECRET}  # a secret in every case's environment
CLEARED = ("ANTHROPIC_API_KEY", "VOYAGE_API_KEY", "VOYAGE_BASE_URL")  # offline unless a case sets them


class Built:
    def __init__(self, root: Path) -> None:
        self.input = root / "input"
        self.home = root / "home"
        self.status = ""


class _Capture:
    """stdout and stderr of the CLI (Dagster's log handlers hold sys.stderr: swap the objects)."""

    def __enter__(self) -> _Capture:
        self._saved = sys.stdout, sys.stderr
        self.out, self.err = io.StringIO(), io.StringIO()
        sys.stdout, sys.stderr = self.out, self.err
        return self

    def __exit__(self, *_: object) -> None:
        sys.stdout, sys.stderr = self._saved


def _environment(patch: pytest.MonkeyPatch, env: dict[str, str], dagster_home: Path) -> None:
    for name in CLEARED:
        patch.delenv(name, raising=False)
    for name, value in {**PLANTED, **env, "DAGSTER_HOME": str(dagster_home)}.items():
        patch.setenv(name, value)


def _write_tree(root: Path, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    built = Built(tmp_path_factory.mktemp("adversarial"))
    _write_tree(built.input, {rel: text.encode() for rel, text in SAMPLE_DOCS.items()})
    for case in cases("input"):
        _write_tree(built.input, dict(case.files))
    built.home.mkdir()
    with pytest.MonkeyPatch.context() as patch, _Capture() as capture:
        _environment(patch, {}, built.home / "dagster")
        code = main(["index", "--input", str(built.input), "--home", str(built.home)])
        assert code == 0, capture.err.getvalue()[-3000:]
        assert main(["status", "--home", str(built.home)]) == 0
    built.status = capture.out.getvalue() + capture.err.getvalue()
    assert "Traceback" not in built.status
    yield built


def _owned(home: Path, input_dir: Path) -> dict[str, str]:
    """What the user owns, by content: the published generation readers load, the documents,
    the settings file."""
    files: list[Path] = [*input_dir.rglob("*"), home / "settings.yaml"]
    current = home / "published" / "CURRENT"
    if current.is_file():
        generation = home / "published" / current.read_text(errors="replace").strip()
        files += [current, *(generation.rglob("*") if generation.is_dir() else [])]
    return {
        str(p): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in files
        if p.is_file() and not p.is_symlink()
    }


def _one_line_error(text: str, words: tuple[str, ...]) -> None:
    assert "Traceback" not in text, text[-3000:]
    assert SECRET not in text and SECRET[8:] not in text
    errors = [line for line in text.splitlines() if "error:" in line or line.startswith("error")]
    assert errors, text[-2000:]
    for word in words:
        assert word in text, f"{word!r} not in {text[-2000:]!r}"


@pytest.mark.parametrize("case", cases("settings"), ids=lambda c: c.id)
def test_settings(case: Case, tmp_path: Path) -> None:
    if case.settings is not None:
        data = case.settings.encode() if isinstance(case.settings, str) else case.settings
        (tmp_path / "settings.yaml").write_bytes(data)
    environ = {**PLANTED, **case.env}
    if case.expect == 0:
        load_settings(tmp_path, environ=environ)
        return
    with pytest.raises(SettingsError) as raised:
        load_settings(tmp_path, environ=environ)
    message = str(raised.value)
    assert "\n" not in message, message
    _one_line_error(f"error: {message}", case.words)


@pytest.mark.parametrize("case", cases("cli"), ids=lambda c: c.id)
def test_cli(case: Case, built: Built, tmp_path: Path) -> None:
    home = tmp_path / "home"
    # Dagster's instance only for the commands that run Dagster (a copy is 9 MB).
    needs_dagster = bool(case.args) and case.args[0] in ("index", "status")
    shutil.copytree(
        built.home, home, symlinks=True, ignore=None if needs_dagster else shutil.ignore_patterns("dagster")
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    if case.settings is not None:
        data = case.settings.encode() if isinstance(case.settings, str) else case.settings
        (home / "settings.yaml").write_bytes(data)
    if case.damage is not None:
        case.damage(home)
    before = _owned(home, built.input)
    argv = [
        a.replace("{home}", str(home)).replace("{input}", str(built.input)).replace("{tmp}", str(empty))
        for a in case.args
    ]
    with pytest.MonkeyPatch.context() as patch, _Capture() as capture, ExitStack() as stack:
        _environment(patch, dict(case.env), home / "dagster")
        if case.full_disk:
            stack.enter_context(full_disk())
        try:
            code = main(argv)
        except SystemExit as exit_:  # argparse's own errors
            code = int(exit_.code or 0)
    out, err = capture.out.getvalue(), capture.err.getvalue()
    assert code == case.expect, (out + err)[-3000:]
    if case.expect == 0:
        assert "Traceback" not in out + err and SECRET not in out + err
        for word in case.words:
            assert word in out + err
    else:
        _one_line_error(err, case.words)
    assert _owned(home, built.input) == before  # nothing the user owns lost


@pytest.fixture(scope="module")
def client(built: Built) -> Iterator[TestClient]:
    with pytest.MonkeyPatch.context() as patch:
        _environment(patch, {}, built.home / "dagster")
        with TestClient(create_app(QueryEngine.open(built.home)), base_url="http://127.0.0.1") as client:
            yield client


@pytest.mark.parametrize("case", cases("http"), ids=lambda c: c.id)
def test_http(case: Case, built: Built, client: TestClient) -> None:
    before = _owned(built.home, built.input)
    headers = {"content-type": "application/json", **case.headers}
    reply = client.request(case.method, case.path, content=case.body, headers=headers)
    text = reply.text
    assert reply.status_code == case.expect, text[:2000]
    assert "Traceback" not in text and SECRET not in text
    reply.json()  # every answer, error or not, is JSON
    for word in case.words:
        assert word in text, f"{word!r} not in {text[:2000]!r}"
    assert _owned(built.home, built.input) == before


@pytest.mark.parametrize("case", cases("input"), ids=lambda c: c.id)
def test_input(case: Case, built: Built) -> None:
    [name] = case.files
    lines = [ln for ln in built.status.splitlines() if f"] {name}:" in ln]
    if case.expect == 0:
        assert not lines, lines
        assert partition_safe(name) in _searchable(built.home)  # a control character is escaped
        return
    assert lines, f"{name} missing from status:\n{built.status[-3000:]}"
    line = " ".join(lines)
    assert ";" in line  # what is wrong; what to do
    for word in case.words:
        assert word in line, f"{word!r} not in {line!r}"


def _searchable(home: Path) -> set[str]:
    from graphunified_assets.ops.home_status import searchable_documents
    from graphunified_query.core.layout import HomeLayout

    return searchable_documents(HomeLayout.at(home))

"""The adversarial suite's cases: each one hostile or careless input and what must come of it.

A case is data: the input (a settings file, environment variables, CLI arguments, an HTTP
request, input files, damage done to a copy of a built home) and the expected outcome (the exit
code or HTTP status, and the key words of the one-line error). `test_adversarial.py` runs every
case through its entry point and also checks what holds for all of them: no traceback, one line,
no secret echoed, and nothing the user owns lost (the home's published generation, its input
documents and its settings are byte for byte as before, unless the case damaged them itself).

Adding a case is one line in the table of its entry point (docs/reliability.md).
"""

from __future__ import annotations

import gzip
import io
import os
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

Entry = Literal["settings", "cli", "http", "input"]
SECRET = "sk-ant-api03-ADVERSARIALSECRET"  # planted in the environment of every case: never printed


@dataclass(frozen=True)
class Case:
    id: str
    entry: Entry
    expect: int  # exit code (settings: 2 = refused, 0 = loads), HTTP status, or input: 0 indexed / 1 refused
    words: tuple[str, ...] = ()  # all of them in the error line (input: in the file's status line)
    settings: str | bytes | None = None  # settings.yaml of the home (a copy of the built one)
    env: Mapping[str, str] = field(default_factory=dict)
    args: tuple[str, ...] = ()  # CLI: {home}, {input}, {tmp} are replaced by the case's paths
    method: str = "POST"
    path: str = "/retrieve"
    body: bytes | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    files: Mapping[str, bytes] = field(default_factory=dict)  # input: relative name -> bytes
    damage: Callable[[Path], None] | None = None  # done to the copied home before the call
    full_disk: bool = False  # CLI: every write fails (tests/fakes/full_disk.py)


def S(
    id: str, text: str | bytes | None, *words: str, env: Mapping[str, str] | None = None, ok: bool = False
) -> Case:
    return Case(id, "settings", 0 if ok else 2, words, settings=text, env=env or {})


def C(id: str, args: str | tuple[str, ...], expect: int, *words: str, **extra: object) -> Case:
    argv = tuple(args.split()) if isinstance(args, str) else args
    return Case(id, "cli", expect, words, args=argv, **extra)  # type: ignore[arg-type]


def H(id: str, body: bytes | str | None, expect: int, *words: str, **extra: object) -> Case:
    data = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else body
    return Case(id, "http", expect, words, body=data, **extra)  # type: ignore[arg-type]


def I(id: str, name: str, content: bytes | str, *words: str, ok: bool = False) -> Case:  # noqa: E743
    data = content.encode() if isinstance(content, str) else content
    return Case(id, "input", 0 if ok else 1, words, files={name: data})


# --- what damage a home can suffer (each on a copy) --------------------------------------------


def _published(home: Path) -> Path:
    return home / "published" / (home / "published" / "CURRENT").read_text().strip()


def write(rel: str, data: bytes) -> Callable[[Path], None]:
    return lambda home: (home / rel).write_bytes(data)


def remove(rel: str) -> Callable[[Path], None]:
    def act(home: Path) -> None:
        target = home / rel
        shutil.rmtree(target) if target.is_dir() else target.unlink()

    return act


def truncate_published(pattern: str) -> Callable[[Path], None]:
    def act(home: Path) -> None:
        for path in sorted(_published(home).glob(pattern))[:1]:
            data = path.read_bytes()
            path.unlink()  # a hard link: replace it, never write through to the live table
            path.write_bytes(data[: len(data) // 2])

    return act


def remove_published(pattern: str) -> Callable[[Path], None]:
    def act(home: Path) -> None:
        for path in sorted(_published(home).glob(pattern)):
            shutil.rmtree(path) if path.is_dir() else path.unlink()

    return act


def truncate_lance(table: str) -> Callable[[Path], None]:
    def act(home: Path) -> None:
        for path in sorted((home / "lancedb" / f"{table}.lance" / "data").glob("*.lance")):
            size = path.stat().st_size
            with path.open("r+b") as file:
                file.truncate(size // 3)

    return act


def _deep_aliases(levels: int) -> str:
    lines = ['l0: &l0 ["laugh","laugh","laugh","laugh","laugh","laugh","laugh","laugh","laugh"]']
    lines += [f"l{n}: &l{n} [" + ",".join([f"*l{n - 1}"] * 9) + "]" for n in range(1, levels + 1)]
    return "\n".join(lines) + "\n"


def _gz(data: bytes) -> bytes:
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", compresslevel=9, mtime=0) as file:
        file.write(data)
    return buffer.getvalue()


_RANDOM = os.urandom(4096)
_Q = '{"question": "Who founded the Hale Mill?"'

SETTINGS_CASES = [
    S("billion-laughs", _deep_aliases(7), "settings.yaml", "aliases", "line 2"),
    S("billion-laughs-9", _deep_aliases(9), "settings.yaml", "aliases"),
    S("alias-of-a-section", "a: &a {size: 64}\nchunking: *a\n", "settings.yaml", "aliases"),
    S("deep-lists", "query: " + "[" * 5000 + "]" * 5000 + "\n", "nested deeper than", "line 1"),
    S("deep-maps", "query: " + "{a: " * 3000 + "}" * 3000 + "\n", "nested deeper than"),
    S(
        "deep-block-nesting",
        "".join(f"{'  ' * i}k{i}:\n" for i in range(60)) + "  " * 60 + "v: 1\n",
        "nested deeper",
    ),
    S(
        "deep-in-a-variable",
        None,
        "GRAPHUNIFIED__QUERY__X is not valid YAML",
        "nested deeper",
        env={"GRAPHUNIFIED__QUERY__X": "{a: " * 3000 + "}" * 3000},
    ),
    S(
        "python-tag-in-a-variable",
        None,
        "GRAPHUNIFIED__LLM__MODEL is not valid YAML",
        "tag",
        env={"GRAPHUNIFIED__LLM__MODEL": "!!python/object/apply:os.system ['true']"},
    ),
    S(
        "custom-tag-in-a-variable",
        None,
        "GRAPHUNIFIED__LLM__MODEL is not valid YAML",
        "tag",
        env={"GRAPHUNIFIED__LLM__MODEL": "!custom value"},
    ),
    S(
        "python-tag-in-the-file",
        "llm:\n  model: !!python/object/apply:os.system ['true']\n",
        "settings.yaml",
        "tag",
    ),
    S(
        "scalar-section-nested-variable",
        "llm: 5\n",
        "but llm is a single value",
        "GRAPHUNIFIED__LLM__MODEL",
        env={"GRAPHUNIFIED__LLM__MODEL": "x"},
    ),
    S(
        "variable-under-a-variable",
        None,
        "but llm.model is a single value",
        "GRAPHUNIFIED__LLM__MODEL",
        env={"GRAPHUNIFIED__LLM__MODEL": "x", "GRAPHUNIFIED__LLM__MODEL__NAME": "y"},
    ),
    *[
        S(
            f"secret-{name.lower()}-in-a-setting",
            f"query:\n  default_strategy: ${{{name}}}\n",
            "query.default_strategy",
            name,
            env={name: SECRET},
        )
        for name in ("ANTHROPIC_API_KEY", "VOYAGE_API_KEY", "AWS_SECRET_ACCESS_KEY", "GH_TOKEN")
    ],
    S(
        "secret-expanded-by-the-shell",
        None,
        "query.default_strategy holds the value of ${ANTHROPIC_API_KEY}",
        env={"ANTHROPIC_API_KEY": SECRET, "GRAPHUNIFIED__QUERY__DEFAULT_STRATEGY": SECRET},
    ),
    S(
        "secret-pasted-in-the-file",
        f"query:\n  default_strategy: {SECRET}\n",
        "query.default_strategy holds the value of ${ANTHROPIC_API_KEY}",
        env={"ANTHROPIC_API_KEY": SECRET},
    ),
    S(
        "secret-as-the-model-name",
        None,
        "llm.model",
        env={"ANTHROPIC_API_KEY": SECRET, "GRAPHUNIFIED__LLM__MODEL": SECRET},
    ),
    S("literal-key-in-the-file", f"llm:\n  api_key: {SECRET}\n", "settings.yaml", "api_key"),
    S("not-utf8", "chunking:\n  size: 256 # caf\xe9\n".encode("latin-1"), "settings.yaml", "UTF-8"),
    S("utf16", "chunking:\n  size: 256\n".encode("utf-16"), "settings.yaml"),
    S("binary", _RANDOM, "settings.yaml"),
    S("unclosed-bracket", "chunking: [1\n", "settings.yaml is not valid YAML"),
    S("tab-indentation", "chunking:\n\tsize: 256\n", "settings.yaml is not valid YAML"),
    S("top-level-list", "- a\n- b\n", "settings.yaml"),
    S("top-level-scalar", "just words\n", "settings.yaml"),
    S("unknown-section", "chunkin:\n  size: 256\n", "chunkin"),
    S("unknown-key", "chunking:\n  sise: 256\n", "chunking.sise"),
    S("negative-size", "chunking:\n  size: -5\n", "chunking.size", "settings.yaml"),
    S("size-over-the-limit", "chunking:\n  size: 1000000000\n", "chunking.size"),
    S("size-a-word", "chunking:\n  size: many\n", "chunking.size"),
    S("size-nan", "chunking:\n  size: .nan\n", "chunking.size"),
    S("size-infinite", "chunking:\n  size: .inf\n", "chunking.size"),
    S("size-400-digits", "chunking:\n  size: " + "9" * 400 + "\n", "chunking.size"),
    S("size-a-list", "chunking:\n  size: [1, 2]\n", "chunking.size"),
    S("section-a-list", "chunking: [1, 2]\n", "chunking"),
    S("top-k-a-word", "query: {top_k: many}\n", "query.top_k"),
    S("two-errors-at-once", "chunking:\n  size: -5\nquery: {top_k: many}\n", "chunking.size", "query.top_k"),
    S("unknown-llm-provider", "llm:\n  provider: gpt9\n", "llm.provider", "gpt9"),
    S("unknown-embedder", "embedding:\n  provider: word2vec\n", "embedding.provider", "word2vec"),
    S("negative-retries", "llm:\n  max_retries: -1\n", "llm.max_retries"),
    S("zero-timeout", "embedding:\n  timeout_seconds: 0\n", "embedding.timeout_seconds"),
    S(
        "variable-not-a-number",
        None,
        "chunking.size",
        "GRAPHUNIFIED__* variables",
        env={"GRAPHUNIFIED__CHUNKING__SIZE": "abc"},
    ),
    S(
        "variable-unknown-section",
        None,
        "nope",
        "GRAPHUNIFIED__* variables",
        env={"GRAPHUNIFIED__NOPE__X": "1"},
    ),
    S("variable-unclosed", None, "GRAPHUNIFIED__QUERY__TOP_K", env={"GRAPHUNIFIED__QUERY__TOP_K": "[1"}),
    S("unset-reference", "llm:\n  model: ${NO_SUCH_VARIABLE_X}\n", "NO_SUCH_VARIABLE_X"),
    S("duplicate-key", "chunking:\n  size: 256\n  size: 512\n", ok=True),  # YAML: the last one wins
    S("empty-file", "", ok=True),
    S("only-a-comment", "# nothing here\n", ok=True),
    S("byte-order-mark", "\ufeffchunking:\n  size: 256\n", ok=True),
    S("anchors-without-aliases", "chunking: &c\n  size: 256\n", ok=True),
    S("null-section", "chunking:\n", "chunking", "valid dictionary"),
]

CLI_CASES = [
    C("ask-empty-question", ("ask", "", "--home", "{home}"), 2, "the question is empty"),
    C("ask-blank-question", ("ask", "   \n", "--home", "{home}"), 2, "the question is empty"),
    C("ask-10001-characters", ("ask", "x" * 10_001, "--home", "{home}"), 2, "more than 10,000"),
    C("ask-top-k-0", "ask Who? --top-k 0 --home {home}", 2, "top_k is 0", "1 to 1000"),
    C("ask-top-k-negative", "ask Who? --top-k -3 --home {home}", 2, "top_k is -3"),
    C("ask-top-k-a-billion", "ask Who? --top-k 1000000000 --home {home}", 2, "top_k is 1000000000"),
    C("ask-top-k-float", "ask Who? --top-k 1e9 --home {home}", 2, "invalid int value: '1e9'"),
    C("ask-unknown-strategy", "ask Who? --strategy bm42 --home {home}", 2, "unknown strategy 'bm42'"),
    C(
        "ask-unknown-default-strategy",
        "ask Who? --home {home}",
        2,
        "unknown strategy 'bm42'",
        settings="query:\n  default_strategy: bm42\n",
    ),
    C("ask-strategy-path", "ask Who? --strategy ../../etc/passwd --home {home}", 2, "unknown strategy"),
    C("ask-bad-param", "ask Who? --param nonsense --home {home}", 2, "nonsense"),
    C(
        "ask-unknown-param",
        "ask Who? --strategy naive --param no_such_param=3 --home {home}",
        2,
        "no_such_param",
    ),
    C("ask-max-risk-bogus", "ask Who? --max-risk extreme --home {home}", 2, "invalid choice"),
    C("ask-not-utf8-question", ("ask", "caf\udce9?", "--home", "{home}"), 2, "not valid UTF-8"),
    C("ask-not-utf8-home", ("ask", "Who?", "--home", "{tmp}/h\udcff"), 2, "not valid UTF-8"),
    C("ask-missing-home", "ask Who? --home {tmp}/nowhere", 2, "index"),
    C("ask-home-is-a-file", "ask Who? --home {input}/mill.md", 2, "is a file"),
    C("ask-empty-home", "ask Who? --home {tmp}", 2, "index"),
    C("ask-no-question", "ask --home {home}", 2, "question"),
    C("unknown-command", "frobnicate", 2, "invalid choice"),
    C("no-command", (), 2, "required"),
    C("compare-empty-question", ("compare", "", "--home", "{home}"), 2, "the question is empty"),
    C("status-home-is-a-file", "status --home {input}/mill.md", 2, "is a file"),
    C("index-home-is-a-file", "index --home {input}/mill.md --input {input}", 2, "is a file"),
    C("index-missing-input", "index --home {home} --input {tmp}/no-such-folder", 2, "does not exist"),
    C("index-input-is-a-file", "index --home {home} --input {input}/mill.md", 2, "does not exist"),
    C("index-other-input-without-replace", "index --home {home} --input {tmp}", 2, "--replace-input"),
    C("export-onto-a-file", "export-graphrag {input}/mill.md --home {home}", 2, "is a file"),
    C("export-empty-home", "export-graphrag {tmp}/out --home {tmp}", 1, "index"),
    C("import-missing-folder", "import-graphrag {tmp}/nothing --home {tmp}/imported", 2, "nothing"),
    C("publish-without-a-target", "publish --home {home}", 2, "publish_uri"),
    C("publish-not-s3", "publish --home {home} --to ftp://x/y", 1, "s3://"),
    C("eval-missing-set", "eval {tmp}/no-set", 2, "no-set"),
    C("serve-port-a-word", "serve --home {home} --port http", 2, "invalid int value"),
    C(
        "ask-settings-billion-laughs",
        "ask Who? --home {home}",
        2,
        "settings.yaml",
        "aliases",
        settings=_deep_aliases(8),
    ),
    C(
        "ask-settings-not-utf8",
        "ask Who? --home {home}",
        2,
        "settings.yaml",
        "UTF-8",
        settings=b"query:\n  top_k: 5 # \xe9\n",
    ),
    C(
        "status-settings-deep",
        "status --home {home}",
        2,
        "settings.yaml",
        "nested deeper",
        settings="query: " + "[" * 3000 + "]" * 3000 + "\n",
    ),
    C(
        "index-settings-invalid",
        "index --home {home}",
        2,
        "chunking.size",
        "settings.yaml",
        settings="chunking:\n  size: -5\n",
    ),
    C(
        "ask-settings-is-a-folder",
        "ask Who? --home {home}",
        2,
        "settings.yaml",
        damage=lambda home: (
            (home / "settings.yaml").unlink(missing_ok=True) or (home / "settings.yaml").mkdir()
        ),
    ),
    C(
        "ask-secret-in-a-setting",
        "ask Who? --home {home}",
        2,
        "query.default_strategy",
        "a secret",
        env={"GRAPHUNIFIED__QUERY__DEFAULT_STRATEGY": SECRET},
    ),
    C(
        "ask-yaml-tag-in-a-variable",
        "ask Who? --home {home}",
        2,
        "GRAPHUNIFIED__LLM__MODEL",
        "tag",
        env={"GRAPHUNIFIED__LLM__MODEL": "!!python/name:os.system"},
    ),
    C(
        "ask-garbage-current",
        "ask Who? --home {home} --retrieve-only",
        2,
        "CURRENT",
        "index",
        damage=write("published/CURRENT", b"\x00garbage\n"),
    ),
    C(
        "ask-deleted-current",
        "ask Who? --home {home} --retrieve-only",
        2,
        "CURRENT",
        damage=remove("published/CURRENT"),
    ),
    C(
        "ask-truncated-published-table",
        "ask Who? --home {home} --retrieve-only --strategy hipporag",
        2,
        "index --home",
        damage=truncate_published("tables/entities.parquet"),
    ),
    C(
        "ask-deleted-published-table",
        "ask Who? --home {home} --retrieve-only --strategy hipporag",
        2,
        "index --home",
        damage=remove_published("tables/entities.parquet"),
    ),
    C(
        "ask-deleted-bm25",
        "ask Who? --home {home} --retrieve-only --strategy hybrid",
        2,
        "index --home",
        damage=remove_published("indexes/bm25"),
    ),
    C(
        "ask-deleted-lance-table",
        "ask Who? --home {home} --retrieve-only --strategy naive",
        2,
        "index --home",
        damage=remove("lancedb/chunk_vectors.lance"),
    ),
    C(
        "ask-truncated-lance-data",
        "ask Who? --home {home} --retrieve-only --strategy naive",
        2,
        "index --home",
        damage=truncate_lance("chunk_vectors"),
    ),
    C("status-damaged-state", "status --home {home}", 0, "searchable", damage=write("state.sqlite", _RANDOM)),
    C(
        "status-damaged-llm-cache",
        "status --home {home}",
        0,
        "searchable",
        damage=write("cache/llm.sqlite", _RANDOM),
    ),
    C(
        "status-garbage-input-record",
        "status --home {home}",
        2,
        "input.json",
        damage=write("input.json", b"{oops"),
    ),
    C("status-full-disk", "status --home {home}", 0, "cannot write", "free space", full_disk=True),
    C(
        "index-full-disk",
        "index --home {home}",
        1,
        "cannot write",
        "then run it again",
        full_disk=True,
        damage=lambda home: None,
    ),
    C("ask-full-disk", "ask Who? --home {home} --retrieve-only --strategy naive", 0, full_disk=True),
]

_DEEP = '{"question": "Who?", "params": ' + "[" * 2000 + "]" * 2000 + "}"
HTTP_CASES = [
    H("empty-question", '{"question": ""}', 422, "the question is empty"),
    H("blank-question", '{"question": "  \\n "}', 422, "the question is empty"),
    H("question-too-long", '{"question": "' + "x" * 10_001 + '"}', 422, "more than 10,000"),
    H("question-a-number", '{"question": 42}', 422, "question"),
    H("question-a-list", '{"question": ["a"]}', 422, "question"),
    H("question-null", '{"question": null}', 422, "question"),
    H("question-missing", '{"strategy": "naive"}', 422, "question"),
    H("top-k-0", _Q + ', "top_k": 0}', 422, "use a number from 1 to 1000"),
    H("top-k-negative", _Q + ', "top_k": -1}', 422, "use a number from 1 to 1000"),
    H("top-k-a-billion", _Q + ', "top_k": 1000000000}', 422, "use a number from 1 to 1000"),
    H("top-k-a-word", _Q + ', "top_k": "many"}', 422, "top_k"),
    H("top-k-fraction", _Q + ', "top_k": 1.5}', 422, "top_k"),
    H("top-k-400-digits", _Q + ', "top_k": ' + "9" * 400 + "}", 422, "top_k"),
    H("top-k-nan", _Q + ', "top_k": NaN}', 422, "top_k"),
    H("top-k-infinity", _Q + ', "top_k": Infinity}', 422, "top_k"),
    H("unknown-strategy", _Q + ', "strategy": "bm42"}', 422, "unknown strategy 'bm42'"),
    H("strategy-a-number", _Q + ', "strategy": 7}', 422, "strategy"),
    H("params-a-list", _Q + ', "params": [1]}', 422, "params"),
    H("params-unknown", _Q + ', "strategy": "naive", "params": {"no_such_param": 1}}', 422, "no_such_param"),
    H("retrieve-only-a-word", _Q + ', "retrieve_only": "perhaps"}', 422, "retrieve_only"),
    H("json-2000-deep", _DEEP, 422, "nested 2001 levels deep"),
    H("json-100-deep-question", '{"question": ' + "[" * 100 + "]" * 100 + "}", 422, "levels deep"),
    H("json-brackets-in-strings", '{"question": "' + "[" * 3000 + '"}', 200, path="/retrieve"),
    H("lone-surrogate", '{"question": "caf\\ud800"}', 422, "question"),
    H("nan-question", '{"question": NaN}', 422, "question"),
    H("not-json", "question=Who", 422, "JSON"),
    H("truncated-json", _Q, 422, "JSON"),
    H("json-array", "[1, 2]", 422),
    H("json-string", '"Who?"', 422),
    H("json-null", "null", 422),
    H("empty-body", b"", 422),
    H("binary-body", _RANDOM, 400, "error parsing the body"),
    H("latin1-body", '{"question": "caf\xe9"}'.encode("latin-1"), 400, "error parsing the body"),
    H("body-over-the-limit", b'{"question": "' + b"x" * 100_000 + b'"}', 413, "bytes"),
    H("form-content-type", _Q + "}", 422, headers={"content-type": "application/x-www-form-urlencoded"}),
    H("foreign-host", _Q + "}", 400, "Host", "allowed_hosts", headers={"host": "evil.example"}),
    H("rebinding-host", _Q + "}", 400, "Host", headers={"host": "attacker.test:8080"}),
    H("ask-empty-question", '{"question": ""}', 422, "the question is empty", path="/ask"),
    H("ask-top-k-0", _Q + ', "top_k": 0}', 422, "use a number from 1 to 1000", path="/ask"),
    H("ask-json-2000-deep", _DEEP, 422, "levels deep", path="/ask"),
    H("get-retrieve", None, 405, method="GET"),
    H("delete-ask", None, 405, method="DELETE", path="/ask"),
    H("unknown-path", None, 404, method="GET", path="/../../etc/passwd"),
    H("health-with-a-body", b"x" * 100, 200, method="GET", path="/health"),
    H("punctuation-question", '{"question": "?!... ;;", "strategy": "naive"}', 200),
    H("huge-top-k-allowed", _Q + ', "strategy": "naive", "top_k": 1000}', 200),
    H(
        "many-languages",
        '{"question": "Wer gr\\u00fcndete die Hale Mill? \\u8c01\\u521b\\u7acb", "strategy": "naive"}',
        200,
    ),
]

INPUT_CASES = [
    I("empty-file", "empty.txt", b"", "empty file"),
    I("whitespace-only", "blank.md", b"  \n\t\n", "only whitespace"),
    I("binary-png", "binary.txt", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "binary content"),
    I("random-bytes", "random.md", _RANDOM, "binary content"),
    I("latin1", "latin1.txt", "Caf\xe9 au lait\n".encode("latin-1"), "not valid UTF-8"),
    I(
        "mixed-encoding",
        "mixed.md",
        "# Caf\u00e9 ok\n".encode() + "then caf\xe9\n".encode("latin-1"),
        "byte 19, line 2",
    ),
    I("utf16", "utf16.txt", "The Harrow flooded.\n".encode("utf-16"), "UTF-16"),
    I("jsonl-bad-line", "bad.jsonl", b'{"id": "a", "text": "fine"}\n{oops\n', "not valid JSON"),
    I("jsonl-array-line", "array.jsonl", b"[1, 2]\n", "not an object"),
    I("jsonl-no-text", "notext.jsonl", b'{"id": "a"}\n', 'field "text" is missing'),
    I("jsonl-text-a-number", "numtext.jsonl", b'{"text": 5}\n', 'field "text" is a JSON number'),
    I("jsonl-empty-text", "emptytext.jsonl", b'{"text": "  "}\n', 'field "text" is empty'),
    I("jsonl-duplicate-id", "dup.jsonl", b'{"id": 1, "text": "a"}\n{"id": 1, "text": "b"}\n', "duplicate id"),
    I("jsonl-lone-surrogate", "surrogate.jsonl", b'{"text": "caf\\ud800"}\n', "lone surrogate"),
    I("jsonl-id-an-object", "objid.jsonl", b'{"id": {"a": 1}, "text": "x"}\n', 'field "id" is a JSON object'),
    I(
        "jsonl-deep-nesting",
        "deep.jsonl",
        b'{"text": "x", "meta": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n",
        "nested too deeply",
    ),
    I("jsonl-title-a-list", "title.jsonl", b'{"title": ["x"], "text": "y"}\n', 'field "title"'),
    I("gz-not-gzip", "fake.jsonl.gz", b'{"text": "not compressed"}\n', "gzip"),
    I("gz-truncated", "cut.jsonl.gz", _gz(b'{"text": "a record"}\n' * 1000)[:60], "end-of-stream marker"),
    I("gz-bomb-ratio", "bomb.jsonl.gz", _gz(b'{"text": "' + b"a" * (9 * 2**20) + b'"}\n'), "inflate"),
    I("gz-bad-lines", "badlines.jsonl.gz", _gz(b"x\n" * 200_000), "more bad lines not listed"),
    I("pdf-garbage", "fake.pdf", b"%PDF-1.4\n" + _RANDOM, "pdf"),
    I("pdf-not-a-pdf", "text.pdf", b"just text, no header\n", "PDF"),
    I("control-characters-name", "bell\x07name.txt", b"A file with a bell in its name.\n", ok=True),
    I("numbers-only", "numbers.txt", "3 14 15 92 65\n2.718 28 18\n", ok=True),
    I("code-only", "code.md", "```python\ndef f(x):\n    return x * 2\n```\n", ok=True),
    I(
        "many-languages",
        "fremd.txt",
        "Der Harrow trat 1894 über die Ufer. 河流泛滥。 Река разлилась.\n",
        ok=True,
    ),
    I("long-line", "long-line.txt", " ".join(f"w{i % 97}" for i in range(3_000)), ok=True),
    I("one-long-word", "blob.txt", "QUJD" * 1_500, ok=True),
    I("heading-20kb", "heading.md", "# " + "h" * 20_000 + "\n\nbody\n", ok=True),
    I("nested-40-deep", "/".join(["d" * 40] * 7) + "/deep.md", "# Deep\n\nA deep file.\n", ok=True),
    I("chinese-name", "河流" * 18 + ".md", "# 河流\n\n河流在一八九四年泛滥。\n", ok=True),
    I("zero-width-text", "zw.md", "# Z\u200bero\n\nThe\u200b mill\u200d stood.\n", ok=True),
    I("bom-utf8", "bom.txt", b"\xef\xbb\xbfThe mill had a byte order mark.\n", ok=True),
    I("newlines-256kb", "newlines.txt", "\n" * 256 * 1024, "only whitespace"),  # was 41.5 s in one regex
    I(
        "styled-tags-16kb", "tags.md", '<a style="' * 1_600, ok=True
    ),  # the detector's nested lazy pattern: 6 s
    I("crlf-lines", "crlf.md", b"# CRLF\r\n\r\nWindows line ends.\r\n", ok=True),
]

CASES = [*SETTINGS_CASES, *CLI_CASES, *HTTP_CASES, *INPUT_CASES]


def cases(entry: Entry) -> list[Case]:
    return [case for case in CASES if case.entry == entry]

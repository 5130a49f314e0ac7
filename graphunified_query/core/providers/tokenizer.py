"""The local embedding model's WordPiece tokenizer, vendored and checksum-verified.

Chunking counts tokens with it, so a chunk of N tokens is exactly what the model sees.
(tiktoken would download its encodings at run time, which fails offline.)
"""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path

from tokenizers import Tokenizer

TOKENIZER_FILE = Path(__file__).with_name("minilm_tokenizer.json")
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"


class TokenizerChecksumError(RuntimeError):
    """The tokenizer file is not the one the package shipped."""


def load_tokenizer(path: Path | None = None) -> Tokenizer:
    """The all-MiniLM-L6-v2 tokenizer with no truncation or padding (callers set their own).

    The default file is loaded once per process and shared: callers that configure truncation or
    padding must work on a copy (`Tokenizer.from_str(tok.to_str())`). Other paths are read afresh.
    """
    if path is None:
        return _default()
    return _load(Path(path))


@cache
def _default() -> Tokenizer:
    return _load(TOKENIZER_FILE)


def _load(path: Path) -> Tokenizer:
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != TOKENIZER_SHA256:
        raise TokenizerChecksumError(
            f"Tokenizer file {path} has sha256 {digest}, expected {TOKENIZER_SHA256}: it is damaged or "
            "was replaced. Reinstall the package (pip install --force-reinstall graph-unified, or "
            "`pip install -e .` in a checkout)."
        )
    tokenizer = Tokenizer.from_str(data.decode("utf-8"))  # parse the bytes that were verified
    tokenizer.no_truncation()  # the file ships with the model's 128-token truncation and padding
    tokenizer.no_padding()
    return tokenizer


def count_tokens(text: str) -> int:
    """Word pieces in `text`, without [CLS]/[SEP]."""
    return len(_default().encode(text, add_special_tokens=False).ids)

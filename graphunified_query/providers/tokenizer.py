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
    pass


def load_tokenizer(path: Path | None = None) -> Tokenizer:
    """The all-MiniLM-L6-v2 tokenizer with no truncation or padding (callers set their own)."""
    return _load(path or TOKENIZER_FILE)


@cache
def _load(path: Path) -> Tokenizer:
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != TOKENIZER_SHA256:
        raise TokenizerChecksumError(
            f"{path} has sha256 {digest}, expected {TOKENIZER_SHA256}; the file is damaged or replaced. "
            "Reinstall the package (pip install --force-reinstall -e .)."
        )
    tokenizer = Tokenizer.from_file(str(path))
    tokenizer.no_truncation()  # the file ships with the model's 128-token truncation and padding
    tokenizer.no_padding()
    return tokenizer


def count_tokens(text: str) -> int:
    return len(load_tokenizer().encode(text, add_special_tokens=False).ids)

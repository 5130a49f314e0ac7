"""Voyage AI embeddings through the `voyageai` SDK: batched, with bounded retries.

The API key goes to the SDK client and nowhere else: errors carry the exception class, the
HTTP status and the server's detail with any occurrence of the key masked.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import voyageai
import voyageai.error as voyage_errors
from voyageai.local.helpers import is_local_model

from graphunified_query.core.plugins import voyage_base_url
from graphunified_query.core.providers.embedding import EmbeddingError, EmbeddingKind, normalize_rows
from graphunified_query.core.settings.embedding import EmbeddingSettings

T = TypeVar("T")

log = logging.getLogger(__name__)

KNOWN_DIMENSIONS = {
    "voyage-3.5": 1024,
    "voyage-3.5-lite": 1024,
    "voyage-3-large": 1024,
    "voyage-3": 1024,
    "voyage-3-lite": 512,
    "voyage-code-3": 1024,
}
# Voyage caps a request at ~120K tokens; at worst about one token per character (CJK, code),
# so 100K characters stays under the cap whatever the text.
MAX_CHARS_PER_REQUEST = 100_000
_RETRYABLE = (
    voyage_errors.RateLimitError,  # 429
    voyage_errors.ServerError,  # 500
    voyage_errors.ServiceUnavailableError,  # 502, 503, 504
    voyage_errors.APIConnectionError,
    voyage_errors.Timeout,
    voyage_errors.TryAgain,
)
# voyageai 0.5.0 reads a status it does not map (501, 520, 529...) with a JSON body as a success
# and then fails on the missing "data": such a response surfaces as one of these.
_UNREADABLE_RESPONSE = (AttributeError, KeyError, TypeError)


class VoyageEmbedder:
    def __init__(
        self,
        api_key: str,
        *,
        model: str = "voyage-3.5",
        base_url: str | None = None,
        batch_size: int = 64,
        max_retries: int = 5,
        timeout: float = 60.0,
        base_delay: float = 1.0,
        max_delay: float = 60.0,
    ) -> None:
        if is_local_model(model):
            # The SDK would run it in-process after downloading it from the Hugging Face hub.
            raise EmbeddingError(
                f"embedding.voyage_model {model!r} is one the voyageai SDK runs locally (downloaded from "
                "Hugging Face), not through the API; choose a hosted model such as 'voyage-3.5', or set "
                "embedding.provider to 'local'."
            )
        self.model_name = model
        self.dimension = KNOWN_DIMENSIONS.get(model, 0)  # learned from the first response otherwise
        self.batch_size = batch_size
        self.max_retries = max_retries
        self.base_delay = base_delay
        self.max_delay = max_delay
        self._mask = _masker(api_key)
        # The SDK's own retries are off: ours honour retry-after and stay bounded.
        self._client = voyageai.Client(api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout)

    def __repr__(self) -> str:
        return f"VoyageEmbedder(model={self.model_name!r})"

    def embed(self, texts: Sequence[str], *, kind: EmbeddingKind = "document") -> np.ndarray:
        rows: list[Sequence[float]] = []
        for batch in _batches(list(texts), self.batch_size):
            rows.extend(self._embed_batch(batch, kind))
        if not rows:
            return np.zeros((0, self.dimension), dtype=np.float32)
        vectors = normalize_rows(np.array(rows, dtype=np.float32))
        self.dimension = vectors.shape[1]
        return vectors

    def _embed_batch(self, batch: list[str], kind: EmbeddingKind) -> Sequence[Sequence[float]]:
        # Voyage rejects empty strings; a single space embeds as "nothing".
        inputs = [text if text.strip() else " " for text in batch]

        # The SDK types its result as float or int lists (int: quantized output types, not asked here).
        def embed_all() -> Sequence[Sequence[float]]:
            embeddings = self._client.embed(
                inputs, model=self.model_name, input_type=kind, truncation=True
            ).embeddings
            if len(embeddings) != len(inputs):  # a reply cut short or emptied on the way: ask again
                raise IncompleteResponse(f"{len(embeddings)} embeddings for {len(inputs)} texts")
            return embeddings

        return call_with_retries(
            embed_all,
            RetryPolicy("Voyage embedding", self.max_retries, self.base_delay, self.max_delay, self._mask),
            EmbeddingError,
            refused_hint="check VOYAGE_API_KEY and embedding.voyage_model.",
        )


def build(settings: EmbeddingSettings, *, environ: Mapping[str, str], key: str) -> VoyageEmbedder:
    """The registry's factory (`embedders.EMBEDDERS`), given the key its entry declares."""
    return VoyageEmbedder(
        key,
        model=settings.voyage_model,
        base_url=voyage_base_url(settings.voyage_base_url, environ),
        batch_size=settings.batch_size,
        max_retries=settings.max_retries,
        timeout=settings.timeout_seconds,
    )


class IncompleteResponse(ValueError):
    """A success that does not hold what was asked for (fewer vectors than texts): retried."""


@dataclass(frozen=True)
class RetryPolicy:
    what: str  # "Voyage embedding", "Voyage rerank": how messages name the call
    max_retries: int
    base_delay: float
    max_delay: float
    mask: Callable[[str], str]


def call_with_retries(
    call: Callable[[], T], policy: RetryPolicy, error_type: type[Exception], *, refused_hint: str = ""
) -> T:
    """``call()``, retried with backoff on 429/5xx/connection faults; a refusal fails at once."""
    for attempt in range(policy.max_retries + 1):
        try:
            return call()
        except voyage_errors.VoyageError as error:
            if not _is_transient(error):
                hint = f"; {refused_hint}" if refused_hint else ""
                raise error_type(
                    f"{policy.what} was refused: {describe_error(error, policy.mask)}{hint}"
                ) from None
            problem, retry_after = (
                describe_error(error, policy.mask),
                (error.headers or {}).get("retry-after"),
            )
        except (*_UNREADABLE_RESPONSE, IncompleteResponse) as error:
            problem, retry_after = f"unreadable response ({type(error).__name__}: {error})", None
        if attempt == policy.max_retries:
            raise error_type(f"{policy.what} failed after {attempt + 1} attempts: {problem}")
        delay = retry_delay(attempt, retry_after, policy.base_delay, policy.max_delay)
        log.warning("%s attempt %d failed (%s); retrying in %.2f s", policy.what, attempt + 1, problem, delay)
        time.sleep(delay)
    raise AssertionError("unreachable")


def describe_error(error: voyage_errors.VoyageError, mask: Callable[[str], str]) -> str:
    """The error's class, status and message, with the API key masked out."""
    detail = mask(str(error.user_message or ""))[:300]
    return f"{type(error).__name__} (HTTP {error.http_status}): {detail}"


def retry_delay(attempt: int, retry_after: str | None, base_delay: float, max_delay: float) -> float:
    """Seconds before retry ``attempt + 1``: the server's retry-after if numeric, else backoff."""
    if retry_after is not None:
        try:
            return min(max(float(retry_after), 0.0), max_delay)
        except ValueError:
            pass  # an HTTP date: fall back to our own backoff
    # "Equal jitter": at least half the exponential step, so retries never bunch up at zero.
    return min(base_delay * 2**attempt * random.uniform(0.5, 1.0), max_delay)


def _is_transient(error: voyage_errors.VoyageError) -> bool:
    # A 429 or 5xx the SDK only knows as a generic APIError (say, an HTML page from a proxy) is transient too,
    # and so is a 2xx it could not read (a body that is not JSON arrives as an APIError with HTTP 200).
    status = error.http_status or 0
    unreadable_success = isinstance(error, voyage_errors.APIError) and 200 <= status < 300
    return isinstance(error, _RETRYABLE) or unreadable_success or status == 429 or status >= 500


def _masker(secret: str) -> Callable[[str], str]:
    def mask(text: str) -> str:
        return text.replace(secret, "***") if secret else text

    return mask


def _batches(texts: list[str], batch_size: int) -> list[list[str]]:
    """Consecutive groups of at most batch_size texts and (unless one text is larger) the char cap."""
    batches: list[list[str]] = []
    current: list[str] = []
    chars = 0
    for text in texts:
        if current and (len(current) == batch_size or chars + len(text) > MAX_CHARS_PER_REQUEST):
            batches.append(current)
            current, chars = [], 0
        current.append(text)
        chars += len(text)
    if current:
        batches.append(current)
    return batches

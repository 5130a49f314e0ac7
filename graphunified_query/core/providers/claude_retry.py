"""Which Claude failures are worth another attempt, how long to wait, and how to say what failed.

Our own policy instead of the SDK's: bounded by `llm.max_retries`, exponential backoff with
full jitter, the server's `retry-after` honoured, and messages that can never carry the key.
"""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import anthropic

MAX_SLEEP_SECONDS = 60.0
# A 429 for these is a spending limit, not a rate limit: waiting will not lift it.
_SPEND_LIMIT_CODES = {"contract_spend_limit_reached", "enforced_spend_limit_reached"}


# A 200 whose body is not JSON (a proxy's page, a body cut short at a clean boundary) or not a
# message: the SDK raises these instead of an APIStatusError. The next attempt usually reads fine.
UNREADABLE_RESPONSE: tuple[type[Exception], ...] = (
    json.JSONDecodeError,
    anthropic.APIResponseValidationError,
)


def is_retryable(error: Exception) -> bool:
    """429, 5xx (529 overloaded included), dropped connections, timeouts, unreadable responses."""
    if isinstance(error, (anthropic.APIConnectionError, *UNREADABLE_RESPONSE)):  # APITimeoutError too
        return True
    if not isinstance(error, anthropic.APIStatusError):
        return False
    hint = error.response.headers.get("x-should-retry")
    if hint in ("true", "false"):
        return hint == "true"
    if error.status_code == 429:
        return getattr(error, "error_code", None) not in _SPEND_LIMIT_CODES
    return error.status_code >= 500


def backoff_seconds(attempt: int, error: Exception, *, base_delay: float) -> float:
    """The server's `retry-after` when given, else full jitter: uniform(0, base * 2**attempt)."""
    server = retry_after_seconds(error)
    if server is not None:
        return min(server, MAX_SLEEP_SECONDS)
    return random.uniform(0.0, min(base_delay * 2**attempt, MAX_SLEEP_SECONDS))


def retry_after_seconds(error: Exception) -> float | None:
    response = getattr(error, "response", None)
    if response is None:
        return None
    headers = response.headers
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return max(0.0, float(value) * scale)
        except ValueError:
            pass
        try:  # retry-after may also be an HTTP date
            return max(0.0, (parsedate_to_datetime(value) - datetime.now(UTC)).total_seconds())
        except (TypeError, ValueError):
            pass
    return None


def describe(error: Exception, *, secret: str) -> str:
    """Error class, HTTP status and the API's own message, with the key scrubbed out."""
    parts = [type(error).__name__]
    if isinstance(error, UNREADABLE_RESPONSE):
        parts.append("unreadable response body")
    if isinstance(error, anthropic.APIStatusError):
        parts.append(f"HTTP {error.status_code}")
        kind = getattr(error, "type", None)
        message = getattr(error, "api_message", None)
        if kind or message:
            parts.append(": ".join(str(p) for p in (kind, message) if p))
    text = ", ".join(parts)
    return text.replace(secret, "[redacted]") if secret else text

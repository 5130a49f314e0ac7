"""Whether an LLM endpoint is this machine or a private network, where a cloud rate limit is wrong.

Decided from the URL alone (no DNS lookup, so the same settings always mean the same limits):
``localhost`` and ``*.localhost``, and IP literals that are loopback, private (10/8, 172.16/12,
192.168/16, fc00::/7) or link-local. A named host on a private network is not recognised: set
`llm.requests_per_minute` for it (0: no limit).
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit


def is_local_endpoint(url: str | None) -> bool:
    """True for a loopback or private-network ``url``; None (the provider's own cloud) is not."""
    if not url:
        return False
    host = (urlsplit(url if "//" in url else f"//{url}").hostname or "").rstrip(".").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_link_local

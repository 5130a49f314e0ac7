"""Settings of the HTTP service (`serve`): what it accepts from a browser or a busy client.

A loopback server is still reachable from any web page the user opens (DNS rebinding), so the
Host header is checked against an allow-list; bodies, slow clients and waiting requests are
bounded so one client cannot hold the service. The risk policy is the server's: a client may ask
for less risky content than ``max_risk_level``, never more, and for ``show_risky`` only when
``allow_show_risky`` says so.
"""

from __future__ import annotations

from pydantic import Field

from graphunified_query.core.risk import RiskLevel
from graphunified_query.core.settings.section import Section


class ServerSettings(Section):
    allowed_hosts: tuple[str, ...] = Field(
        ("localhost", "127.0.0.1", "::1"),
        description="Host header names the service answers (any port); add the name clients use when "
        "serving beyond this machine. '*' allows any (not advised: DNS rebinding).",
    )
    max_body_bytes: int = Field(
        65_536, ge=1024, le=16_777_216, description="Largest request body; a larger one is answered 413."
    )
    header_timeout_seconds: float = Field(
        10.0,
        gt=0,
        le=300,
        description="A connection that has not sent its request headers by then is closed.",
    )
    body_timeout_seconds: float = Field(
        10.0, gt=0, le=300, description="A request whose body has not arrived by then is answered 408."
    )
    max_concurrent: int = Field(4, ge=1, le=256, description="Requests answered at the same time.")
    max_queue: int = Field(
        16, ge=0, le=10_000, description="Requests waiting for a turn; beyond that 503 with Retry-After."
    )
    reload_check_seconds: float = Field(
        1.0,
        ge=0,
        le=3600,
        description="How often (at most) a request checks for a newly published generation, which is "
        "then loaded and served without a restart; 0 checks on every request.",
    )
    max_risk_level: RiskLevel = Field(
        "medium",
        description="The riskiest content a client may ask for (its max_risk_level); above it the "
        "request is refused (422).",
    )
    allow_show_risky: bool = Field(
        False, description="Whether a client may ask for show_risky (every context, whatever its risk)."
    )

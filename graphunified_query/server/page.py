"""The web page served at `/`: static files shipped in the package (no CDN, no build step), the
home's evaluation report, and the Content-Security-Policy that keeps every page on this origin.

The page is a client of the JSON API (`/strategies`, `/ask`, `/retrieve`): its requests pass the
same guard and risk policy as any other client's. Its own routes read only the package's
`static/` folder and the home's `eval/` folder, by names listed from them, never by a client path.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fastapi import FastAPI, HTTPException
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

from graphunified_query.server.guard import ASGIApp, Message, Receive, Scope, Send
from graphunified_query.server.models import EvalReport

STATIC = Path(__file__).parent / "static"
STATIC_URL = "/static"
DOCS_STATIC_URL = "/static-offline-docs"  # fastapi-offline's Swagger UI and ReDoc assets
DOCS_PATHS = ("/docs", "/redoc")
# The page runs no inline script: an injected <script> in a passage could not run even if unescaped.
# Inline styles are allowed: cytoscape sizes its canvases with them.
PAGE_POLICY = (
    "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; object-src 'none'; "
    "base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)
# FastAPI's Swagger UI and ReDoc pages start from an inline script; nothing loads from elsewhere
# (ReDoc's footer logo from its CDN is refused here instead of being tried offline).
DOCS_POLICY = (
    "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; worker-src 'self' blob:; object-src 'none'; base-uri 'none'; "
    "frame-ancestors 'none'"
)


def add_page(app: FastAPI, home: Callable[[], Path]) -> None:
    """`/`, `/static/…`, `/eval/report` and `/eval/plots/{name}`; ``home`` is the served home."""
    app.mount(STATIC_URL, StaticFiles(directory=STATIC), name="static")

    app.add_middleware(PagePolicy)

    @app.get("/", include_in_schema=False)
    def page() -> FileResponse:
        return FileResponse(STATIC / "index.html", media_type="text/html")

    @app.get("/eval/report", response_model=EvalReport)
    def eval_report() -> EvalReport:
        """The home's latest `eval` results (`<home>/eval/`), as the page's Eval tab shows them."""
        return read_report(home() / "eval")

    @app.get(
        "/eval/plots/{name}", response_class=FileResponse, responses={404: {"description": "no such plot"}}
    )
    def eval_plot(name: str) -> FileResponse:
        plots = {path.name: path for path in _plots(home() / "eval")}
        if name not in plots:  # only a listed file: a name with a path in it is never opened
            raise HTTPException(404, f"no plot {name!r} in the home's eval/ folder; plots: {sorted(plots)}")
        return FileResponse(plots[name], media_type="image/png")


class PagePolicy:
    """ASGI middleware: every HTML response gets its Content-Security-Policy (the API docs' or the
    page's) and `nosniff`; JSON and assets pass untouched."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        policy = (DOCS_POLICY if scope["path"] in DOCS_PATHS else PAGE_POLICY).encode()

        async def with_policy(message: Message) -> None:
            headers = message.get("headers", []) if message["type"] == "http.response.start" else []
            if any(k.lower() == b"content-type" and v.startswith(b"text/html") for k, v in headers):
                policies = [(b"content-security-policy", policy), (b"x-content-type-options", b"nosniff")]
                message = {**message, "headers": [*headers, *policies]}
            await send(message)

        await self.app(scope, receive, with_policy)


def read_report(folder: Path) -> EvalReport:
    results = folder / "results.json"
    if not results.is_file():
        return EvalReport(
            available=False, note=f"no evaluation in {folder}: `eval SET --out {folder}` writes one"
        )
    try:
        payload: dict[str, Any] = json.loads(results.read_text(encoding="utf-8"))
        strategies = {
            name: {key: value for key, value in figures.items() if _scalar(value)}
            for name, figures in payload["strategies"].items()
        }
    except (ValueError, KeyError, AttributeError, TypeError) as error:
        return EvalReport(
            available=False, note=f"{results} is not an eval results file ({error}): run eval again"
        )
    report = folder / "report.md"
    return EvalReport(
        available=True,
        dataset=str(payload.get("dataset", "")),
        questions_evaluated=int(payload.get("questions_evaluated", 0)),
        strategies=strategies,
        report=report.read_text(encoding="utf-8", errors="replace") if report.is_file() else "",
        plots=[path.name for path in _plots(folder)],
    )


def _plots(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.png")) if folder.is_dir() else []


def _scalar(value: Any) -> bool:
    return value is None or (isinstance(value, int | float | str) and not isinstance(value, bool))

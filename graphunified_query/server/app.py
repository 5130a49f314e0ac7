"""The FastAPI application: /ask, /retrieve, /strategies, /health, the generated /openapi.json, the
web page at / (`page`), and the API docs at /docs and /redoc served offline (fastapi-offline)."""

from __future__ import annotations

import json
from importlib import metadata
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from fastapi_offline import FastAPIOffline

from graphunified_query.engine.query_engine import QueryEngine
from graphunified_query.server.guard import RequestGuard
from graphunified_query.server.models import Health, QueryAnswer, QueryRequest, Strategies
from graphunified_query.server.page import DOCS_STATIC_URL, add_page
from graphunified_query.server.service import InvalidRequest, QueryService

ANSWER_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {"model": QueryAnswer, "description": "the object `ask --json` prints"},
    500: {"description": "an engine failure; the traceback is in the server log, not the response"},
}


class CliJSONResponse(JSONResponse):
    """Encoded as `ask --json` encodes it (`json.dumps`), so the two outputs cannot differ."""

    def render(self, content: Any) -> bytes:
        return json.dumps(content).encode("utf-8")


def create_app(engine: QueryEngine) -> FastAPI:
    service = QueryService(engine)
    # Swagger UI and ReDoc from the package's own assets: FastAPI's load them from a CDN.
    app = FastAPIOffline(
        title="Graph-Unified query service",
        version=_version(),
        description="Answers and retrieved contexts from one loaded Graph-Unified index.",
        static_url=DOCS_STATIC_URL,
        swagger_ui_parameters={"validatorUrl": None},  # its badge asks a validator on the web
    )
    app.state.service = service
    app.state.server_settings = engine.settings.server  # make_server reads its timeouts
    app.add_middleware(RequestGuard, settings=engine.settings.server)  # Host, body, queue, valid JSON
    _document_params(app, service)
    add_page(app, lambda: service.current().snapshot.home)

    @app.exception_handler(InvalidRequest)
    async def invalid(_: Request, error: InvalidRequest) -> JSONResponse:
        # The shape FastAPI gives its own validation errors, so a client parses one format.
        detail = [
            {"type": "value_error", "loc": ["body", *error.field], "msg": str(error), "input": error.value}
        ]
        return JSONResponse(status_code=422, content={"detail": detail})

    @app.exception_handler(Exception)
    async def failed(_: Request, error: Exception) -> JSONResponse:
        # Starlette re-raises after answering, so uvicorn logs the traceback; the client gets one line.
        return JSONResponse(
            status_code=500, content={"detail": f"{type(error).__name__}: {error}; see the server log"}
        )

    @app.get("/health", response_model=Health)
    def health() -> Health:
        return service.health()

    @app.get("/strategies", response_model=Strategies)
    def strategies() -> Strategies:
        return service.describe()

    @app.post("/ask", response_class=CliJSONResponse, responses=ANSWER_RESPONSES)
    def ask(request: QueryRequest) -> CliJSONResponse:
        """Retrieve and generate an answer (just retrieve with `retrieve_only`)."""
        return CliJSONResponse(service.ask(request, retrieve_only=request.retrieve_only))

    @app.post("/retrieve", response_class=CliJSONResponse, responses=ANSWER_RESPONSES)
    def retrieve(request: QueryRequest) -> CliJSONResponse:
        """The contexts only (`answer` is null), whatever `retrieve_only` says."""
        return CliJSONResponse(service.ask(request, retrieve_only=True))

    return app


def _document_params(app: FastAPI, service: QueryService) -> None:
    """Each strategy's parameter model in the OpenAPI schema (components ``<Strategy>Params``), read
    from the registry: the ``params`` field of a request is one of them, chosen by ``strategy``."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = build()
            components = schema.setdefault("components", {}).setdefault("schemas", {})
            for name in service.strategies:
                model = service.engine.registry[name].params
                components[f"{name}_params"] = {**model.model_json_schema(), "title": f"{name} params"}
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def _version() -> str:
    try:
        return metadata.version("graph-unified")
    except metadata.PackageNotFoundError:
        return "0"

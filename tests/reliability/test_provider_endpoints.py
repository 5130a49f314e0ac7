"""`index` and queries reach the same provider endpoint: VOYAGE_BASE_URL (a proxy, a gateway, a
regional endpoint) used to steer queries only, while `index` embedded through api.voyageai.com,
because the run's embedder saw the Voyage key and nothing else of the environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphunified_assets.defs.resources import GraphUnifiedResource
from graphunified_query.core.providers.embedding import make_embedder
from graphunified_query.core.settings.model import load_settings
from tests.fakes.voyage_server import FakeVoyageServer

KEY = "voyage-test-key"


def test_index_embeds_through_voyage_base_url_as_queries_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "settings.yaml").write_text(
        "embedding:\n  provider: voyage\n  max_retries: 0\n  timeout_seconds: 5\n", encoding="utf-8"
    )
    with FakeVoyageServer(api_key=KEY) as server:
        monkeypatch.setenv("VOYAGE_BASE_URL", server.base_url)
        monkeypatch.setenv("VOYAGE_API_KEY", KEY)
        # What `index` builds (graphunified_assets/cli/main.py passes the key from the environment).
        GraphUnifiedResource(home=str(tmp_path), voyage_api_key=KEY).embedder().embed(["the Hale Mill"])
        make_embedder(load_settings(tmp_path).embedding).embed(["Who founded it?"], kind="query")
    assert [body["input"] for _, body in server.requests] == [["the Hale Mill"], ["Who founded it?"]]

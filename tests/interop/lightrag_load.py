"""Run with lightrag-hku's own interpreter (not ours): open a working folder through `LightRAG`'s
storages and print, as JSON, what LightRAG's classes read from it.

    /tmp/lightrag-venv/bin/python tests/interop/lightrag_load.py WORKING_DIR

The embedding function answers a text with the vector the folder stores for it (no model): a
chunk's own text must then find that chunk first in LightRAG's vector search, and a naive query
must return it as context without calling an LLM.
"""

import asyncio
import base64
import hashlib
import json
import sys
from pathlib import Path

import numpy as np
from lightrag import LightRAG, QueryParam
from lightrag.utils import EmbeddingFunc, Tokenizer


class CodePoints:
    """A tokenizer with no download (LightRAG's default fetches tiktoken's table from the web)."""

    def encode(self, content: str) -> list[int]:
        return [ord(c) for c in content]

    def decode(self, tokens: list[int]) -> str:
        return "".join(map(chr, tokens))


def stored_vectors(folder: Path) -> tuple[int, dict[str, np.ndarray]]:
    store = json.loads((folder / "vdb_chunks.json").read_text(encoding="utf-8"))
    dimension = store["embedding_dim"]
    matrix = np.frombuffer(base64.b64decode(store["matrix"]), np.float32).reshape(-1, dimension)
    return dimension, {record["content"]: matrix[i] for i, record in enumerate(store["data"])}


async def main(folder: Path) -> dict:
    dimension, vectors = stored_vectors(folder)

    async def embed(texts: list[str], **_: object) -> np.ndarray:
        return np.stack([vectors.get(t, np.ones(dimension, np.float32)) for t in texts])

    async def no_llm(*_: object, **__: object) -> str:
        raise AssertionError("the round trip must not call an LLM")

    rag = LightRAG(
        working_dir=str(folder),
        embedding_func=EmbeddingFunc(embedding_dim=dimension, func=embed),
        llm_model_func=no_llm,
        tokenizer=Tokenizer("code-points", CodePoints()),
    )
    await rag.initialize_storages()
    try:
        graph = rag.chunk_entity_relation_graph
        labels = await graph.get_all_labels()
        edges = await graph.get_all_edges() if hasattr(graph, "get_all_edges") else None
        doc_keys = list(json.loads((folder / "kv_store_full_docs.json").read_text(encoding="utf-8")))
        chunk_keys = list(json.loads((folder / "kv_store_text_chunks.json").read_text(encoding="utf-8")))
        full_docs = await rag.full_docs.get_by_ids(doc_keys)
        chunks = await rag.text_chunks.get_by_ids(chunk_keys)
        statuses = await rag.doc_status.get_status_counts()
        first = chunks[0]
        found = await rag.chunks_vdb.query(first["content"], top_k=1)
        entity = await rag.entities_vdb.get_by_id(f"ent-{hashlib.md5(labels[0].encode()).hexdigest()}")
        context = await rag.aquery(first["content"], param=QueryParam(mode="naive", only_need_context=True))
        return {
            "documents": sum(d is not None for d in full_docs),
            "chunks": sum(c is not None for c in chunks),
            "nodes": len(labels),
            "edges": len(edges) if edges is not None else None,
            "doc_status": {str(k): v for k, v in statuses.items()},
            "vectors": {
                "chunks": len(rag.chunks_vdb._client),
                "entities": len(rag.entities_vdb._client),
                "relationships": len(rag.relationships_vdb._client),
            },
            "nearest_to_first_chunk_is_it": bool(found) and found[0]["id"] == chunk_keys[0],
            "entity_vector_record": entity is not None and entity.get("entity_name") == labels[0],
            # LightRAG's own naive context holds the chunk, citing its document's file path.
            "naive_context_cites_first_chunk": isinstance(context, str)
            and f'"content": {json.dumps(first["content"])}}}' in context
            and f"] {first['file_path']}\n" in context,
        }
    finally:
        await rag.finalize_storages()


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(Path(sys.argv[1]))), indent=2, sort_keys=True))

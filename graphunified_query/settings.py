"""The one configuration model: chunking, providers, storage and strategy parameters.

Values come from (lowest to highest precedence) the defaults below, ``<home>/settings.yaml``
(or an explicit file) and ``GRAPHUNIFIED__SECTION__KEY`` environment variables. Secrets are
never settings: API keys are read from the environment by the provider that needs them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from graphunified_query.risk import RiskLevel
from graphunified_query.server_settings import ServerSettings
from graphunified_query.settings_file import closest_key, prepare

ENV_PREFIX = "GRAPHUNIFIED__"
SETTINGS_FILE_NAME = "settings.yaml"


class SettingsError(ValueError):
    """A settings file or variable is invalid; the message names it and says what to change."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ChunkingSettings(_Section):
    size: int = Field(
        512,
        ge=16,
        le=8192,  # no embedding model reads more in one input (local: embedding.max_length)
        description="Chunk size in tokens of the embedding model's tokenizer.",
    )
    overlap: int = Field(128, ge=0, description="Tokens shared by consecutive chunks.")
    min_size: int = Field(100, ge=1, description="A trailing chunk smaller than this is merged backwards.")

    @model_validator(mode="after")
    def _overlap_below_size(self) -> ChunkingSettings:
        if self.overlap >= self.size:
            raise ValueError(
                f"chunking.overlap ({self.overlap}) must be smaller than chunking.size ({self.size})"
            )
        if self.min_size > self.size:
            raise ValueError(
                f"chunking.min_size ({self.min_size}) must not exceed chunking.size ({self.size})"
            )
        return self


class EmbeddingSettings(_Section):
    provider: Literal["auto", "local", "voyage"] = Field(
        "auto", description="'auto' uses Voyage when VOYAGE_API_KEY is set, else the embedded MiniLM model."
    )
    voyage_model: str = Field("voyage-3.5", description="Voyage embedding model (embedding.provider voyage).")
    voyage_base_url: str | None = Field(None, description="Override Voyage's endpoint (tests, proxies).")
    batch_size: int = Field(64, ge=1, le=1000, description="Texts per Voyage request.")
    local_batch_size: int = Field(
        16, ge=1, le=256, description="Texts per local ONNX batch (16: fastest and ~0.6 GB, vs 64: ~1.9 GB)."
    )
    max_length: int = Field(256, ge=16, le=512, description="Token limit of the local model's input.")
    max_retries: int = Field(5, ge=0, description="Retries of a failed Voyage request (429, 5xx, timeouts).")
    timeout_seconds: float = Field(60.0, gt=0, description="Timeout of one Voyage request.")


class LLMSettings(_Section):
    provider: str = Field(
        "auto",
        description="'auto' uses Claude when ANTHROPIC_API_KEY is set, else the embedded defaults; "
        "'offline', 'anthropic', 'openai_compatible' (the server at llm.openai_base_url, e.g. Ollama, "
        "vLLM, llama.cpp), or any provider registered in providers/registry.py.",
    )
    model: str = Field(
        "claude-sonnet-4-5", description="Model name as the provider knows it ('llama3.1:8b' for Ollama)."
    )
    base_url: str | None = Field(None, description="Override the Anthropic endpoint (tests, proxies).")
    openai_base_url: str | None = Field(
        None,
        description="OpenAI-compatible endpoint up to /v1, e.g. http://127.0.0.1:11434/v1 (Ollama); "
        "a key, if the server needs one, comes from OPENAI_API_KEY.",
    )
    openai_structured_output: Literal["auto", "tools", "json", "json_schema"] = Field(
        "auto",
        description="How structured output is asked of an OpenAI-compatible server: function calling "
        "('tools'), JSON mode with the schema in the prompt ('json'), response_format json_schema "
        "(grammar-constrained decoding in llama.cpp server, vLLM, Ollama >= 0.5; 'json_schema'), or "
        "tools falling back to JSON mode when the server refuses them ('auto').",
    )
    llm_reports: bool = Field(
        True, description="Write community reports with the LLM; false: extractive reports, no report calls."
    )
    max_tokens: int = Field(
        4096,
        ge=16,
        description="Longest reply of one extraction or report call (small for tiny local models).",
    )
    max_gleanings: int = Field(
        1, ge=0, le=5, description="Extra 'what was missed?' extraction turns per chunk (GraphRAG gleaning)."
    )
    requests_per_minute: int = Field(50, ge=1, description="Rate limit: LLM requests per minute.")
    tokens_per_minute: int = Field(400_000, ge=1000, description="Rate limit: input tokens per minute.")
    max_retries: int = Field(6, ge=0, description="Retries of a failed LLM call (429, 5xx, timeouts).")
    retry_base_seconds: float = Field(
        1.0,
        gt=0,
        description="First backoff step; each retry doubles it (with jitter) unless retry-after says so.",
    )
    timeout_seconds: float = Field(120.0, gt=0, description="Timeout of one LLM call.")
    use_batches: bool = Field(False, description="Message Batches API for bulk extraction (half price).")
    batch_poll_seconds: float = Field(30.0, gt=0, description="How often a submitted batch is checked.")
    budget_usd: float | None = Field(None, ge=0, description="Stop cleanly before spending more than this.")
    concurrency: int = Field(4, ge=1, description="Parallel LLM calls within one run.")

    @model_validator(mode="after")
    def _openai_endpoint(self) -> LLMSettings:
        if self.provider != "auto":  # the default needs no registry (imported late: it is a provider)
            from graphunified_query.providers.registry import provider_names

            self._known_provider(provider_names())
        if self.provider == "openai_compatible" and not self.openai_base_url:
            raise ValueError(
                "llm.provider 'openai_compatible' needs llm.openai_base_url, e.g. "
                "http://127.0.0.1:11434/v1 (Ollama), http://127.0.0.1:8000/v1 (vLLM, llama.cpp server)"
            )
        return self

    def _known_provider(self, names: tuple[str, ...]) -> None:
        if self.provider not in names:
            raise ValueError(
                f"llm.provider {self.provider!r} is not a known provider; use one of {', '.join(names)}"
            )


class ModelPrice(_Section):
    """US dollars per million tokens."""

    input: float = Field(description="Input tokens.")
    output: float = Field(description="Output tokens.")
    cache_read: float = Field(description="Input tokens read from the prompt cache.")
    cache_write: float = Field(description="Input tokens written to the prompt cache.")


def _default_prices() -> dict[str, ModelPrice]:
    return {
        "claude-sonnet-4-5": ModelPrice(input=3.0, output=15.0, cache_read=0.30, cache_write=3.75),
        "claude-haiku-4-5": ModelPrice(input=1.0, output=5.0, cache_read=0.10, cache_write=1.25),
        "claude-opus-4-1": ModelPrice(input=15.0, output=75.0, cache_read=1.50, cache_write=18.75),
        # Older ids still named in configurations (Anthropic's list prices).
        "claude-3-5-sonnet-20241022": ModelPrice(input=3.0, output=15.0, cache_read=0.30, cache_write=3.75),
        "claude-3-5-haiku-20241022": ModelPrice(input=0.80, output=4.0, cache_read=0.08, cache_write=1.0),
    }


class ExtractionSettings(_Section):
    entity_types: tuple[str, ...] = Field(
        ("PERSON", "ORGANIZATION", "LOCATION", "EVENT", "PRODUCT", "CONCEPT", "DATE"),
        description="Entity types extraction keeps (the LLM is told them; spaCy labels map onto them).",
    )
    summarize_above_fragments: int = Field(
        4, ge=2, description="Summarize an entity description once it has more fragments than this."
    )
    # Domain tuning (`python -m graphunified_assets tune` writes these into settings.tuned.yaml).
    prompt_dir: Path | None = Field(
        None, description="Folder of tuned extraction prompts (extract_system.md, glean.md); None: packaged."
    )
    relationship_types: tuple[str, ...] = Field(
        (), description="Preferred relationship types, filled into a tuned prompt's {relationship_types}."
    )
    concept_heads: tuple[str, ...] = Field(
        (), description="Offline: noun phrases headed by these nouns are extracted as CONCEPT entities."
    )


class GraphSettings(_Section):
    synonym_threshold: float = Field(
        0.8, gt=0, le=1, description="Cosine of entity-name embeddings above which a synonym edge is added."
    )
    synonym_neighbours: int = Field(10, ge=1, description="At most this many synonym edges per entity.")
    max_cluster_size: int = Field(
        10, ge=2, description="Leiden splits a community larger than this into a deeper level."
    )
    max_level: int = Field(3, ge=0, le=10, description="Deepest community level kept (0 = top).")
    resolution: float = Field(1.0, gt=0, description="Leiden resolution: higher gives more, smaller ones.")
    seed: int = Field(0xBEEF, description="Leiden's random seed: same graph and seed, same communities.")
    report_max_input_tokens: int = Field(
        6000, ge=500, description="Context budget of one community report prompt."
    )
    chunk_similarity_threshold: float = Field(
        0.7, gt=0, le=1, description="Cosine of chunk vectors above which a SIMILAR_TO edge is added."
    )
    chunk_similarity_neighbours: int = Field(
        10, ge=1, description="At most this many SIMILAR_TO edges chosen by each chunk (its top-k)."
    )
    bm25_k1: float = Field(1.5, gt=0, description="BM25 term-frequency saturation (rank-bm25's default).")
    bm25_b: float = Field(0.75, ge=0, le=1, description="BM25 length normalization (rank-bm25's default).")


class GenerationSettings(_Section):
    """The answer call; unset values fall back to llm.model and query.answer_max_tokens."""

    model: str | None = Field(None, description="Model that writes answers (default: llm.model).")
    max_tokens: int | None = Field(
        None, ge=16, description="Longest answer (default: query.answer_max_tokens)."
    )
    temperature: float | None = Field(
        None, ge=0.0, le=2.0, allow_inf_nan=False, description="Sampling temperature of answers (default 0)."
    )


class QuerySettings(_Section):
    top_k: int = Field(
        10,
        ge=1,
        le=1000,
        description="Most contexts a query returns (a hard cap; link expansion fits inside).",
    )
    default_strategy: str = Field(
        "auto", description="Strategy of a request that names none: a registered name, or auto (routed)."
    )
    generation: GenerationSettings = GenerationSettings()
    context_window: int = Field(
        8000,
        ge=256,
        description="Tokens of the answer prompt: contexts plus the reserved system and query parts.",
    )
    answer_max_tokens: int = Field(1024, ge=64, description="Longest answer Claude may write.")
    map_concurrency: int = Field(4, ge=1, description="Parallel map calls of global search.")
    cache_ttl_seconds: float = Field(
        300.0, ge=0, description="How long a cached retrieval is reused for the same query (0: no cache)."
    )
    # The context pipeline between retrieval and generation (graphunified_query.context); every
    # field below can be overridden per call (`ask(..., max_risk_level="high")`, `--param`).
    max_risk_level: RiskLevel = Field(
        "medium", description="Contexts from chunks flagged above this level are left out of the prompt."
    )
    show_risky: bool = Field(
        False, description="Admin/debug: keep every context whatever its risk, with the risk marked."
    )
    source_type: tuple[str, ...] = Field(
        (), description="Only contexts from these document types (md, txt, pdf, jsonl); empty: any."
    )
    has_code: bool | None = Field(
        None, description="True: only contexts containing code; False: only those without; None: any."
    )
    document_ids: tuple[str, ...] = Field((), description="Only contexts from these documents; empty: any.")
    section_prefix: str = Field(
        "", description="Only contexts whose section path starts with this, e.g. 'Guide > Install'."
    )
    link_expansion: bool = Field(
        True, description="Add chunks linked from a hit (Markdown/wiki links, the same section's neighbours)."
    )
    max_expanded_per_hit: int = Field(2, ge=0, description="Linked chunks one hit may add.")
    max_total_expanded: int = Field(16, ge=0, description="Linked chunks added per query in all.")
    expansion_decay: float = Field(
        0.9, gt=0, le=1, description="A linked chunk's score: this times its hit's."
    )
    reserved_system_tokens: int = Field(
        1000, ge=0, description="Part of context_window kept for the system prompt (instructions)."
    )
    reserved_query_tokens: int = Field(
        256, ge=0, description="Part of context_window kept for the question and the prompt's framing."
    )

    @field_validator("source_type", "document_ids", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        # `--param source_type=md` arrives as a plain string; a lone value means a list of one.
        return (value,) if isinstance(value, str) else value

    @model_validator(mode="after")
    def _room_for_contexts(self) -> QuerySettings:
        if self.reserved_system_tokens + self.reserved_query_tokens >= self.context_window:
            raise ValueError(
                f"query.reserved_system_tokens ({self.reserved_system_tokens}) + "
                f"query.reserved_query_tokens ({self.reserved_query_tokens}) must leave room in "
                f"query.context_window ({self.context_window})"
            )
        return self


class RiskSettings(_Section):
    """Index-time risk flags of chunks (graphunified_assets.lib.risk).

    A change applies to documents indexed after it; unchanged documents keep their flags until
    they are re-indexed.
    """

    blocked_documents: tuple[str, ...] = Field(
        (), description="Document ids or globs ('untrusted/*') whose chunks are all flagged document_blocked."
    )
    blocked_injection_share: float = Field(
        0.5, gt=0, le=1, description="Block a document once this share of its chunks is injected (high)."
    )
    max_paragraph_chars: int = Field(4000, ge=100, description="A longer paragraph is oversized_paragraph.")
    max_code_block_chars: int = Field(
        8000, ge=100, description="A longer fenced code block is oversized_code_block."
    )


class StorageSettings(_Section):
    input_dir: Path = Field(
        Path("data/sample"), description="Folder the sensor and `index` read documents from."
    )
    publish_uri: str | None = Field(
        None,
        description=(
            "s3://bucket/prefix: every published generation is also copied there, for readers on "
            "other machines (`ask --home s3://bucket/prefix`). Credentials: AWS_* variables only."
        ),
    )
    endpoint_url: str | None = Field(
        None,
        description="S3-compatible endpoint (MinIO, R2, Ceph); default AWS_ENDPOINT_URL, else AWS itself.",
    )
    region: str = Field("us-east-1", description="Region of the bucket.")

    @field_validator("publish_uri")
    @classmethod
    def _s3_uri(cls, value: str | None) -> str | None:
        if value is not None and not (value.startswith("s3://") and value[len("s3://") :].strip("/")):
            raise ValueError(f"storage.publish_uri must look like s3://bucket/prefix, not {value!r}")
        return value


class LoggingSettings(_Section):
    format: Literal["text", "json"] = Field(
        "text", description="'json': one JSON object per line from `index` and from Dagster runs' logs."
    )
    level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field("INFO", description="Lowest level logged.")


class AutomationSettings(_Section):
    refresh_cron: str = Field(
        "0 3 * * *", description="When the `nightly_refresh` schedule rebuilds the global stage (cron)."
    )
    refresh_timezone: str = Field("UTC", description="Time zone of refresh_cron (IANA name).")
    refresh_enabled: bool = Field(
        False, description="Start the schedule switched on (otherwise switch it on in the UI)."
    )


class Settings(_Section):
    """Everything configurable in Graph-Unified, validated on load."""

    chunking: ChunkingSettings = ChunkingSettings()
    embedding: EmbeddingSettings = EmbeddingSettings()
    llm: LLMSettings = LLMSettings()
    prices: dict[str, ModelPrice] = Field(
        default_factory=_default_prices, description="US dollars per million tokens, by llm.model name."
    )
    extraction: ExtractionSettings = ExtractionSettings()
    graph: GraphSettings = GraphSettings()
    query: QuerySettings = QuerySettings()
    risk: RiskSettings = RiskSettings()
    storage: StorageSettings = StorageSettings()
    logging: LoggingSettings = LoggingSettings()
    automation: AutomationSettings = AutomationSettings()
    server: ServerSettings = ServerSettings()
    strategies: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="Per-strategy parameter defaults, strategies.<name>.<param> (see the strategy table).",
    )


def load_settings(
    home: Path | str = "data", *, file: Path | str | None = None, environ: Mapping[str, str] | None = None
) -> Settings:
    """Read settings for a data home: defaults, then the YAML file, then environment overrides."""
    path = Path(file) if file is not None else Path(home) / SETTINGS_FILE_NAME
    values: dict[str, Any] = _read_yaml(path) if (file is not None or path.exists()) else {}
    return _validated(values, str(path), environ)


def environment_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """Defaults and ``GRAPHUNIFIED__*`` variables only: for a reader with no home folder of its own."""
    return _validated({}, "defaults", environ)


def _validated(values: dict[str, Any], source: str, environ: Mapping[str, str] | None) -> Settings:
    environ = os.environ if environ is None else environ
    # ${VAR} values, refused literal secrets, keys other configurations spell differently.
    values = prepare(values, environ, source)
    for name, raw in environ.items():
        if name.startswith(ENV_PREFIX):
            keys = name[len(ENV_PREFIX) :].lower().split("__")
            _set_nested(values, keys, yaml.safe_load(raw) if raw else raw)
    try:
        return Settings.model_validate(values)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
            + (closest_key(Settings, e["loc"]) if e["type"] == "extra_forbidden" else "")
            for e in error.errors(include_url=False)
        )
        source = source if values else "defaults"
        raise SettingsError(
            f"Invalid settings ({source} and {ENV_PREFIX}* variables): {problems}. "
            "Fix the value(s) named here; `settings.yaml` keys mirror these dotted names."
        ) from None


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SettingsError(f"Settings file {path} does not exist.") from None
    except yaml.YAMLError as error:
        raise SettingsError(f"Settings file {path} is not valid YAML: {error}") from None
    except UnicodeDecodeError as error:
        raise SettingsError(
            f"Settings file {path} is not valid UTF-8 (byte {error.start}); save it as UTF-8."
        ) from None
    except IsADirectoryError:
        raise SettingsError(f"Settings file {path} is a folder; it must be a YAML file.") from None
    except OSError as error:
        raise SettingsError(f"Settings file {path} cannot be read ({error.strerror}).") from None
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise SettingsError(
            f"Settings file {path} must hold a mapping of sections, not {type(loaded).__name__}."
        )
    return loaded


def _set_nested(values: dict[str, Any], keys: list[str], value: Any) -> None:
    for key in keys[:-1]:
        values = values.setdefault(key, {})
    values[keys[-1]] = value

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

from pydantic import Field, ValidationError, field_validator, model_validator

from graphunified_query.core.settings.embedding import EmbeddingSettings, share_of_cores
from graphunified_query.core.settings.file import closest_key, parse_yaml, prepare, refuse_secret_values
from graphunified_query.core.settings.llm import LLMSettings, ModelPrice, default_prices
from graphunified_query.core.settings.query import QuerySettings
from graphunified_query.core.settings.section import Section
from graphunified_query.core.settings.server import ServerSettings

ENV_PREFIX = "GRAPHUNIFIED__"
SETTINGS_FILE_NAME = "settings.yaml"


class SettingsError(ValueError):
    """A settings file or variable is invalid; the message names it and says what to change."""


class ChunkingSettings(Section):
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


class ExtractionSettings(Section):
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
    parse_processes: int = Field(
        0,
        ge=0,
        description="Processes parsing with spaCy in one step (the offline extractor, offline relationship "
        "keywords). 0: this process's share of the cores, as embedding.local_threads counts it.",
    )

    def processes(self, side_by_side: int = 1) -> int:
        """`parse_processes`, or when 0 this process's share of the cores with ``side_by_side``
        steps computing at once on the machine (at least one)."""
        return self.parse_processes or share_of_cores(side_by_side)


class GraphSettings(Section):
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
    relationship_keyword_weight: float = Field(
        0.0,
        ge=0,
        le=1,
        description="Weight of a relationship's high-level keywords in its vector, as LightRAG embeds them "
        "(0: description and names only; 0.25 lowered lightrag's dev-set Recall@5, see docs/strategies.md).",
    )


class RiskSettings(Section):
    """Index-time risk flags of chunks (graphunified_assets.lib.risk.detector).

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


class StorageSettings(Section):
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


class LoggingSettings(Section):
    format: Literal["text", "json"] = Field(
        "text", description="'json': one JSON object per line from `index` and from Dagster runs' logs."
    )
    level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field("INFO", description="Lowest level logged.")


class AutomationSettings(Section):
    refresh_cron: str = Field(
        "0 3 * * *", description="When the `nightly_refresh` schedule rebuilds the global stage (cron)."
    )
    refresh_timezone: str = Field("UTC", description="Time zone of refresh_cron (IANA name).")
    refresh_enabled: bool = Field(
        False, description="Start the schedule switched on (otherwise switch it on in the UI)."
    )
    max_documents_per_run: int = Field(
        1000,
        ge=0,
        description="Documents one indexing run covers at most (`index` and the new-documents sensor): a "
        "larger update is split into several runs, each its own retry unit, that executors can spread "
        "(0 = no cap).",
    )


# strategies.enabled: the strategies a user runs; the pipeline builds only what they read.
ENABLED = "enabled"
# The keys of a strategies.<name> entry that define a composition (`strategies/composable/named.py`):
# combine: [first, second], or rerank: inner.
COMPOSITION_KEYS = ("combine", "rerank")


class Settings(Section):
    """Everything configurable in Graph-Unified, validated on load."""

    chunking: ChunkingSettings = ChunkingSettings()
    embedding: EmbeddingSettings = EmbeddingSettings()
    llm: LLMSettings = LLMSettings()
    prices: dict[str, ModelPrice] = Field(
        default_factory=default_prices, description="US dollars per million tokens, by llm.model name."
    )
    extraction: ExtractionSettings = ExtractionSettings()
    graph: GraphSettings = GraphSettings()
    query: QuerySettings = QuerySettings()
    risk: RiskSettings = RiskSettings()
    storage: StorageSettings = StorageSettings()
    logging: LoggingSettings = LoggingSettings()
    automation: AutomationSettings = AutomationSettings()
    server: ServerSettings = ServerSettings()
    strategies: dict[str, Any] = Field(
        default_factory=dict,
        description="Per-strategy parameter defaults, strategies.<name>.<param> (see the strategy table), "
        "and strategies.enabled.",
    )

    @field_validator("strategies")
    @classmethod
    def _strategy_entries(cls, value: dict[str, Any]) -> dict[str, Any]:
        for name, entry in value.items():
            if name == ENABLED:
                if not isinstance(entry, list) or not entry or not all(isinstance(n, str) for n in entry):
                    raise ValueError(
                        f"strategies.{ENABLED} lists strategy names (at least one), e.g. [naive, hybrid]"
                    )
            elif not isinstance(entry, dict):
                raise ValueError(f"strategies.{name} holds that strategy's parameters, a mapping")
        return value

    @property
    def strategy_entries(self) -> dict[str, dict[str, Any]]:
        """``strategies.<name>`` entries: parameters, or a composition's definition."""
        return {name: entry for name, entry in self.strategies.items() if name != ENABLED}

    @property
    def composition_parts(self) -> dict[str, tuple[str, ...]]:
        """The strategies each ``strategies.<name>`` composition is made of, by its name (a registered
        strategy's own ``rerank: true`` switch names none)."""
        parts: dict[str, tuple[str, ...]] = {}
        for name, entry in self.strategy_entries.items():
            for key in COMPOSITION_KEYS:
                value = entry.get(key)
                named = [value] if isinstance(value, str) else value if isinstance(value, list) else []
                if named and all(isinstance(v, str) for v in named):
                    parts[name] = tuple(str(v) for v in named)
        return parts

    @property
    def enabled_strategies(self) -> tuple[str, ...] | None:
        """``strategies.enabled``; None: every strategy is enabled (the default)."""
        enabled = self.strategies.get(ENABLED)
        return tuple(enabled) if enabled is not None else None


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
            _set_nested(values, keys, parse_yaml(raw, name, SettingsError) if raw else raw, name)
    refuse_secret_values(values, environ, SettingsError)
    try:
        settings = Settings.model_validate(values)
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
    if settings.strategies:  # the registry is imported only for a file that has the section
        from graphunified_query.strategies.settings_check import check_strategy_settings

        check_strategy_settings(settings)
    return settings


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        loaded = parse_yaml(path.read_text(encoding="utf-8"), f"Settings file {path}", SettingsError)
    except FileNotFoundError:
        raise SettingsError(f"Settings file {path} does not exist.") from None
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


def _set_nested(values: dict[str, Any], keys: list[str], value: Any, variable: str) -> None:
    for depth, key in enumerate(keys[:-1], start=1):
        values = values.setdefault(key, {})
        if not isinstance(values, dict):  # `llm: 5` in the file, or GRAPHUNIFIED__LLM=5, then __LLM__MODEL
            raise SettingsError(
                f"{variable} sets {'.'.join(keys)}, but {'.'.join(keys[:depth])} is a single value, not a "
                "section; remove one of the two."
            )
    values[keys[-1]] = value

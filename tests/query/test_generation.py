"""Answer generation: packing, the extractive offline answer, Claude over a loopback socket, selection."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from graphunified_query.core.providers.claude import ClaudeClient
from graphunified_query.core.providers.cost import Usage
from graphunified_query.core.providers.embedding import Embedder, make_embedder
from graphunified_query.core.providers.tokenizer import count_tokens
from graphunified_query.core.settings.model import EmbeddingSettings, LLMSettings, QuerySettings, Settings
from graphunified_query.generation import (
    DONT_KNOW,
    ExtractiveGenerator,
    LLMGenerator,
    format_contexts,
    make_generator,
    pack_contexts,
    says_dont_know,
)
from graphunified_query.strategies.results import GeneratedAnswer, RetrievalResult
from tests.fakes.anthropic_server import FakeAnthropicServer, text
from tests.fakes.recording_embedder import RecordingEmbedder

KEY = "sk-ant-test-generation"
QUERY = QuerySettings()
MILL = RetrievalResult(
    "The Hale Mill was founded by Thomas Hale in 1862 on the River Harrow. "
    "It wove wool cloth for the Harrow Valley Railway uniforms.",
    0.9,
    "mill.md > Hale Mill",
)
HALE = RetrievalResult(
    "Thomas Hale was born in Eastfold in 1831. He founded the Hale Mill.",
    0.8,
    "people/thomas-hale.md > Thomas Hale",
)
FLOOD = RetrievalResult(
    "The Great Flood\nIn 1894 the River Harrow flooded Eastfold and Millbrook.",
    0.7,
    "flood.txt > The Great Flood",
)


def _words(text: str) -> int:
    return len(text.split())


def _context(words: int, name: str) -> RetrievalResult:
    return RetrievalResult(" ".join([name] * words), 1.0, f"{name}.md > {name}")


# --- packing -----------------------------------------------------------------------------------


def test_packing_keeps_rank_order_and_lets_smaller_later_contexts_fill_the_budget() -> None:
    a, too_big, c, no_room, e = (
        _context(n, x) for n, x in [(4, "a"), (8, "b"), (3, "c"), (5, "d"), (3, "e")]
    )
    packed = pack_contexts([a, too_big, c, no_room, e], 10, _words)
    assert packed == (a, c, e)
    assert sum(_words(r.text) for r in packed) <= 10


def test_an_over_budget_top_context_is_truncated_not_dropped() -> None:
    first, second = _context(20, "big"), _context(2, "small")
    packed = pack_contexts([first, second], 5, _words)
    assert [r.text for r in packed] == ["big big big big big"]
    assert packed[0].metadata["truncated"] is True and packed[0].source == first.source


def test_truncation_respects_a_real_token_count() -> None:
    long_text = RetrievalResult("Antidisestablishmentarianism flourished. " * 200, 1.0, "a.md > b")
    (packed,) = pack_contexts([long_text], 300, count_tokens)
    assert 250 < count_tokens(packed.text) <= 300


def test_identical_texts_are_packed_once_keeping_the_higher_ranked() -> None:
    spaced = RetrievalResult(
        "  The Hale Mill was founded\nby Thomas Hale in 1862 on the River Harrow. ", 0.5, "x > y"
    )
    empty = RetrievalResult("   ", 0.4, "z > w")
    assert pack_contexts([MILL, spaced, empty, MILL, HALE], 1000, _words) == (MILL, spaced, HALE)
    assert pack_contexts([MILL, MILL], 1000, _words) == (MILL,)


def test_contexts_are_numbered_with_their_sources() -> None:
    formatted = format_contexts([MILL, HALE])
    assert formatted.startswith("[1] (Source: mill.md > Hale Mill)\nThe Hale Mill was founded")
    assert "\n\n[2] (Source: people/thomas-hale.md > Thomas Hale)\nThomas Hale was born" in formatted


# --- extractive --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def local_embedder() -> Embedder:
    return make_embedder(EmbeddingSettings(provider="local"), environ={})


@pytest.fixture
def extractive(local_embedder: Embedder) -> ExtractiveGenerator:
    return ExtractiveGenerator(RecordingEmbedder(local_embedder), QUERY)


@pytest.mark.parametrize(
    ("question", "expected", "source"),
    [
        ("When was Thomas Hale born?", "born in Eastfold in 1831", "people/thomas-hale.md > Thomas Hale"),
        (
            "Which towns did the River Harrow flood?",
            "flooded Eastfold and Millbrook",
            "flood.txt > The Great Flood",
        ),
        ("What did the mill weave?", "It wove wool cloth", "mill.md > Hale Mill"),
    ],
)
def test_extractive_answer_quotes_the_answering_sentence_first_with_its_citation(
    extractive: ExtractiveGenerator, question: str, expected: str, source: str
) -> None:
    answer = extractive.generate(question, [MILL, HALE, FLOOD])
    assert answer.supported and answer.llm_calls == 0 and answer.cost_usd == 0.0
    first = answer.text.split("[Source:")[0]
    assert expected in first, answer.text
    assert answer.text.index(f"[Source: {source}]") == len(first)
    assert answer.contexts == (MILL, HALE, FLOOD)


def test_extractive_answer_embeds_each_distinct_sentence_once_in_one_batch(
    extractive: ExtractiveGenerator,
) -> None:
    overlapping = RetrievalResult("Thomas Hale was born in Eastfold in 1831. He died in 1901.", 0.6, "a > b")
    extractive.generate("Who founded the Hale Mill?", [MILL, HALE, FLOOD, overlapping])
    embedder = extractive.embedder
    assert isinstance(embedder, RecordingEmbedder)
    # The question, then the six distinct sentences (the heading is no sentence, the repeat is shared).
    assert [len(batch) for batch in embedder.batches] == [1, 6]


def test_a_sentence_opening_with_a_pronoun_brings_the_one_naming_it(extractive: ExtractiveGenerator) -> None:
    answer = extractive.generate("Who founded the Hale Mill?", [HALE])
    assert answer.text.startswith("Thomas Hale was born in Eastfold in 1831. He founded the Hale Mill.")


@pytest.mark.parametrize(
    "question", ["What is the boiling point of mercury?", "How do vaccines train immunity?"]
)
def test_extractive_says_it_does_not_know_when_contexts_are_unrelated(
    extractive: ExtractiveGenerator, question: str
) -> None:
    answer = extractive.generate(question, [MILL, HALE, FLOOD])
    assert answer.text == DONT_KNOW and not answer.supported
    assert says_dont_know(answer.text)


def test_extractive_without_contexts_does_not_know(extractive: ExtractiveGenerator) -> None:
    answer = extractive.generate("When was Thomas Hale born?", [])
    assert answer == GeneratedAnswer(DONT_KNOW, (), supported=False)


# --- Claude over a loopback socket ---------------------------------------------------------------


@pytest.fixture
def server() -> Iterator[FakeAnthropicServer]:
    reply = "Thomas Hale was born in 1831. [Source: people/thomas-hale.md > Thomas Hale]"
    with FakeAnthropicServer(lambda _: text(reply), api_key=KEY) as fake:
        yield fake


def _claude(server: FakeAnthropicServer, **query: Any) -> LLMGenerator:
    limits = {"requests_per_minute": 100_000, "tokens_per_minute": 10**9}
    llm = LLMSettings(base_url=server.base_url, max_retries=0, **limits)
    client = ClaudeClient(llm, Settings().prices, api_key=KEY, base_delay=0.001)
    return LLMGenerator(client, QuerySettings(**query))


def test_claude_request_carries_numbered_contexts_and_a_cacheable_system_prompt(
    server: FakeAnthropicServer,
) -> None:
    answer = _claude(server, answer_max_tokens=300).generate("When was Thomas Hale born?", [HALE, MILL])
    assert answer.text.endswith("[Source: people/thomas-hale.md > Thomas Hale]") and answer.supported
    (body,) = server.bodies
    (system,) = body["system"]
    assert system["cache_control"] == {"type": "ephemeral"} and DONT_KNOW in system["text"]
    (message,) = body["messages"]
    assert message["content"].startswith("Contexts:\n\n[1] (Source: people/thomas-hale.md > Thomas Hale)\n")
    assert "[2] (Source: mill.md > Hale Mill)" in message["content"]
    assert message["content"].endswith("Question: When was Thomas Hale born?")
    assert body["max_tokens"] == 300


def test_claude_answer_reports_its_own_usage_and_cost(server: FakeAnthropicServer) -> None:
    generator = _claude(server)
    usage = {"input_tokens": 900, "output_tokens": 120, "cache_creation_input_tokens": 400}
    server.enqueue(text("Born in 1831. [Source: people/thomas-hale.md > Thomas Hale]"), usage=usage)
    answer = generator.generate("When was Thomas Hale born?", [HALE])
    assert answer.usage == Usage(900, 120, 0, 400) and answer.llm_calls == 1
    assert answer.cost_usd == pytest.approx((900 * 3.0 + 120 * 15.0 + 400 * 3.75) / 1e6)
    assert answer.cost_usd == pytest.approx(generator.client.ledger.dollars)


def test_later_answers_read_the_instructions_from_the_prompt_cache(server: FakeAnthropicServer) -> None:
    generator = _claude(server)
    first = generator.generate("When was Thomas Hale born?", [HALE])
    second = generator.generate("Who founded the Hale Mill?", [MILL])
    assert first.usage.cache_write_tokens > 0 and first.usage.cache_read_tokens == 0
    assert second.usage.cache_read_tokens == first.usage.cache_write_tokens
    assert second.cost_usd < first.cost_usd
    assert first.cost_usd + second.cost_usd == pytest.approx(generator.client.ledger.dollars)


@pytest.mark.parametrize("reply", [DONT_KNOW, "I don’t know based on the provided sources.", ""])
def test_claude_saying_it_does_not_know_is_unsupported(server: FakeAnthropicServer, reply: str) -> None:
    server.enqueue(text(reply))
    answer = _claude(server).generate("What is the boiling point of mercury?", [MILL])
    assert not answer.supported and says_dont_know(answer.text)


def test_claude_is_not_called_without_contexts(server: FakeAnthropicServer) -> None:
    answer = _claude(server).generate("When was Thomas Hale born?", [])
    assert not answer.supported and answer.llm_calls == 0 and server.requests == []


# --- choosing the generator ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("provider", "environ", "expected"),
    [
        ("offline", {"ANTHROPIC_API_KEY": KEY}, ExtractiveGenerator),
        ("auto", {}, ExtractiveGenerator),
        ("auto", {"ANTHROPIC_API_KEY": KEY}, LLMGenerator),
        ("anthropic", {}, LLMGenerator),
    ],
)
def test_make_generator_picks_claude_only_when_configured(
    local_embedder: Embedder, provider: str, environ: dict[str, str], expected: type
) -> None:
    settings = Settings.model_validate({"llm": {"provider": provider}})
    made: list[Settings] = []

    def factory(s: Settings) -> ClaudeClient:
        made.append(s)
        return ClaudeClient(s.llm, s.prices, api_key=KEY)

    generator = make_generator(settings, embedder=local_embedder, client_factory=factory, environ=environ)
    assert isinstance(generator, expected)
    assert made == ([settings] if expected is LLMGenerator else [])

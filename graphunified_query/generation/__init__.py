"""Answers from retrieved contexts: packing, the answer prompt, the LLM or offline extraction."""

from __future__ import annotations

from graphunified_query.generation.extractive import ExtractiveGenerator
from graphunified_query.generation.llm_generator import LLMGenerator
from graphunified_query.generation.packing import pack_contexts
from graphunified_query.generation.prompt import DONT_KNOW, format_contexts, says_dont_know
from graphunified_query.generation.select import Generator, generator_for, make_generator

__all__ = [
    "DONT_KNOW",
    "ExtractiveGenerator",
    "Generator",
    "LLMGenerator",
    "format_contexts",
    "generator_for",
    "make_generator",
    "pack_contexts",
    "says_dont_know",
]

"""Answers from retrieved contexts: packing, the answer prompt, Claude or offline extraction."""

from __future__ import annotations

from graphunified_query.generation.claude_generator import ClaudeGenerator
from graphunified_query.generation.extractive import ExtractiveGenerator
from graphunified_query.generation.packing import pack_contexts
from graphunified_query.generation.prompt import DONT_KNOW, format_contexts, says_dont_know
from graphunified_query.generation.select import Generator, make_generator

__all__ = [
    "DONT_KNOW",
    "ClaudeGenerator",
    "ExtractiveGenerator",
    "Generator",
    "format_contexts",
    "make_generator",
    "pack_contexts",
    "says_dont_know",
]

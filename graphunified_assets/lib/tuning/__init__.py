"""Prompt tuning: sample a corpus, propose domain-specific extraction prompts and types, measure them."""

#!/usr/bin/env sh
# Provider limits across every run and step of one instance (DAGSTER_HOME=<home>/dagster):
# `llm` = Claude / OpenAI-compatible calls (extractions, description summaries, reports),
# `models` = embedding calls. Each step in a pool holds one slot while it runs; with the LLM
# provider's rate limits (llm.requests_per_minute) shared, more than 2-4 parallel LLM steps only queue.
set -eu
dagster instance concurrency set llm "${LLM_SLOTS:-2}"
dagster instance concurrency set models "${MODEL_SLOTS:-1}"
dagster instance concurrency get --all

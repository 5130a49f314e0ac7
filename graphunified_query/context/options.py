"""Which `QuerySettings` fields are per-call context options (``ask(..., max_risk_level="high")``).

A request may set these for one call, in its ``context`` or mixed into ``params`` as ``--param``
does; `request.resolve` validates them as settings (a typo or an out-of-range value is an error).
"""

from __future__ import annotations

# The QuerySettings fields the context pipeline reads; a request option of that name overrides it.
PIPELINE_KEYS = frozenset(
    {
        "max_risk_level",
        "show_risky",
        "source_type",
        "has_code",
        "document_ids",
        "section_prefix",
        "link_expansion",
        "max_expanded_per_hit",
        "max_total_expanded",
        "expansion_decay",
        "context_window",
        "reserved_system_tokens",
        "reserved_query_tokens",
    }
)

"""On-disk formats of the strategy indexes, shared by the pipeline (writer) and the query side (reader)."""

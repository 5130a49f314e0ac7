"""Community reports: what each community is about, for global search (plain logic, no Dagster)."""

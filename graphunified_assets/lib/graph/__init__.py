"""Graph construction, communities and community reports (plain logic, no Dagster)."""

"""`python -m graphunified_query eval`: retrieval, answer quality, cost and latency per strategy."""

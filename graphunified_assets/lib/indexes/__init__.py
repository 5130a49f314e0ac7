"""What the strategy indexes' steps keep between runs, so an update redoes only what changed."""

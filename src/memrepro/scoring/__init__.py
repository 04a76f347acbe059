"""Answer extraction, normalisation and metrics: pure functions over strings."""

"""Questions, outcome matrices and deterministic splits: the inputs every other part reads."""

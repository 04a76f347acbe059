"""Model builders for offline runs (a tiny randomly initialised Qwen2 and its tokenizer)."""

TINY_CONTEXT = 4096  # a tiny model's max_position_embeddings unless the config sets it

"""Model builders for offline runs (a tiny randomly initialised Qwen2 and its tokenizer)."""

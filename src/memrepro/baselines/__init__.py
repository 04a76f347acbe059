"""The paper's baselines as workflows: direct long-context generation and RAG top-K."""

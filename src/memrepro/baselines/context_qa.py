"""The baselines of Mem-α's tables (long_context_eval.py in Mem-α's official code): a model
answers each question of an instance from a context in one prompt.

- Long-Context: the context is every chunk of the instance;
- RAG-Top2: the BM25 top-k chunks for the *raw* question (no query prompt), best first
  (`memrepro.agents.retrieval.BM25Retriever`: the official tokenisation; no query -> the first k);
- MEM1: the memory text the MEM1 agent wrote (`memrepro.agents.mem1`).

The user message is the instance's task `prompt`, the context parts and the query-prompted
question joined by blank lines; the system prompt depends on the data source; Qwen3's chat
template keeps its default (thinking on). The official code left-truncates the chat-templated
prompt to its last 30,000 tokens and sends it to the completions API, which for an over-long
prompt also cuts the system prompt and the user header away; through the chat protocol we keep
both and left-truncate the user message so that the templated prompt fits (config/README.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memrepro.agents.chunking import window_ids
from memrepro.data.memalpha import query
from memrepro.engines.base import ChatRequest, prompt_ids

_SUMMARY = (
    "You are a helpful assistant with access to comprehensive book summaries stored in your "
    "memory. Use the information from the provided context to answer questions about the book "
    "content. Provide detailed and accurate responses based on the book content."
)
_CLASSIFY = (
    "You are a helpful assistant specialized in test-time learning classification. Based on the "
    "provided context and examples, learn the classification patterns and classify new content "
    "according to the established patterns. When providing classification answers, use the "
    "format \\boxed{label} where label is a single number representing the classification "
    "category."
)
_PERSONAL = (
    "You are a helpful assistant with access to personalized information about the user. Use "
    "the information from the provided context to answer questions in a personalized manner. "
    "Make sure to recall and utilize the user's personal information correctly in your "
    "responses."
)
_DEFAULT = (
    "You are a helpful assistant. Answer the question as accurately as possible based on the "
    "provided context. Be concise and focus on providing the most relevant information."
)


def system_prompt(source: str) -> str:
    """The official system prompt of a data source (first matching rule wins)."""
    if source == "booksum" or "sum" in source:
        return _SUMMARY
    if "icl" in source or source.startswith("pubmed"):
        return _CLASSIFY
    if source == "lme_train" or source.startswith("longmemeval_s"):
        return _PERSONAL
    return _DEFAULT


def user_message(task_prompt: str, context: str | Sequence[str], question: str) -> str:
    """prompt, context (parts joined by blank lines), question: joined by blank lines."""
    text = context if isinstance(context, str) else "\n\n".join(context)
    return f"{task_prompt}\n\n{text}\n\n{question}"


def context_request(
    tokenizer: Any,
    source: str,
    task_prompt: str,
    context: str | Sequence[str],
    question: str,
    cap: int,
    max_tokens: int,
) -> ChatRequest:
    """[source's system prompt, user message], the user message cut from the left until the
    chat-templated prompt has at most `cap` tokens (`question` raw: its query prompt is added
    here). Raises ValueError if even an empty user message does not fit."""
    system = {"role": "system", "content": system_prompt(source)}
    content = user_message(task_prompt, context, query(source, question))
    while True:
        request = ChatRequest((system, {"role": "user", "content": content}), max_tokens)
        excess = len(prompt_ids(tokenizer, request)) - cap
        if excess <= 0:
            return request
        ids = tokenizer.encode(content, add_special_tokens=False)
        if excess >= len(ids):
            raise ValueError(f"{source}: the system prompt alone exceeds the {cap}-token cap")
        # decoding a token suffix can re-tokenise longer: cut again until it fits
        content = tokenizer.decode(ids[excess:], skip_special_tokens=False)


def tail(tokenizer: Any, parts: Sequence[str], max_tokens: int) -> str:
    """The context's last `max_tokens` tokens: what survives the left truncation of any prompt
    that ends with it, cut once per instance instead of once per question. Only the end is
    tokenized (`window_ids`: the whole text's last ids), so a 50 MB context costs the window's
    memory."""
    text = "\n\n".join(parts)
    ids, cut = window_ids(tokenizer, text, 0, max_tokens)
    return tokenizer.decode(ids) if cut else text

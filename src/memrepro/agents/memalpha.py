"""Mem-α: memorise a chunk stream into a structured memory through tool calls, then answer each
question from that memory with a frozen QA model (Mem-α's official code).

Two workflows over the engine protocol, driven by `memrepro.agents.driver.run_batched`:

- `memorize(chunks, memory, config)`: one conversation per chunk, [system, user] only: the
  system prompt renders the memory (core in full, the last `visible_items` semantic and episodic
  items with their ids) and appends the tools; the user turn is the official prompts YAML's
  `unified_prompt` around the chunk. Every call of the generation is executed in order on
  `memory`; nothing is fed back. Each step's calls and results go to `trace` (r2/r4 in training).
  In training (`cut_responses`, official) a generation is first cut as the official training
  code cuts it (`cut_response`); its rows train on the kept tokens (`kept_token_count`).
- `qa_request(memory, question, ...)`, answered by `answer(request)`: the QA step of the
  official memory server: BM25 top-20 of semantic and of episodic for the question, core
  always, rendered without ids; top-k shrinks while the system prompt exceeds 30,000 tokens of
  the QA model's tokenizer.

The memory policy and the QA model are different engines (Memalpha-4B and Qwen3-32B), so an
evaluation runs every instance's memorisation first, then every question.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from memrepro.agents.driver import Workflow
from memrepro.agents.memalpha_tools import (
    RESULT,
    ToolCall,
    ToolResult,
    execute,
    function_call_block,
    parse_calls,
    tool_schemas,
)
from memrepro.agents.structured_memory import (
    CORE,
    EPISODIC,
    SEARCH_TOP_K,
    SEMANTIC,
    StructuredMemory,
)
from memrepro.engines.base import ChatRequest

# config/prompts_wrt_datasource.yaml `unified_prompt`, verbatim (not the paper's Figure 6, which
# drops the bold headings and the "Important" prefix).
MEMORIZE_USER_TEMPLATE = (
    "Remember the following content chunk by completing these steps:\n\n"
    "1. **Core Memory Update**: Maintain an understanding of the user, or a summary of what the "
    "user is reading, or a set of classification rules summarized from the classification "
    "examples (label 1: meaning; label 2: meaning, etc.). Keep updates brief (a few sentences "
    "maximum).\n\n"
    "2. **Memory Storage**:\n"
    "   - **Episodic Memory**: Record user actions, user's friends' actions and assistant actions "
    'with timestamps (format: "At timestamp t, user did X")\n'
    "   - **Semantic Memory**: Record key facts and information (format: \"John is User's "
    '18-year-old friend", "Harry Potter author: J.K. Rowling", "Sample: xxx; Label: xxx")\n\n'
    "<new_chunk>\n{context}\n</new_chunk>\n\n"
    "**Important**: Response limit is {max_new_tokens} tokens. Be concise and brief in all "
    "memory updates."
)
RESPONSE_LIMIT_FRACTION = 0.8  # the prompt announces int(0.8 * max_new_tokens) tokens

_STORE_CUES = {
    CORE: "* core_memory: Information stored so far (stored as a compact paragraph)",
    SEMANTIC: "* semantic_memory: General knowledge, factual or conceptual information",
    EPISODIC: "* episodic_memory: Specific personal experiences or events with timestamp "
    "(mandatory), place, or context",
}
NO_STORES = "No memory modules are enabled for this run."

QA_TOP_K = SEARCH_TOP_K  # items per store shown to the QA model
QA_PROMPT_CAP = 30000  # QA-model tokens the system prompt must stay below
QA_MAX_TOKENS = 2048


@dataclass
class ChunkStep:
    """One memorisation conversation: what the model wrote (as executed: cut in training) and
    what its calls did."""

    response: str
    calls: list[ToolCall] = field(default_factory=list)
    results: list[ToolResult] = field(default_factory=list)
    visible_items: int = 0
    cut: bool = False  # the generation was longer than `response` (`cut_response`)


def load_memory_counter(spec: str, tokenizer: Any = None) -> Callable[[str], int]:
    """The memory's token counter: tiktoken's o200k_base (official; tiktoken downloads it once
    into its cache, TIKTOKEN_CACHE_DIR), or a Hugging Face `tokenizer` (spec: its model)."""
    if spec == "o200k_base":
        import tiktoken

        encoding = tiktoken.get_encoding(spec)
        return lambda text: len(encoding.encode(text, disallowed_special=()))
    if tokenizer is None:
        raise ValueError(f"memory tokenizer {spec!r}: pass its tokenizer")
    return lambda text: len(tokenizer.encode(text, add_special_tokens=False))


# --- memorising ------------------------------------------------------------------------------


def memorize_system_prompt(memory: StructuredMemory, visible_items: int) -> str:
    """The official "memorie" system prompt for this memory state, tools appended."""
    sections = []
    if CORE in memory.enabled:
        sections.append(f"<core_memory>\n{memory.core}\n</core_memory>")
    for store in (SEMANTIC, EPISODIC):
        if store not in memory.enabled:
            continue
        items = memory.semantic if store == SEMANTIC else memory.episodic
        shown = items[-visible_items:] if visible_items > 0 else []
        body = "\n".join(f"[{i}] {c}" for i, c in shown) or "Empty."
        sections.append(
            f"<{store}_memory> (Only show the most recent {len(shown)} out of {len(items)} "
            f"memories)\n{body}\n</{store}_memory>"
        )
    cues = "\n".join(_STORE_CUES[s] for s in memory.enabled) or f"* {NO_STORES}"
    state = "\n\n".join(sections) or NO_STORES
    prompt = (
        "You are a personal assistant with a sophisticated memory system. Your primary task is "
        "to carefully analyze, understand, and memorize the information provided by the user.\n\n"
        "MEMORIZING MODE INSTRUCTIONS:\n"
        "- Read and understand all information shared by the user\n"
        "- Identify key facts, concepts, and relationships\n"
        "- Store important information using the appropriate memory type:\n"
        f"{cues}\n"
        "- Use these cues to decide memory type based on content\n\n"
        f"CURRENT MEMORY STATE:\n{state}\n\n"
        "Focus on understanding and memorizing. Use memory tools actively to store new "
        "information.\n"
        "Since this is the memorization process, if you think all the information has been "
        "memorized, you can respond with 'Done'. This information will not be seen by the user.\n"
        "Meanwhile, you will be queried only once, so make sure to call all the memory "
        "insertion functions in one turn."
    )
    return f"{prompt}\n\n{function_call_block(tool_schemas(memory))}"


def memorize_user_prompt(chunk: str, max_new_tokens: int) -> str:
    limit = int(max_new_tokens * RESPONSE_LIMIT_FRACTION)
    return MEMORIZE_USER_TEMPLATE.format(context=chunk, max_new_tokens=limit)


@dataclass(frozen=True)
class MemorizePrompts:
    """How a memorisation step is worded: `system(memory, visible_items)`, the system prompt for
    a memory state, and `user(chunk, max_new_tokens)`, the user turn around a chunk."""

    system: Callable[[StructuredMemory, int], str]
    user: Callable[[str, int], str]


OFFICIAL_PROMPTS = MemorizePrompts(memorize_system_prompt, memorize_user_prompt)


@dataclass(frozen=True)
class MemAlphaConfig:
    """The memory policy's settings (official eval: greedy, 2048 new tokens, thinking off)."""

    max_new_tokens: int = 2048
    visible_items: int = 5  # MemoryAgent.MAX_MEMORY_ITEMS
    prompt_cap: int | None = None  # training: 6144 (visible items halve until the prompt fits)
    enable_thinking: bool = False
    # an unreadable ✿FUNCTION✿ block: skipped (official) or a failed call, counted in r2/r4
    count_unreadable_calls: bool = False
    cut_responses: bool = False  # training: `cut_response` before executing (official)
    prompts: MemorizePrompts = OFFICIAL_PROMPTS  # the CPU toy task words them compactly


def memorize_request(
    memory: StructuredMemory,
    chunk: str,
    config: MemAlphaConfig,
    prompt_tokens: Callable[[ChatRequest], int] | None = None,
) -> tuple[ChatRequest, int]:
    """The chunk's request and how many items per store it shows. With `config.prompt_cap`,
    the visible items halve (5, 2, 1, 0) until the templated prompt fits, as in training."""
    user = config.prompts.user(chunk, config.max_new_tokens)
    visible = config.visible_items
    while True:
        request = ChatRequest(
            (
                {"role": "system", "content": config.prompts.system(memory, visible)},
                {"role": "user", "content": user},
            ),
            config.max_new_tokens,
            enable_thinking=config.enable_thinking,
        )
        if config.prompt_cap is None:
            return request, visible
        if prompt_tokens is None:
            raise ValueError("a prompt cap needs `prompt_tokens` to measure the prompt")
        size = prompt_tokens(request)
        if size <= config.prompt_cap:
            return request, visible
        if visible == 0:
            raise ValueError(
                f"memorisation prompt of {size} tokens exceeds the cap of {config.prompt_cap} "
                "even with no memory items shown (the chunk alone is too long)"
            )
        visible //= 2


def memorize(
    chunks: Iterable[str],
    memory: StructuredMemory,
    config: MemAlphaConfig,
    trace: list[ChunkStep] | None = None,
    prompt_tokens: Callable[[ChatRequest], int] | None = None,
) -> Workflow:
    """Memorise `chunks` into `memory` (changed in place); returns the final memory as JSON."""
    for chunk in chunks:
        request, visible = memorize_request(memory, chunk, config, prompt_tokens)
        completion = yield request
        generated = completion.text.strip()
        response = cut_response(generated) if config.cut_responses else generated
        _, calls = parse_calls(response, config.count_unreadable_calls)
        results = [execute(memory, call) for call in calls]
        if trace is not None:
            trace.append(ChunkStep(response, calls, results, visible, response != generated))
    return json.dumps(memory.snapshot(), ensure_ascii=False)


# The official training code cuts each generation after the first of these closing tags present
# (checked in this order; tags of an older tool format, which its models rarely write), then
# before the first tool-result marker (a result the model made up), before it executes, rewards
# and trains on it. Evaluation executes the whole generation.
RESPONSE_CUT_TAGS = ("</memory_insert>", "</memory_update>", "</memory_delete>", "</done>")


def cut_response(text: str) -> str:
    """`text` as the official training code keeps it (see RESPONSE_CUT_TAGS)."""
    for tag in RESPONSE_CUT_TAGS:
        if tag in text:
            text = text.split(tag, 1)[0] + tag
            break
    if f"{RESULT}:" in text:
        text = text.split(f"{RESULT}:", 1)[0].strip()
    return text


def kept_token_count(tokenizer: Any, response_ids: Sequence[Any], step: ChunkStep) -> int:
    """How many of a step's generated tokens it trains on: all, unless its response was cut;
    then the fewest whose decoding (special tokens skipped, leading whitespace stripped, as
    `memorize` reads it) starts with the kept text. The row trains on the tokens the policy
    sampled, with their log-probs (the official code re-tokenises the kept text; the two
    differ at most in the boundary token)."""
    if not step.cut:
        return len(response_ids)

    def covers(n: int) -> bool:
        text = tokenizer.decode(response_ids[:n], skip_special_tokens=True).lstrip()
        return text.startswith(step.response)

    low, high = 0, len(response_ids)
    while low < high:
        middle = (low + high) // 2
        if covers(middle):
            high = middle
        else:
            low = middle + 1
    return high


# --- answering from memory ---------------------------------------------------------------------


def retrieve(memory: StructuredMemory, query: str, top_k: int) -> dict[str, list[str]]:
    """The QA step's view: per list store, the top-k contents for `query` by BM25, best first
    (ties in store order); nothing from a store when the query has no word (official)."""
    from memrepro.agents.retrieval import words

    if not words(query):
        return {SEMANTIC: [], EPISODIC: []}
    return {
        store: [next(iter(item.values())) for item in memory.search(store, query, top_k)]
        for store in (SEMANTIC, EPISODIC)
    }


def qa_system_prompt(core: str | None, view: dict[str, list[str]]) -> str:
    """The memory server's system prompt (paper Figure 10; semantic before episodic as in the
    code): core only when non-empty, items numbered without ids."""
    blocks, structure = [], []
    if core and core.strip():
        blocks.append(f"<core_memory>\n{core}\n</core_memory>")
        structure.append(
            "- Core Memory: Fundamental facts about the user (preferences, roles, goals, etc.)"
        )
    for store in (SEMANTIC, EPISODIC):
        items = "\n".join(f"{n}. {c}" for n, c in enumerate(view[store], 1))
        blocks.append(f"<{store}_memory>\n{items or '(No memories stored)'}\n</{store}_memory>")
    structure += [
        "- Semantic Memory: General knowledge, factual or conceptual information",
        "- Episodic Memory: Specific personal experiences or events with time and context",
    ]
    memory_structure = "\n".join(structure)
    memory_content = "\n\n".join(blocks)
    return (
        "You are a reasoning assistant with access to structured memory. Use the memories below "
        "to provide accurate, relevant, and comprehensive responses to user queries.\n\n"
        f"MEMORY STRUCTURE:\n{memory_structure}\n\n"
        f"CURRENT MEMORY STATE:\n\n{memory_content}\n\n"
        "INSTRUCTIONS:\n"
        "- Use the memories above to inform your responses\n"
        "- If information is available in memory, reference it appropriately\n"
        "- If memory is insufficient to answer a question, acknowledge this clearly\n"
        "- Provide helpful and contextual responses based on the available memory\n"
        "- Be concise but comprehensive in your answers"
    )


class QAPromptTooLong(ValueError):
    """Even one item per store leaves the QA system prompt above its cap."""


def qa_request(
    memory: StructuredMemory,
    question: str,
    count_tokens: Callable[[str], int],
    top_k: int = QA_TOP_K,
    cap: int = QA_PROMPT_CAP,
    max_tokens: int = QA_MAX_TOKENS,
) -> ChatRequest:
    """[system with the retrieved memory, user = question]; thinking off. `question` is also
    the BM25 query (with the source's query prompt already prepended, as officially)."""
    while True:
        system = qa_system_prompt(memory.core, retrieve(memory, question, top_k))
        size = count_tokens(system)
        if size < cap:
            break
        if top_k == 1:
            raise QAPromptTooLong(
                f"QA system prompt has {size} tokens with one item per store (cap {cap})"
            )
        top_k -= 1
    messages = ({"role": "system", "content": system}, {"role": "user", "content": question})
    return ChatRequest(messages, max_tokens, enable_thinking=False)


def answer(request: ChatRequest) -> Workflow:
    """One QA conversation; returns the model's answer."""
    completion = yield request
    return completion.text

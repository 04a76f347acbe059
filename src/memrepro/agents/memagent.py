"""MemAgent: read a context chunk by chunk, overwrite a bounded memory, then answer from memory.

The prompts are the official code's wording (MemAgent's official code) or, with `wording:
paper`, the shorter memory-update text the paper prints in its Table 5 (the same placeholders
and order; its final-answer text is the official code's).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from memrepro.agents.driver import Workflow
from memrepro.engines.base import ChatRequest
from memrepro.scoring.extract import extract_solution

NO_MEMORY = "No previous memory"
# MemAgent's "answerable without context" filter (filter.py): the question alone, its answer boxed
NO_CONTEXT_PROMPT = "{question}\nYour final answer in \\boxed{{}}."
# the prompts' own tokens, as Appendix B counts them (FLOPs, and the budgets a plan prices)
WORKFLOW_PROMPT_TOKENS = 200  # the memory prompt's
FINAL_PROMPT_TOKENS = 100  # the final prompt's

# The memory update: an instruction, then the problem, the memory and the section (both wordings)
_MEMORY_BODY = """

<problem> 
{prompt}
</problem>

<memory>
{memory}
</memory>

<section>
{chunk}
</section>

Updated memory:
"""
MEMORY_TEMPLATES = {
    "official": "You are presented with a problem, a section of an article that may contain the "
    "answer to the problem, and a previous memory. Please read the provided section carefully and "
    "update the memory with the new information that helps to answer the problem. Be sure to "
    "retain all relevant details from the previous memory while adding any new, useful "
    "information." + _MEMORY_BODY,
    # the paper's Table 5 (top); its final-answer text (bottom) is the official code's
    "paper": "You are presented with a problem, a section of an article that may contain the "
    "answer, and a previous memory. Please read the section carefully and update the memory with "
    "new information that helps to answer the problem, while retaining all relevant details from "
    "the previous memory." + _MEMORY_BODY,
}

FINAL_TEMPLATES = {
    # Official evaluation (utils/recurrent.py): scored by extracting after "the answer is".
    "answer_is": """You are presented with a problem and a previous memory. Please answer the problem based on the previous memory and format your response as follows "Therefore, the answer is (insert answer here)".

<problem> 
{prompt}
</problem>

<memory>
{memory}
</memory>

Your answer:
""",
    # Training (TEMPLATE_FINAL_BOXED): scored by the strict \boxed{} verifier.
    "boxed": """You are presented with a problem and a previous memory. Please answer the problem based on the previous memory and put the answer in \\boxed{{}}.

<problem> 
{prompt}
</problem>

<memory>
{memory}
</memory>

Your answer:
""",
}

FinalPrompt = Literal["answer_is", "boxed"]
Wording = Literal["official", "paper"]
DEFAULT_WORDING: Wording = "official"  # `agent.wording` unless set; training's always


@dataclass(frozen=True)
class MemAgentConfig:
    """The agent's budgets in tokens (paper: 5000-token chunks, 1024-token memory and answer)."""

    chunk_tokens: int = 5000
    memory_tokens: int = 1024
    final_tokens: int = 1024
    final_prompt: FinalPrompt = "answer_is"
    wording: Wording = DEFAULT_WORDING  # the prompts' text: the official code's, or the paper's


@dataclass
class MemoryTrace:
    """The memory after every chunk a run has read, kept as its changes: `changes` holds
    (chunk index from 0, memory) for each chunk after which the memory differs from before it
    (before chunk 0 it is NO_MEMORY); `n_chunks` counts the chunks read. A 3.5M-token context
    is ~700 chunks, most of which leave the memory as it was."""

    changes: list[tuple[int, str]] = field(default_factory=list)
    n_chunks: int = 0

    @property
    def memory(self) -> str:
        """The memory now (after the last chunk read)."""
        return self.changes[-1][1] if self.changes else NO_MEMORY

    def after_chunk(self, memory: str) -> None:
        """Record the memory written after the next chunk."""
        if memory != self.memory:
            self.changes.append((self.n_chunks, memory))
        self.n_chunks += 1


def user(content: str) -> tuple[dict[str, str], ...]:
    return ({"role": "user", "content": content},)


def memagent(
    question: str,
    chunks: Iterable[str],
    config: MemAgentConfig,
    trace: MemoryTrace | None = None,
    reading: str | None = None,
) -> Workflow:
    """One MemAgent run: a memory-update conversation per chunk, then the final answer; the
    memory after every chunk is recorded in `trace` if one is given. The memory is written for
    the question (MemAgent's protocol), or, given `reading`, for that task description alone,
    the question first seen at the final answer (MemoryAgentBench's protocol)."""
    problem = question.strip()
    task = problem if reading is None else reading.strip()
    memory = yield from read_chunks(task, chunks, config.memory_tokens, trace, config.wording)
    completion = yield final_request(problem, memory, config.final_prompt, config.final_tokens)
    return completion.text


def read_chunks(
    problem: str,
    chunks: Iterable[str],
    memory_tokens: int,
    trace: MemoryTrace | None = None,
    wording: Wording = DEFAULT_WORDING,
) -> Workflow:
    """The memory loop alone: one overwrite per chunk from "No previous memory"; returns the
    final memory (each one recorded in `trace`, if given, as it is written)."""
    memory = NO_MEMORY
    for chunk in chunks:
        prompt = MEMORY_TEMPLATES[wording].format(prompt=problem, memory=memory, chunk=chunk)
        completion = yield ChatRequest(user(prompt), memory_tokens)
        memory = extract_solution(completion.text)
        if trace is not None:
            trace.after_chunk(memory)
    return memory


def final_prompt_text(problem: str, memory: str, final_prompt: FinalPrompt) -> str:
    """The final step's prompt: the problem over `memory` (the same text in both wordings)."""
    return FINAL_TEMPLATES[final_prompt].format(prompt=problem, memory=memory)


def final_request(problem: str, memory: str, final_prompt: FinalPrompt, tokens: int) -> ChatRequest:
    """The question asked over the final memory."""
    return ChatRequest(user(final_prompt_text(problem, memory, final_prompt)), tokens)

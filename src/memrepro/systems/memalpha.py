"""The Mem-α system kind: a memorize job in which the policy writes its structured memory
through tool calls, then the frozen QA step answering from that memory (BM25 top-k per store
plus core).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from memrepro.agents.driver import Rollout
from memrepro.benchmarks import INSTANCE_BENCHMARKS, MEMALPHA_BENCHMARKS
from memrepro.engines.base import ChatEngine, SamplingParams, prompt_length
from memrepro.evaluation import (
    Judge,
    MemoryQA,
    Prepare,
    Prepared,
    Question,
    WaveRunner,
    counts,
    drive,
    instance_qa_runner,
)
from memrepro.systems.base import (
    QUESTION_TOKENS,
    Call,
    Config,
    InstanceShape,
    Settings,
    SystemKind,
    template_tokens,
)

# an assumption of `memrepro cost`: a semantic or episodic item is a fact or an event in a sentence
# or two (no budget caps it)
ITEM_TOKENS = 100


def memorize_runner(
    agent: Any,
    engine: ChatEngine,
    sampling: SamplingParams,
    new_memory: Callable[[dict[str, Any]], Any],
) -> WaveRunner:
    """A wave of Mem-α memorisations (`agent`: MemAlphaConfig; `new_memory(row)`: the row's
    empty StructuredMemory): one record per instance with the final memory and every step. With
    `agent.prompt_cap` (evaluation officially has none) prompts are measured in the engine's
    tokens, as in training."""
    from memrepro.agents.memalpha import memorize

    def run(wave: list[dict[str, Any]]) -> list[dict[str, Any]]:
        memories = [new_memory(row) for row in wave]
        traces: list[list[Any]] = [[] for _ in wave]
        workflows = [
            memorize(row["chunks"], memory, agent, trace, prompt_length(engine.tokenizer))
            for row, memory, trace in zip(wave, memories, traces, strict=True)
        ]
        rollouts = drive(workflows, engine, sampling)
        return [
            memory_record(row, memory, trace, rollout)
            for row, memory, trace, rollout in zip(wave, memories, traces, rollouts, strict=True)
        ]

    return run


def memory_record(row: dict[str, Any], memory: Any, trace: list[Any], rollout: Rollout) -> dict:
    """An instance's memorisation: the final memory (the official agent_state layout), each
    chunk's response, calls and results, and the tool-call counts."""
    results = [result for step in trace for result in step.results]
    return {
        "index": row["index"],
        "memory": memory.snapshot(),
        "steps": [
            {
                "response": step.response,
                "visible_items": step.visible_items,
                "calls": [[c.name, c.arguments, c.malformed] for c in step.calls],
                "results": [[r.ok, r.message] for r in step.results],
            }
            for step in trace
        ],
        "n_calls": len(rollout.conversations),
        "tool_calls": len(results),
        "tool_successes": sum(r.succeeded for r in results),
        "failed": rollout.failed,
        "error": rollout.final.completion.error if rollout.failed else None,
    }


def memalpha_questions(engine: ChatEngine, qa: MemoryQA) -> Prepare:
    """Mem-α's QA step: each question asked over its BM25 top-k per store plus core memory
    (rows carry their `memorized` record)."""
    from memrepro.agents.memalpha import QAPromptTooLong, qa_request
    from memrepro.agents.structured_memory import from_snapshot
    from memrepro.data.memalpha import query
    from memrepro.data.tokens import count_tokens

    def count(text: str) -> int:
        return len(engine.tokenizer.encode(text, add_special_tokens=False))

    def one(row: dict[str, Any]) -> Prepared:
        memory = from_snapshot(row["memorized"]["memory"], count)
        questions = []
        for question in row["questions"]:
            text = query(row["task"], question)
            try:
                request = qa_request(memory, text, count, qa.top_k, qa.prompt_cap, qa.max_tokens)
            except QAPromptTooLong as exc:
                questions.append(Question(error=str(exc)))
                continue
            questions.append(Question(request=request))
        tokens = sum(count_tokens(engine.tokenizer, memory.texts()))
        return Prepared(tuple(questions), tokens, counts=counts(row))

    return one


def memory_qa_runner(
    engine: ChatEngine, qa: MemoryQA, judge: Judge, protocol: str = "agent"
) -> WaveRunner:
    """A wave of instances whose `memorized` record is attached, answered from the final memory
    on the QA model, judged where the source needs the judge, scored per source (`protocol`:
    the evaluation's, or "train" for GRPO's r1)."""
    prepare = memalpha_questions(engine, qa)
    return instance_qa_runner(engine, qa.sampling, judge, prepare, protocol)


def memorizer(
    s: Settings, engine: ChatEngine, sampling: SamplingParams, counter: Path | None
) -> WaveRunner:
    """The policy's wave runner: a fresh StructuredMemory per instance (seeded ids), its tokens
    counted by `memory_tokenizer` (o200k_base officially, else the tokenizer at `counter`)."""
    from memrepro.agents.memalpha import MemAlphaConfig, load_memory_counter
    from memrepro.agents.structured_memory import StructuredMemory
    from memrepro.models import load_tokenizer

    tokenizer = load_tokenizer(counter) if counter is not None else None
    count = load_memory_counter(s["memory_tokenizer"], tokenizer)
    disabled = frozenset(s["disabled_memory"])

    def new_memory(row: dict[str, Any]) -> StructuredMemory:
        return StructuredMemory(count, disabled, seed=s["seed"] * 1_000_003 + row["index"])

    return memorize_runner(MemAlphaConfig(**s["agent"]), engine, sampling, new_memory)


def questions(s: Settings, engine: ChatEngine, judge: Judge) -> tuple[Prepare, SamplingParams, str]:
    """The frozen QA step over the final memory, scored as evaluate_agent_results.py."""
    qa = MemoryQA.from_settings(s["qa"])
    return memalpha_questions(engine, qa), qa.sampling, "agent"


def memorize_settings(config: Config, system: Settings) -> Settings:
    spec = config["memalpha"]
    return {
        "agent": spec["agent"],
        "sampling": spec["sampling"],
        "memory_tokenizer": spec["memory_tokenizer"],
        "disabled_memory": system.get("disabled_memory", []),
        "seed": config["seed"],
    }


def memorize_calls(settings: Settings, instance: InstanceShape) -> list[Call]:
    """Per chunk the memorisation prompt (its template with the tool schemas, the core at its
    cap, the last `visible_items` items of each store, the chunk), cut to `prompt_cap` where set
    (training), and the response at its budget."""
    from memrepro.agents.memalpha import memorize_system_prompt, memorize_user_prompt
    from memrepro.agents.structured_memory import (
        CORE,
        CORE_MAX_TOKENS,
        EPISODIC,
        SEMANTIC,
        StructuredMemory,
    )

    agent = settings["agent"]
    disabled = frozenset(settings.get("disabled_memory", []))
    empty = StructuredMemory(len, disabled, seed=0)
    template = memorize_system_prompt(empty, agent["visible_items"])
    template += memorize_user_prompt("", agent["max_new_tokens"])
    core = 0 if CORE in disabled else CORE_MAX_TOKENS
    stores = len({SEMANTIC, EPISODIC} - disabled)
    items = stores * agent["visible_items"] * ITEM_TOKENS
    prompt = template_tokens(template) + core + items + instance.chunk_tokens
    if agent.get("prompt_cap"):
        prompt = min(prompt, agent["prompt_cap"])
    return [(prompt, agent["max_new_tokens"])] * instance.chunks


def qa_calls(settings: Settings, instance: InstanceShape) -> list[Call]:
    """Each question over its retrieved memory (the core at its cap and the top-k items of
    the semantic and episodic stores), cut to the QA prompt cap; the answer at its budget."""
    from memrepro.agents.memalpha import qa_system_prompt
    from memrepro.agents.structured_memory import CORE_MAX_TOKENS, EPISODIC, SEMANTIC

    qa = settings["qa"]
    template = template_tokens(qa_system_prompt("", {SEMANTIC: [], EPISODIC: []}))
    memory = CORE_MAX_TOKENS + 2 * qa["top_k"] * ITEM_TOKENS
    prompt = min(template + memory + QUESTION_TOKENS, qa["prompt_cap"])
    return [(prompt, qa["max_tokens"])] * instance.questions


# its memorize job reads each instance whole (one job), the QA step scored by its own protocol
KIND = SystemKind(
    "memalpha",
    memory=True,
    benchmarks=MEMALPHA_BENCHMARKS,
    allowed=INSTANCE_BENCHMARKS,
    instances_only=True,
    sharded=False,
    memorize_settings=memorize_settings,
    memorizer=memorizer,
    qa_model_answers=True,
    questions=questions,
    memorize_calls=memorize_calls,
    instance_calls=qa_calls,
)

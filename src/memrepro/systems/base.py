"""What a system kind contributes to the experiment matrix and to an evaluation job: one
`SystemKind` per module of this package, registered by name in `memrepro.systems.KINDS`.

The plan (`memrepro.config`) asks a kind which benchmarks a system of it runs, how its spec expands
into concrete systems, whether its evaluation is sharded or starts with a memorize job, and which
settings its jobs read. The evaluation loop (`memrepro.evaluation`) then drives any kind without
knowing which:
- MemAgent's benchmarks (RULER-HQA, RULER, LongBench): `workflows` turns each row into one
  workflow over the engine, scored per sample;
- Mem-α's benchmarks (Memalpha, MemoryAgentBench, RULER-HQA as instances): a kind with a
  `memorizer` first reads every instance in a job of its own (its memory, or its answers), then
  `questions` says how the QA model asks each question of an instance (over that memory, or over
  the instance's context for a kind without a memorizer), at which sampling and scored by which
  protocol.
A kind leaves out what it does not run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memrepro.benchmarks import BENCHMARKS, MEMAGENT_BENCHMARKS, Task
from memrepro.benchmarks import benchmark as benchmark_of
from memrepro.engines.base import ChatEngine, SamplingParams
from memrepro.evaluation import Judge, Prepare, WaveRunner, WorkflowFactory

Config = dict[str, Any]  # a validated config
Settings = dict[str, Any]  # a system's spec (memrepro.config.eval_systems), or a job's settings
Workflows = Callable[[Task, Settings, Any, list[str] | None], WorkflowFactory]
Memorizer = Callable[[Settings, ChatEngine, SamplingParams, Path | None], WaveRunner]
Questions = Callable[[Settings, ChatEngine, Judge], tuple[Prepare, SamplingParams, str]]
SpecSettings = Callable[[Config, Settings], Settings]
Call = tuple[int, int]  # one engine call: (prompt tokens, output tokens)
Calls = Callable[[Settings, int], list[Call]]
QUESTION_TOKENS = 100  # a question with its prompt template, where no budget says otherwise
CHARS_PER_TOKEN = 4  # a prompt template's English and JSON, about


def template_tokens(text: str) -> int:
    """A prompt template's tokens, about, from its characters."""
    return -(-len(text) // CHARS_PER_TOKEN)


@dataclass(frozen=True)
class InstanceShape:
    """One Mem-α instance as `memrepro cost` sizes it: its chunks, their tokens, its questions."""

    chunks: int
    chunk_tokens: int
    questions: int

    @property
    def context_tokens(self) -> int:
        return self.chunks * self.chunk_tokens


InstanceCalls = Callable[[Settings, InstanceShape], list[Call]]
Work = list[tuple[float, list[Call]]]  # (how many times, the calls of one)
# a job's calls on hosted models beside its engine: (a model's name as the API serves it, work)
HostedCalls = Callable[[Settings, list[tuple[int, int]]], list[tuple[str, Work]]]


def one_answer(settings: Settings, context_tokens: int) -> list[Call]:
    """`calls` of a system that answers once over a context: the question beside it, cut to
    the input budget, and the output budget."""
    prompt = min(context_tokens + QUESTION_TOKENS, settings["max_input_tokens"])
    return [(prompt, settings["max_output_tokens"])]


def answers_over_context(settings: Settings, instance: InstanceShape) -> list[Call]:
    """`instance_calls` of a system that answers each question over the instance's context."""
    return one_answer(settings, instance.context_tokens) * instance.questions


def no_settings(config: Config, system: Settings) -> Settings:
    return {}


@dataclass(frozen=True)
class Control:
    """What a control system (one that needs no memory) is to the `controls` table, which reads
    every memory system's score against it: how its score is named, the verdict where the memory
    system scores higher or lower, and what a cell says where the control (above 0) reaches the
    memory system's score, if that means something."""

    label: str
    above: str
    below: str
    reached: str | None = None


def one_system(name: str, spec: Settings) -> dict[str, Settings]:
    return {name: spec}


def every_benchmark(system: Settings, benchmark: str) -> bool:
    return True


@dataclass(frozen=True)
class SystemKind:
    """One system kind (the config's `kind`).

    What the plan needs (memrepro.config):
    - `benchmarks`: a system's `benchmarks` when its spec gives none; `allowed`: those it may run;
    - `instances_only`: it reads every benchmark as Mem-α instances (RULER-HQA too);
    - `sharded`: whether its evaluation splits over `evaluation.shards`;
    - `qa_only`: on LongBench, the QA tasks only (the summarisation ones left out);
    - `memory`: it answers from a memory it wrote while reading (what the `controls` table
      sets against the controls);
    - `control`: it is a control, needing no memory (closed-book, oracle, full context);
    - `reads_context`: its prompts hold the context; one that reads none (closed-book) runs at
      one length of a benchmark whose lengths ask the same questions (`one_length`);
    - `qa_model_answers`: after its memorize job, the QA model answers over the memory (Mem-α,
      MEM1); else its own model gave the answers;
    - `reads_evidence`: its jobs read each question's gold evidence (the benchmark's
      `evidence`); `allowed_why`: why `allowed` leaves benchmarks out, said where one is asked;
    - `asks_final_prompt`: its last question is MemAgent's final prompt
      (`evaluation.final_prompt`), so its answers are read where that prompt puts them (after
      "the answer is", or in `\\boxed{}`); the others ask their own prompts' "the answer is";
    - `expand(name, spec)`: the concrete systems of one configured system (a grid, say);
    - `runs(system, benchmark)`: beyond its `benchmarks`, whether a concrete system runs one;
    - `job_settings(config, system)`: its own part of an evaluate job's settings on MemAgent's
      benchmarks; `instance_settings`: on Mem-α's instances (the evaluate job after its memorize
      job, or over each instance's context); `memorize_settings`: its memorize job's part.
    What its jobs run:
    - `workflows(task, settings, tokenizer, pool)`: each row's workflow on a MemAgent benchmark
      (`pool`: RULER-HQA's documents when rows store doc ids);
    - `memorizer(settings, engine, sampling, memory_tokenizer)`: the memorize job's wave runner;
    - `questions(settings, engine, judge)`: (how an instance's questions are prepared, the QA
      sampling, the scoring protocol) on a Mem-α benchmark.
    What its jobs cost (`memrepro cost`):
    - `calls(settings, context_tokens)`: the engine calls, (prompt, output) tokens at their
      budgets, that one question over a context of that many tokens takes on MemAgent's
      benchmarks, from the evaluate job's settings;
    - `memorize_calls(settings, instance)`: the calls its memorize job makes for one Mem-α
      instance, on its own model; `instance_calls(settings, instance)`: those its evaluate job
      makes for one instance (on the QA model after a memorize job, whose settings it finds
      under "memorized"), the judge's aside.
    - `hosted_calls(settings, questions)`: the calls an evaluate job on MemAgent's benchmarks
      makes on hosted models beside its engine (an embedder, Mem0's own LLM), per model, from
      its (questions, context tokens) per task; an embedding request is (its tokens, 0).
    A kind without the one a job needs is priced by that job's allocation alone.
    """

    name: str
    benchmarks: tuple[str, ...] = MEMAGENT_BENCHMARKS
    allowed: tuple[str, ...] = BENCHMARKS
    instances_only: bool = False
    sharded: bool = True
    qa_only: bool = False
    memory: bool = False
    control: Control | None = None
    reads_context: bool = True
    qa_model_answers: bool = False
    reads_evidence: bool = False
    asks_final_prompt: bool = False
    allowed_why: str = ""
    expand: Callable[[str, Settings], dict[str, Settings]] = one_system
    runs: Callable[[Settings, str], bool] = every_benchmark
    job_settings: SpecSettings = no_settings
    instance_settings: SpecSettings = no_settings
    memorize_settings: SpecSettings | None = None
    workflows: Workflows | None = None
    memorizer: Memorizer | None = None
    questions: Questions | None = None
    calls: Calls | None = None
    memorize_calls: InstanceCalls | None = None
    instance_calls: InstanceCalls | None = None
    hosted_calls: HostedCalls | None = None

    def __post_init__(self) -> None:
        if (self.memorizer is None) != (self.memorize_settings is None):
            raise ValueError(f"system kind {self.name!r}: a memorizer needs memorize_settings")

    def memorizes(self, benchmark: str) -> bool:
        """Whether its evaluation on `benchmark` takes two jobs: its own model reads every
        instance first (`memorize`), then the evaluate job answers or judges on the QA model."""
        if self.memorizer is None:
            return False
        return self.instances_only or benchmark_of(benchmark).instances

    def one_length(self, benchmark: str) -> bool:
        """Whether one evaluation stands for every length of `benchmark`: it reads no context,
        and the benchmark asks the same questions at each length."""
        return not self.reads_context and benchmark_of(benchmark).same_questions

    def answers_with_qa_model(self, benchmark: str) -> bool:
        """Whether the QA model, not its own, answers its questions on `benchmark`."""
        return self.qa_model_answers and self.memorizes(benchmark)

    def reads_instances(self, benchmark: str) -> bool:
        """Whether its evaluation on `benchmark` reads Mem-α instances, asking each instance's
        questions (Mem-α's benchmarks, and any its memorize job has read first)."""
        return benchmark_of(benchmark).instances or self.memorizes(benchmark)


def baseline_protocol(config: Config) -> Settings:
    """A baseline's scoring on Mem-α's benchmarks (as the official long-context evaluation)."""
    return {"protocol": config["memalpha"]["baselines"]["protocol"]}


def context_baseline_settings(config: Config, system: Settings) -> Settings:
    """A baseline that answers each instance's questions over its context, on its own model."""
    return {
        **baseline_protocol(config),
        "sampling": config["memalpha"]["baselines"]["sampling"],
        **{key: system[key] for key in ("max_input_tokens", "max_output_tokens")},
    }

"""What a system kind contributes to an evaluation job: one `SystemKind` per module of this
package, registered by name in `memrl.systems.KINDS`.

The evaluation loop (`memrl.evaluation`) drives any kind without knowing which:
- MemAgent's benchmarks (RULER-HQA, RULER, LongBench): `workflows` turns each row into one
  workflow over the engine, scored per sample;
- Mem-α's benchmarks (Memalpha, MemoryAgentBench, RULER-HQA as instances): a kind with a
  `memorizer` first reads every instance in a job of its own (its memory, or its answers), then
  `questions` says how the QA model asks each question of an instance (over that memory, or over
  the instance's context for a kind without a memorizer), at which sampling and scored by which
  protocol.
A kind leaves out what it does not run; the config says which benchmarks each kind may run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memrl.engines.base import ChatEngine, SamplingParams
from memrl.evaluation import Judge, Prepare, Task, WaveRunner, WorkflowFactory

Settings = dict[str, Any]  # an evaluation job's settings (memrl.config.eval_settings)
Workflows = Callable[[Task, Settings, Any, list[str] | None], WorkflowFactory]
Memorizer = Callable[[Settings, ChatEngine, SamplingParams, Path | None], WaveRunner]
Questions = Callable[[Settings, ChatEngine, Judge], tuple[Prepare, SamplingParams, str]]


@dataclass(frozen=True)
class SystemKind:
    """One system kind (the config's `kind`).

    - `workflows(task, settings, tokenizer, pool)`: each row's workflow on a MemAgent benchmark
      (`pool`: RULER-HQA's documents when rows store doc ids);
    - `memorizer(settings, engine, sampling, memory_tokenizer)`: the memorize job's wave runner;
    - `questions(settings, engine, judge)`: (how an instance's questions are prepared, the QA
      sampling, the scoring protocol) on a Mem-α benchmark.
    """

    name: str
    workflows: Workflows | None = None
    memorizer: Memorizer | None = None
    questions: Questions | None = None

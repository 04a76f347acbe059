"""The benchmarks, one module each, registered by name: what an evaluation job asks of the
one it reads is a `Benchmark` (memrepro.benchmarks.base): the question a memory agent gets, the
direct prompt, the output budget and the per-sample scores. The names below are the bottom of the
package: the config, the system kinds, the evaluation loop and the reports name benchmarks
through them; `benchmark(name)` gives the module's `Benchmark`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memrepro.benchmarks.base import Benchmark

MEMAGENT_BENCHMARKS = ("ruler_hqa", "ruler", "longbench")  # MemAgent's suites
MEMALPHA_BENCHMARKS = ("memalpha", "mab")  # Mem-α's: Memalpha validation, MemoryAgentBench
BENCHMARKS = (*MEMAGENT_BENCHMARKS, *MEMALPHA_BENCHMARKS)  # what a system's `benchmarks` lists
# what Mem-α's framework reads as instances: its benchmarks, and RULER-HQA's samples made
# instances (memalpha.ruler_hqa)
INSTANCE_BENCHMARKS = (*MEMALPHA_BENCHMARKS, "ruler_hqa")
NO_LENGTH = 0  # the one "length" of a benchmark without a length axis (LongBench, Mem-α's)
RULER_HQA_TASK = "hqa"  # RULER-HQA's one task
# run by the systems their own config block names (evaluation.probe, custom), not `benchmarks`
PROBE_BENCHMARK = "ruler_hqa_probe"  # Table 4: RULER-HQA, the gold groups at given depths
CUSTOM_BENCHMARK = "custom"  # one's own datasets (custom.datasets)
EXAMPLE_BENCHMARK = "memalpha_example"  # Mem-α Table 5: the paper's example (memalpha.example)
EXAMPLE_TASK = "example"  # its one task: the example, whichever data source it is found in
# what an evaluation may read
EVAL_BENCHMARKS = (*BENCHMARKS, PROBE_BENCHMARK, CUSTOM_BENCHMARK, EXAMPLE_BENCHMARK)


@dataclass(frozen=True)
class Task:
    """What is evaluated: a benchmark's task (RULER's `variant` decides its scoring; LongBench's
    summaries are scored after `</think>` only with `strip_think`; `answer_format`: where a reply
    gives its answer, after "the answer is" or in its last `\\boxed{}`, as the final prompt asked:
    memrepro.scoring.extract.final_answer)."""

    benchmark: str
    task: str
    variant: str = "memagent"
    strip_think: bool = False
    answer_format: str = "answer_is"


def benchmark(name: str) -> Benchmark:
    """The registered benchmark `name` (imported on first use: the modules compose
    memrepro.data and memrepro.scoring); an unknown one names the known ones."""
    known = registered()
    if name not in known:
        raise ValueError(f"unknown benchmark {name!r}; known: {', '.join(known)}")
    return known[name]


def registered() -> dict[str, Benchmark]:
    """Every registered benchmark by name, in the order the plan lists its jobs."""
    from memrepro.benchmarks.registry import REGISTRY

    return REGISTRY

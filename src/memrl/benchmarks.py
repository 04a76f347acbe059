"""The benchmarks' names: what an evaluation job may read, grouped by the paper that runs them.
The bottom of the package: the config, the system kinds, the evaluation loop and the reports
all name benchmarks through these."""

BENCHMARKS = ("ruler_hqa", "ruler", "longbench", "memalpha", "mab")
MEMAGENT_BENCHMARKS = BENCHMARKS[:3]  # MemAgent's suites (seed 000)
MEMALPHA_BENCHMARKS = BENCHMARKS[3:]  # Mem-α's: Memalpha validation, MemoryAgentBench (seed 004)
# what Mem-α's framework reads as instances: its benchmarks, and RULER-HQA's samples made
# instances (memalpha.ruler_hqa)
INSTANCE_BENCHMARKS = (*MEMALPHA_BENCHMARKS, "ruler_hqa")
NO_LENGTH = 0  # the one "length" of a benchmark without a length axis (LongBench, Mem-α's)
RULER_HQA_TASK = "hqa"  # RULER-HQA's one task
PROBE_BENCHMARK = "ruler_hqa_probe"  # Table 4: RULER-HQA, the gold groups at given depths
EVAL_BENCHMARKS = (*BENCHMARKS, PROBE_BENCHMARK)  # what an evaluation job may read
